"""Create template.yaml on a moto endpoint as AWS would: the template goes through the official
Serverless transform (aws-sam-translator) and the CloudFormation it gives is created by moto's
CloudFormation (`create_stack`). The local stack then reads its wiring back from what was created:
each function's configuration, the HTTP API's routes and authorizer, the event source mappings.

Idempotent: a stack name is created once; against a moto server that already has it (kept alive
across a restart) the stack is described, not created again.
"""

from __future__ import annotations

import copy
import functools
import io
import json
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import yaml
from botocore.exceptions import ClientError
from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator

from . import ACCOUNT_ID, REGION

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_PATH = REPO_ROOT / "template.yaml"
CODE_BUCKET = "holdpoint-local-code"
"""Where the function and layer code objects go, as `sam package` uploads them (a placeholder zip:
the local runtime loads the handlers from the repo's directories)."""

# ----------------------------------------------------------------------------- template loading


class CfnLoader(yaml.SafeLoader):  # type: ignore[misc]
    """SafeLoader that understands CloudFormation short-form tags (!Ref, !GetAtt, !Sub, ...)."""


def _construct(tag: str) -> Callable[[CfnLoader, yaml.Node], Any]:
    key = "Ref" if tag == "Ref" else ("Condition" if tag == "Condition" else f"Fn::{tag}")

    def build(loader: CfnLoader, node: yaml.Node) -> Any:
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
            if tag == "GetAtt":
                value = str(value).split(".", 1)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        return {key: value}

    return build


for _tag in (
    "Ref", "Condition", "GetAtt", "Sub", "If", "Not", "Equals", "And", "Or", "Join", "Select", "Split",
    "FindInMap", "Base64", "GetAZs", "ImportValue", "Cidr", "Length", "ToJsonString",
):  # fmt: skip
    CfnLoader.add_constructor(f"!{_tag}", _construct(_tag))


def load_template(path: str | Path = TEMPLATE_PATH) -> dict[str, Any]:
    """Parse a CloudFormation/SAM template, short-form tags included."""
    with open(path, encoding="utf-8") as fh:
        template: dict[str, Any] = yaml.load(fh, Loader=CfnLoader)  # noqa: S506 - CfnLoader is a SafeLoader
        return template


# ----------------------------------------------------------------------------- result types


@dataclass(frozen=True)
class Route:
    """One route of the HTTP API: `routeKey` is what API Gateway puts in the event ("POST /v1/sessions")."""

    method: str
    path: str
    function: str  # logical id
    code_dir: Path
    authorizer: str | None  # logical id of the authorizer function, None when the route has none
    identity_headers: tuple[str, ...] = ("authorization",)

    @property
    def auth(self) -> bool:
        return self.authorizer is not None

    @property
    def route_key(self) -> str:
        return f"{self.method} {self.path}"


@dataclass(frozen=True)
class SqsMapping:
    """One SQS event source mapping (queue -> function), as Lambda's poller would run it."""

    queue_logical_id: str
    queue_url: str
    queue_arn: str
    function: str
    batch_size: int
    report_batch_item_failures: bool


@dataclass(frozen=True)
class StreamMapping:
    """One DynamoDB Streams event source mapping (table stream -> function), as Lambda would run it."""

    table_logical_id: str
    stream_arn: str
    function: str
    batch_size: int
    starting_position: str
    filters: tuple[dict[str, Any], ...]  # FilterCriteria patterns, parsed
    max_retries: int  # MaximumRetryAttempts (-1: until the record expires)
    bisect: bool
    report_batch_item_failures: bool
    on_failure_queue_url: str | None


@dataclass(frozen=True)
class FunctionSpec:
    logical_id: str
    code_dir: Path
    handler: str  # "app.handler"
    timeout: int
    memory: int
    env: dict[str, str]
    role_arn: str = ""  # the function's execution role, as the transform generated it
    arn: str = ""


