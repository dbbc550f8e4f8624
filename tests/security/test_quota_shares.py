"""A share per principal (issue: close the holes, item 3). The tenant's open-interrupt pool once had
no share per caller: an end user raising on her own sessions (20 each) and starting sessions at the
tenant's rate could hold every slot, for up to a year each, and then every other user's approval,
every worker's `interrupt` and the operators' own raises got 429. Now each principal's raises count
against a share of its own, in the same transaction as the tenant's counter: Mallory stops at her
share (429 naming `open_interrupts_per_end_user`, nothing recorded) while Zoe's and the operator's
raises still pass; her session starts stop at her share of the tenant's rate the same way; and an
interrupt she raises with no expiry expires after 7 days. Over HTTP on the local stack, with the
shares set low as template parameters."""

from __future__ import annotations

from typing import Any

from tests.security.probes import client_token_api, refusal, table_count
from tests.security.test_quotas import Limited, idle_session, limited, raise_on

__all__ = ["limited"]


def test_quota_one_end_user_at_her_share_leaves_room_for_others(limited: Limited) -> None:
    stack, api = limited(QuotaOpenInterruptsPerEndUser=3, QuotaOpenInterruptsPerTenant=10,
                         QuotaOpenInterruptsPerSession=20)
    mallory, zoe = client_token_api(stack, "mallory"), client_token_api(stack, "zoe")
    hers = [idle_session(mallory), idle_session(mallory)]
    accepted = [raise_on(mallory, hers[i % 2]) for i in range(3)]
    assert all(r.status_code == 200 for r in accepted), [r.text for r in accepted]
    before = table_count(stack)
    refused = raise_on(mallory, hers[1])
    refusal(refused, 429, code="quota_exceeded", param="open_interrupts_per_end_user")
    assert refused.json()["error"]["limit"] == 3 and table_count(stack) == before
    assert raise_on(zoe, idle_session(zoe)).status_code == 200  # another user's raise passes
    assert raise_on(api, idle_session(api)).status_code == 200  # and the operator's
    assert raise_on(api, hers[0]).status_code == 200  # on her session, the operator's raise is the operator's


def test_quota_an_end_users_session_starts_stop_at_her_share_of_the_rate(limited: Limited) -> None:
    stack, api = limited(QuotaSessionsPerSecondPerEndUser=2, QuotaSessionsPerSecond=50)
    mallory = client_token_api(stack, "mallory")
    answers = [mallory.req("POST", "/v1/sessions", {"type": "client.message", "agent_id": "assistant",
                                                    "message": {"role": "user", "content": "say hi"}})
               for _ in range(6)]
    codes = [a.status_code for a in answers]
    assert codes.count(202) >= 2 and 429 in codes, codes  # seconds turn over: at least her share per second
    refused = next(a for a in answers if a.status_code == 429)
    refusal(refused, 429, code="quota_exceeded", param="sessions_per_second_per_end_user")
    assert api.req("POST", "/v1/sessions", {"type": "client.message", "agent_id": "assistant",
                                            "message": {"role": "user", "content": "say hi"}}).status_code == 202


def test_quota_an_end_users_raise_without_an_expiry_expires_in_seven_days(limited: Limited) -> None:
    stack, api = limited()
    zoe = client_token_api(stack, "zoe")
    raised = raise_on(zoe, idle_session(zoe))
    assert raised.status_code == 200, raised.text
    interrupt: dict[str, Any] = raised.json()["interrupt"]
    assert interrupt["expires_at"] is not None
    operator = raise_on(api, idle_session(api)).json()["interrupt"]
    assert "expires_at" not in operator  # an API key's raise keeps its own (none here)
