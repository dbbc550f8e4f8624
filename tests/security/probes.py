"""Helpers the security probes share: what the table holds, and a client token for the stack."""

from __future__ import annotations

from typing import Any

from holdpoint.aws.ddb.schema import PARK
from holdpoint.services.tokens import mint_client_token
from tests.stack import Api
from tests.tables import count_items


def table_count(stack: Any) -> int:
    """Every item the stack's table holds but the park records: a refused request must leave this
    unchanged. A park record (`G#`) is the park message's, which lands on its own time after a
    raise (the engine's, never a request's), so a test that counts right after a park would race it."""
    return count_items(stack.client("dynamodb"), stack.env["TABLE_NAME"], skip_sk_prefix=PARK)


def client_token_api(stack: Any, subject: str, *, tenant: str = "dev", session_id: str | None = None) -> Api:
    """An end user's client: a JWT signed with the stack's own key (as `POST /v1/client-tokens` or the
    admin CLI would mint it)."""
    secret = stack.client("secretsmanager").get_secret_value(SecretId=stack.env["JWT_SECRET_ARN"])["SecretString"]
    return Api(stack.base_url, mint_client_token(secret, tenant, subject, session_id=session_id))


def refusal(resp: Any, status: int, *, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    """Assert a Holdpoint refusal `{"error": {code, message, param?}}` and return the error."""
    assert resp.status_code == status, (resp.status_code, resp.text[:300])
    err = resp.json()["error"]
    if code is not None:
        assert err["code"] == code, err
    if param is not None:
        assert err.get("param") == param, err
    return err
