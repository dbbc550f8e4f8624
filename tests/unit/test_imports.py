"""Each handler imports only what it uses: a cold start pays for every module on its import path
(bench/cold_start.py), so a heavy module that creeps onto the path of a handler that never uses
it fails here, by name, before it shows in a benchmark.

Each handler is loaded the way Lambda loads it (and `holdpoint_local.emulators.runtime.load_handler`): by
file path, its directory on sys.path, `layers/core` on PYTHONPATH, the Lambda's environment
variables (dummies), in a fresh interpreter so nothing another test imported counts.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from holdpoint_local import LAMBDA_ENV

ROOT = Path(__file__).resolve().parents[2]

_TOKENS = ["jwt", "cryptography"]
"""Token checking: the authorizer's (and the admin CLI's, which mints tokens)."""
_SCHEMAS = ["jsonschema", "holdpoint.core.schema_keywords"]
"""Checking tool arguments and results against their declared schemas (jsonschema and its bounded
keywords): loaded at the first check."""
_ENGINE = ["holdpoint.core.engine", "holdpoint.services.runner", "holdpoint.llm", "holdpoint.outbound",
           "holdpoint.notify.channels", "holdpoint.notify.webhooks", "holdpoint.notify.slack",
           "holdpoint.notify.slack_blocks", "holdpoint.notify.slack_config"]
"""The engine's step loop and its outbound calls (workers, LLM providers, the network guard, the
notify channels)."""
_TEST_TOOLS = ["moto", "pytest", "holdpoint_local"]
"""Dev-only packages: a handler that imports one fails on Lambda."""
_OPENAPI_DOC = ["aws_lambda_powertools.event_handler.openapi.models"]
"""Powertools' OpenAPI document models: only `GET /v1/openapi.json` builds them."""
_HTTP = ["aws_lambda_powertools.event_handler", "holdpoint.http", "holdpoint.notify.routes"]
"""The HTTP resolver and edge: the API and resume functions' alone."""
_BATCH = ["aws_lambda_powertools.utilities.batch", "aws_lambda_powertools.utilities.data_classes", "asyncio"]
"""Powertools' batch utility and what it brings (asyncio, every event data class): the engine answers
its SQS FIFO batches with `holdpoint.aws.fifobatch`."""
_CORE_MODELS = ["holdpoint.core.protocols", "holdpoint.core.protocols.worker",
                "holdpoint.core.protocols.worker_actions", "holdpoint.core.protocols.approval",
                "holdpoint.core.protocols.client"]
_MODELS = [*_CORE_MODELS, "holdpoint.core.agent_config", "holdpoint.http.bodies"]
"""The wire models (pydantic), by audience: the core's and the HTTP API's own bodies."""
_FIRST_REQUEST = ["holdpoint.http.api", "holdpoint.http.routes", "holdpoint.bridges.agui.routes",
                  "holdpoint.bridges.agui.models", "holdpoint.bridges.runs.routes", *_MODELS, "pydantic",
                  "aws_lambda_powertools.event_handler.middlewares.openapi_validation"]
"""What the API function builds on its first request (`holdpoint.coldstart.Deferred`): every route
module (the AG-UI and runs bridges' too), the wire models and Powertools' request validation with pydantic."""
_BRIDGES = ["holdpoint.bridges"]
"""The protocol bridges (their wire models with pydantic, their use cases, their routes): the API
function's build them on its first request, the protocols function A2A's and MCP's; no other
handler loads one."""
_STEPS = ["holdpoint.services.runner", "holdpoint.core.engine", *_CORE_MODELS, "pydantic"]
"""What the engine loads with its first batch (`holdpoint.coldstart.Deferred`): the step loop, the
core rules and the wire models with pydantic."""
# The resume function serves its one route without OpenAPI validation, so without pydantic and the models.

