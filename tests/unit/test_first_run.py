"""What a new user trips on in a first run (issue: the answer's meaning, item 7): the client's word
for an oversized body, the pages' icon, one set of variable names for `make serve`'s settings and
the CLI, the `holdpoint` command after `make venv`, the scripted model's `contains` matching
words, and a declaration warned about a secret that is not set where the engine runs."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from holdpoint.http import limits
from holdpoint.llm import scripted
from holdpoint_local import serve
from holdpoint_sdk import client
from tests.conftest import ROOT
from tests.unit.test_api import API, CONTEXT, call_api, http_event

pytestmark = pytest.mark.usefixtures("aws")


def test_the_client_says_a_body_over_the_limit_is_too_large_before_sending_it() -> None:
    assert client.MAX_BODY_BYTES == limits.MAX_BODY_BYTES  # one limit, the API's own
    nowhere = client.Client("http://127.0.0.1:9", "hp_x")  # nothing listens there: nothing may be sent
    with pytest.raises(client.HoldpointError) as refused:
        nowhere.resume("ses_1", "int_1", {"text": "x" * limits.MAX_BODY_BYTES})
    assert (refused.value.code, refused.value.status, refused.value.param) == ("payload_too_large", 413, "body")
    assert "1,048,576" in refused.value.message


def test_the_pages_icon_is_served() -> None:
    reply = API.handler(http_event("GET", "/favicon.ico", tenant=None), CONTEXT)
    headers = {k.lower(): v for k, v in reply["headers"].items()}
    assert reply["statusCode"] == 200 and headers["content-type"] == "image/svg+xml"
    assert reply["body"].startswith("<svg") and headers["x-content-type-options"] == "nosniff"


def test_make_serves_settings_are_the_names_the_cli_reads(tmp_path: Path) -> None:
    stack = SimpleNamespace(base_url="http://127.0.0.1:8787", api_key="hp_dev_local_key", moto_endpoint="x",
                            env={"TABLE_NAME": "t"}, live=SimpleNamespace(url="ws://127.0.0.1:8788/live"))
    path = tmp_path / "local.env"
    serve.write_env(path, stack)  # type: ignore[arg-type]
    written = dict(line.split("=", 1) for line in path.read_text().splitlines())
    from_env = client.Client.from_env(written)
    assert (from_env.url, from_env.api_key) == ("http://127.0.0.1:8787", "hp_dev_local_key")
    assert written["HOLDPOINT_LIVE_URL"] == "ws://127.0.0.1:8788/live"  # what examples/follow_live.py reads


def test_make_venv_puts_the_holdpoint_command_in_the_venv() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "-e ./sdk" in makefile  # the SDK, editable: its console script is the command
    command = ROOT / ".venv" / "bin" / "holdpoint"
    done = subprocess.run([str(command), "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and "HOLDPOINT_URL" in done.stdout


@pytest.mark.parametrize(("phrase", "text", "says"), [
    ("hi", "say hi", True), ("hi", "Hi there", True), ("hi", "this", False), ("hi", "while I wait", False),
    ("sent", "Email sent.", True), ("say hi", "please say hi!", True), ("sent", "resent", False)])
def test_the_scripted_models_contains_matches_whole_words(phrase: str, text: str, says: bool) -> None:
    assert scripted._matches({"contains": phrase}, {"role": "user", "content": text}) is says


def test_declaring_an_agent_warns_of_an_env_secret_not_set_where_the_engine_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLDPOINT_SECRET_ENV_ALLOWLIST", "dev=HOLDPOINT_*")
    monkeypatch.delenv("HOLDPOINT_UNSET_WORKER_SECRET", raising=False)
    secret = "env:HOLDPOINT_UNSET_WORKER_SECRET"
    agent: dict[str, Any] = {"worker": {"url": "https://worker.example.com/", "secret": secret}}
    status, out = call_api("PUT", "/v1/agents/warned", agent)
    assert status == 200 and out["agent"]["worker"]["secret"] == secret  # declared all the same
    [warning] = out["warnings"]
    assert warning["param"] == "worker.secret" and "HOLDPOINT_UNSET_WORKER_SECRET is not set" in warning["message"]
    monkeypatch.setenv("HOLDPOINT_UNSET_WORKER_SECRET", "s3cret")
    status, out = call_api("PUT", "/v1/agents/warned", agent)
    assert status == 200 and "warnings" not in out
