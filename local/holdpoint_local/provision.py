"""Create the resources of template.yaml on a moto endpoint, so the local stack runs what the template
says (the template is the source of truth) rather than a hand-kept copy of it.

Only what the handlers touch is created (table, queues, bucket, secret, state machines); functions,
the HTTP API and alarms are read for their wiring (env, routes, SQS mappings). Idempotent: against a
moto server that already has the resources (kept alive across a restart) they are reused.
"""

from __future__ import annotations

import json
import re
import secrets
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import yaml
from botocore.exceptions import ClientError

from . import ACCOUNT_ID, REGION

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_PATH = REPO_ROOT / "template.yaml"

ENV_KEYS = ("TABLE_NAME", "WORK_QUEUE_URL", "PARK_STATE_MACHINE_ARN", "PAYLOAD_BUCKET", "JWT_SECRET_ARN")
DUMMY_ROLE_ARN = f"arn:aws:iam::{ACCOUNT_ID}:role/holdpoint-local"

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
    """One HttpApi event: `routeKey` is what API Gateway puts in the event ("POST /v1/sessions")."""

    method: str
    path: str
    function: str  # logical id
    code_dir: Path
    authorizer: str | None  # logical id of the authorizer function, None when Auth: NONE
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


@dataclass
class Provisioned:
    """What the local stack needs to run the handlers against the provisioned resources."""

    env: dict[str, str]
    routes: list[Route]
    sqs_mappings: list[SqsMapping]
    functions: dict[str, FunctionSpec]
    resources: dict[str, dict[str, str]] = field(default_factory=dict)
    api_id: str = "local"
    cors: dict[str, Any] | None = None  # the HTTP API's CorsConfiguration, as the template resolves it
    stream_mappings: list[StreamMapping] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """Plain view: env vars + route table + SQS mappings."""
        return {
            **self.env,
            "routes": [(r.method, r.path, r.function, str(r.code_dir), r.auth) for r in self.routes],
            "sqs_mappings": [(m.queue_url, m.function) for m in self.sqs_mappings],
        }


# ----------------------------------------------------------------------------- provisioner


def _bucket_name(raw: str) -> str:
    name = re.sub(r"[^a-z0-9.-]", "-", raw.lower()).strip("-.")
    return name[:63] or "holdpoint-local"