DENY: dict[str, list[str]] = {
    "api": _TOKENS + _SCHEMAS + _TEST_TOOLS + _OPENAPI_DOC + _FIRST_REQUEST + _BRIDGES
    + ["holdpoint.core.engine", "holdpoint.services.runner", "holdpoint.llm"],
    "resume": _TOKENS + _SCHEMAS + _ENGINE + _TEST_TOOLS + _OPENAPI_DOC + _BRIDGES
    + ["holdpoint.services.sessions", "holdpoint.services.settle", "holdpoint.aws.signing",
       "holdpoint.aws.secretrefs", *_MODELS, "pydantic",
       "aws_lambda_powertools.event_handler.middlewares.openapi_validation"],
    "engine": _TOKENS + _SCHEMAS + _TEST_TOOLS + _HTTP + _BATCH + _STEPS + _BRIDGES,
    # PyJWT imports `cryptography` (an identity provider's RS256 and ES256 tokens), so the authorizer's
    # list leaves both out.
    "authorizer": _SCHEMAS + _ENGINE + _TEST_TOOLS + _HTTP + _BRIDGES + ["pydantic", *_MODELS],
    # The notifier reads stream records; the declared `notify` entries' models stay with the API.
    "notifier": _TOKENS + _SCHEMAS + _TEST_TOOLS + _HTTP + _BRIDGES
    + ["holdpoint.core.engine", "holdpoint.services.runner", "holdpoint.llm", "pydantic", *_MODELS],
    "links": _TOKENS + _SCHEMAS + _ENGINE + _TEST_TOOLS + _OPENAPI_DOC + _BRIDGES
    + ["holdpoint.services.sessions", "pydantic", *_MODELS],
    # A Slack button click: its signature check and a resume; no token checking, models or OpenAPI validation.
    "channels": _TOKENS + _SCHEMAS + _ENGINE + _TEST_TOOLS + _OPENAPI_DOC + _BRIDGES
    + ["holdpoint.services.sessions", "pydantic", *_MODELS,
       "aws_lambda_powertools.event_handler.middlewares.openapi_validation"],
    # The WebSocket routes: the connection items, the catch-up from the log and its posts; no tokens or engine.
    # AG-UI's frames come from the AG-UI bridge's `live_frames` (pure), given services.live when the first
    # subscribe builds it (`assembly.get_live`): no bridge and none of the protocols' wire models at the load.
    "live": _TOKENS + _SCHEMAS + _ENGINE + _TEST_TOOLS + _OPENAPI_DOC + _FIRST_REQUEST[:2] + _BRIDGES
    + ["aws_lambda_powertools.event_handler", "holdpoint.services.sessions", "holdpoint.core.protocols"],
    # A2A's JSON-RPC: its own models (pydantic) and the resume path; no tokens, engine or OpenAPI validation.
    # Its models are A2A's, MCP's and the client's; the worker protocol's are the engine's.
    "protocols": _TOKENS + _SCHEMAS + _ENGINE + _TEST_TOOLS + _OPENAPI_DOC
    + ["aws_lambda_powertools.event_handler.middlewares.openapi_validation", "holdpoint.core.protocols.worker",
       "holdpoint.core.protocols.worker_actions", "holdpoint.bridges.agui", "holdpoint.bridges.runs"],
}

ALLOW: dict[str, list[str]] = {"authorizer": ["holdpoint.http", "holdpoint.http.credentials", "holdpoint.outbound",
                                              "holdpoint.outbound.signing_keys", "holdpoint.outbound.netguard",
                                              "holdpoint.outbound.errors"],
                               "protocols": ["holdpoint.outbound", "holdpoint.outbound.netguard",
                                             "holdpoint.outbound.errors"]}
"""Modules a denied package may lend: the authorizer reads the Bearer header with the edge's
credentials module, and nothing else of the edge (no resolver, no routes), and fetches the
identity providers' keys through the network guard; the protocols function
checks an A2A push config's URL with the network guard (and its refusal), and nothing else of the engine's outbound."""

_PROBE = """
import importlib.util, json, sys
code_dir = sys.argv[1]
sys.path.insert(0, code_dir)
spec = importlib.util.spec_from_file_location("app", code_dir + "/app.py")
module = importlib.util.module_from_spec(spec)
sys.modules["app"] = module
spec.loader.exec_module(module)
import gc
print(json.dumps({"gc": [gc.isenabled(), gc.get_freeze_count()]}))
print(json.dumps(sorted(sys.modules)))
"""


