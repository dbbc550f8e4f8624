"""An OpenAI Agents SDK agent whose `send_email` waits for a person in Holdpoint
(pip install "./sdk[openai-agents]").

The model is scripted, through the SDK's own model interface, so this runs offline (and tracing
is off: nothing leaves the machine): asked to email Bob, it calls `send_email`, a `needs_approval`
tool; told the tool's output, it says what happened. `start` raises the approval in Holdpoint
with the run's state and exits; a person answers in the inbox, in Slack or with a link; `resume`
takes the answer and the state Holdpoint held, and runs the agent on.

    python examples/openai_agents_approval.py resume     # shell 1: the run's target
    python examples/openai_agents_approval.py start      # shell 2: then approve or deny in the inbox
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agents import Agent, ModelResponse, Runner, Usage, function_tool, set_tracing_disabled  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText  # noqa: E402
from run_approvals import TARGET, Context, Example, main  # noqa: E402

from holdpoint_sdk.integrations import openai_agents as holdpoint  # noqa: E402
from holdpoint_sdk.runs import RunDelivery  # noqa: E402

AGENT_ID = "openai-agents-mailer"
set_tracing_disabled(True)


class ScriptedModel(Model):
    """Answers from the input alone, so a new process's model continues where the last left."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        outputs = [i for i in (input if isinstance(input, list) else [])
                   if isinstance(i, dict) and i.get("type") == "function_call_output"]
        if not outputs:
            said: Any = ResponseFunctionToolCall(id="fc-1", call_id="email-1", type="function_call", name="send_email",
                                                 arguments=json.dumps({"to": "bob"}))
        else:
            output = str(outputs[-1].get("output"))
            text = "I emailed Bob." if output.startswith("email sent") else f"I did not email Bob: {output}"
            said = ResponseOutputMessage(id="msg-1", type="message", role="assistant", status="completed",
                                         content=[ResponseOutputText(type="output_text", text=text, annotations=[])])
        return ModelResponse(output=[said], usage=Usage(), response_id=None)

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted model does not stream")
        yield


def agent(ctx: Context) -> Agent[Any]:
    """The same agent on both sides: Holdpoint holds the run's state between them."""

    @function_tool(needs_approval=True)
    def send_email(to: str) -> str:
        """Send an email."""
        return ctx.send_email(to)

    return Agent(name="mailer", instructions="You send emails.", model=ScriptedModel(), tools=[send_email])


def start(ctx: Context) -> dict[str, Any] | None:
    result = asyncio.run(Runner.run(agent(ctx), "Email Bob"))
    return holdpoint.ask(result, ctx.client, run_id=ctx.run_id, agent_id=AGENT_ID, target=TARGET, **ctx.asked)


def resume(ctx: Context, delivery: RunDelivery) -> str:
    return str(asyncio.run(holdpoint.resume(agent(ctx), delivery, jwks=ctx.jwks)).final_output)


if __name__ == "__main__":
    sys.exit(main(Example(AGENT_ID, start, resume)))
