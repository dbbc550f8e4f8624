"""The single table's keys and attribute names (docs/ARCHITECTURE.md, "The table").

Session partition `T#{tenant}#S#{session}`:

| SK | item |
| --- | --- |
| `H` | header: `version`, `body` (head, seq, worker state), `tail_sum`, `changes`, `done_through`, the listing row |
| `H#A` | the agent config in force (written only when it changes) |
| `I#{id}` | interrupt (top level: `status`, `origin`, `generation`, index keys, `ttl`) |
| `G#{id}#{generation}` | that raise's park record (`aws/ddb/parking.py`): `execution`, `waits`, `task_token`, `ttl` |
| `K#{id}` | call |
| `N#{id}` | tree node |
| `Q#{id}` | decision |
| `T#{id}` | turn |
| `E#{seq:012}` | event log, append-only: a commit's events (a list), keyed by the last seq; `etype` (`log_type`) |
| `D#{event}#{n}` | a notification's delivery to the agent's `notify[n]` (`aws/deliveries.py`) |
| `D#M#{key}` | the message a chat channel posted for an interrupt (`aws/deliveries.py`) |
| `D#A#{turn}#{config}` | an A2A push notification config of the task `turn` (`aws/pushconfigs.py`) |
| `D#AN#{turn}` | how many push configs the task holds, `n` (outside `D#A#`, so no listing sees it) |

Quota partition `T#{tenant}#QUOTA` (docs/SECURITY.md, "Quotas"): `OPEN` (the tenant's interrupts
holding a slot, `n`) and `OPEN#{principal digest}` (one principal's share), `S#{epoch second}`
(sessions created in that second, `n`, with a `ttl`) and `S#{second}#{principal digest}`, and
the stream wait leases (`aws/leases.py`): `W` the tenant's, `W#{caller digest}` a caller's. The
deployment's wait leases are spread over the partitions `QUOTA#W#{shard}`, SK `W`.

Live connections (`aws/connections.py`): `L#{connection}` / `C` the connection itself,
`T#{tenant}#L#{session}` / `C#{connection}` one per session it follows, and
`T#{tenant}#LC#{caller digest}` / `C#{connection}` one per open connection of a caller.

Identity providers (`aws/ddb/providers.py`): `T#{tenant}#IDP` / `IDP` the tenant's declaration,
and `IDP#{issuer digest}` / `C#{client id digest}` the one tenant that pair belongs to.

State sorts at and after `H`, events before it, so a step reads state with one Query and never
pages through the event log. The *head* (`H` .. `I$`) is the header, the agent and the
interrupts; the *tail* (after `I$`) is calls, nodes, decisions and turns.
"""

from __future__ import annotations

import hashlib

from holdpoint.core.interrupts import DEFAULT_PARK_SECONDS
from holdpoint.core.state import Call, Decision, Interrupt, Turn

HEADER_SK = "H"
AGENT_SK = "H#A"  # sorts right after the header, inside the state range a step loads
HEAD_END = "I$"  # the head range is `H` .. `I$`; the tail sorts after it
PARK = "G#"  # a raise's park record (aws/ddb/parking.py): sorts before `H`, so no load reads it
NODE = "N#"
EVENT = "E#"
PREFIX: dict[type, str] = {Call: "K#", Decision: "Q#", Interrupt: "I#", Turn: "T#"}
KIND_OF_PREFIX = {prefix: cls.__name__ for cls, prefix in PREFIX.items()}

OFFLOAD_BYTES = 300_000  # bodies above this go to S3 (DynamoDB items stop at 400 KB)
MAX_TRANSACT_ITEMS = 100
SESSION_COUNT_TTL = 3600  # seconds a per-second creation counter is kept before DynamoDB's TTL may drop it

# The header's own attributes. Every commit rewrites the header, so these are all it carries
# beside its body; the listing's four are what the `Sessions` index projects.
VERSION = "version"
TAIL_SUM = "tail_sum"  # XOR of the tail items' hashes (aws/ddb/cache.py)
CHANGES = "changes"  # the tail keys each of the last versions wrote (aws/ddb/cache.py)
DONE_THROUGH = "done_through"  # no decision of this order or lower is pending (aws/ddb/codec.py, `answered`)
LISTED_AGENT = "agent_id"
LISTED_STATUS = "status"
LISTED_OWNER = "owner"
SUB_AGENT = "sub_agent"  # present only on a sub-agent's session
LISTED_ATTENTION = "attention"  # JSON {kind, reason, since} while a delivery retries or failed (core/attention)
LISTING_ATTRS = (LISTED_AGENT, LISTED_STATUS, LISTED_OWNER, SUB_AGENT)

# A park record's attributes (aws/ddb/parking.py), each set once by a conditional UpdateItem.
EXECUTION = "execution"  # the ParkBranch execution started for the raise (its ARN)
WAITS = "waits"  # StartExecution's refusals so far (the open-execution ceiling, a throttle)
TASK_TOKEN = "task_token"  # what the execution's park message reported: SendTaskSuccess ends it
TRACE = "trace"  # the X-Ray header of the hop that started the execution: the resume joins its trace
PARK_TTL_SECONDS = DEFAULT_PARK_SECONDS + 86_400  # past the longest park: by then the record is spent
TTL = "ttl"  # the table's TTL attribute
REV = "rev"


def session_pk(tenant: str, session_id: str) -> str:
    return f"T#{tenant}#S#{session_id}"


def session_of(pk: str) -> str:
    return pk.split("#S#", 1)[1]


def session_key(pk: str) -> tuple[str, str]:
    """(tenant, session) of a session partition's key."""
    tenant, session_id = pk.split("#S#", 1)
    return tenant[2:], session_id


