"""The `ports.SessionStore` contract (its three ports: `Sessions`, `Interrupts`, `Directory`),
held by every store: the DynamoDB store on moto (without its warm-load cache, with it, and with a
cache poisoned on purpose) and the in-memory store the rule and service tests run on. A promise a
store makes to the services is proved here, once for all of them."""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from holdpoint.core import bound_action, quotas
from holdpoint.core.agent_config import AgentConfig
from holdpoint.core.answers import Answer, Responder
from holdpoint.core.errors import QuotaExceeded
from holdpoint.core.interrupts import Checked
from holdpoint.core.state import Call, Interrupt, SessionState
from holdpoint.ports import (
    MAX_SEQ,
    AddAnswer,
    ApiKey,
    Conflict,
    InboxQuery,
    InterruptRef,
    Resolve,
    SessionFilters,
    TooLarge,
    TooManyChanges,
)
from holdpoint_local.memory.store import MemoryStore

STORES = ["memory", "dynamodb", "dynamodb cache", "dynamodb poisoned cache"]
T0 = 1_700_000_000.0
_ids = itertools.count()
AGENT = {"worker": {"python": "w"}, "prompt": "be brief"}


def build(kind: str, limits: quotas.Quotas | None = None) -> Any:
    if kind == "memory":
        return MemoryStore(limits)
    from holdpoint.aws.store import StateCache, Store
    from tests.cache_chaos import PoisonedCache

    cache = {"dynamodb": False, "dynamodb cache": StateCache(), "dynamodb poisoned cache": PoisonedCache(seed=1)}
    return Store(cache=cache[kind], limits=limits)


