"""Issue 19, class 6a: every number read from a header or a query string is exact ASCII digits.
`"²".isdigit()` is true and `int("²")` fails; `int()` and pydantic also take `+1`, ` 1`, `1_0`,
`1.0`, and Arabic-Indic or fullwidth digits. Each of those is a 400 naming the field, never a 500
and never read as some other number; over HTTP on the local stack, and at the edge's one helper."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from holdpoint.core.errors import Refusal
from holdpoint.http.numbers import header_number, parse_digits
from holdpoint.http.routes.streams import last_event_id
from holdpoint.ports import MAX_SEQ
from tests.security.probes import refusal
from tests.stack import Api

NOT_ASCII_DIGITS = ["²", "٣", "３", "+1", " 1", "1 ", "1_0", "1.0", "-0", "0x1", "\u00a01", "1\n", "9" * 40,
                    str(MAX_SEQ + 1)]


@pytest.mark.parametrize("raw", NOT_ASCII_DIGITS)
def test_ascii_numbers_last_event_id_takes_ascii_digits_only(raw: str) -> None:
    with pytest.raises(Refusal) as info:
        last_event_id(raw)
    assert (info.value.code, info.value.param) == ("validation_error", "Last-Event-ID")


def test_ascii_numbers_the_helper_reads_plain_digits() -> None:
    assert last_event_id(None) is None and last_event_id("") is None
    assert last_event_id("0") == 0 and last_event_id("007") == 7 and last_event_id(str(MAX_SEQ)) == MAX_SEQ
    assert header_number("12", "X", 12) == 12
    assert parse_digits("ff", hexadecimal=True) == 255 and parse_digits("٣", hexadecimal=True) is None
    assert parse_digits(3) is None


LAST_EVENT_IDS = [b"\xb2", "٣".encode(), "３".encode(), b"+1", b"1_0", b"9" * 40, str(MAX_SEQ + 1).encode()]
OTHER_QUERIES = ["limit=%2B5", "limit=%205", "limit=%D9%A3", "wait=1.0", "limit=1_0"]


def test_ascii_numbers_over_http(api: Api) -> None:
    """One stack for every probe: Last-Event-ID (raw bytes as sent), after_seq on both event routes,
    and the other integer query parameters; each a 400 naming the field."""
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    for raw in LAST_EVENT_IDS:
        resp = api.http.get(f"{api.base}/v1/sessions/{sid}/events/stream", headers={"Last-Event-ID": raw}, timeout=60)
        refusal(resp, 400, code="validation_error", param="Last-Event-ID")
    for route in ("events", "events/stream"):
        for text in NOT_ASCII_DIGITS:
            refusal(api.req("GET", f"/v1/sessions/{sid}/{route}?after_seq={quote(text, safe='')}"), 400,
                    code="validation_error", param="after_seq")
    for query in OTHER_QUERIES:
        refusal(api.req("GET", f"/v1/sessions/{sid}/events?{query}"), 400, code="validation_error",
                param=query.split("=")[0])
        name = "older_than" if query.startswith("wait") else "limit"
        refusal(api.req("GET", f"/v1/interrupts?{name}={query.split('=')[1]}"), 400, code="validation_error",
                param=name)
    # Plain ASCII digits still page, leading zeros included.
    assert [e["seq"] for e in api.ok("GET", f"/v1/sessions/{sid}/events?after_seq=0&limit=2")["events"]] == [1, 2]
    assert api.ok("GET", f"/v1/sessions/{sid}/events?after_seq=001&limit=1")["events"][0]["seq"] == 2
    resp = api.http.get(f"{api.base}/v1/sessions/{sid}/events/stream", headers={"Last-Event-ID": "1"}, timeout=60)
    assert resp.status_code == 200 and "id: 1\n" not in resp.text and "id: 2\n" in resp.text
