"""The A2A server (PROTOCOL.md §8): `SendMessage` starts or continues a session (a context) with a
turn (a task), or answers the interrupts a task waits on through the resume path; the answer
follows the turn through the event log until it finishes, fails or parks, within one long-poll
(`streams.cap()`), as the AG-UI channel does (the AG-UI bridge's service)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace

from holdpoint.bridges.a2a import models
from holdpoint.bridges.a2a import translation as a2a
from holdpoint.core import answers, notify, retry
from holdpoint.core.agent_config import A2aConfig
from holdpoint.core.errors import Refusal
from holdpoint.core.ids import ID_PATTERN
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.protocols.client import ClientMessageInput
from holdpoint.core.push import PushRecord
from holdpoint.core.state import SessionState, Turn
from holdpoint.ports import (
    DeliveryRecord,
    Directory,
    Parking,
    PushConfigs,
    Sessions,
    SessionsAndInterrupts,
    SessionStore,
    WorkQueue,
)
from holdpoint.services import sessions, streams
from holdpoint.services.caller import Caller
from holdpoint.services.resume import resume


def declared(store: Directory, tenant: str, agent_id: str) -> A2aConfig | None:
    """The agent's `a2a` declaration (an empty one when it has none); None when there is no agent."""
    agent = store.get_agent(tenant, agent_id)
    if agent is None:
        return None
    return A2aConfig.model_validate(agent.get("a2a") or {})


def public_card(store: Directory, base_url: str, tenant: str, agent_id: str) -> JsonObject:
    """`GET /a2a/{tenant}/{agent_id}/.well-known/agent-card.json`: only an agent that declares
    `a2a.public` has a card without credentials; any other is 404, as an unknown one."""
    config = declared(store, tenant, agent_id)
    if config is None or not config.public:
        raise Refusal("not_found", f"agent {agent_id} not found")
    return a2a.card(base_url, tenant, agent_id, config)


def agent_for(store: Directory, caller: Caller, tenant: str, agent_id: str) -> A2aConfig:
    """The agent a JSON-RPC request addresses: the caller's own tenant's (404 otherwise)."""
    config = declared(store, caller.tenant, agent_id) if tenant == caller.tenant else None
    if config is None:
        raise Refusal("not_found", f"agent {agent_id} not found")
    return config


def _task(store: Sessions, caller: Caller, agent_id: str, value: str,
          param: str) -> tuple[SessionState, Turn]:
    """The session and turn a task id names, if the caller may see them and they are this agent's."""
    sid, turn_id = a2a.split_task(value, param)
    try:
        state = sessions.owned(store, caller, sid)
    except Refusal:
        raise Refusal("not_found", f"task {value[:100]} not found", param) from None
    turn = state.turns.get(turn_id)
    if turn is None or state.header.agent_id != agent_id:
        raise Refusal("not_found", f"task {value[:100]} not found", param)
    return state, turn


def _check_role(message: models.Message) -> None:
    if message.role != "ROLE_USER":
        raise Refusal("validation_error", "a client sends ROLE_USER messages", "message.role")


def _message_task(store: Sessions, caller: Caller, agent_id: str,
                  message: models.Message) -> tuple[SessionState, Turn]:
    """The task a message names, once the message may answer it: checked before anything the
    request carries (a push config) is kept, so a refused message records nothing."""
    _check_role(message)
    state, turn = _task(store, caller, agent_id, str(message.taskId), "message.taskId")
    if message.contextId and message.contextId != state.header.session_id:
        raise Refusal("validation_error", "the task is in another context", "message.contextId")
    return state, turn


def _context(store: Sessions, caller: Caller, agent_id: str, context_id: str) -> SessionState:
    try:
        state = sessions.claim(store, caller, context_id, agent_id=agent_id, kind="conversation", chosen=True,
                               creates=False)
    except Refusal:
        state = None
    if state is None:
        raise Refusal("not_found", f"context {context_id[:100]} not found", "message.contextId")
    return state


