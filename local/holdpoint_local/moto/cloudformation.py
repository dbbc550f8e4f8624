"""Fix 10's WebSocket part: the ApiGatewayV2 resources a WebSocket API is made of in CloudFormation
(AWS::ApiGatewayV2::Authorizer, ::Integration, ::Route), which moto's CloudFormation has no model
for. Each is created through moto's own ApiGatewayV2 backend, so `Ref` to one is its id and
GetRoutes/GetIntegration/GetAuthorizer answer for it, as for an API created by the API calls.

Loaded by `holdpoint_local.moto.apply()` inside the moto server (and the unit tests' in-process moto).
"""

from __future__ import annotations

from typing import Any

CFN_TYPES = ("AWS::ApiGatewayV2::Authorizer", "AWS::ApiGatewayV2::Integration", "AWS::ApiGatewayV2::Route")


def _api(props: dict[str, Any], account_id: str, region_name: str) -> Any:
    from moto.apigatewayv2.models import apigatewayv2_backends

    return apigatewayv2_backends[account_id][region_name].get_api(props["ApiId"])


def models() -> list[type[Any]]:
    """The three model classes (moto finds a model as a direct CloudFormationModel subclass)."""
    from moto.core.common_models import CloudFormationModel

    class _Part:
        kind = ""

        def __init__(self, ref: str) -> None:
            self.ref = ref

        @classmethod
        def cloudformation_type(cls) -> str:
            return cls.kind

        @classmethod
        def cloudformation_name_type(cls) -> str:
            return ""

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return False

        @property
        def physical_resource_id(self) -> str:
            return self.ref

    class Authorizer(_Part, CloudFormationModel):
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

    class Integration(_Part, CloudFormationModel):
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

    class Route(_Part, CloudFormationModel):
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
