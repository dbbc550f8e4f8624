"""Fixes 9-15, 22, 31 and 32 to moto 5.2.5's CloudFormation, which creates the translated template.yaml
(provision.py), so it creates what AWS's would.

9. **A FIFO queue CloudFormation names ends in `.fifo`**, as on AWS (moto's generated name was
   refused by its own SQS).
10. **The types moto's CloudFormation lacks**: AWS::SecretsManager::Secret (GenerateSecretString),
    AWS::ApiGatewayV2::Api (its OpenAPI `Body` imported with the Lambda authorizers of
    `securitySchemes` and each operation's `security`, which moto's import skipped, and CORS),
    AWS::ApiGatewayV2::Stage, a WebSocket API's Authorizer, Integration and Route,
    AWS::S3::BucketPolicy and AWS::CloudWatch::Alarm, each created through its service's moto
    backend, so Ref/GetAtt to them resolve (moto left them out and a Ref to one dropped the value,
    e.g. the functions' JWT_SECRET_ARN).
11. **An event source mapping is recorded, not run by moto.** moto ran a mapping itself, invoking
    the function in Docker on every SQS send or stream write and deleting what it delivered; the
    local stack's pollers (emulators/pollers.py, emulators/streams.py) are the Lambda service,
    reading the mapping.
12. **`Ref: AWS::NoValue` in a list removes the element** (moto kept a None; a SAM role whose
    conditional policy is off failed).
13. **`Ref` to an EventBridge bus is its name, to a layer version its ARN** (moto returned its
    model object).
14. **A state machine gets its `DefinitionSubstitutions` and `StateMachineType`** and is created in
    the backend the Step Functions API answers from (the executing one when it is on).
15. **A table gets its `TimeToLiveSpecification` and `PointInTimeRecoverySpecification`.**
22. **AWS::Scheduler::ScheduleGroup**, created in moto's Scheduler, so the timers' group exists
    and `Ref` to it is its name (moto's CloudFormation had no model: the Ref had no value).

32. **AWS::SES::EmailIdentity**, created in moto's SES (the backend SES v2 answers from), so the
    stack's sender identity exists and `Ref` to it is its name (moto's CloudFormation had no model:
    the identity was never made, and SendEmail from it was `MessageRejected`). It is created
    verified, as it is on AWS once the link SES mails the address is followed (the local stack
    follows it; `GetEmailIdentity` answers `VerifiedForSendingStatus: true`).

31. **A KMS key gets its `KeySpec` and `KeyUsage`** (moto made every key SYMMETRIC_DEFAULT
    ENCRYPT_DECRYPT, so the approval receipts' ECC_NIST_P256 SIGN_VERIFY key could not sign), and
    its `KeyPolicy` as the JSON text KMS keeps.

12-15 change no answer moto gives; 9-11 and 22 make its CloudFormation create what AWS's would
(11: moto's own delivery is left to the local stack).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from moto.dynamodb.models import table as table_module


def _fifo_name(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 9: CloudFormation names a FIFO queue it names itself `<stack>-<logical id>-<suffix>.fifo`."""

    @functools.wraps(original)
    def create(cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str,
               **kwargs: Any) -> Any:
        fifo = str(cloudformation_json.get("Properties", {}).get("FifoQueue", "")).lower() == "true"
        if fifo and not str(resource_name).endswith(".fifo"):
            resource_name = str(resource_name)[:75] + ".fifo"
        func: Callable[..., Any] = original.__func__  # type: ignore[attr-defined]
        return func(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)

    create.__holdpoint_fixed__ = True  # type: ignore[attr-defined]
    return classmethod(create)  # type: ignore[arg-type,return-value]


