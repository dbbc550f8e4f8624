"""A LangGraph agent whose `send_email` waits for a person in Holdpoint
(pip install "./sdk[langgraph]" langgraph-checkpoint-sqlite).

The model is scripted, through LangChain's own chat model interface, so this runs offline: asked
to email Bob, it calls `send_email`; told the tool's result, it says what happened. The tool asks
with `approval(...)` (LangGraph's `interrupt()`); `start` raises it in Holdpoint and exits; a
person answers in the inbox, in Slack or with a link; `resume` takes the answer and continues the
thread from its SQLite checkpoints.

    python examples/langgraph_approval.py resume     # shell 1: the run's target
    python examples/langgraph_approval.py start      # shell 2: then approve or deny in the inbox
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402
from langgraph.prebuilt import ToolNode, tools_condition  # noqa: E402
from run_approvals import TARGET, Context, Example, main  # noqa: E402

from holdpoint_sdk import runs  # noqa: E402
from holdpoint_sdk.integrations import langgraph as holdpoint  # noqa: E402

AGENT_ID = "langgraph-mailer"


class ScriptedModel(GenericFakeChatModel):
    """Answers from the conversation alone, so a new process's model continues where the last left."""

    messages: Any = iter(())

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            said = str(last.content)
            text = "I emailed Bob." if said.startswith("email sent") else f"I did not email Bob: {said}"
            reply = AIMessage(content=text)
        else:
            reply = AIMessage(content="", tool_calls=[{"name": "send_email", "args": {"to": "bob"},
                                                       "id": "email-1", "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def graph(ctx: Context) -> Any:
    """The same graph on both sides: the checkpointer holds the interrupted thread between them."""

    @tool
    def send_email(to: str) -> str:
        """Send an email."""
        try:
            approved = holdpoint.approved("send_email", {"to": to}, f"Send an email to {to}?", jwks=ctx.jwks)
        except runs.NotApproved as refused:
            return str(refused)
        return ctx.send_email(approved["to"])  # after the approval: a node re-runs from its start on resume

    model = ScriptedModel()
    built = StateGraph(MessagesState)
    built.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    built.add_node("tools", ToolNode([send_email]))
    built.add_edge(START, "agent")
    built.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    built.add_edge("tools", "agent")
    checkpoints = sqlite3.connect(ctx.workdir / "checkpoints.sqlite", check_same_thread=False)
    return built.compile(checkpointer=SqliteSaver(checkpoints))


def start(ctx: Context) -> dict[str, Any] | None:
    config = {"configurable": {"thread_id": ctx.run_id}}
    result = graph(ctx).invoke({"messages": [("user", "Email Bob")]}, config)
    return holdpoint.ask(result, ctx.client, config=config, run_id=ctx.run_id, agent_id=AGENT_ID, target=TARGET,
                         **ctx.asked)


def resume(ctx: Context, delivery: runs.RunDelivery) -> str:
    return str(holdpoint.resume(graph(ctx), delivery)["messages"][-1].content)


if __name__ == "__main__":
    sys.exit(main(Example(AGENT_ID, start, resume)))
