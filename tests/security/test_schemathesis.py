"""Schemathesis against the OpenAPI document the local stack serves: the document and the API must
agree. Every answer is documented (status, body shape), nothing is a server error, schema-valid
requests are accepted and schema-violating ones refused. Bounded (a few examples per operation)
and derandomized (hypothesis' fixed seed), so it runs the same cases in CI every time."""

from __future__ import annotations

import time
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import Case, GenerationMode
from schemathesis.config import SchemathesisConfig

from holdpoint.aws import signing
from holdpoint.services import links
from tests.stack import Api

EXAMPLES = 15
"""Examples per operation and kind of case (schema-valid, schema-violating, schema-valid on live ids)."""

CHECKS = ["not_a_server_error", "status_code_conformance", "content_type_conformance",
          "response_schema_conformance", "positive_data_acceptance", "negative_data_rejection", "ignored_auth"]
REJECTED = [400, 401, 403, 404, 413, 422]
"""How a schema-violating request is refused: a body over the size limit before it is read as JSON (413)."""
EXCLUDED: list[dict[str, Any]] = [
    # worker.url is accepted only if its host resolves to a public address (https in the cloud):
    # a property of DNS at request time, which no schema can state. The URL check refuses most
    # generated strings, correctly.
    {"include-path": "/v1/agents/{agent_id}", "include-method": "PUT",
     "checks": {"positive_data_acceptance": {"enabled": False}}},
    # An interrupt's `approval` (A2) may only narrow the agent's policy, and its `quorum` may not
    # exceed the `subjects` it names; its reminders and escalation (A5) must come before its expiry:
    # relations between fields, and with the policy in force, that no schema can state, refused
    # (400 naming the field) though each field is schema-valid.
    {"include-path": "/v1/sessions/{session_id}/interrupts", "include-method": "POST",
     "checks": {"positive_data_acceptance": {"enabled": False}}},
    # `cursor` is an opaque token handed out by a previous page; a made-up one is refused (400),
    # and no pattern can say which strings a previous page handed out.
    {"include-path-regex": "^/v1/(interrupts|sessions)$", "include-method": "GET",
     "checks": {"positive_data_acceptance": {"enabled": False}}},
    # A link's token is sealed by the deployment's key and a Slack click is signed with the
    # channel's secret (an HMAC over the body): a made-up one is refused (400, 401), and no schema
    # can say which strings a key made. Their live answers are fuzzed on a real link below.
    {"include-path-regex": "^/v1/(links/|channels/slack/)", "checks": {"positive_data_acceptance": {"enabled": False}}},
    # An AG-UI run's messages are merged into the thread's tree by id, and an id already used
    # elsewhere in the tree (or twice in one list) is refused (400 naming it): uniqueness of a
    # property across items and against stored state is beyond what a schema states.
    {"include-path": "/v1/channels/ag-ui/agents/{agent_id}/run", "include-method": "POST",
     "checks": {"positive_data_acceptance": {"enabled": False}}},
    # A2A's JSON-RPC binding answers a request that is not JSON-RPC, or whose params its method
    # refuses, with HTTP 200 and a JSON-RPC error object (-32700, -32600, -32601, -32602), as the
    # a2a-sdk client expects (it raises on any other status): no 4xx to see.
    {"include-path": "/a2a/{tenant}/{agent_id}", "include-method": "POST",
     "checks": {"negative_data_rejection": {"enabled": False}}},
]


UNPARAMETERIZED = {"/v1/openapi.json", "/", "/inbox", "/inbox/app.js", "/inbox/app.css", "/inbox/session",
                   "/inbox/session.js", "/inbox/live.json", "/inbox/sign-in.json", "/favicon.ico",
                   "/.well-known/jwks.json"}
"""No parameters and no body: nothing a request could violate (the pages' own query, `?id=` or
`?tenant=`, is read by the page or answered 404 when it names nothing, never refused)."""


def load(stack: Any) -> Any:
    """The document the stack serves, authenticated with its dev key."""
    config = SchemathesisConfig.from_dict({
        "generation": {"mode": "all", "max-examples": EXAMPLES, "deterministic": True},
        "checks": {"enabled": False, **{name: {"enabled": True} for name in CHECKS},
                   "negative_data_rejection": {"expected-statuses": REJECTED}},
        "auth": {"openapi": {"bearer": {"bearer": stack.api_key}}},
        "request-timeout": 30,
        "operations": EXCLUDED,
    })
    return schemathesis.openapi.from_url(f"{stack.base_url}/v1/openapi.json", config=config)


