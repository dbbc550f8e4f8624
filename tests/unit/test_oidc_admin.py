"""The admin command `set-identity-provider` (docs/CLI.md) on moto's table: it declares what
`PUT /v1/identity-provider` declares, and says in one line why it will not."""

from __future__ import annotations

import pytest

from holdpoint import admin
from holdpoint.aws.store import Store
from holdpoint.core.identity import cognito_issuer

POOL = "eu-west-1_AbC123"


def test_oidc_admin_declares_a_pool_and_refuses_a_taken_pair(aws: dict[str, str],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    table = aws["TABLE_NAME"]
    common = ["set-identity-provider", "--table", table, "--client-id", "console", "--cognito-pool", POOL,
              "--admit-group", "approvers"]
    assert admin.main([*common, "--tenant", "acme", "--cognito-domain", "https://acme.auth.example.com"]) == 0
    found = Store(table, cache=False).provider_for(cognito_issuer(POOL), "console")
    assert found is not None and found[0] == "acme"
    assert found[1].token_endpoint == "https://acme.auth.example.com/oauth2/token"
    assert admin.main([*common, "--tenant", "globex"]) == 1
    assert "tenant acme declared this issuer" in capsys.readouterr().err
    assert admin.main(["set-identity-provider", "--table", table, "--tenant", "acme", "--client-id", "c",
                       "--discovery-url", "https://idp.example.com/", "--groups-claim", "roles",
                       "--admit-group", "approvers"]) == 1
    assert "openid-configuration" in capsys.readouterr().err


def test_oidc_admin_puts_the_declared_urls_through_the_network_guard(aws: dict[str, str],
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI stores what the route would: a discovery URL at the instance metadata address is
    refused by the same guard, and nothing is declared."""
    table = aws["TABLE_NAME"]
    url = "https://169.254.169.254/.well-known/openid-configuration"
    assert admin.main(["set-identity-provider", "--table", table, "--tenant", "acme", "--client-id", "c",
                       "--discovery-url", url, "--admit-subject", "ann"]) == 1
    assert "discovery_url" in capsys.readouterr().err
    assert Store(table, cache=False).identity_provider("acme") is None


def test_oidc_admin_admits_the_groups_and_subjects_it_is_given(aws: dict[str, str],
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`--admit-group` and `--admit-subject` repeat; with neither, nothing is declared and the one
    line names `admit`."""
    table = aws["TABLE_NAME"]
    common = ["set-identity-provider", "--table", table, "--tenant", "acme", "--client-id", "console",
              "--cognito-pool", POOL]
    assert admin.main(common) == 1
    assert capsys.readouterr().err.startswith("admit: ")
    assert Store(table, cache=False).identity_provider("acme") is None
    assert admin.main([*common, "--admit-group", "finance", "--admit-subject", "u-1", "--admit-group", "ops",
                       "--admit-subject", "u-2"]) == 0
    declared = Store(table, cache=False).identity_provider("acme")
    assert declared is not None and declared.wire()["admit"] == {"groups": ["finance", "ops"],
                                                                 "subjects": ["u-1", "u-2"]}
