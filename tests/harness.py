"""In-process harness: the real Runner and services on a store and adapters given to it: the
in-memory ones (`holdpoint_local.memory`, under the `memory` fixture) or the DynamoDB store and the AWS
adapters on moto's in-process AWS (the `aws` fixture).

Neither runs ParkBranch, so the harness plays its two messages (`park` with a task token, `wake`
after the resume); the end-to-end tests run the real state machine on the moto server instead.
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from holdpoint import assembly
from holdpoint.aws.ddb.parking import ParkRecords
from holdpoint.aws.parking import Parking
from holdpoint.aws.queue import WorkQueue
from holdpoint.aws.queue import from_queue as work_message
from holdpoint.aws.store import Store
from holdpoint.core.messages import Park
from holdpoint.core.protocols.client import ClientMessageInput, ClientMessagesInput, InterruptResumeInput
from holdpoint.core.state import SessionState
from holdpoint.outbound import workers
from holdpoint.ports import ParkRecord
from holdpoint.ports import ParkRecords as Records
from holdpoint.services import sessions
from holdpoint.services.caller import Caller
from holdpoint.services.resume import Resumed, resume
from holdpoint_local.memory.ports import MemoryParking, MemoryQueue, MemoryTimers
from holdpoint_local.memory.store import MemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from seed_worker import decide as seed_decide  # noqa: E402

Worker = Callable[[dict[str, Any]], dict[str, Any]]
_names = itertools.count()

BACKEND = "dynamodb"
"""What a Harness built without a store runs on: "memory" under the `memory` fixture."""
MEMORY: MemoryStore | None = None
"""The `memory` fixture's store, one per test as moto's table is: every Harness of a test shares it."""


def adapters(backend: str | None = None) -> tuple[Any, Any, Any, Any]:
    """(store, queue, parking, timers): in memory (the test's store, fresh adapters), or the AWS
    adapters (inside `aws`)."""
    if (backend or BACKEND) == "memory":
        queue = MemoryQueue()
        return MEMORY or MemoryStore(), queue, MemoryParking(queue), MemoryTimers()
    store = Store()
    return store, WorkQueue(), Parking(records=ParkRecords(store.db)), assembly.get_timers()

SEND_EMAIL_SCRIPT = [
    {"when": {"role": "user", "contains": "say hi"}, "reply": {"content": "Hi!"}},
    {"when": {"role": "user", "contains": "two"}, "reply": {"tool_calls": [
        {"name": "lookup", "arguments": {"q": "bob"}}, {"name": "send_email", "arguments": {"to": "bob"}}]}},
    {"when": {"role": "user"}, "reply": {"tool_calls": [{"name": "send_email", "arguments": {"to": "bob"}}]}},
    {"when": {"role": "tool", "contains": "sent"}, "reply": {"content": "Email sent."}},
    {"when": {"role": "tool"}, "reply": {"content": "I did not send it."}},
]

TOOLS = [
    {"name": "send_email", "input": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}},
    {"name": "lookup", "input": {"type": "object"}},
]


def seed_worker(log: list[dict[str, Any]] | None = None) -> Worker:
    """The seed's `decide` (examples/seed_worker.py), answering any other tool with a result."""

    def decide(req: dict[str, Any]) -> dict[str, Any]:
        trigger = req["trigger"]
        if log is not None:
            log.append(req)
        if trigger["type"] == "tool.execute" and trigger["name"] != "send_email":
            return {"actions": [{"type": "tool.result", "result": f"result of {trigger['name']}"}]}
        return seed_decide(trigger, req["proposed"])

    return decide


def declaring(decide: Any, fields: dict[str, Any]) -> Any:
    """`decide` (the seed worker, say), with every `interrupt` action it returns carrying `fields`."""

    def answer(req: dict[str, Any]) -> dict[str, Any]:
        out = decide(req)
        for action in (out or {}).get("actions") or []:
            if action["type"] == "interrupt":
                action.update(fields)
        return out

    return answer


def proposing(log: Any, **overrides: Any) -> Worker:
    """A worker that records every request (`log.append`) and accepts every proposal, except for
    the triggers in `overrides` (`tool_execute=...`: an answer, or a callable taking the request)."""

    def decide(req: dict[str, Any]) -> dict[str, Any]:
        log.append(req)
        answer = overrides.get(req["trigger"]["type"].replace(".", "_"))
        if callable(answer):
            return answer(req)
        if answer is not None:
            return answer
        return req["proposed"]

    return decide


class Harness:
    def __init__(self, worker: Worker | None = None, *, tenant: str = "t1", agent: dict[str, Any] | None = None,
                 origin: str = "client", store: Any = None) -> None:
        """`store`: the store to run on (with in-memory queue, parking and timers unless it is the
        DynamoDB store); by default the fixture's (`BACKEND`)."""
        if store is None:
            self.store, self.queue, self.parking, self.timers = adapters()
        elif isinstance(store, Store):
            self.store, (_, self.queue, self.parking, self.timers) = store, adapters("dynamodb")
        else:
            self.store, (_, self.queue, self.parking, self.timers) = store, adapters("memory")
        self.runner = assembly.new_runner(self.store, self.parking, self.queue, self.timers)
        self.caller = Caller(tenant, "user-1", origin)
        self.log: list[dict[str, Any]] = []
        name = f"w{next(_names)}"
        workers.register(name, worker or seed_worker(self.log))
        config = {"worker": {"python": name}, "tools": TOOLS,
                  "llm": {"provider": "scripted", "script": SEND_EMAIL_SCRIPT}}
        config.update(agent or {})
        self.store.put_agent(tenant, "assistant", config)
        self.session_id: str | None = None
        self.tokens: dict[str, str] = {}

    # --- inputs ------------------------------------------------------------------------

    def say(self, text: str, **kw: Any) -> Any:
        inp = ClientMessageInput.model_validate({"type": "client.message", "agent_id": "assistant",
                                                 "message": {"role": "user", "content": text, **kw}})
        out = sessions.submit(self.store, self.queue, self.caller, self.session_id, inp)
        self.session_id = out.session_id
        self.settle()
        return out

    def view_input(self, messages: list[dict[str, Any]], **kw: Any) -> Any:
        inp = ClientMessagesInput.model_validate({"type": "client.messages", "agent_id": "assistant",
                                                  "messages": messages, **kw})
        out = sessions.submit(self.store, self.queue, self.caller, self.session_id, inp)
        self.session_id = out.session_id
        self.settle()
        return out

    def resume(self, interrupt_id: str, payload: Any, caller: Caller | None = None) -> Resumed:
        assert self.session_id
        InterruptResumeInput(type="interrupt.resume", interrupt_id=interrupt_id, payload=payload)
        out = resume(self.store, self.parking, caller or self.caller, self.session_id, interrupt_id, payload)
        if not out.noop:
            self.wake(interrupt_id, "resumed")
        return out

    # --- the state machine's messages ------------------------------------------------------

    def record(self, interrupt_id: str) -> ParkRecord | None:
        """The parking's record of the interrupt's raise now open (loads do not carry it)."""
        found = self.store.read_interrupt(self.caller.tenant, self.session_id or "", interrupt_id)
        if found is None:
            return None
        records: Records = self.parking.records
        return records.read(self.caller.tenant, self.session_id or "", interrupt_id, found.generation)

    def token(self, interrupt_id: str) -> str | None:
        """The task token the parking keeps for the interrupt's raise now open."""
        record = self.record(interrupt_id)
        return record.token if record is not None else None

    def park_tokens(self) -> None:
        """Play ParkBranch's waitForTaskToken message for every started execution."""
        state = self.state()
        for interrupt in state.interrupts.values():
            iid = interrupt.interrupt_id
            record = self.record(iid)
            if record is not None and record.handle and iid not in self.tokens and not record.token:
                token = f"token-{interrupt.interrupt_id}-{interrupt.generation}"
                self.tokens[interrupt.interrupt_id] = token
                self.runner.handle(Park(self.caller.tenant, self.session_id or "", interrupt.interrupt_id, token,
                                        interrupt.generation))

    def wake(self, interrupt_id: str, outcome: str) -> None:
        self.runner.handle(work_message({"kind": "wake", "tenant": self.caller.tenant, "session_id": self.session_id,
                            "interrupt_id": interrupt_id, "outcome": outcome}))
        self.park_tokens()

    def settle(self) -> None:
        assert self.session_id
        self.runner.run(self.caller.tenant, self.session_id)
        self.park_tokens()

    # --- reading -----------------------------------------------------------------------------

    def state(self) -> SessionState:
        assert self.session_id
        state = self.store.load(self.caller.tenant, self.session_id)
        assert state is not None
        return state

    def view(self) -> dict[str, Any]:
        assert self.session_id
        return sessions.view(self.store, self.caller, self.session_id)

    def events(self, type_: str | None = None) -> list[dict[str, Any]]:
        assert self.session_id
        out = sessions.events(self.store, self.caller, self.session_id, 0, 500)["events"]
        return [e for e in out if type_ is None or e["type"] == type_]

    def triggers(self, type_: str | None = None) -> list[dict[str, Any]]:
        return [r["trigger"] for r in self.log if type_ is None or r["trigger"]["type"] == type_]

    def open_interrupt(self) -> dict[str, Any]:
        interrupts = self.view()["interrupts"]
        assert interrupts, "no open interrupt"
        return interrupts[-1]


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=1, default=str)


def spent_tokens(h: Harness) -> list[str]:
    """The tokens `SendTaskSuccess` is called with from here on (the parking's own call, spied)."""
    calls: list[str] = []
    complete = h.parking.complete

    def spy(token: str, output: dict[str, Any]) -> bool:
        calls.append(token)
        return complete(token, output)

    h.parking.complete = spy  # type: ignore[method-assign]
    return calls
