"""events/*.json are in AWS's own shapes and name routes the template really has."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2, SQSEvent
from aws_lambda_powertools.utilities.data_classes.api_gateway_authorizer_event import (
    APIGatewayAuthorizerEventV2,
)

from holdpoint_local.provision import load_template

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str) -> dict[str, Any]:
    return json.loads((ROOT / "events" / name).read_text(encoding="utf-8"))


def _route_keys() -> set[str]:
    keys = set()
    for res in load_template(ROOT / "template.yaml")["Resources"].values():
        for ev in (res.get("Properties") or {}).get("Events", {}).values():
            if ev["Type"] == "HttpApi":
                keys.add(f"{ev['Properties']['Method']} {ev['Properties']['Path']}")
    return keys


def test_api_events() -> None:
    routes = _route_keys()
    for name in ("api_create_session.json", "api_resume.json", "api_get_session.json"):
        raw = _load(name)
        ev = APIGatewayProxyEventV2(raw)
        assert raw["version"] == "2.0" and ev.route_key in routes, name
        assert ev.request_context.authorizer.get_lambda == {"tenant": "dev", "subject": "dev-user", "origin": "client"}
    create = APIGatewayProxyEventV2(_load("api_create_session.json"))
    assert create.json_body["type"] == "client.message" and create.json_body["agent_id"] == "assistant"
    resume = APIGatewayProxyEventV2(_load("api_resume.json"))
    assert resume.path_parameters == {"session_id": "sess-1", "interrupt_id": "int-1"}
    assert resume.json_body == {"payload": {"approved": True}}


def test_authorizer_event() -> None:
    ev = APIGatewayAuthorizerEventV2(_load("authorizer_request.json"))
    assert ev.headers.get("Authorization") == "Bearer hp_dev_local_key"
    assert ev.identity_source == ["Bearer hp_dev_local_key"]
    assert ev.route_key in _route_keys()


def test_sqs_events() -> None:
    kinds = {}
    for name in ("sqs_kick.json", "sqs_park.json", "sqs_wake.json"):
        rec = next(iter(SQSEvent(_load(name)).records))
        assert rec.event_source_arn.endswith(".fifo") and rec.attributes.message_group_id
        kinds[name] = rec.json_body
    assert kinds["sqs_kick.json"]["kind"] == "kick"
    assert kinds["sqs_park.json"]["kind"] == "park" and kinds["sqs_park.json"]["task_token"]
    assert kinds["sqs_wake.json"] == {
        "kind": "wake", "outcome": "resumed", "tenant": "dev", "session_id": "sess-1", "interrupt_id": "int-1",
    }  # fmt: skip