@dataclass
class Provisioned:
    """What the local stack needs to run the handlers against the created stack."""

    env: dict[str, str]
    routes: list[Route]
    sqs_mappings: list[SqsMapping]
    functions: dict[str, FunctionSpec]
    resources: dict[str, str] = field(default_factory=dict)  # logical id -> physical id
    api_id: str = "local"
    cors: dict[str, Any] | None = None  # the HTTP API's CorsConfiguration, as the created API has it
    stream_mappings: list[StreamMapping] = field(default_factory=list)
    template: dict[str, Any] = field(default_factory=dict)  # the translated template that was created

    def as_dict(self) -> dict[str, Any]:
        """Plain view: env vars + route table + SQS mappings."""
        return {
            **self.env,
            "routes": [(r.method, r.path, r.function, str(r.code_dir), r.auth) for r in self.routes],
            "sqs_mappings": [(m.queue_url, m.function) for m in self.sqs_mappings],
        }


# ----------------------------------------------------------------------------- the transform


class _NoIamPolicies:
    """The managed-policy map the transform asks for by name; this template names none, so no IAM
    is called (the roles' AWSLambda*ExecutionRole ARNs the transform writes itself)."""

    def load(self) -> dict[str, str]:
        return {}


def translate(template: dict[str, Any], *, stack_name: str = "holdpoint", region: str = REGION,
              parameters: dict[str, str] | None = None) -> dict[str, Any]:
    """The CloudFormation the Serverless transform makes of `template`, with each function's CodeUri
    and the layer's ContentUri first rewritten to `s3://CODE_BUCKET/<dir>` as `sam package` would."""
    sam = copy.deepcopy(template)
    for res in sam.get("Resources", {}).values():
        props = res.setdefault("Properties", {})
        key = {"AWS::Serverless::Function": "CodeUri", "AWS::Serverless::LayerVersion": "ContentUri"}.get(res["Type"])
        if key:
            props[key] = f"s3://{CODE_BUCKET}/{str(props.get(key, '.')).strip('/')}"
    values: dict[str, Any] = {
        "AWS::Region": region, "AWS::AccountId": ACCOUNT_ID, "AWS::StackName": stack_name, "AWS::Partition": "aws",
        "AWS::StackId": f"arn:aws:cloudformation:{region}:{ACCOUNT_ID}:stack/{stack_name}/local",
        "AWS::URLSuffix": "amazonaws.com", **(parameters or {}),
    }  # fmt: skip
    policies = _NoIamPolicies().load()
    translator = Translator(None, Parser(), boto_session=boto3.session.Session(region_name=region))
    out: dict[str, Any] = translator.translate(sam, parameter_values=values, get_managed_policy_map=lambda: policies)
    plain: dict[str, Any] = json.loads(json.dumps(out))  # plain dicts and strs (the transform marks its strings)
    return plain


STACK_MARK = "hpStackMarkQ"  # stands for the stack name in a translation kept for reuse


@functools.lru_cache(maxsize=8)
def _translated_text(template_path: str, modified_ns: int, parameters: tuple[tuple[str, str], ...]) -> str:
    """The transform of a template file under STACK_MARK, as JSON text: about a second of work that
    every stack of a test run would repeat, though they differ only in name (`modified_ns` makes an
    edited template translate afresh)."""
    return json.dumps(translate(load_template(template_path), stack_name=STACK_MARK, parameters=dict(parameters)))


def translate_file(template_path: str | Path, stack_name: str, parameters: dict[str, str]) -> dict[str, Any]:
    """`translate` of a template file for `stack_name`: the marked translation with the name put in.
    The one difference from translating under the name itself is the layer version's logical id,
    a hash the transform takes of it, which nothing reads but the stack's own references."""
    path = Path(template_path).resolve()
    text = _translated_text(str(path), path.stat().st_mtime_ns, tuple(sorted(parameters.items())))
    translated: dict[str, Any] = json.loads(text.replace(STACK_MARK, stack_name))
    return translated


# ----------------------------------------------------------------------------- creating the stack


