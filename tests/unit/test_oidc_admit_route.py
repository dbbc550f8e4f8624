"""`PUT /v1/identity-provider`'s `admit` through the API handler on moto: a declaration must say
who of the provider's people signs in (docs/SECURITY.md "Identity providers (sign-in)"), or it is
a 400 naming `admit` that records nothing; `GET` shows it as declared."""

from __future__ import annotations

from typing import Any

from tests.unit.test_api import api as api  # the fixture
from tests.unit.test_api import assert_error, call_api, table_items

POOL = "eu-west-1_AbC123"
PATH = "/v1/identity-provider"


def _put(body: dict[str, Any]) -> tuple[int, Any]:
    return call_api("PUT", PATH, body, origin="operator")


def _pool(**admit: Any) -> dict[str, Any]:
    return {"cognito": {"user_pool_id": POOL}, "client_id": "console", **admit}


def test_oidc_a_declaration_that_admits_no_one_is_400_naming_admit(api: dict[str, str]) -> None:
    before = table_items()
    for body in (_pool(), _pool(admit={}), _pool(admit={"groups": [], "subjects": []}), _pool(admit=None),
                 _pool(admit=["finance"]), _pool(admit={"groups": [""]}), _pool(admit={"subjects": ["x" * 129]}),
                 _pool(admit={"groups": [f"g{i}" for i in range(51)]}), _pool(admit={"groups": "finance"}),
                 _pool(admit={"groups": ["finance"], "roles": ["ops"]})):
        status, answer = _put(body)
        assert_error(status, answer, 400, code="validation_error")
        assert answer["error"]["param"].startswith("admit"), (body, answer)
    status, answer = _put(_pool(admit={"groups": [], "subjects": []}))
    assert answer["error"]["param"] == "admit" and "at least one group or subject" in answer["error"]["message"]
    assert table_items() == before
    assert_error(*call_api("GET", PATH, origin="operator"), 404, code="not_found")


def test_oidc_a_declaration_admits_groups_and_subjects_and_shows_them(api: dict[str, str]) -> None:
    admit = {"groups": ["finance", "ops"], "subjects": ["3f2a-u-1"]}
    status, declared = _put(_pool(admit=admit))
    assert status == 200 and declared["admit"] == admit, declared
    assert call_api("GET", PATH, origin="operator") == (200, declared)
    # Either list alone is enough; the other is shown empty.
    status, declared = _put(_pool(admit={"subjects": ["3f2a-u-1"]}))
    assert status == 200 and declared["admit"] == {"groups": [], "subjects": ["3f2a-u-1"]}, declared