def _kept_not_run(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 11: an event source mapping is recorded (list/get answer it) but moto does not run it."""

    @functools.wraps(original)
    def create(self: Any, spec: dict[str, Any]) -> Any:
        from moto.dynamodb.models import dynamodb_backends
        from moto.sqs.models import sqs_backends

        esm = original(self, spec)
        for queue in sqs_backends[self.account_id][self.region_name].queues.values():
            queue.lambda_event_source_mappings.pop(esm.function_arn, None)
        for table in dynamodb_backends[self.account_id][self.region_name].tables.values():
            table.lambda_event_source_mappings.pop(esm.function_arn, None)
        return esm

    return create


def _authorize_routes(api: Any, body: dict[str, Any]) -> None:
    """What API Gateway's import does with an OpenAPI document's Lambda authorizers and each
    operation's `security`, which moto's import_api skips."""
    ids: dict[str, str] = {}
    for name, scheme in ((body.get("components") or {}).get("securitySchemes") or {}).items():
        spec = scheme.get("x-amazon-apigateway-authorizer")
        if not spec:
            continue
        authorizer = api.create_authorizer(
            auth_creds_arn=spec.get("authorizerCredentials"),
            auth_payload_format_version=spec.get("authorizerPayloadFormatVersion"),
            auth_result_ttl=spec.get("authorizerResultTtlInSeconds"),
            authorizer_type=str(spec.get("type", "request")).upper(), authorizer_uri=spec.get("authorizerUri"),
            enable_simple_response=spec.get("enableSimpleResponses"), identity_source=spec.get("identitySource"),
            identity_validation_expr=None, jwt_config=spec.get("jwtConfiguration"), name=name)
        ids[name] = authorizer.id
    for route in api.routes.values():
        method, _, path = route.route_key.partition(" ")
        operation = body["paths"][path][method.lower()]
        chosen = next(iter(({} if not operation.get("security") else operation["security"][0]) or {}), "NONE")
        if chosen in ids:
            route.authorization_type, route.authorizer_id = "CUSTOM", ids[chosen]
        else:
            route.authorization_type = "NONE"


def _cfn_models() -> list[type[Any]]:
    """Fix 10: the resource types moto's CloudFormation has no model for, each created through the
    service's own moto backend (so Ref/GetAtt to them resolve and the service answers for them)."""
    import json

    from moto.apigatewayv2.models import apigatewayv2_backends
    from moto.cloudwatch.models import cloudwatch_backends
    from moto.core.common_models import CloudFormationModel
    from moto.s3.models import s3_backends
    from moto.secretsmanager.models import secretsmanager_backends

    class _Model:
        """What the models here share; each is a direct CloudFormationModel subclass, which is how moto finds it."""

        kind = ""
        name_property = ""
        attributes: dict[str, str] = {}

        def __init__(self, ref: str, **attrs: Any) -> None:
            self.ref, self.attrs = ref, attrs

        @classmethod
        def cloudformation_type(cls) -> str:
            return cls.kind

        @classmethod
        def cloudformation_name_type(cls) -> str:
            return cls.name_property

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return attr in cls.attributes

        @property
        def physical_resource_id(self) -> str:
            return self.ref

        def get_cfn_attribute(self, attribute_name: str) -> Any:
            return self.attrs[self.attributes[attribute_name]]

    class Secret(_Model, CloudFormationModel):
        kind, name_property, attributes = "AWS::SecretsManager::Secret", "Name", {"Id": "arn"}

        @classmethod
        def create_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                            account_id: str, region_name: str, **kwargs: Any) -> Secret:
            props = cloudformation_json["Properties"]
            backend = secretsmanager_backends[account_id][region_name]
            value = props.get("SecretString")
            if value is None:
                gen = props.get("GenerateSecretString") or {}
                value = json.loads(backend.get_random_password(
                    int(gen.get("PasswordLength", 32)), gen.get("ExcludeCharacters", ""),
                    bool(gen.get("ExcludeNumbers")), bool(gen.get("ExcludePunctuation")),
                    bool(gen.get("ExcludeUppercase")), bool(gen.get("ExcludeLowercase")),
                    bool(gen.get("IncludeSpace")), gen.get("RequireEachIncludedType", True)))["RandomPassword"]
                if gen.get("SecretStringTemplate") and gen.get("GenerateStringKey"):
                    value = json.dumps({**json.loads(gen["SecretStringTemplate"]), gen["GenerateStringKey"]: value})
            made = json.loads(backend.create_secret(
                name=resource_name, secret_string=value, secret_binary=None, description=props.get("Description"),
                tags=props.get("Tags"), kms_key_id=props.get("KmsKeyId"), client_request_token=None,
                replica_regions=[], force_overwrite=False))
            return cls(made["ARN"], arn=made["ARN"])

    class HttpApi(_Model, CloudFormationModel):
        kind, name_property, attributes = "AWS::ApiGatewayV2::Api", "", {"ApiEndpoint": "endpoint", "ApiId": "id"}

        @classmethod
        def create_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                            account_id: str, region_name: str, **kwargs: Any) -> HttpApi:
            props = cloudformation_json["Properties"]
            body = props.get("Body") or {}
            settings: dict[str, Any] = {
                "api_key_selection_expression": None, "cors_configuration": props.get("CorsConfiguration"),
                "description": props.get("Description"), "disable_schema_validation": None,
                "disable_execute_api_endpoint": props.get("DisableExecuteApiEndpoint"),
                "name": props.get("Name") or (body.get("info") or {}).get("title") or resource_name,
                "protocol_type": props.get("ProtocolType", "HTTP"),
                "route_selection_expression": props.get("RouteSelectionExpression"),
                "tags": {}, "version": None,
            }
            api = apigatewayv2_backends[account_id][region_name].create_api(**settings)
            if body:
                api.import_api(json.dumps(body), fail_on_warnings=False)
                _authorize_routes(api, body)
            return cls(api.api_id, id=api.api_id, endpoint=api.api_endpoint)

    class Stage(_Model, CloudFormationModel):
        kind, name_property = "AWS::ApiGatewayV2::Stage", "StageName"

        @classmethod
        def create_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                            account_id: str, region_name: str, **kwargs: Any) -> Stage:
            props = cloudformation_json["Properties"]
            api = apigatewayv2_backends[account_id][region_name].get_api(props["ApiId"])
            config = {key[0].lower() + key[1:]: value for key, value in props.items() if key != "ApiId"}
            return cls(api.create_stage(config).name)

    class BucketPolicy(_Model, CloudFormationModel):
        kind = "AWS::S3::BucketPolicy"

        @classmethod
        def create_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                            account_id: str, region_name: str, **kwargs: Any) -> BucketPolicy:
            props = cloudformation_json["Properties"]
            backend = s3_backends[account_id]["aws"]
            backend.put_bucket_policy(props["Bucket"], json.dumps(props["PolicyDocument"]).encode())
            return cls(props["Bucket"])

    class Alarm(_Model, CloudFormationModel):
        kind, name_property, attributes = "AWS::CloudWatch::Alarm", "AlarmName", {"Arn": "arn"}

        @classmethod
        def create_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                            account_id: str, region_name: str, **kwargs: Any) -> Alarm:
            p = cloudformation_json["Properties"]
            alarm = cloudwatch_backends[account_id][region_name].put_metric_alarm(
                name=resource_name, namespace=p.get("Namespace"), metric_name=p.get("MetricName"),
                comparison_operator=p["ComparisonOperator"], evaluation_periods=int(p["EvaluationPeriods"]),
                period=int(p.get("Period", 60)), threshold=float(p.get("Threshold", 0)), statistic=p.get("Statistic"),
                description=p.get("AlarmDescription"), dimensions=p.get("Dimensions", []),
                alarm_actions=p.get("AlarmActions", []), ok_actions=p.get("OKActions", []),
                insufficient_data_actions=p.get("InsufficientDataActions", []),
                treat_missing_data=p.get("TreatMissingData"))
            return cls(resource_name, arn=alarm.alarm_arn)

    return [Secret, HttpApi, Stage, BucketPolicy, Alarm, _schedule_group(_Model), _email_identity(_Model),
            *_websocket_models(_Model)]