class _Stack:
    """The translated template created on one moto endpoint, and the reads back from it."""

    def __init__(self, endpoint_url: str, region: str) -> None:
        self.endpoint_url, self.region = endpoint_url, region
        self._clients: dict[str, Any] = {}

    def client(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = boto3.client(
                service, endpoint_url=self.endpoint_url, region_name=self.region,
                aws_access_key_id="testing", aws_secret_access_key="testing",
            )  # fmt: skip
        return self._clients[service]

    def upload_code(self, translated: dict[str, Any]) -> None:
        """One placeholder object per code location, which Lambda's CreateFunction reads."""
        s3 = self.client("s3")
        try:
            s3.create_bucket(Bucket=CODE_BUCKET)
        except ClientError as exc:
            if exc.response["Error"]["Code"] not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                raise
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("README", "holdpoint local stack: the handlers run from the repository\n")
        for key in sorted(set(_code_keys(translated).values())):
            s3.put_object(Bucket=CODE_BUCKET, Key=key, Body=buf.getvalue())

    def create(self, stack_name: str, translated: dict[str, Any], parameters: dict[str, str]) -> dict[str, str]:
        """Create the stack unless it exists; its resources, logical id -> physical id."""
        cfn = self.client("cloudformation")
        given = {"TemplateBody": json.dumps(translated), "Capabilities": ["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"],
                 "Parameters": [{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()]}
        try:
            existing = cfn.describe_stacks(StackName=stack_name)["Stacks"][0]
        except ClientError as exc:
            if "does not exist" not in str(exc):
                raise
            self.upload_code(translated)
            cfn.create_stack(StackName=stack_name, **given)
        else:  # started again with other parameter values: deployed again, as `sam deploy` would
            current = {p["ParameterKey"]: p.get("ParameterValue") for p in existing.get("Parameters", [])}
            if any(current.get(k) != v for k, v in parameters.items()):
                cfn.update_stack(StackName=stack_name, **given)
        resources = cfn.describe_stack_resources(StackName=stack_name)["StackResources"]
        return {r["LogicalResourceId"]: r["PhysicalResourceId"] for r in resources if r.get("PhysicalResourceId")}


def _code_keys(translated: dict[str, Any]) -> dict[str, str]:
    """Function logical id -> the S3 key of its code (the directory its CodeUri named)."""
    return {
        logical: res["Properties"].get("Code", res["Properties"].get("Content", {}))["S3Key"]
        for logical, res in translated["Resources"].items()
        if res["Type"] in ("AWS::Lambda::Function", "AWS::Lambda::LayerVersion")
    }


def _of_type(translated: dict[str, Any], kind: str) -> list[str]:
    return [logical for logical, res in translated["Resources"].items() if res["Type"] == kind]


def _functions(stack: _Stack, translated: dict[str, Any], resources: dict[str, str],
               code_root: Path) -> dict[str, FunctionSpec]:
    lam, keys = stack.client("lambda"), _code_keys(translated)
    out: dict[str, FunctionSpec] = {}
    for logical in _of_type(translated, "AWS::Lambda::Function"):
        conf = lam.get_function_configuration(FunctionName=resources[logical])
        out[logical] = FunctionSpec(
            logical_id=logical, code_dir=code_root / keys[logical], handler=conf["Handler"],
            timeout=int(conf["Timeout"]), memory=int(conf["MemorySize"]),
            env=_strings(conf.get("Environment", {}).get("Variables", {})), role_arn=conf["Role"],
            arn=conf["FunctionArn"],
        )  # fmt: skip
    return out


def _strings(variables: dict[str, Any]) -> dict[str, str]:
    """Lambda's environment is strings; moto's CloudFormation keeps a Number parameter's Ref as an int."""
    return {name: str(value) for name, value in variables.items()}


def _function_of(uri: str, functions: dict[str, FunctionSpec]) -> str:
    """The logical id of the function an integration or authorizer URI invokes."""
    return next(spec.logical_id for spec in functions.values() if f"/functions/{spec.arn}/" in uri)


def _routes(stack: _Stack, api_id: str, functions: dict[str, FunctionSpec]) -> list[Route]:
    api = stack.client("apigatewayv2")
    routes: list[Route] = []
    for route in api.get_routes(ApiId=api_id)["Items"]:
        target = api.get_integration(ApiId=api_id, IntegrationId=route["Target"].split("/", 1)[1])
        function = _function_of(target["IntegrationUri"], functions)
        authorizer, headers = None, ()
        if route.get("AuthorizationType") == "CUSTOM":
            auth = api.get_authorizer(ApiId=api_id, AuthorizerId=route["AuthorizerId"])
            authorizer = _function_of(auth["AuthorizerUri"], functions)
            headers = tuple(s.removeprefix("$request.header.").lower() for s in auth.get("IdentitySource", []))
        method, _, path = route["RouteKey"].partition(" ")
        routes.append(Route(method=method, path=path, function=function, code_dir=functions[function].code_dir,
                            authorizer=authorizer, identity_headers=headers))
    return routes


def _mappings(stack: _Stack, translated: dict[str, Any], resources: dict[str, str],
              functions: dict[str, FunctionSpec]) -> tuple[list[SqsMapping], list[StreamMapping]]:
    lam, sqs = stack.client("lambda"), stack.client("sqs")
    by_arn = {spec.arn: logical for logical, spec in functions.items()}
    queue_urls = {sqs.get_queue_attributes(QueueUrl=resources[q], AttributeNames=["QueueArn"])["Attributes"]
                  ["QueueArn"]: resources[q] for q in _of_type(translated, "AWS::SQS::Queue")}
    logical_of = {physical: logical for logical, physical in resources.items()}
    sqs_mappings: list[SqsMapping] = []
    streams: list[StreamMapping] = []
    for logical in _of_type(translated, "AWS::Lambda::EventSourceMapping"):
        esm = lam.get_event_source_mapping(UUID=resources[logical])
        source, function = esm["EventSourceArn"], by_arn[esm["FunctionArn"]]
        partial = "ReportBatchItemFailures" in (esm.get("FunctionResponseTypes") or [])
        if source in queue_urls:
            sqs_mappings.append(SqsMapping(
                queue_logical_id=logical_of[queue_urls[source]], queue_url=queue_urls[source], queue_arn=source,
                function=function, batch_size=int(esm.get("BatchSize", 10)), report_batch_item_failures=partial))
            continue
        table_name = source.split(":table/", 1)[1].split("/stream/", 1)[0]
        on_failure = ((esm.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination")
        streams.append(StreamMapping(
            table_logical_id=logical_of[table_name], stream_arn=source, function=function,
            batch_size=int(esm.get("BatchSize", 100)), starting_position=str(esm.get("StartingPosition", "LATEST")),
            filters=tuple(json.loads(f["Pattern"]) for f in (esm.get("FilterCriteria") or {}).get("Filters", [])),
            max_retries=int(esm.get("MaximumRetryAttempts", -1)), bisect=bool(esm.get("BisectBatchOnFunctionError")),
            report_batch_item_failures=partial, on_failure_queue_url=queue_urls.get(on_failure or ""),
        ))  # fmt: skip
    return sqs_mappings, streams


def provision(
    endpoint_url: str,
    *,
    template_path: str | Path = TEMPLATE_PATH,
    stack_name: str = "holdpoint",
    code_root: str | Path | None = None,
    parameters: dict[str, str] | None = None,
) -> Provisioned:
    """Translate template.yaml (with template `parameters` overridden), create it on `endpoint_url`
    as stack `stack_name` (once) and read back what the local stack runs; see `Provisioned`."""
    root = Path(code_root) if code_root else Path(template_path).resolve().parent
    params = dict(parameters or {})
    translated = translate_file(template_path, stack_name, params)
    stack = _Stack(endpoint_url, REGION)
    resources = stack.create(stack_name, translated, params)
    functions = _functions(stack, translated, resources, root)
    apis = [a for a in _of_type(translated, "AWS::ApiGatewayV2::Api")  # the HTTP API (live.py: the WebSocket one)
            if translated["Resources"][a]["Properties"].get("ProtocolType", "HTTP") == "HTTP"]
    api_id = resources[apis[0]] if apis else "local"
    sqs_mappings, streams = _mappings(stack, translated, resources, functions)
    envs = [spec.env for spec in functions.values()]
    common = {k: v for k, v in envs[0].items() if all(e.get(k) == v for e in envs)} if envs else {}
    cors = stack.client("apigatewayv2").get_api(ApiId=api_id).get("CorsConfiguration") if apis else None
    return Provisioned(
        env=common, routes=_routes(stack, api_id, functions) if apis else [], sqs_mappings=sqs_mappings,
        functions=functions, resources=resources, api_id=api_id, cors=cors or None, stream_mappings=streams,
        template=translated,
    )  # fmt: skip
