"""`POST /v1/channels/slack/interactions`: a click on a Slack button becomes a resume. Slack
signs the request (checked against the signing secret the sealed button names) and sends no
bearer token, so API Gateway runs no authorizer here; the click acts as the Slack user's mapped
subject with the client origin, and once the click decides the interrupt (a quorum may need more
answers) the message is updated to say who decided and when."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from holdpoint import assembly
from holdpoint.http import edge
from holdpoint.http.telemetry import count, logger
from holdpoint.services.caller import Caller
from holdpoint.services.resume import resume

router = APIGatewayHttpRouter()
SLACK_PATH = "/v1/channels/slack/interactions"


@router.post(SLACK_PATH, include_in_schema=False)
def slack_interaction() -> dict[str, Any]:
    event = router.current_event
    slack = assembly.get_slack()
    click = slack.click(event.body or "", event.headers)
    logger.append_keys(session_id=click.session_id, interrupt_id=click.interrupt_id)
    stored = assembly.get_store().read_interrupt(click.tenant, click.session_id, click.interrupt_id)
    click = click.choosing(stored)  # a button of another raise of the id: 409, nothing recorded
    who = Caller(tenant=click.tenant, subject=click.subject, origin="client")
    out = resume(assembly.get_store(), assembly.get_parking(), who, click.session_id, click.interrupt_id,
                 edge.check_payload(click.resume_payload()), generation=click.generation, channel="slack")
    if not out.noop:
        count("InterruptsResumed")
    if out.decided:  # a quorum still short keeps its buttons
        try:
            slack.show_decision(click, datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"))
        except Exception:  # noqa: BLE001 - the resume stands; the message keeps its buttons
            logger.exception("slack message update failed")
    return {"ok": True, "interrupt_id": click.interrupt_id, "noop": out.noop}