def inbox_pk(tenant: str) -> str:
    """The Inbox index's partition: a tenant's open interrupts (sparse, all attributes projected)."""
    return f"T#{tenant}#OPEN"


def history_pk(tenant: str) -> str:
    """The History index's partition: every interrupt of the tenant, whatever its status (A6). It
    projects only what the inbox filters on, so it is written when an interrupt is raised and
    when its status changes, not by every rewrite of the item."""
    return f"T#{tenant}#ALL"


def sessions_pk(tenant: str) -> str:
    return f"T#{tenant}#LIST"


def attention_pk(tenant: str) -> str:
    """The Attention index's partition: a tenant's sessions that need a person (sparse)."""
    return f"T#{tenant}#ATTN"


def quota_pk(tenant: str) -> str:
    return f"T#{tenant}#QUOTA"


OPEN_SK = "OPEN"
"""The tenant's interrupts holding a slot (`n`), in its quota partition."""


def sessions_second_sk(second: int, principal: str | None = None) -> str:
    """The sessions the tenant (or one principal of it) created in one epoch second (`n`, with a
    `ttl`), in its quota partition."""
    return f"S#{second}" if principal is None else f"S#{second}#{caller_digest(principal)}"


def principal_open_sk(principal: str) -> str:
    """One principal's share of the tenant's interrupts holding a slot (`n`), in its quota partition."""
    return f"{OPEN_SK}#{caller_digest(principal)}"


def caller_digest(caller: str) -> str:
    """A caller's name in a key: fixed length, and no `#` of the caller's own can split the key."""
    return hashlib.sha256(caller.encode()).hexdigest()[:32]


WAITS_SK = "W"
"""A stream wait lease holder's SK: the tenant's in its quota partition, and each deployment shard's."""


def caller_waits_sk(caller: str) -> str:
    """A caller's stream wait lease holder, in its tenant's quota partition."""
    return f"{WAITS_SK}#{caller_digest(caller)}"


def waits_shard_pk(shard: int) -> str:
    """One of the deployment's stream wait lease holders, each its own partition."""
    return f"QUOTA#W#{shard}"


def agent_pk(tenant: str, agent_id: str) -> str:
    return f"T#{tenant}#A#{agent_id}"


def key_pk(key_hash: str) -> str:
    return f"KEY#{key_hash}"


IDP_SK = "IDP"


def tenant_idp_pk(tenant: str) -> str:
    """The tenant's identity provider declaration."""
    return f"T#{tenant}#IDP"


def issuer_key(issuer: str, client_id: str) -> tuple[str, str]:
    """(PK, SK) of the item naming the one tenant an (issuer, client id) pair belongs to."""
    return f"IDP#{caller_digest(issuer)}", f"C#{caller_digest(client_id)}"


def park_sk(interrupt_id: str, generation: int) -> str:
    """A raise's park record: one per (interrupt, generation), so a raise again starts a fresh one."""
    return f"{PARK}{interrupt_id}#{generation}"


def event_sk(seq: int) -> str:
    return f"{EVENT}{seq:012d}"


DELIVERY = "D#"  # sorts before the events and the state: no session read sees a delivery record
POSTED = DELIVERY + "M#"
PUSH_CONFIG = DELIVERY + "A#"
PUSH_COUNT = DELIVERY + "AN#"


def delivery_sk(key: str) -> str:
    """A notification's delivery record, `key` being `{event_id}#{entry}`."""
    return DELIVERY + key


def posted_sk(key: str) -> str:
    return POSTED + key


def push_configs_prefix(turn_id: str | None = None) -> str:
    """What a task's push configs' SKs begin with (every task's in the session when None)."""
    return PUSH_CONFIG if turn_id is None else f"{PUSH_CONFIG}{turn_id}#"


def push_config_sk(turn_id: str, config_id: str) -> str:
    return f"{push_configs_prefix(turn_id)}{config_id}"


def push_config_turn(sk: str) -> str:
    """The task (turn) a push config's SK names."""
    return sk[len(PUSH_CONFIG):].rpartition("#")[0]


def push_count_sk(turn_id: str) -> str:
    return f"{PUSH_COUNT}{turn_id}"


CONNECTION_SK = "C"
SLOT = "C#"  # one connection's item in a session's followers or a caller's connections


def connection_pk(connection_id: str) -> str:
    return f"L#{connection_id}"


def following_pk(tenant: str, session_id: str) -> str:
    """The partition of the connections that follow a session."""
    return f"T#{tenant}#L#{session_id}"


def caller_connections_pk(tenant: str, caller: str) -> str:
    """The partition of a caller's open connections."""
    return f"T#{tenant}#LC#{caller_digest(caller)}"


def slot_sk(connection_id: str) -> str:
    return SLOT + connection_id


def slot_connection(sk: str) -> str:
    return sk[len(SLOT):]


STREAMED = ("interrupt.reminded", "interrupt.escalated", "turn.finished", "turn.failed")
STREAMED_PREFIX = "session.interrupt"
"""The event types the outbox's stream filter lets through (template.yaml, `Outbox`), so the
notifier and the A2A push read them."""


def streamed(event_type: str) -> bool:
    return event_type.startswith(STREAMED_PREFIX) or event_type in STREAMED


def log_type(types: list[str]) -> str:
    """An event-log item's `etype`: its first streamed event's type, so the stream filter passes
    the item when any of its events is one; otherwise its first event's."""
    return next((t for t in types if streamed(t)), types[0])


def is_tail(sk: str) -> bool:
    return sk > HEAD_END