def send(store: SessionStore, queue: WorkQueue, parking: Parking, caller: Caller, agent_id: str,
         body: models.SendMessage, *, wait_secs: float | None = None,
         clock: Callable[[], float] = time.monotonic, configs: PushConfigs | None = None) -> JsonObject:
    """`SendMessage`: the task as it stands when its turn ends or parks (or the cap comes first,
    or at once with `returnImmediately`)."""
    deadline = streams.until(0 if body.configuration and body.configuration.returnImmediately else wait_secs, clock)
    spec = body.configuration.taskPushNotificationConfig if body.configuration else None
    if spec is not None and body.message.taskId:  # kept before the answer, so its next state is pushed
        state, turn = _message_task(store, caller, agent_id, body.message)
        keep_push(_configs(configs), state.header.tenant, state.header.session_id, turn.id, spec)
    sid, turn_id = _apply(store, queue, parking, caller, agent_id, body.message)
    if spec is not None and not body.message.taskId:  # the task exists once the message is accepted
        keep_push(_configs(configs), caller.tenant, sid, turn_id, spec)
    history = body.configuration.historyLength if body.configuration else None
    return follow(store, caller, sid, turn_id, deadline, clock, history)


def _apply(store: SessionStore, queue: WorkQueue, parking: Parking, caller: Caller, agent_id: str,
           message: models.Message) -> tuple[str, str]:
    """Record what the message says; (session_id, turn_id) of the task it is for."""
    if message.taskId:
        state, turn = _message_task(store, caller, agent_id, message)
        _answer(store, parking, caller, state, turn, message)
        return state.header.session_id, turn.id
    _check_role(message)
    existing = _context(store, caller, agent_id, message.contextId) if message.contextId else None
    inp = ClientMessageInput.model_validate({
        "type": "client.message", "agent_id": agent_id, "turn_id": a2a.turn_id_of(message),
        "message": {"role": "user", "content": a2a.content_of(message)}})
    accepted = sessions.submit(store, queue, caller, existing.header.session_id if existing else None, inp)
    if accepted.turn_id is None:
        raise Refusal("conflict", "the message started no turn; retry", "message")
    return accepted.session_id, accepted.turn_id


def _answer(store: SessionsAndInterrupts, parking: Parking, caller: Caller, state: SessionState, turn: Turn,
            message: models.Message) -> None:
    """The resume: the data part answers the interrupt the task waits on (the one its metadata
    names, else the first), through the same checks as any resume (R17, A1, A2, A3). A replay
    after the interrupt closed is the resume path's no-op (A4)."""
    named, payload = a2a.answer_of(message)
    raised = a2a.turn_interrupts(state, turn.id)
    waiting = [i for i in raised if i.status == "open"]
    if named:
        target = next((i for i in raised if i.interrupt_id == named), None)
    else:  # the first it waits on; once none is open (a replay), the last it waited on
        candidates = waiting or raised[-1:]
        target = candidates[0] if candidates else None
    if target is None:
        raise Refusal("validation_error", "the task waits on no interrupt (it is not input-required)",
                      "message.taskId" if not named else "message.parts.metadata.interruptId")
    fingerprint = (message.metadata or {}).get("expectFingerprint")
    try:
        resume(store, parking, caller, state.header.session_id, target.interrupt_id, payload,
               expect_fingerprint=fingerprint if isinstance(fingerprint, str) else None, channel="a2a")
    except Refusal as exc:
        exc.param = _part_param(exc.param)
        raise


def _part_param(param: str | None) -> str:
    """A resume refusal's field, as the A2A message names it: the payload is the data part's `data`."""
    if param and param.startswith("payload"):
        return "message.parts.data" + param.removeprefix("payload")
    if param == "expect_fingerprint":
        return "message.metadata.expectFingerprint"
    return "message.taskId" if param in (None, "interrupt_id") else param


def get(store: Sessions, caller: Caller, agent_id: str, ref: models.TaskRef) -> JsonObject:
    """`GetTask`."""
    state, turn = _task(store, caller, agent_id, ref.id, "id")
    return a2a.task_out(state, turn, ref.historyLength)


