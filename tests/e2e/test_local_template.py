"""The local stack runs template.yaml as AWS reads it: the routes, the authorizer, the event source
mappings (FilterCriteria included) and each function's environment are the ones the Serverless
transform (aws-sam-translator) makes of the template, created by moto's CloudFormation."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from holdpoint_local.emulators.wsgateway import read_live
from holdpoint_local.moto.server import MotoServer
from holdpoint_local.provision import REPO_ROOT, TEMPLATE_PATH, load_template, provision, translate

PARAMS = {"CorsAllowedOrigins": "http://127.0.0.1:9"}


def _http_api_events(template: dict[str, Any]) -> int:
    """How many HttpApi events the template declares: the number of routes API Gateway will have."""
    return sum(1 for res in template["Resources"].values() if res["Type"] == "AWS::Serverless::Function"
               for event in (res["Properties"].get("Events") or {}).values() if event["Type"] == "HttpApi")


def _invoked(uri: Any) -> str:
    """The function logical id an integration/authorizer URI of the translated Body names."""
    text = json.dumps(uri)
    found = re.search(r"\$\{(\w+)\.Arn\}", text) or re.search(r'"Fn::GetAtt": \["(\w+)", "Arn"\]', text)
    assert found, text
    return found.group(1)


def _declared_routes(translated: dict[str, Any]) -> set[tuple[str, str, str, str | None]]:
    api = next(r for r in translated["Resources"].values()
               if r["Type"] == "AWS::ApiGatewayV2::Api" and r["Properties"].get("ProtocolType") != "WEBSOCKET")
    body = api["Properties"]["Body"]
    schemes = body["components"]["securitySchemes"]
    out = set()
    for path, ops in body["paths"].items():
        for method, op in ops.items():
            chosen = next(iter(op.get("security", [{}])[0]), "NONE")
            authorizer = _invoked(schemes[chosen]["x-amazon-apigateway-authorizer"]["authorizerUri"]) \
                if chosen in schemes else None  # fmt: skip
            out.add((method.upper(), path, _invoked(op["x-amazon-apigateway-integration"]["uri"]), authorizer))
    return out


def _resolved(value: Any, resources: dict[str, str], pseudo: dict[str, str]) -> Any:
    """The few forms the transform writes into a function's environment: literals and Refs."""
    if isinstance(value, dict) and "Ref" in value:
        return pseudo.get(value["Ref"], resources.get(value["Ref"]))
    return value


