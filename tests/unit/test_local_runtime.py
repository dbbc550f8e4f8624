"""The local stack's Lambda runtime serves requests on threads side by side, where Lambda gives an
execution environment one request at a time. Powertools keeps the request being routed on a class
attribute, so the runtime makes it per thread: each thread routes and reads only its own request.
Its functions share the process's modules, so the cache of secret values is one per function: a
value one function read is not served to another, which must read it (and be refused) itself."""

from __future__ import annotations

import threading

from aws_lambda_powertools.event_handler.api_gateway import APIGatewayHttpResolver, BaseRouter

from holdpoint.aws import secretrefs
from holdpoint_local.emulators.credentials import acting_as
from holdpoint_local.emulators.runtime import isolate_powertools_requests, isolate_secret_caches


def test_each_thread_sees_only_the_request_it_routes() -> None:
    isolate_powertools_requests()
    app = APIGatewayHttpResolver()
    seen: dict[str, object] = {}
    first_set, second_done = threading.Event(), threading.Event()

    def first() -> None:
        BaseRouter.current_event = "request-1"  # as resolve() does, on the class
        first_set.set()
        second_done.wait(10)
        seen["first"] = app.current_event

    def second() -> None:
        first_set.wait(10)
        seen["second before"] = app.current_event
        BaseRouter.current_event = "request-2"
        seen["second"] = BaseRouter.current_event
        second_done.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert seen == {"first": "request-1", "second before": None, "second": "request-2"}


def test_a_function_counts_the_records_its_invocations_carried() -> None:
    """The soak compares the engine's SQS messages and the notifier's stream records with the
    capacity model, which prices one invocation a record; a batch is one invocation of many."""
    from holdpoint_local.emulators.runtime import LocalFunction

    fn = LocalFunction("EngineFunction", handler=lambda event, context: {"batchItemFailures": []})
    fn.invoke({"Records": [{"messageId": "m1"}, {"messageId": "m2"}, {"messageId": "m3"}]})
    fn.invoke({"Records": [{"messageId": "m4"}]})
    fn.invoke({"version": "2.0", "rawPath": "/v1/sessions"})  # an HTTP event carries no records
    assert (fn.invocations, fn.records) == (3, 4)


def test_a_secret_one_function_read_is_not_in_another_functions_cache() -> None:
    isolate_secret_caches()
    with acting_as("NotifierFunction", "arn:aws:iam::123456789012:role/notifier"):
        secretrefs._CACHE["arn:jwt"] = "the signing key"
        assert secretrefs._CACHE.get("arn:jwt") == "the signing key"
    with acting_as("EngineFunction", "arn:aws:iam::123456789012:role/engine"):
        assert "arn:jwt" not in secretrefs._CACHE and len(secretrefs._CACHE) == 0
    assert "arn:jwt" not in secretrefs._CACHE  # the operator's own
    with acting_as("NotifierFunction", "arn:aws:iam::123456789012:role/notifier"):
        del secretrefs._CACHE["arn:jwt"]