def cancel(store: SessionsAndInterrupts, parking: Parking, caller: Caller, agent_id: str,
           ref: models.TaskRef) -> JsonObject:
    """`CancelTask`: every interrupt the task waits on is answered as declined, through the resume
    path (so only where the approver policy admits the caller); a task waiting on none cannot be
    canceled (a turn that runs is the worker's to finish), unless it already is."""
    state, turn = _task(store, caller, agent_id, ref.id, "id")
    kind = a2a.state_of(state, turn)
    if kind == "TASK_STATE_CANCELED":
        return a2a.task_out(state, turn, ref.historyLength)
    waiting = a2a.parked_on(state, turn.id)
    if not waiting:
        raise Refusal("invalid_request", f"a task in {kind} waits on no interrupt; it cannot be canceled", "id")
    for interrupt in waiting:
        resume(store, parking, caller, state.header.session_id, interrupt.interrupt_id, dict(answers.CANCELLED),
               channel="a2a")
    state, turn = _task(store, caller, agent_id, ref.id, "id")
    return a2a.task_out(state, turn, ref.historyLength)


def follow(store: Sessions, caller: Caller, session_id: str, turn_id: str, deadline: float,
           clock: Callable[[], float], history: int | None = None) -> JsonObject:
    """The task, once its turn ends or parks (woken by the event log), or as it is at `deadline`."""
    after = 0
    while True:
        state = sessions.owned(store, caller, session_id)
        turn = state.turns.get(turn_id)
        if turn is None:
            raise Refusal("not_found", f"task {a2a.task_id(session_id, turn_id)} not found", "id")
        task = a2a.task_out(state, turn, history)
        status = task["status"]  # task_out's status: an object with its state
        if (isinstance(status, dict) and status["state"] in (*a2a.TERMINAL, "TASK_STATE_INPUT_REQUIRED")
                or clock() >= deadline):
            return task
        after = max(after, state.header.seq)
        streams.wait_events(store, caller.tenant, session_id, after, 1, deadline - clock())


# --- push notification configs --------------------------------------------------------------


def _configs(configs: PushConfigs | None) -> PushConfigs:
    if configs is None:
        raise Refusal("invalid_request", "push notifications are not configured here", "configuration")
    return configs


def keep_push(configs: PushConfigs, tenant: str, session_id: str, turn_id: str,
              spec: models.PushSpec) -> JsonObject:
    """Keep a config for the task (the same one again changes nothing; one of an id it has
    replaces it), up to `MAX_PUSH_CONFIGS` a task, counted by the store in the same write as the
    config (so concurrent creates cannot pass it). The URL was checked by the edge (netguard)."""
    stored = a2a.stored_config(spec, turn_id)
    if not configs.put(tenant, session_id, turn_id, stored, a2a.MAX_PUSH_CONFIGS):
        raise Refusal("validation_error", f"a task has at most {a2a.MAX_PUSH_CONFIGS} push notification configs",
                      "id")
    return a2a.config_out(session_id, replace(stored, turn_id=turn_id))


def create_push(store: Sessions, configs: PushConfigs, caller: Caller, agent_id: str,
                params: models.PushConfig) -> JsonObject:
    """`CreateTaskPushNotificationConfig`."""
    state, turn = _task(store, caller, agent_id, params.taskId, "taskId")
    return keep_push(configs, state.header.tenant, state.header.session_id, turn.id, params)


def _kept(store: Sessions, configs: PushConfigs, caller: Caller, agent_id: str,
          ref: models.PushRef) -> tuple[SessionState, Turn, PushRecord | None]:
    state, turn = _task(store, caller, agent_id, ref.taskId, "taskId")
    h = state.header
    return state, turn, (configs.get(h.tenant, h.session_id, turn.id, ref.id) if ID_PATTERN.fullmatch(ref.id)
                         else None)


