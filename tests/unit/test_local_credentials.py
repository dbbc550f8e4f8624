"""holdpoint_local.emulators.credentials: which identity a thread calls with, and per-function caches."""

from __future__ import annotations

import threading

from holdpoint_local.emulators import credentials


def test_iam_a_thread_is_the_function_it_runs_and_the_operator_outside() -> None:
    assert credentials.current() is None
    seen: list[object] = []
    with credentials.acting_as("EngineFunction", "arn:aws:iam::123456789012:role/engine"):
        assert credentials.current() == credentials.Acting("EngineFunction", "arn:aws:iam::123456789012:role/engine")
        other = threading.Thread(target=lambda: seen.append(credentials.current()))
        other.start()
        other.join()
    assert seen == [None]  # another thread is not the function: the runtime sets it per invocation
    assert credentials.current() is None


def test_iam_a_cached_secret_is_one_functions_only() -> None:
    cache = credentials.PerFunctionCache()
    with credentials.acting_as("ApiFunction", "arn:aws:iam::123456789012:role/api"):
        cache["jwt"] = "s"
        assert "jwt" in cache and cache["jwt"] == "s"
    with credentials.acting_as("LinksFunction", "arn:aws:iam::123456789012:role/links"):
        assert "jwt" not in cache  # Links reads it with its own role
    assert "jwt" not in cache


def test_iam_a_transaction_needs_its_items_actions() -> None:
    items = [{"Put": {}}, {"Update": {}}, {"ConditionCheck": {}}]
    assert credentials.iam_actions("dynamodb", "TransactWriteItems", {"TransactItems": items}) == [
        "dynamodb:ConditionCheckItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]
    assert credentials.iam_actions("sqs", "DeleteMessageBatch", {}) == ["sqs:DeleteMessage"]
    assert credentials.iam_actions("bedrock", "Converse", {}) == ["bedrock:InvokeModel"]
    assert credentials.iam_actions("execute-api", "PostToConnection", {}) == ["execute-api:ManageConnections"]
