"""Attacks on the email channel (docs/SECURITY.md, "Email"): what a worker, a model or an end user
puts in an interrupt or a tool call reaches the email only as text. The real engine parks a turn,
the notifier renders the message and sends it through SES v2 on moto's in-process AWS, and the
message moto kept is read back.

- markup in an argument or the question is HTML-escaped: no tag, no attribute, no second link;
- CR/LF in the reason (or the question) never reaches the Subject header, which is one bounded line;
- a huge argument makes a bounded email;
- a recipient that smuggles a header, a name or a second address is refused where it is declared,
  and an entry a worker swapped into the config in force is refused when the message is sent."""

from __future__ import annotations

import re
from typing import Any

import pytest

from holdpoint.core.agent_config import AgentConfig
from holdpoint.core.errors import Refusal
from holdpoint.notify.mail_render import SUBJECT_CHARS, VALUE_CHARS
from holdpoint.outbound.declared import check_agent
from holdpoint.ports import DeliveryRefused
from tests.unit.test_email_channel import ASK, ENTRY, emailing, sent
from tests.unit.test_notify import bus as bus  # noqa: F401 - the bus and the DLQ
from tests.unit.test_notify import raised

pytestmark = pytest.mark.usefixtures("aws", "bus")

SCRIPT = '<script>alert(1)</script><img src=x onerror="alert(2)"><a href="https://evil.example/">Approve</a>'


def script(arguments: dict[str, Any]) -> dict[str, Any]:
    """A scripted model that calls send_email with `arguments`."""
    return {"provider": "scripted", "script": [
        {"when": {"role": "user"}, "reply": {"tool_calls": [{"name": "send_email", "arguments": arguments}]}},
        {"when": {"role": "tool"}, "reply": {"content": "done"}}]}


def one_email(monkeypatch: pytest.MonkeyPatch, ask: dict[str, Any] | None = None, **agent: Any) -> Any:
    h, n = emailing(monkeypatch, ask=ask, **agent)
    before = len(sent())
    raised(h, n)
    [message] = sent(before)
    return message


def test_email_channel_attack_markup_in_arguments_and_question_is_escaped(monkeypatch: pytest.MonkeyPatch) -> None:
    ask = {**ASK, "payload": {"message": f"Approve? {SCRIPT}"}}
    message = one_email(monkeypatch, ask, llm=script({"to": SCRIPT, SCRIPT: "x"}))
    html = message.body
    assert "<script" not in html and "<img" not in html and "onerror=\"" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    hrefs = re.findall(r'href="([^"]*)"', html)
    assert len(hrefs) == 2 and all(h.startswith("https://api.example.com/v1/links/") for h in hrefs)
    assert len(re.findall(r"<a ", html)) == 2  # the attacker's <a> is text


@pytest.mark.parametrize("ask", [
    {**ASK, "reason": "confirm\r\nBcc: eve@evil.example\r\n\r\n<b>forged body</b>", "payload": {"note": 1}},
    {**ASK, "payload": {"message": "Send?\r\nBcc: eve@evil.example\nX-Evil: 1\u2028Reply-To: eve@evil.example"}},
])
def test_email_channel_attack_crlf_never_reaches_the_subject(monkeypatch: pytest.MonkeyPatch,
                                                             ask: dict[str, Any]) -> None:
    message = one_email(monkeypatch, ask)
    subject = message.subject
    assert not re.search(r"[\r\n\x00-\x1f\u2028\u2029]", subject) and len(subject) <= SUBJECT_CHARS
    assert "Bcc: eve@evil.example" in subject  # kept as text on the one line, not as a header
    assert message.destinations == {"ToAddresses": ENTRY["email"]["to"]}  # nobody was added


def test_email_channel_attack_a_huge_argument_makes_a_bounded_email(monkeypatch: pytest.MonkeyPatch) -> None:
    huge = "A" * 300_000
    message = one_email(monkeypatch, llm=script({"to": "bob", "body": huge, **{f"k{i}": i for i in range(100)}}))
    assert huge not in message.body and len(message.body) < 40_000
    values = re.findall(r"<code>([^<]*)</code>", message.body)
    assert max(len(v) for v in values) <= VALUE_CHARS + 12  # `&quot;` escapes lengthen a value a little
    assert "more</p>" in message.body  # arguments past the first 40 are counted, not shown
    subject_words = message.subject
    assert len(subject_words) <= SUBJECT_CHARS


@pytest.mark.parametrize("address", [
    "ann@example.com\r\nBcc: eve@evil.example", "ann@example.com\nX-Evil: 1", "Eve <eve@evil.example>",
    "ann@example.com, eve@evil.example", '"ann"@example.com', "ann@example.com\x00", "a" * 250 + "@example.com",
])
def test_email_channel_attack_a_smuggling_recipient_is_refused_where_declared(address: str) -> None:
    with pytest.raises(Refusal) as err:
        check_agent(AgentConfig.model_validate({"notify": [{"email": {"to": [address]}}]}), "acme")
    assert (err.value.code, err.value.param) == ("validation_error", "notify[0].email.to[0]")


def test_email_channel_attack_an_entry_swapped_into_the_config_in_force_is_refused_at_send(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The channel re-checks the entry it is handed: a record whose recipients were never checked
    (a worker may replace the config in force) sends nothing and is dead-lettered."""
    h, n = emailing(monkeypatch)
    before = len(sent())
    mail = n.channels["notify.email"]
    prepared = {"subject": "s", "text": "t", "html": "h"}
    with pytest.raises(DeliveryRefused, match="recipients are not valid"):
        mail.deliver({"type": "interrupt.raised"}, {"email": {"to": ["a@example.com\r\nBcc: e@evil.example"]}},
                     {}, prepared)
    assert sent(before) == []