def test_the_api_is_what_its_document_says(stack: Any, api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each operation, positive then negative cases. The stack is a fixture, so the document is
    loaded here and each operation's cases run under `hypothesis.given` (schemathesis 4.32's
    `pytest.from_fixture` reads `request.node._nodeid`, which pytest 9 no longer has). Long-polls
    (event stream, `wait`, AG-UI runs) are capped at 1 s here: the same answers, without 25 s each."""
    monkeypatch.setenv("HOLDPOINT_LONG_POLL_SECS", "1")
    schema = load(stack)
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    public = {**api.ok("GET", "/v1/agents/assistant")["agent"], "a2a": {"public": True}}
    # A link this deployment sealed, for an interrupt the session never had: its page says closed
    # (200), and its form with the link's own option answers a no-op.
    token = signing.seal(links.PURPOSE, {"t": stack.tenant, "s": sid, "i": "never-raised", "g": 1, "o": "approve",
                                         "a": f"key:{stack.subject}", "x": int(time.time()) + 3600})
    api.ok("POST", "/v1/runs/run-live/interrupts", {"agent_id": "assistant", "interrupts": [
        {"reason": "approve", "payload": {"message": "Go?"}}]})  # an external run that reads its own answers
    live = {"session_id": sid, "agent_id": "assistant", "token": token, "tenant": stack.tenant, "run_id": "run-live"}
    started = time.monotonic()
    cases = 0
    answered: dict[str, set[int]] = {}
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        names = {p.name for p in operation.path_parameters}
        if operation.path.startswith("/a2a/"):  # the agent as declared, its card public (the PUT fuzzed it)
            api.ok("PUT", "/v1/agents/assistant", public)
        runs: list[tuple[str, Any]] = [
            ("positive", operation.as_strategy(generation_mode=GenerationMode.POSITIVE)),
            ("negative", operation.as_strategy(generation_mode=GenerationMode.NEGATIVE)),
        ]
        if names & set(live):  # schema-valid input on a session and an agent that exist, too
            fixed = {k: v for k, v in live.items() if k in names}
            runs.append((f"positive on {fixed}", operation.as_strategy(
                generation_mode=GenerationMode.POSITIVE, path_parameters=fixed)))
        for label, strategy in runs:

            @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                      suppress_health_check=list(HealthCheck), phases=[Phase.generate])
            @given(case=strategy)
            def run(case: Case) -> None:
                nonlocal cases
                cases += 1
                status = case.call_and_validate().status_code
                answered.setdefault(case.operation.label, set()).add(status)

            try:
                run()
            except Unsatisfiable:
                assert label == "negative" and operation.path in UNPARAMETERIZED
                continue
            except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - report every operation
                failures.append(f"{operation.label} ({label}): {exc}")
    print(f"\nschemathesis: {cases} cases in {time.monotonic() - started:.1f} s")
    for label, statuses in sorted(answered.items()):
        print(f"  {label}: {sorted(statuses)}")
    assert not failures, "\n\n".join(failures)
    # Not only refusals: every operation accepted some generated input, but those that need what
    # generated input cannot have: an open call (settle), a machine key (minting tokens, and a
    # worker's submit, which also needs a deferred decision), the link's own option (`confirm`),
    # a Slack signature, an operator key (the identity provider), a tenant's declared sign-in.
    refused_only = {label for label, statuses in answered.items() if not any(200 <= s < 400 for s in statuses)}
    assert refused_only <= {"POST /v1/sessions/{session_id}/calls/settle", "POST /v1/client-tokens",
                            "POST /v1/workers/submit", "POST /v1/links/{token}",
                            "POST /v1/channels/slack/interactions", "PUT /v1/identity-provider",
                            "GET /v1/identity-provider", "GET /inbox/sign-in.json"}, sorted(answered.items())
    assert len(answered) == len(list(schema.get_all_operations()))


def test_the_document_has_every_route_api_gateway_has(stack: Any) -> None:
    """Every route of template.yaml, whichever function serves it (API, resume, links, channels),
    is an operation of the one document, with the security API Gateway really applies to it."""
    import requests

    doc = requests.get(f"{stack.base_url}/v1/openapi.json", timeout=30).json()
    documented = {(method.upper(), path): bool(op.get("security"))
                  for path, ops in doc["paths"].items() for method, op in ops.items()}
    routes = {(r.method, r.path): r.auth for r in stack.provisioned.routes}
    assert documented == routes