@pytest.fixture(params=STORES)
def make(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Builds stores of one kind (`make(limits)`), inside moto's AWS for the DynamoDB ones."""
    if request.param != "memory":
        request.getfixturevalue("aws")
    yield lambda limits=None: build(request.param, limits)


@pytest.fixture
def store(make: Any) -> Any:
    return make()


def new_session(store: Any, tenant: str = "t1", *, agent_id: str = "a1", owner: str | None = None,
                ancestry: list[str] | None = None, at: float = T0, end_user: bool = False) -> str:
    """A session whose subject is `owner`, started by that end user (`end_user`) or by an API key."""
    sid = f"ses_{next(_ids):06d}"
    state = SessionState.new(tenant, sid, agent_id, now=at, identity={"id": owner} if owner else {},
                             ancestry=ancestry or [], end_user=owner if end_user else None)
    state.header.agent = AgentConfig.from_item(AGENT)
    state.add_node("n1", None, {"role": "user", "content": "hi"})
    state.emit("session.created")
    store.commit(state)
    return sid


def raise_interrupt(store: Any, tenant: str, sid: str, *, iid: str | None = None, origin: str = "worker",
                    owner: str | None = None, reason: str = "confirm", created_at: str | None = None,
                    expires_at: str | None = None, payload: Any = None) -> str:
    iid = iid or f"int_{next(_ids):06d}"
    state = store.load(tenant, sid)
    state.put(Interrupt(interrupt_id=iid, origin=origin, reason=reason, anchor=None, owner=owner,
                        created_at=created_at or f"2024-01-01T00:00:{next(_ids) % 60:02d}.000Z",
                        dedup_key=f"dk-{iid}", expires_at=expires_at, payload=payload))
    state.emit("interrupt.raised", interrupt_id=iid)
    store.commit(state)
    return iid


def answer_by(subject: str) -> Answer:
    return Answer(subject=subject, origin="operator", status="approved", payload={"approved": True})


def resolve(store: Any, tenant: str, sid: str, iid: str, **kw: Any) -> tuple[str, Interrupt | None]:
    """`Interrupts.resolve_interrupt` with a test's defaults; `allowed_origins`, `owner`,
    `generation` and `seen` are what the caller checked."""
    checked = Checked(tuple(kw.pop("allowed_origins", ("worker", "client"))), kw.pop("owner", None),
                      kw.pop("generation", None), kw.pop("seen", None))
    args: dict[str, Any] = {"resolution": {"approved": True}, "responder": Responder("u1", "operator"),
                            "at": "2024-01-02T00:00:00.000Z"}
    args.update(kw)
    return store.resolve_interrupt(Resolve(InterruptRef(tenant, sid, iid), checked, **args))  # type: ignore[no-any-return]


def answer(store: Any, sid: str, iid: str, subject: str, seen: int) -> tuple[str, Interrupt | None]:
    """`Interrupts.record_approval` of one answer by `subject`, having read `seen` answers."""
    change = AddAnswer(InterruptRef("t1", sid, iid), Checked(("worker",), seen=seen), answer_by(subject))
    return store.record_approval(change)  # type: ignore[no-any-return]


# --- commits ------------------------------------------------------------------------------


def test_store_a_commit_round_trips_every_record_and_moves_the_version(store: Any) -> None:
    sid = new_session(store)
    iid = raise_interrupt(store, "t1", sid, payload={"to": "bob"})
    state = store.load("t1", sid)
    state.put(Call(id="c1", kind="tool_call", anchor="n1", turn_id=None, order=1, name="send", arguments="{}"))
    state.add_node("n2", "n1", {"role": "assistant", "content": "ok"})
    assert store.commit(state) > 0 and state.header.version == 3
    again = store.load("t1", sid)
    assert again.header.version == 3 and again.header.agent is not None and again.header.agent.to_item() == AGENT
    assert again.calls["c1"].name == "send" and again.interrupts[iid].payload == {"to": "bob"}
    assert sorted(again.tree.nodes) == ["n1", "n2"] and again.tree.head_id == "n2"
    assert again.quota_slots == frozenset({iid})
    head = store.load("t1", sid, head_only=True)
    assert head.interrupts[iid].status == "open" and not head.calls and not head.tree.nodes
    assert store.commit(again) == 0  # nothing changed: nothing written


ANSWER_EXAMPLES = max(5, int(os.environ.get("HOLDPOINT_FUZZ_EXAMPLES") or 150) // 5)  # 5 in make test-unit
ANSWERS = st.lists(st.tuples(st.sampled_from(["queue", "worker", "submit", "fail", "retry"]), st.integers(0, 7)),
                   min_size=1, max_size=10)


def decide(state: SessionState, op: str, pick: int, key: tuple[str, int]) -> SessionState:
    """One step of the decision queue: queue one (`key`), or answer, fail or retry a pending one."""
    pending = sorted((d for d in state.decisions.values() if d.status == "pending"), key=lambda d: d.order)
    if op == "queue" or not pending:
        state.enqueue({"type": "tool.finished", "id": f"c{pick}"}, anchor="n1", turn_id=None, key=key,
                      priority=pick % 2)
        return state
    decision = pending[pick % len(pending)]
    decision.attempts += 1
    if op in ("worker", "submit"):
        decision.status, decision.via = "delivered", op
    elif op == "fail":
        decision.status = "failed"
    else:
        decision.not_before = T0 + decision.attempts
    state.touch(decision)
    return state


@settings(max_examples=ANSWER_EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=ANSWERS)
def test_store_decisions_load_as_committed_whatever_answers_them_and_in_what_order(make: Any, steps: Any) -> None:
    """Each step queues a decision (at the front or the back) or answers, fails or retries one of
    the pending ones, in any order, and commits; the same store and another one (a container that
    never saw the session) load every decision exactly as committed."""
    store = make()
    other = store if isinstance(store, MemoryStore) else make()  # a memory store's data is its own
    sid = new_session(store)
    for op, pick in steps:
        # a poisoned cache's commit conflicts and its reload may be poisoned again: reload until one
        # commits, as `Runner.transact` does
        state = settle(store, full_step, sid, op, pick, ("step", next(_ids)))
        for reader in (store, other):
            assert reader.load("t1", sid).decisions == state.decisions


MIXED = st.lists(st.tuples(st.sampled_from(["queue", "worker", "submit", "fail", "retry", "head", "race"]),
                           st.integers(0, 7)), min_size=1, max_size=12)


def settle(store: Any, step: Callable[..., SessionState], *args: Any) -> SessionState:
    """Commit the state `step(store, *args)` makes from a fresh load, reloading on a conflict (as
    `contention.transact`: a poisoned cache's commit conflicts, its reload reads everything)."""
    for _ in range(8):
        state = step(store, *args)
        try:
            store.commit(state)
        except Conflict:
            continue
        return state
    raise AssertionError("the commit conflicted on every reload")


def full_step(store: Any, sid: str, op: str, pick: int, key: tuple[str, int]) -> SessionState:
    return decide(store.load("t1", sid), op, pick, key)


def head_step(store: Any, sid: str, iid: str, pick: int, key: tuple[str, int]) -> SessionState:
    """A head-only step: a reminder on the open interrupt, or a decision queued without the tail."""
    state = store.load("t1", sid, head_only=True)
    if pick % 2:
        state.enqueue({"type": "tool.finished", "id": f"h{pick}"}, anchor="n1", turn_id=None, key=key)
        return state
    interrupt = state.interrupts[iid]
    interrupt.reminded = [*interrupt.reminded, len(interrupt.reminded)]
    state.touch(interrupt)
    state.emit("interrupt.reminded", interrupt_id=iid)
    return state


@settings(max_examples=ANSWER_EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=MIXED)
def test_store_decisions_load_as_committed_across_head_only_commits_containers_and_conflicts(
        make: Any, steps: Any) -> None:
    """The steps above from two containers in turn (each with its own warm cache), with head-only
    commits among them (a reminder, or a decision queued: they keep the header's `done_through`)
    and races (both containers load one version and answer: the second commit conflicts and is
    recomputed on a reload, which must not answer again what the first answered in place). Every
    load, by either container, full or head-only, reads each decision as last committed."""
    first = make()
    stores = [first, first] if isinstance(first, MemoryStore) else [first, make()]
    sid = new_session(first)
    iid = raise_interrupt(first, "t1", sid)
    expected: dict[str, Any] = {}
    for i, (op, pick) in enumerate(steps):
        store, other = stores[i % 2], stores[(i + 1) % 2]
        key = ("step", next(_ids))
        if op == "head":
            state = settle(store, head_step, sid, iid, pick, key)
            expected.update(state.decisions)  # a head-only state holds only the decisions it queued
        elif op == "race":
            late_key = ("step", next(_ids))
            late = decide(other.load("t1", sid), "submit", pick + 1, late_key)
            settle(store, full_step, sid, "worker", pick, key)
            with pytest.raises(Conflict):
                other.commit(late)
            state = settle(other, full_step, sid, "submit", pick + 1, late_key)
            expected = dict(state.decisions)
        else:
            state = settle(store, full_step, sid, op, pick, key)
            expected = dict(state.decisions)
        for reader in stores:
            assert reader.load("t1", sid).decisions == expected
            assert not reader.load("t1", sid, head_only=True).decisions


def test_store_a_config_stored_reads_back_as_stored_and_typed(store: Any) -> None:
    """The agent item keeps the JSON it was written with (a record stored before the config was
    typed, say: integers where the model has floats, fields the model does not know), so its
    digest (A3's `agent_version`) never moves; readers get it typed."""
    stored = {"worker": {"python": "w", "timeout_secs": 30}, "budget": {"max_cost": 5}, "custom": {"x": [1]},
              "tools": [{"name": "t", "retry": {"max_retries": 2}}]}
    sid = new_session(store)
    state = store.load("t1", sid)
    state.header.agent_item = stored
    state.emit("session.updated")
    store.commit(state)
    again = store.load("t1", sid)
    assert again.header.agent_item == stored and bound_action.digest(again.header.agent_item) == \
        bound_action.digest(stored)
    agent = again.header.agent
    assert agent is not None and agent.to_item() is again.header.agent_item
    assert agent.worker is not None and agent.worker.timeout_secs == 30.0 and agent.budget is not None
    assert agent.tools[0].retry == {"max_retries": 2} and agent.model_extra == {"custom": {"x": [1]}}


def test_store_the_agent_item_is_written_only_when_the_config_in_force_changes(store: Any) -> None:
    """A step that leaves the config alone does not rewrite (and pay for) its item; nor does an
    equal config set anew (a worker echoing it); a changed one is written, once."""
    sid = new_session(store)

    def commit(change: Callable[[SessionState], None]) -> int:
        state = store.load("t1", sid)
        change(state)
        state.emit("session.updated")
        return int(store.commit(state))

    untouched = commit(lambda state: None)
    assert commit(lambda state: setattr(state.header, "agent", AgentConfig.from_item(dict(AGENT)))) == untouched
    changed = AgentConfig.model_validate({**AGENT, "system": "be kind"})
    assert commit(lambda state: setattr(state.header, "agent", changed)) == untouched + 1
    again = store.load("t1", sid).header
    assert again.agent is not None and again.agent.system == "be kind" and again.agent_item == changed.wire()


def test_store_a_loaded_state_is_a_copy(store: Any) -> None:
    sid = new_session(store)
    state = store.load("t1", sid)
    with pytest.raises(ValidationError):  # the config in force is frozen: loads share one parse of it
        state.header.agent.system = "changed"
    state.tree.nodes["n1"].message["content"] = "changed"
    again = store.load("t1", sid)
    assert again.header.agent.to_item() == AGENT and again.tree.nodes["n1"].message["content"] == "hi"


def test_store_a_stale_commit_conflicts_and_writes_nothing(store: Any) -> None:
    sid = new_session(store)
    first, second = store.load("t1", sid), store.load("t1", sid)
    first.emit("one")
    store.commit(first)
    second.add_node("n9", "n1", {"role": "user", "content": "lost"})  # no item of `first`'s: the version alone
    with pytest.raises(Conflict):
        store.commit(second)
    assert [e.type for e in store.events("t1", sid, 0, 10)] == ["session.created", "one"]
    assert "n9" not in store.load("t1", sid).tree.nodes


def test_store_a_new_session_created_twice_conflicts(store: Any) -> None:
    state = SessionState.new("t1", "ses_twice", "a1", now=T0)
    store.commit(state)
    with pytest.raises(Conflict):
        store.commit(SessionState.new("t1", "ses_twice", "a1", now=T0))


def test_store_too_many_changes_in_one_step_writes_nothing(store: Any) -> None:
    sid = new_session(store)
    state = store.load("t1", sid)
    parent = "n1"
    for i in range(120):
        parent = state.add_node(f"m{i}", parent, {"role": "user", "content": f"m{i}"}).id
    state.emit("noise")
    with pytest.raises(TooManyChanges):
        store.commit(state)
    assert len(store.events("t1", sid, 0, 500)) == 1
    assert set(store.load("t1", sid).tree.nodes) == {"n1"}


def test_store_events_of_one_commit_are_one_change(store: Any) -> None:
    """The event log stores a commit's events together: a step may emit more events than it may
    change items, and every one is read back in order."""
    sid = new_session(store)
    state = store.load("t1", sid)
    for i in range(150):
        state.emit("noise", i=i)
    store.commit(state)
    events = store.events("t1", sid, 0, 500)
    assert [e.seq for e in events] == list(range(1, 152))
    assert [e.data.get("i") for e in events[1:]] == list(range(150))


def test_store_an_answer_too_large_for_an_item_is_refused_and_the_interrupt_stays_open(store: Any) -> None:
    sid = new_session(store)
    iid = raise_interrupt(store, "t1", sid)
    state = store.load("t1", sid)
    interrupt = state.interrupts[iid]
    interrupt.status, interrupt.resolution = "resolved", {"text": "x" * 450_000}
    state.touch(interrupt)
    with pytest.raises(TooLarge):
        store.commit(state)
    assert store.read_interrupt("t1", sid, iid).status == "open"


def test_store_a_large_message_is_stored_whole(store: Any) -> None:
    sid = new_session(store)
    state = store.load("t1", sid)
    state.add_node("big", "n1", {"role": "user", "content": "y" * 350_000})
    store.commit(state)
    assert store.load("t1", sid).tree.nodes["big"].message["content"] == "y" * 350_000


# --- events and existence -------------------------------------------------------------------


def test_store_events_page_after_a_seq(store: Any) -> None:
    sid = new_session(store)
    state = store.load("t1", sid)
    for i in range(5):
        state.emit("step", i=i)
    store.commit(state)
    assert [e.seq for e in store.events("t1", sid, 0, 3)] == [1, 2, 3]
    assert [e.data.get("i") for e in store.events("t1", sid, 3, 10)] == [2, 3, 4]
    assert store.events("t1", sid, MAX_SEQ, 10) == [] and store.events("t1", "ses_none", 0, 10) == []
    assert set(store.events("t1", sid, 5, 1)[0].wire()) == {"seq", "type", "at", "data"}


def test_store_events_page_across_commits(store: Any) -> None:
    """Pages start and end inside one commit's events and span several commits: each page is the
    first `limit` events after its `after_seq`, whatever the commits were."""
    sid = new_session(store)
    for size in (3, 1, 4, 2):
        while True:  # a poisoned cache makes a commit conflict: reload and redo it, as the services do
            state = store.load("t1", sid)
            for i in range(size):
                state.emit("step", i=i)
            try:
                store.commit(state)
                break
            except Conflict:
                continue
    assert [e.seq for e in store.events("t1", sid, 0, 100)] == list(range(1, 12))
    pages, after = [], 0
    while page := store.events("t1", sid, after, 3):
        pages.append([e.seq for e in page])
        after = page[-1].seq
    assert pages == [[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11]]
    assert [e.seq for e in store.events("t1", sid, 2, 4)] == [3, 4, 5, 6]
    assert [e.seq for e in store.events("t1", sid, 6, 1)] == [7]
    assert store.events("t1", sid, 11, 5) == []


def test_store_session_exists_checks_the_end_user(store: Any) -> None:
    sid = new_session(store, owner="alice", end_user=True)
    assert store.session_exists("t1", sid) and store.session_exists("t1", sid, "alice")
    assert not store.session_exists("t1", sid, "bob") and not store.session_exists("t1", "ses_none")
    by_key = new_session(store, owner="alice")  # the API key `alice` started it: no end user reaches it
    assert store.session_exists("t1", by_key) and not store.session_exists("t1", by_key, "alice")


def test_r17_store_tenants_never_see_each_other(store: Any) -> None:
    sid = new_session(store, "t1")
    iid = raise_interrupt(store, "t1", sid)
    assert store.load("t2", sid) is None and store.read_interrupt("t2", sid, iid) is None
    assert not store.session_exists("t2", sid)
    assert store.inbox("t2", 10, None) == ([], None)
    assert store.sessions("t2", 10, None, SessionFilters()) == ([], None)
    assert resolve(store, "t2", sid, iid) == ("noop", None)


# --- the interrupt writes ---------------------------------------------------------------------


def test_r7_store_resolves_exactly_once_however_many_race(store: Any) -> None:
    sid = new_session(store)
    iid = raise_interrupt(store, "t1", sid)
    outcomes: list[str] = []
    barrier = threading.Barrier(6)

    def answer(n: int) -> None:
        barrier.wait()
        outcomes.append(resolve(store, "t1", sid, iid, resolution={"n": n})[0])

    threads = [threading.Thread(target=answer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["noop"] * 5 + ["resolved"]
    found = store.read_interrupt("t1", sid, iid)
    assert found.status == "resolved" and found.resolved_at == "2024-01-02T00:00:00.000Z"
    assert resolve(store, "t1", sid, iid)[0] == "noop"


def test_r7_store_a_resolve_names_why_it_did_not_write(store: Any) -> None:
    sid = new_session(store)
    iid = raise_interrupt(store, "t1", sid, origin="worker", owner="alice")
    assert resolve(store, "t1", sid, "int_missing") == ("noop", None)
    outcome, found = resolve(store, "t1", sid, iid, allowed_origins=["client"])
    assert outcome == "forbidden" and found is not None and found.status == "open"
    assert resolve(store, "t1", sid, iid, owner="bob") == ("not_found", None)
    assert resolve(store, "t1", sid, iid, generation=7)[0] == "changed"
    assert resolve(store, "t1", sid, iid, allowed_origins=[])[0] == "forbidden"
    outcome, done = resolve(store, "t1", sid, iid, owner="alice", generation=0, seen=0, kept_until=1_800_000_000)
    assert outcome == "resolved" and done is not None and done.kept_until == 1_800_000_000
    assert done.resolution == {"approved": True} and done.responder == Responder("u1", "operator")


def test_a2_store_answers_to_a_quorum_append_once_per_answers_seen(store: Any) -> None:
    sid = new_session(store)
    iid = raise_interrupt(store, "t1", sid)
    assert answer(store, sid, iid, "a", seen=0)[0] == "recorded"
    outcome, found = answer(store, sid, iid, "b", seen=0)
    assert outcome == "raced" and found is not None and len(found.approvals) == 1
    assert answer(store, sid, iid, "b", seen=1)[0] == "recorded"
    outcome, done = resolve(store, "t1", sid, iid, approval=answer_by("c"), seen=2)
    assert outcome == "resolved" and [a.subject for a in done.approvals] == ["a", "b", "c"]
    assert [a.subject for a in store.load("t1", sid).interrupts[iid].approvals] == ["a", "b", "c"]


# --- listings ---------------------------------------------------------------------------------


def walk(listing: Any, limit: int) -> list[Any]:
    """Every row of a listing, page by page; no page longer than `limit`, the last one's cursor None."""
    rows, cursor = [], None
    for _ in range(50):
        page, cursor = listing(limit, cursor)
        assert len(page) <= limit
        rows.extend(page)
        if cursor is None:
            return rows
        assert isinstance(cursor, str)
    raise AssertionError("the cursor never ran out")


def test_a6_store_inbox_lists_open_closed_or_all_newest_first_by_cursor(store: Any) -> None:
    one, two = new_session(store, agent_id="a1"), new_session(store, agent_id="a2")
    made = [raise_interrupt(store, "t1", sid, created_at=f"2024-01-01T00:00:0{i}.000Z", reason=f"r{i % 2}",
                            expires_at=f"2024-02-0{i + 1}T00:00:00Z")
            for i, sid in enumerate([one, two, one, two, one])]
    sessions = dict(zip(made, [one, two, one, two, one], strict=True))
    for iid in made[1:3]:
        assert resolve(store, "t1", sessions[iid], iid)[0] == "resolved"

    def ids(query: InboxQuery, limit: int = 2) -> list[str]:
        rows = walk(lambda n, c: store.inbox("t1", n, c, query), limit)
        assert all(r.session_id == sessions[r.interrupt.interrupt_id] for r in rows)
        return [r.interrupt.interrupt_id for r in rows]

    newest = list(reversed(made))
    assert ids(InboxQuery()) == [i for i in newest if i not in made[1:3]]
    assert ids(InboxQuery(status="resolved")) == [made[2], made[1]]
    assert ids(InboxQuery(status="expired")) == []
    assert ids(InboxQuery(status="all"), 3) == newest
    assert ids(InboxQuery(status="all", agent_id="a2")) == [made[3], made[1]]
    assert ids(InboxQuery(status="all", reason="r1")) == [made[3], made[1]]
    assert ids(InboxQuery(status="all", created_before="2024-01-01T00:00:02")) == [made[1], made[0]]
    assert ids(InboxQuery(expiring_by="2024-02-02T00:00:00Z")) == [made[0]]
    rows, _ = store.inbox("t1", 10, None, InboxQuery(), keep=lambda row: row.interrupt.interrupt_id == made[4])
    assert [r.interrupt.interrupt_id for r in rows] == [made[4]] and rows[0].agent_id == "a1"
    assert rows[0].body["reason"] == "r0"


def test_store_sessions_list_newest_first_filtered_by_cursor(store: Any) -> None:
    made = [new_session(store, agent_id=f"a{i % 2}", owner="alice" if i < 3 else None, end_user=i < 2,
                        ancestry=["ses_parent"] if i == 4 else None, at=T0 + i) for i in range(5)]

    def ids(filters: SessionFilters, limit: int = 2) -> list[str]:
        return [r.session_id for r in walk(lambda n, c: store.sessions("t1", n, c, filters), limit)]

    assert ids(SessionFilters()) == list(reversed(made))
    assert ids(SessionFilters(agent_id="a1")) == [made[3], made[1]]
    assert ids(SessionFilters(end_user="alice"), 1) == [made[1], made[0]]  # made[2]: the API key alice's
    assert ids(SessionFilters(top_level=False)) == [made[4]]
    assert ids(SessionFilters(top_level=True, agent_id="a0")) == [made[2], made[0]]
    assert ids(SessionFilters(status="idle")) == list(reversed(made))
    [row] = store.sessions("t1", 1, None, SessionFilters(end_user="alice"))[0]
    assert row.wire() == {"session_id": made[1], "agent_id": "a1", "status": "idle",
                          "created_at": "2023-11-14T22:13:21.000Z", "owner": "alice", "top_level": True}
    [key_row] = [r for r in walk(lambda n, c: store.sessions("t1", n, c, SessionFilters()), 5)
                 if r.session_id == made[2]]
    assert key_row.owner == "alice"  # the same subject, shown the same, never an end user's
    assert store.session_exists("t1", made[1], end_user="alice")
    assert not store.session_exists("t1", made[2], end_user="alice")
    assert store.session_exists("t1", made[2])


def test_store_the_listed_status_follows_the_session(store: Any) -> None:
    sid = new_session(store)
    iid = raise_interrupt(store, "t1", sid)
    state = store.load("t1", sid)
    state.interrupts[iid].reminded = [0]
    state.touch(state.interrupts[iid])
    store.commit(state)
    assert store.sessions("t1", 5, None, SessionFilters(status="interrupted"))[0][0].session_id == sid


# --- quotas ---------------------------------------------------------------------------------


def test_quota_store_refuses_open_interrupts_over_the_session_and_tenant_limits(make: Any) -> None:
    store = make(quotas.Quotas(open_interrupts_per_session=2, open_interrupts_per_tenant=3))
    one, two = new_session(store), new_session(store)
    raise_interrupt(store, "t1", one)
    raise_interrupt(store, "t1", one)
    with pytest.raises(QuotaExceeded) as per_session:
        raise_interrupt(store, "t1", one)
    assert per_session.value.limit == "open_interrupts_per_session" and len(store.load("t1", one).interrupts) == 2
    raise_interrupt(store, "t1", two)
    with pytest.raises(QuotaExceeded) as per_tenant:
        raise_interrupt(store, "t1", two)
    assert per_tenant.value.limit == "open_interrupts_per_tenant" and len(store.load("t1", two).interrupts) == 1
    other = new_session(store, "t2")
    raise_interrupt(store, "t2", other)  # another tenant's count is its own
    # A woken interrupt gives its slot back.
    state = store.load("t1", one)
    done = next(iter(state.interrupts.values()))
    done.status, done.woken = "resolved", True
    state.touch(done)
    store.commit(state)
    raise_interrupt(store, "t1", two)


def test_quota_store_refuses_sessions_over_the_per_second_limit(make: Any) -> None:
    store = make(quotas.Quotas(sessions_per_second=2))
    refused = 0
    for _ in range(7):  # at most 2 a second: 7 in a row cannot all land unless they span 4 seconds
        state = SessionState.new("t1", f"ses_q{next(_ids)}", "a1", now=T0)
        try:
            store.commit(state)
        except QuotaExceeded as exc:
            assert exc.limit == "sessions_per_second"
            assert store.load("t1", state.header.session_id) is None
            refused += 1
    assert refused >= 1
    child = SessionState.new("t1", "ses_child", "a1", now=T0, parent={"session_id": "p", "call_id": "c"})
    store.commit(child)  # a sub-agent's session is its parent's work: never counted


# --- agents and keys -------------------------------------------------------------------------


def test_store_agents_and_api_keys(store: Any) -> None:
    assert store.get_agent("t1", "a1") is None
    store.put_agent("t1", "a1", {"worker": {"url": "https://w"}})
    assert store.get_agent("t1", "a1") == {"worker": {"url": "https://w"}} and store.get_agent("t2", "a1") is None
    assert store.get_api_key("h1") is None and store.revoke_api_key("h1") is False
    store.put_api_key("h1", "t1", "alice", "client", ["ops"])
    assert store.get_api_key("h1") == ApiKey("t1", "alice", "client", ("ops",))
    assert store.revoke_api_key("h1") is True and store.get_api_key("h1") is None
    assert store.revoke_api_key("h1") is True  # a revoked key is still there to revoke
    store.put_api_key("h1", "t1", "alice", "client")
    assert store.get_api_key("h1") == ApiKey("t1", "alice", "client")