def _schedule_group(base: type[Any]) -> type[Any]:
    """Fix 22: AWS::Scheduler::ScheduleGroup, created in moto's Scheduler (Ref: its name)."""
    from moto.core.common_models import CloudFormationModel
    from moto.scheduler.models import scheduler_backends

    class ScheduleGroup(base, CloudFormationModel):  # type: ignore[misc]
        kind, name_property, attributes = "AWS::Scheduler::ScheduleGroup", "Name", {"Arn": "arn"}

        @classmethod
        def create_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                            account_id: str, region_name: str, **kwargs: Any) -> ScheduleGroup:
            group = scheduler_backends[account_id][region_name].create_schedule_group(resource_name, [])
            return cls(group.name, arn=group.arn)

    return ScheduleGroup




def _email_identity(base: type[Any]) -> type[Any]:
    """Fix 32: AWS::SES::EmailIdentity, created verified in moto's SES (Ref: the identity)."""
    from moto.core.common_models import CloudFormationModel
    from moto.ses.models import ses_backends

    class EmailIdentity(base, CloudFormationModel):  # type: ignore[misc]
        kind, name_property = "AWS::SES::EmailIdentity", "EmailIdentity"

        @classmethod
        def create_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                            account_id: str, region_name: str, **kwargs: Any) -> EmailIdentity:
            name = str(cloudformation_json["Properties"]["EmailIdentity"])
            made = ses_backends[account_id][region_name].create_email_identity_v2(name, None, None, None)
            made.verified_for_sending_status = True  # the verification link, followed
            return cls(name)

    return EmailIdentity