def test_template_the_local_stack_has_the_routes_mappings_and_environments_the_transform_made(
        moto_server: MotoServer, stack_name: str) -> None:
    prov = provision(moto_server.endpoint, stack_name=stack_name, parameters=PARAMS)
    translated = translate(load_template(), stack_name=stack_name, parameters=PARAMS)
    resources = translated["Resources"]

    routes = {(r.method, r.path, r.function, r.authorizer) for r in prov.routes}
    assert routes == _declared_routes(translated) and len(routes) == _http_api_events(load_template())
    assert {r.identity_headers for r in prov.routes if r.auth} == {("authorization",)}
    live = read_live(moto_server.endpoint, prov)
    assert live is not None and live.api_id == prov.resources["LiveApi"]
    assert live.routes == dict.fromkeys(("$connect", "$disconnect", "subscribe", "$default"), "LiveFunction")
    assert live.authorizer == "AuthorizerFunction"

    esms = {r["Properties"]["FunctionName"]["Ref"]: r["Properties"] for r in resources.values()
            if r["Type"] == "AWS::Lambda::EventSourceMapping"}
    (sqs,) = prov.sqs_mappings
    work = esms[sqs.function]
    assert (sqs.queue_logical_id, sqs.batch_size, sqs.report_batch_item_failures) == (
        work["EventSourceArn"]["Fn::GetAtt"][0], work["BatchSize"],
        "ReportBatchItemFailures" in work["FunctionResponseTypes"])
    (stream,) = prov.stream_mappings
    outbox = esms[stream.function]
    assert stream.filters == tuple(json.loads(f["Pattern"]) for f in outbox["FilterCriteria"]["Filters"])
    assert (stream.table_logical_id, stream.batch_size, stream.starting_position, stream.max_retries,
            stream.bisect) == (
        outbox["EventSourceArn"]["Fn::GetAtt"][0], outbox["BatchSize"], outbox["StartingPosition"],
        outbox["MaximumRetryAttempts"], outbox["BisectBatchOnFunctionError"])
    dlq = outbox["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0]
    assert stream.on_failure_queue_url == prov.resources[dlq]

    pseudo = {"AWS::AccountId": "123456789012", "AWS::Region": "us-east-1", **{
        k: str(v.get("Default", "")) for k, v in translated["Parameters"].items()}, **PARAMS}
    functions = {k: r["Properties"] for k, r in resources.items() if r["Type"] == "AWS::Lambda::Function"}
    assert set(prov.functions) == set(functions)
    for logical, props in functions.items():
        spec = prov.functions[logical]
        declared = {k: _resolved(v, prov.resources, pseudo) for k, v in props["Environment"]["Variables"].items()
                    if not (isinstance(v, dict) and ("Fn::Sub" in v or "Fn::GetAtt" in v))}
        assert {k: spec.env[k] for k in declared} == declared, logical
        assert set(spec.env) == set(props["Environment"]["Variables"]), logical
        assert spec.role_arn.endswith(f":role/{prov.resources[props['Role']['Fn::GetAtt'][0]]}"), logical
        assert spec.code_dir == REPO_ROOT / props["Code"]["S3Key"] and (spec.code_dir / "app.py").exists()
        assert (spec.timeout, spec.memory, spec.handler) == (props["Timeout"], props["MemorySize"], props["Handler"])


def test_template_a_route_added_to_the_template_appears_locally(
        moto_server: MotoServer, stack_name: str, tmp_path: Path) -> None:
    text = TEMPLATE_PATH.read_text(encoding="utf-8")
    anchor = "      Events:\n        ShowLink:\n"
    assert anchor in text
    added = text.replace(anchor, "      Events:\n" + (
        "        ExtraRoute:\n          Type: HttpApi\n          Properties:\n            ApiId: !Ref HttpApi\n"
        "            Method: PATCH\n            Path: /v1/extra/{thing}\n        ShowLink:\n"), 1)
    copy = tmp_path / "template.yaml"
    copy.write_text(added, encoding="utf-8")
    prov = provision(moto_server.endpoint, template_path=copy, stack_name=stack_name, code_root=REPO_ROOT,
                     parameters=PARAMS)
    routes = {(r.method, r.path): r for r in prov.routes}
    extra = routes[("PATCH", "/v1/extra/{thing}")]
    assert (extra.function, extra.authorizer) == ("LinksFunction", "AuthorizerFunction")  # the API's default
    assert extra.code_dir == REPO_ROOT / "functions" / "links"
    assert len(routes) == _http_api_events(load_template()) + 1


def test_template_a_stack_started_again_with_other_parameters_is_deployed_again(moto_server: MotoServer) -> None:
    """Starting a stack name that exists with other parameter values updates the stack, as a second
    `sam deploy --parameter-overrides` would; the functions' environment follows the new values."""
    first = provision(moto_server.endpoint, stack_name="tparamsagain", parameters={**PARAMS})
    assert first.env["HOLDPOINT_QUOTA_STREAM_WAITS_PER_CALLER"] == "4"
    again = provision(moto_server.endpoint, stack_name="tparamsagain",
                      parameters={**PARAMS, "QuotaStreamWaitsPerCaller": "2"})
    assert again.env["HOLDPOINT_QUOTA_STREAM_WAITS_PER_CALLER"] == "2"
    assert again.env["TABLE_NAME"] == first.env["TABLE_NAME"]  # the same resources, not a second stack