def get_push(store: Sessions, configs: PushConfigs, caller: Caller, agent_id: str,
             ref: models.PushRef) -> JsonObject:
    """`GetTaskPushNotificationConfig`: the config without its token or credentials."""
    state, _, kept = _kept(store, configs, caller, agent_id, ref)
    if kept is None:
        raise Refusal("not_found", f"push notification config {ref.id[:100]} not found", "id")
    return a2a.config_out(state.header.session_id, kept)


def list_push(store: Sessions, configs: PushConfigs, caller: Caller, agent_id: str,
              params: models.PushList) -> a2a.ConfigList:
    """`ListTaskPushNotificationConfigs`: every config of the task, in one page."""
    state, turn = _task(store, caller, agent_id, params.taskId, "taskId")
    h = state.header
    return {"configs": [a2a.config_out(h.session_id, c) for c in configs.list(h.tenant, h.session_id, turn.id)]}


def delete_push(store: Sessions, configs: PushConfigs, caller: Caller, agent_id: str,
                ref: models.PushRef) -> JsonObject:
    """`DeleteTaskPushNotificationConfig`: a config that is gone already is a no-op."""
    state, turn, kept = _kept(store, configs, caller, agent_id, ref)
    if kept is not None:
        configs.delete(state.header.tenant, state.header.session_id, turn.id, kept.id)
    return {}


PUSH_CHANNEL = "a2a.push"


class Pushes:
    """The deliveries of A2A push configs, through the notifier's delivery path (claim once, retry
    on a durable timer, dead-letter): `starts` gives the records an event-log entry starts, and
    `resolve` what one attempt sends, read when it runs (a record keeps no body and no secret)."""

    def __init__(self, store: Sessions, configs: PushConfigs) -> None:
        self.store, self.configs = store, configs

    def starts(self, tenant: str, session_id: str, event: Mapping[str, object]) -> list[DeliveryRecord]:
        """One record per config of the task the entry parks or ends (none for another entry, or
        a session with no config: one Query)."""
        if event.get("type") not in ("session.interrupted", "turn.finished", "turn.failed"):
            return []
        kept = self.configs.list(tenant, session_id)
        state = self.store.load(tenant, session_id) if kept else None
        turn_id = a2a.pushed_turn(state, event) if state is not None else None
        turn = state.turns.get(turn_id) if state is not None and turn_id else None
        if state is None or turn is None:
            return []
        kind = a2a.state_of(state, turn)
        if kind not in a2a.PUSHED_STATES:
            return []  # the task moved on already (its interrupts answered): that state is pushed
        seq = event["seq"]
        if not isinstance(seq, int):  # a logged entry's seq, as the codec read it from its JSON body
            raise TypeError("an event-log entry's seq is an integer")
        event_id = notify.event_id(tenant, session_id, seq)
        a2a_config = state.header.config().a2a
        secret = a2a_config.push_secret if a2a_config is not None else None
        policy = retry.policy(state.header.agent, "webhook").fields()
        return [{"key": f"{event_id}#a2a#{c.id}", "tenant": tenant, "session_id": session_id,
                 "channel": PUSH_CHANNEL, "policy": policy,
                 "event": {"event_id": event_id, "type": "a2a.push", "tenant": tenant, "session_id": session_id,
                           "task_id": a2a.task_id(session_id, turn.id), "state": kind},
                 "entry": {"turn_id": turn.id, "config_id": c.id, "state": kind, "secret": secret}}
                for c in kept if c.turn_id == turn.id]

    def resolve(self, event: Mapping[str, object],
                entry: Mapping[str, object]) -> tuple[str, JsonObject, dict[str, str]] | None:
        """(url, body, headers) of one attempt; None when the config was deleted or the task is no
        longer in the state the record announces (nothing is sent)."""
        tenant, session_id = str(event["tenant"]), str(event["session_id"])
        config = self.configs.get(tenant, session_id, str(entry["turn_id"]), str(entry["config_id"]))
        state = self.store.load(tenant, session_id) if config is not None else None
        turn = state.turns.get(str(entry["turn_id"])) if state is not None else None
        if config is None or state is None or turn is None or a2a.state_of(state, turn) != entry["state"]:
            return None
        return config.url, a2a.push_body(state, turn), a2a.push_headers(config)