def _api(props: dict[str, Any], account_id: str, region_name: str) -> Any:
    from moto.apigatewayv2.models import apigatewayv2_backends

    return apigatewayv2_backends[account_id][region_name].get_api(props["ApiId"])


def _websocket_models(base: type[Any]) -> list[type[Any]]:
    """Fix 10's WebSocket part: AWS::ApiGatewayV2::Authorizer, ::Integration and ::Route, each
    created through moto's ApiGatewayV2 backend, so `Ref` to one is its id and GetRoutes,
    GetIntegration and GetAuthorizer answer for it (moto finds a model as a direct
    CloudFormationModel subclass; `base` is what fix 10's models share)."""
    from moto.core.common_models import CloudFormationModel

    class Authorizer(base, CloudFormationModel):  # type: ignore[misc]
        kind = "AWS::ApiGatewayV2::Authorizer"

        @classmethod
        def create_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                            account_id: str, region_name: str, **kwargs: Any) -> Authorizer:
            p = cloudformation_json["Properties"]
            made = _api(p, account_id, region_name).create_authorizer(
                auth_creds_arn=p.get("AuthorizerCredentialsArn"),
                auth_payload_format_version=p.get("AuthorizerPayloadFormatVersion"),
                auth_result_ttl=p.get("AuthorizerResultTtlInSeconds"), authorizer_type=p["AuthorizerType"],
                authorizer_uri=p.get("AuthorizerUri"), enable_simple_response=p.get("EnableSimpleResponses"),
                identity_source=p.get("IdentitySource"), identity_validation_expr=p.get("IdentityValidationExpression"),
                jwt_config=p.get("JwtConfiguration"), name=p.get("Name") or resource_name)
            return cls(made.id)

    class Integration(base, CloudFormationModel):  # type: ignore[misc]
        kind = "AWS::ApiGatewayV2::Integration"

        @classmethod
        def create_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                            account_id: str, region_name: str, **kwargs: Any) -> Integration:
            p = cloudformation_json["Properties"]
            made = _api(p, account_id, region_name).create_integration(
                connection_type=p.get("ConnectionType"), description=p.get("Description"),
                integration_method=p.get("IntegrationMethod", "POST"), integration_type=p["IntegrationType"],
                integration_uri=p.get("IntegrationUri"), payload_format_version=p.get("PayloadFormatVersion"),
                timeout_in_millis=p.get("TimeoutInMillis"))
            return cls(made.id)

    class Route(base, CloudFormationModel):  # type: ignore[misc]
        kind = "AWS::ApiGatewayV2::Route"

        @classmethod
        def create_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                            account_id: str, region_name: str, **kwargs: Any) -> Route:
            p = cloudformation_json["Properties"]
            made = _api(p, account_id, region_name).create_route(
                api_key_required=bool(p.get("ApiKeyRequired")), authorization_scopes=p.get("AuthorizationScopes") or [],
                route_key=p["RouteKey"], target=p.get("Target"), authorization_type=p.get("AuthorizationType", "NONE"),
                authorizer_id=p.get("AuthorizerId"),
                route_response_selection_expression=p.get("RouteResponseSelectionExpression"))
            return cls(made.route_id)

    return [Authorizer, Integration, Route]


CFN_TYPES = ("AWS::SecretsManager::Secret", "AWS::ApiGatewayV2::Api", "AWS::ApiGatewayV2::Stage",
             "AWS::S3::BucketPolicy", "AWS::CloudWatch::Alarm", "AWS::Scheduler::ScheduleGroup",
             "AWS::ApiGatewayV2::Authorizer", "AWS::ApiGatewayV2::Integration", "AWS::ApiGatewayV2::Route",
             "AWS::SES::EmailIdentity")
"""The resource types fix 10 gives moto's CloudFormation."""


def apply() -> None:
    """Install fixes 9-15, 22, 31 and 32 (`holdpoint_local.moto.apply` calls this once)."""
    from moto.awslambda.models import LambdaBackend
    from moto.cloudformation import parsing
    from moto.kms.models import Key
    from moto.sqs.models import Queue
    from moto.stepfunctions.models import StateMachine

    Table = table_module.Table

    Queue.create_from_cloudformation_json = _fifo_name(Queue.create_from_cloudformation_json)  # type: ignore[method-assign]
    LambdaBackend.create_event_source_mapping = _kept_not_run(  # type: ignore[method-assign]
        LambdaBackend.create_event_source_mapping)
    parsing.clean_json = _no_value_in_lists(parsing.clean_json)
    _MODELS.extend(_cfn_models())
    _refs()
    StateMachine.create_from_cloudformation_json = _state_machine(  # type: ignore[method-assign]
        StateMachine.create_from_cloudformation_json)
    Table.create_from_cloudformation_json = _table_settings(  # type: ignore[method-assign]
        Table.create_from_cloudformation_json)
    Key.create_from_cloudformation_json = classmethod(_key_spec)  # type: ignore[method-assign,assignment,arg-type]
    parsing.get_model_map.cache_clear()
    parsing.get_name_type_map.cache_clear()



