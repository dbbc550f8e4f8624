"""A Strands agent whose `send_email` waits for a person in Holdpoint (pip install "./sdk[strands]").

The model is scripted, through Strands' own model interface, so this runs offline: asked to email
Bob, it calls `send_email`; told the tool's result, it says what happened. The hook interrupts the
run before the call; `start` raises it in Holdpoint and exits; a person answers in the inbox, in
Slack or with a link; `resume` takes the answer and continues the agent from its session files.

    python examples/strands_approval.py resume     # shell 1: the run's target
    python examples/strands_approval.py start      # shell 2: then approve or deny in the inbox
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator, AsyncIterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run_approvals import TARGET, Context, Example, main  # noqa: E402
from strands import Agent, tool  # noqa: E402
from strands.models import Model  # noqa: E402
from strands.session import FileSessionManager  # noqa: E402

from holdpoint_sdk.integrations import strands as holdpoint  # noqa: E402
from holdpoint_sdk.runs import RunDelivery  # noqa: E402

AGENT_ID = "strands-mailer"


class ScriptedModel(Model):
    """Answers from the conversation alone, so a new process's model continues where the last left."""

    def __init__(self) -> None:
        self.config: dict[str, Any] = {}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return self.config

    def structured_output(self, output_model: Any, prompt: Any, system_prompt: Any = None,
                          **kwargs: Any) -> AsyncGenerator[Any, None]:
        raise NotImplementedError("the scripted model answers in text and tool calls only")

    async def stream(self, messages: Any, tool_specs: Any = None, system_prompt: Any = None,
                     **kwargs: Any) -> AsyncIterable[Any]:
        results = [c["toolResult"] for c in messages[-1]["content"] if "toolResult" in c]
        yield {"messageStart": {"role": "assistant"}}
        if not results:
            yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": "email-1", "name": "send_email"}}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps({"to": "bob"})}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
        else:
            said = results[0]["content"][0].get("text", "")
            text = "I emailed Bob." if results[0]["status"] == "success" else f"I did not email Bob: {said}"
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": text}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}


def agent(ctx: Context, session_id: str) -> Agent:
    """The same agent on both sides: the session manager holds the interrupted run between them."""

    @tool
    def send_email(to: str) -> str:
        """Send an email.

        Args:
            to: who to email
        """
        return ctx.send_email(to)

    return Agent(model=ScriptedModel(), tools=[send_email], agent_id="mailer", callback_handler=None,
                 hooks=[holdpoint.HoldpointApprovals(["send_email"], jwks=ctx.jwks)],
                 session_manager=FileSessionManager(session_id=session_id, storage_dir=str(ctx.workdir / "sessions")))


def start(ctx: Context) -> dict[str, Any] | None:
    result = agent(ctx, ctx.run_id)("Email Bob")
    return holdpoint.ask(result, ctx.client, run_id=ctx.run_id, agent_id=AGENT_ID, target=TARGET,
                         session={"session_id": ctx.run_id}, **ctx.asked)


def resume(ctx: Context, delivery: RunDelivery) -> str:
    result = holdpoint.resume(agent(ctx, str(delivery.state["session"]["session_id"])), delivery)
    return str(result)


if __name__ == "__main__":
    sys.exit(main(Example(AGENT_ID, start, resume)))