class Provisioner:
    """Resolves intrinsics lazily: a Ref/GetAtt to a resource provisions that resource first."""

    def __init__(
        self,
        endpoint_url: str,
        template: dict[str, Any] | None = None,
        *,
        stack_name: str = "holdpoint",
        code_root: str | Path = REPO_ROOT,
        region: str = REGION,
        parameters: dict[str, str] | None = None,
    ) -> None:
        self.template = template if template is not None else load_template()
        self.stack_name = stack_name
        self.code_root = Path(code_root)
        self.region = region
        self.endpoint_url = endpoint_url
        self.resources_def: dict[str, Any] = self.template.get("Resources", {})
        self.params: dict[str, Any] = {
            k: v.get("Default", "") for k, v in self.template.get("Parameters", {}).items()
        }
        self.params.update(parameters or {})
        self._attrs: dict[str, dict[str, str]] = {}
        self._in_progress: set[str] = set()
        self._clients: dict[str, Any] = {}

    # -- clients ----------------------------------------------------------------
    def client(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = boto3.client(
                service,
                endpoint_url=self.endpoint_url,
                region_name=self.region,
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            )
        return self._clients[service]

    # -- intrinsics -------------------------------------------------------------
    def pseudo(self, name: str) -> Any:
        pseudo = {
            "AWS::Region": self.region,
            "AWS::AccountId": ACCOUNT_ID,
            "AWS::StackName": self.stack_name,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackId": f"arn:aws:cloudformation:{self.region}:{ACCOUNT_ID}:stack/{self.stack_name}/local",
            "AWS::NoValue": None,
        }
        if name in pseudo:
            return pseudo[name]
        if name in self.params:
            return self.params[name]
        return self.ensure(name)["Ref"]

    def condition(self, name: str) -> bool:
        return bool(self.resolve(self.template.get("Conditions", {})[name]))

    def resolve(self, value: Any) -> Any:
        """Evaluate CloudFormation intrinsic functions in `value`."""
        if isinstance(value, list):
            out = [self.resolve(v) for v in value]
            return [v for v in out if v is not None]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            intrinsic = self._INTRINSICS.get(key)
            if intrinsic is not None:
                return intrinsic(self, arg)
        resolved = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v is not None}

    def _get_att(self, arg: Any) -> Any:
        logical, attr = arg if isinstance(arg, list) else str(arg).split(".", 1)
        return self.ensure(logical)[attr]

    def _join(self, arg: Any) -> str:
        sep, items = arg
        return str(sep).join(str(i) for i in self.resolve(items))

    def _if(self, arg: Any) -> Any:
        cond, yes, no = arg
        return self.resolve(yes if self.condition(cond) else no)

    def _equals(self, arg: Any) -> bool:
        a, b = self.resolve(arg)
        return bool(a == b)

    def _select(self, arg: Any) -> Any:
        idx, items = self.resolve(arg)
        return items[int(idx)]

    def _split(self, arg: Any) -> list[str]:
        sep, text = self.resolve(arg)
        return str(text).split(sep)

    _INTRINSICS: dict[str, Callable[[Provisioner, Any], Any]] = {
        "Ref": lambda self, arg: self.pseudo(arg),
        "Fn::GetAtt": _get_att,
        "Fn::Sub": lambda self, arg: self._sub(arg),
        "Fn::Join": _join,
        "Fn::If": _if,
        "Fn::Equals": _equals,
        "Fn::Not": lambda self, arg: not self.resolve(arg[0]),
        "Fn::And": lambda self, arg: all(self.resolve(arg)),
        "Fn::Or": lambda self, arg: any(self.resolve(arg)),
        "Condition": lambda self, arg: self.condition(arg),
        "Fn::Select": _select,
        "Fn::Split": _split,
        "Fn::ToJsonString": lambda self, arg: json.dumps(self.resolve(arg)),
    }

    def _sub(self, arg: Any) -> str:
        text, local = (arg, {}) if isinstance(arg, str) else (arg[0], self.resolve(arg[1]))

        def repl(match: re.Match[str]) -> str:
            ref = match.group(1)
            if ref.startswith("!"):
                return "${" + ref[1:] + "}"
            if ref in local:
                return str(local[ref])
            if "." in ref and not ref.startswith("AWS::"):
                logical, attr = ref.split(".", 1)
                return str(self.ensure(logical)[attr])
            return str(self.pseudo(ref))

        return re.sub(r"\$\{([^}]+)\}", repl, text)

    # -- resources --------------------------------------------------------------
    def ensure(self, logical: str) -> dict[str, str]:
        """Provision (or look up) one resource and return its Ref/GetAtt attributes."""
        if logical in self._attrs:
            return self._attrs[logical]
        if logical in self._in_progress:
            raise ValueError(f"circular reference through {logical}")
        if logical not in self.resources_def:
            raise KeyError(f"template has no resource or parameter {logical!r}")
        self._in_progress.add(logical)
        try:
            res = self.resources_def[logical]
            creator = self._CREATORS.get(res["Type"], Provisioner._placeholder)
            attrs = creator(self, logical, res.get("Properties", {}) or {})
        finally:
            self._in_progress.discard(logical)
        self._attrs[logical] = attrs
        return attrs

    def _name(self, logical: str, props: dict[str, Any], key: str) -> str:
        if props.get(key):
            return str(self.resolve(props[key]))
        return f"{self.stack_name}-{logical}"

    def _placeholder(self, logical: str, props: dict[str, Any]) -> dict[str, str]:
        """Resources the local stack does not emulate still get plausible Ref/Arn values."""
        name = f"{self.stack_name}-{logical}"
        return {
            "Ref": name,
            "Arn": f"arn:aws:lambda:{self.region}:{ACCOUNT_ID}:function:{name}",
            "Name": name,
        }

    def _table(self, logical: str, props: dict[str, Any]) -> dict[str, str]:
        p = self.resolve(props)
        name = self._name(logical, p, "TableName")
        ddb = self.client("dynamodb")
        kwargs: dict[str, Any] = {
            "TableName": name,
            "AttributeDefinitions": p["AttributeDefinitions"],
            "KeySchema": p["KeySchema"],
            "BillingMode": p.get("BillingMode", "PROVISIONED"),
        }
        if p.get("GlobalSecondaryIndexes"):
            kwargs["GlobalSecondaryIndexes"] = p["GlobalSecondaryIndexes"]
        if p.get("LocalSecondaryIndexes"):
            kwargs["LocalSecondaryIndexes"] = p["LocalSecondaryIndexes"]
        if p.get("ProvisionedThroughput"):
            kwargs["ProvisionedThroughput"] = p["ProvisionedThroughput"]
        if p.get("StreamSpecification"):
            kwargs["StreamSpecification"] = {"StreamEnabled": True, **p["StreamSpecification"]}
        try:
            ddb.create_table(**kwargs)
            ttl = p.get("TimeToLiveSpecification")
            if ttl and ttl.get("Enabled"):
                ddb.update_time_to_live(TableName=name, TimeToLiveSpecification=ttl)
            pitr = p.get("PointInTimeRecoverySpecification")
            if pitr:
                ddb.update_continuous_backups(
                    TableName=name, PointInTimeRecoverySpecification=pitr
                )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ResourceInUseException":
                raise
        desc = ddb.describe_table(TableName=name)["Table"]
        return {"Ref": name, "Arn": desc["TableArn"], "StreamArn": desc.get("LatestStreamArn", "")}

    _SQS_ATTRS = (
        "DelaySeconds", "MaximumMessageSize", "MessageRetentionPeriod", "ReceiveMessageWaitTimeSeconds",
        "VisibilityTimeout", "FifoQueue", "ContentBasedDeduplication", "DeduplicationScope",
        "FifoThroughputLimit", "SqsManagedSseEnabled",
    )  # fmt: skip

    def _queue(self, logical: str, props: dict[str, Any]) -> dict[str, str]:
        p = self.resolve(props)
        fifo = bool(p.get("FifoQueue"))
        name = self._name(logical, p, "QueueName")
        if fifo and not name.endswith(".fifo"):
            name += ".fifo"
        attrs: dict[str, str] = {}
        for key in self._SQS_ATTRS:
            if key in p:
                val = p[key]
                attrs[key] = str(val).lower() if isinstance(val, bool) else str(val)
        if "RedrivePolicy" in p:
            attrs["RedrivePolicy"] = json.dumps(p["RedrivePolicy"])
        sqs = self.client("sqs")
        try:
            url = sqs.create_queue(QueueName=name, Attributes=attrs)["QueueUrl"]
        except ClientError as exc:
            if exc.response["Error"]["Code"] not in ("QueueAlreadyExists", "QueueNameExists"):
                raise
            url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
            settable = {k: v for k, v in attrs.items() if k not in ("FifoQueue",)}
            sqs.set_queue_attributes(QueueUrl=url, Attributes=settable)
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return {"Ref": url, "Arn": arn, "QueueName": name, "QueueUrl": url}

    def _bucket(self, logical: str, props: dict[str, Any]) -> dict[str, str]:
        p = self.resolve(props)
        name = _bucket_name(self._name(logical, p, "BucketName"))
        s3 = self.client("s3")
        try:
            if self.region == "us-east-1":
                s3.create_bucket(Bucket=name)
            else:
                s3.create_bucket(
                    Bucket=name, CreateBucketConfiguration={"LocationConstraint": self.region}
                )
        except ClientError as exc:
            if exc.response["Error"]["Code"] not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                raise
        if p.get("BucketEncryption"):
            # CloudFormation spells it ServerSideEncryptionByDefault; the S3 API ApplyServerSide...
            rules = [
                {"ApplyServerSideEncryptionByDefault": r["ServerSideEncryptionByDefault"]}
                for r in p["BucketEncryption"]["ServerSideEncryptionConfiguration"]
            ]
            s3.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration={"Rules": rules})
        if p.get("PublicAccessBlockConfiguration"):
            s3.put_public_access_block(
                Bucket=name, PublicAccessBlockConfiguration=p["PublicAccessBlockConfiguration"]
            )
        return {
            "Ref": name,
            "Arn": f"arn:aws:s3:::{name}",
            "DomainName": f"{name}.s3.amazonaws.com",
            "RegionalDomainName": f"{name}.s3.{self.region}.amazonaws.com",
        }

    def _secret(self, logical: str, props: dict[str, Any]) -> dict[str, str]:
        p = self.resolve(props)
        name = self._name(logical, p, "Name")
        sm = self.client("secretsmanager")
        value = p.get("SecretString") or self._generate_secret(p.get("GenerateSecretString") or {})
        try:
            arn = sm.create_secret(Name=name, SecretString=value, Description=p.get("Description", ""))["ARN"]
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ResourceExistsException":
                raise
            arn = sm.describe_secret(SecretId=name)["ARN"]
        return {"Ref": arn, "Id": arn, "Name": name}

    @staticmethod
    def _generate_secret(spec: dict[str, Any]) -> str:
        length = int(spec.get("PasswordLength", 32))
        alphabet = string.ascii_letters + string.digits
        if not spec.get("ExcludePunctuation"):
            alphabet += "!#$%&()*+,-.:;<=>?[]^_{|}~"
        excluded = set(spec.get("ExcludeCharacters", ""))
        alphabet = "".join(c for c in alphabet if c not in excluded)
        generated = "".join(secrets.choice(alphabet) for _ in range(length))
        if spec.get("SecretStringTemplate") and spec.get("GenerateStringKey"):
            doc = json.loads(spec["SecretStringTemplate"])
            doc[spec["GenerateStringKey"]] = generated
            return json.dumps(doc)
        return generated

    def _state_machine(self, logical: str, props: dict[str, Any]) -> dict[str, str]:
        name = self._name(logical, props, "Name" if "Name" in props else "StateMachineName")
        if "Definition" in props:
            definition = json.dumps(props["Definition"])  # SAM: literal ${Var} kept for substitutions
        elif "DefinitionString" in props:
            definition = self.resolve(props["DefinitionString"])
        elif "DefinitionUri" in props and isinstance(props["DefinitionUri"], str):
            uri = self.code_root / props["DefinitionUri"]
            text = uri.read_text(encoding="utf-8")
            definition = json.dumps(yaml.safe_load(text)) if uri.suffix in (".yaml", ".yml") else text
        else:
            raise ValueError(f"{logical}: no Definition/DefinitionString/DefinitionUri")
        for key, val in (self.resolve(props.get("DefinitionSubstitutions")) or {}).items():
            definition = definition.replace("${" + key + "}", str(val))
        sm_type = props.get("Type") or props.get("StateMachineType") or "STANDARD"
        sfn = self.client("stepfunctions")
        arn = f"arn:aws:states:{self.region}:{ACCOUNT_ID}:stateMachine:{name}"
        try:
            arn = sfn.create_state_machine(
                name=name, definition=definition, roleArn=DUMMY_ROLE_ARN, type=sm_type
            )["stateMachineArn"]
        except ClientError as exc:
            if exc.response["Error"]["Code"] not in ("StateMachineAlreadyExists", "ConflictException"):
                raise
            current = sfn.describe_state_machine(stateMachineArn=arn)
            if current["definition"] != definition:
                sfn.update_state_machine(stateMachineArn=arn, definition=definition)
        return {"Ref": arn, "Arn": arn, "Name": name}

    def _event_bus(self, logical: str, props: dict[str, Any]) -> dict[str, str]:
        p = self.resolve(props)
        name = self._name(logical, p, "Name")
        events = self.client("events")
        try:
            arn = events.create_event_bus(Name=name)["EventBusArn"]
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ResourceAlreadyExistsException":
                raise
            arn = events.describe_event_bus(Name=name)["Arn"]
        return {"Ref": name, "Arn": arn, "Name": name}

    def _http_api(self, logical: str, props: dict[str, Any]) -> dict[str, str]:
        api_id = re.sub(r"[^a-z0-9]", "", f"{self.stack_name}{logical}".lower())[:10] or "local"
        return {"Ref": api_id, "ApiId": api_id, "ApiEndpoint": f"http://{api_id}.local"}

    _CREATORS: dict[str, Callable[[Provisioner, str, dict[str, Any]], dict[str, str]]] = {
        "AWS::DynamoDB::Table": _table,
        "AWS::SQS::Queue": _queue,
        "AWS::S3::Bucket": _bucket,
        "AWS::SecretsManager::Secret": _secret,
        "AWS::Serverless::StateMachine": _state_machine,
        "AWS::StepFunctions::StateMachine": _state_machine,
        "AWS::Serverless::HttpApi": _http_api,
        "AWS::Events::EventBus": _event_bus,
    }

    _EMULATED = (
        "AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::S3::Bucket", "AWS::SecretsManager::Secret",
        "AWS::Serverless::StateMachine", "AWS::StepFunctions::StateMachine", "AWS::Events::EventBus",
    )  # fmt: skip

    # -- wiring -------------------------------------------------------------------
    def _functions(self) -> dict[str, FunctionSpec]:
        glob = self.template.get("Globals", {}).get("Function", {})
        glob_env = self.resolve(glob.get("Environment", {}).get("Variables", {}))
        out: dict[str, FunctionSpec] = {}
        for logical, res in self.resources_def.items():
            if res["Type"] != "AWS::Serverless::Function":
                continue
            props = res.get("Properties", {})
            env = {**glob_env, **self.resolve(props.get("Environment", {}).get("Variables", {}))}
            out[logical] = FunctionSpec(
                logical_id=logical,
                code_dir=self.code_root / str(props.get("CodeUri", glob.get("CodeUri", "."))),
                handler=str(props.get("Handler", glob.get("Handler", "app.handler"))),
                timeout=int(props.get("Timeout", glob.get("Timeout", 3))),
                memory=int(props.get("MemorySize", glob.get("MemorySize", 128))),
                env={k: str(v) for k, v in env.items() if v is not None},
            )
        return out

    def _authorizers(self) -> dict[str, tuple[dict[str, str], str | None]]:
        """HttpApi logical id -> ({authorizer name: function logical id}, default authorizer name)."""
        out: dict[str, tuple[dict[str, str], str | None]] = {}
        for logical, res in self.resources_def.items():
            if res["Type"] != "AWS::Serverless::HttpApi":
                continue
            auth = res.get("Properties", {}).get("Auth", {}) or {}
            names: dict[str, str] = {}
            for name, spec in (auth.get("Authorizers") or {}).items():
                fn = spec.get("FunctionArn", {})
                if isinstance(fn, dict) and "Fn::GetAtt" in fn:
                    names[name] = fn["Fn::GetAtt"][0]
            out[logical] = (names, auth.get("DefaultAuthorizer"))
        return out

    def _identity_headers(self, api: str, authorizer_name: str) -> tuple[str, ...]:
        spec = self.resources_def[api]["Properties"]["Auth"]["Authorizers"][authorizer_name]
        headers = (spec.get("Identity") or {}).get("Headers") or ["Authorization"]
        return tuple(h.lower() for h in headers)

    def provision(self) -> Provisioned:
        for logical, res in self.resources_def.items():
            if res["Type"] in self._EMULATED:
                self.ensure(logical)
        functions = self._functions()
        authorizers = self._authorizers()
        routes: list[Route] = []
        mappings: list[SqsMapping] = []
        streams: list[StreamMapping] = []
        for logical, spec in functions.items():
            events = self.resources_def[logical].get("Properties", {}).get("Events", {}) or {}
            for event in events.values():
                props = event.get("Properties", {}) or {}
                if event["Type"] == "HttpApi":
                    api_ref = props.get("ApiId", {})
                    api = api_ref.get("Ref") if isinstance(api_ref, dict) else None
                    api = api or next(iter(authorizers), "")
                    names, default = authorizers.get(api, ({}, None))
                    chosen = (props.get("Auth") or {}).get("Authorizer", default)
                    authorizer = None if chosen in (None, "NONE") else names.get(chosen)
                    routes.append(
                        Route(
                            method=str(props.get("Method", "ANY")).upper(),
                            path=str(props.get("Path", "$default")),
                            function=logical,
                            code_dir=spec.code_dir,
                            authorizer=authorizer,
                            identity_headers=self._identity_headers(api, str(chosen)) if authorizer else (),
                        )
                    )
                elif event["Type"] == "DynamoDB":
                    streams.append(self._stream_mapping(logical, props))
                elif event["Type"] == "SQS":
                    queue = props["Queue"]["Fn::GetAtt"][0]
                    q = self.ensure(queue)
                    mappings.append(
                        SqsMapping(
                            queue_logical_id=queue,
                            queue_url=q["QueueUrl"],
                            queue_arn=q["Arn"],
                            function=logical,
                            batch_size=int(props.get("BatchSize", 10)),
                            report_batch_item_failures="ReportBatchItemFailures"
                            in (props.get("FunctionResponseTypes") or []),
                        )
                    )
        env = next(iter(functions.values())).env if functions else {}
        api_id = next((self.ensure(a)["Ref"] for a in authorizers), "local")
        cors = next((self.resolve(self.resources_def[a].get("Properties", {}).get("CorsConfiguration"))
                     for a in authorizers), None)
        return Provisioned(
            env={k: v for k, v in env.items()},
            routes=routes,
            sqs_mappings=mappings,
            functions=functions,
            resources=dict(self._attrs),
            api_id=api_id,
            cors=cors or None,
            stream_mappings=streams,
        )

    def _stream_mapping(self, function: str, props: dict[str, Any]) -> StreamMapping:
        p = self.resolve(props)
        table = props["Stream"]["Fn::GetAtt"][0]
        filters = tuple(json.loads(f["Pattern"]) for f in (p.get("FilterCriteria") or {}).get("Filters") or [])
        on_failure = ((p.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination")
        queue_url = None
        if on_failure:
            queue_url = next((a["QueueUrl"] for a in self._attrs.values() if a.get("Arn") == on_failure
                              and "QueueUrl" in a), None)
        return StreamMapping(
            table_logical_id=table, stream_arn=str(p["Stream"]), function=function,
            batch_size=int(p.get("BatchSize", 100)), starting_position=str(p.get("StartingPosition", "LATEST")),
            filters=filters, max_retries=int(p.get("MaximumRetryAttempts", -1)),
            bisect=bool(p.get("BisectBatchOnFunctionError")),
            report_batch_item_failures="ReportBatchItemFailures" in (p.get("FunctionResponseTypes") or []),
            on_failure_queue_url=queue_url,
        )


def provision(
    endpoint_url: str,
    *,
    template_path: str | Path = TEMPLATE_PATH,
    stack_name: str = "holdpoint",
    code_root: str | Path | None = None,
    parameters: dict[str, str] | None = None,
) -> Provisioned:
    """Provision template.yaml on `endpoint_url` (with template `parameters` overridden); see
    `Provisioned` for what comes back."""
    template = load_template(template_path)
    root = Path(code_root) if code_root else Path(template_path).resolve().parent
    prov = Provisioner(endpoint_url, template, stack_name=stack_name, code_root=root, parameters=parameters)
    return prov.provision()