_MODELS: list[type[Any]] = []  # kept referenced: moto finds models as CloudFormationModel subclasses


def _no_value_in_lists(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 12: `Ref: AWS::NoValue` (an `Fn::If` branch) in a list removes the element, as on AWS;
    moto kept a None there (a SAM role whose conditional policy is off then failed to create)."""

    @functools.wraps(original)
    def clean(resource_json: Any, resources_map: Any) -> Any:
        if isinstance(resource_json, list):
            return [v for v in (original(item, resources_map) for item in resource_json) if v is not None]
        return original(resource_json, resources_map)

    return clean


def _refs() -> None:
    """Fix 13: `Ref` to an EventBridge bus is its name and to a layer version its ARN, as on AWS;
    moto had no physical id for either, so the Ref put moto's model object itself in the template
    (a function whose environment named the bus could not be created)."""
    from moto.awslambda.models import LayerVersion
    from moto.events.models import EventBus

    EventBus.physical_resource_id = property(lambda self: self.name)  # type: ignore[attr-defined]
    LayerVersion.physical_resource_id = property(lambda self: self.arn)  # type: ignore[attr-defined]


def _state_machine(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 14: a state machine from CloudFormation gets its `DefinitionSubstitutions` and
    `StateMachineType`, and lives in the backend the Step Functions API answers from (the executing
    one when `execute_state_machine` is on); moto ignored both and always used the plain backend."""

    @functools.wraps(original)
    def create(cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str,
               **kwargs: Any) -> Any:
        from moto.stepfunctions.responses import get_backend
        from moto.stepfunctions.utils import cfn_to_api_tags

        props = cloudformation_json["Properties"]
        definition = str(props.get("DefinitionString", ""))
        for key, value in (props.get("DefinitionSubstitutions") or {}).items():
            definition = definition.replace("${" + key + "}", str(value))
        return get_backend(account_id, region_name).create_state_machine(
            props.get("StateMachineName", resource_name), definition, props.get("RoleArn", ""),
            tags=cfn_to_api_tags(props.get("Tags", [])),
            sm_type=props.get("StateMachineType", "STANDARD"))

    return classmethod(create)  # type: ignore[arg-type,return-value]


def _key_spec(cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str,
              **kwargs: Any) -> Any:
    """Fix 31: a key from CloudFormation is created with its `KeySpec` and `KeyUsage`."""
    from moto.kms.models import kms_backends

    props = cloudformation_json["Properties"]
    policy = props.get("KeyPolicy")
    key = kms_backends[account_id][region_name].create_key(
        policy=json.dumps(policy) if isinstance(policy, dict) else policy,
        key_usage=props.get("KeyUsage", "ENCRYPT_DECRYPT"), key_spec=props.get("KeySpec", "SYMMETRIC_DEFAULT"),
        description=props.get("Description"), tags=props.get("Tags", []))
    key.key_rotation_status = str(props.get("EnableKeyRotation", False)).lower() == "true"
    key.enabled = str(props.get("Enabled", True)).lower() == "true"
    return key


def _table_settings(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 15: a table from CloudFormation gets its `TimeToLiveSpecification` and
    `PointInTimeRecoverySpecification`; moto's CloudFormation dropped both."""

    @functools.wraps(original)
    def create(cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str,
               **kwargs: Any) -> Any:
        from moto.dynamodb.models import dynamodb_backends

        func: Callable[..., Any] = original.__func__  # type: ignore[attr-defined]
        table = func(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
        props = cloudformation_json["Properties"]
        backend = dynamodb_backends[account_id][region_name]
        if props.get("TimeToLiveSpecification"):
            backend.update_time_to_live(table.name, props["TimeToLiveSpecification"])
        if props.get("PointInTimeRecoverySpecification"):
            backend.update_continuous_backups(table.name, props["PointInTimeRecoverySpecification"])
        return table

    return classmethod(create)  # type: ignore[arg-type,return-value]