@functools.cache
def _probe(handler: str) -> tuple[str, ...]:
    """The probe's output lines: the collector's state, then `sys.modules`, in a fresh interpreter
    right after the handler's `app.py` is loaded. Once per handler: its two tests read one load."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "AWS_"))}
    env.update(LAMBDA_ENV, PYTHONPATH=str(ROOT / "layers" / "core"))
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(ROOT / "functions" / handler)], env=env,
                          cwd=ROOT / "functions" / handler, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tuple(proc.stdout.strip().splitlines())


def loaded_modules(handler: str) -> list[str]:
    modules: list[str] = json.loads(_probe(handler)[-1])
    return modules


def gc_after_load(handler: str) -> tuple[bool, int]:
    """(collector enabled, objects frozen) right after the handler's `app.py` is loaded."""
    enabled, frozen = json.loads(_probe(handler)[-2])["gc"]
    return bool(enabled), int(frozen)


def _hits(modules: list[str], denied: list[str]) -> list[str]:
    return [m for m in modules if any(m == d or m.startswith(d + ".") for d in denied)]


@pytest.mark.parametrize("handler", sorted(DENY))
def test_handler_imports_nothing_it_does_not_use(handler: str) -> None:
    modules = loaded_modules(handler)
    assert "holdpoint" in modules  # the probe really loaded the layer
    hits = [m for m in _hits(modules, DENY[handler]) if m not in ALLOW.get(handler, ())]
    assert not hits, f"functions/{handler}/app.py imports {hits}"


def test_the_deny_list_catches_a_denied_module() -> None:
    assert _hits(["jwt", "jwt.api_jwt", "jwtx", "holdpoint.llm"], ["jwt", "holdpoint.llm"]) == \
        ["jwt", "jwt.api_jwt", "holdpoint.llm"]


HANDLERS = sorted(p.parent.name for p in (ROOT / "functions").glob("*/app.py"))


@pytest.mark.parametrize("handler", HANDLERS)
def test_handler_loads_with_the_collector_paused_then_back(handler: str) -> None:
    """Every handler loads inside `holdpoint.coldstart.loading()`: the collector is on afterwards
    and what was loaded is frozen (no collector pauses during the cold start, bench/cold_start.py)."""
    enabled, frozen = gc_after_load(handler)
    assert enabled
    assert frozen > 10_000, f"functions/{handler}/app.py does not load inside holdpoint.coldstart.loading()"


_FIRST = _PROBE + """
frozen = gc.get_freeze_count()
deferred = getattr(module, sys.argv[2])
built = deferred.get()
print(json.dumps({"gc": [gc.isenabled(), gc.get_freeze_count() - frozen], "same": deferred.get() is built,
                  "built": type(built).__name__}))
print(json.dumps(sorted(sys.modules)))
"""
DEFERRED = {"api": ("app", _FIRST_REQUEST, "APIGatewayHttpResolver"), "engine": ("steps", _STEPS, "module")}
"""Handlers that build part of themselves on their first request: the `Deferred`, what it loads, what it builds."""


@pytest.mark.parametrize("handler", sorted(DEFERRED))
def test_first_request_builds_what_the_load_left_out(handler: str) -> None:
    """What a handler's load leaves out (`_FIRST_REQUEST`, `_STEPS`) is built once, by the first
    request, the way a load is (collector paused, then what was built frozen)."""
    name, deferred, kind = DEFERRED[handler]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "AWS_"))}
    env.update(LAMBDA_ENV, PYTHONPATH=str(ROOT / "layers" / "core"))
    code_dir = ROOT / "functions" / handler
    proc = subprocess.run([sys.executable, "-c", _FIRST, str(code_dir), name], env=env, cwd=code_dir,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert not _hits(json.loads(lines[1]), deferred)  # not at load
    first = json.loads(lines[2])
    assert first == {"gc": [True, first["gc"][1]], "same": True, "built": kind} and first["gc"][1] > 10_000
    assert set(deferred) <= set(json.loads(lines[3]))


def test_every_handler_has_a_deny_list() -> None:
    assert sorted(DENY) == HANDLERS
