"""Retry policies (PROTOCOL.md §4): attempt/total timeouts, attempts, backoff `min(base^n, max)`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypedDict

from holdpoint.core.jsontypes import JsonValue

if TYPE_CHECKING:
    from holdpoint.core.agent_config import AgentConfig

UNBOUNDED = float("inf")


@dataclass(frozen=True)
class Policy:
    attempt_timeout_secs: float
    total_timeout_secs: float
    max_attempts: int
    backoff_base_secs: float = 2.0
    backoff_max_secs: float = 60.0

    def backoff(self, attempt: int) -> float:
        """Delay before attempt `attempt + 1` (attempt counts from 1)."""
        return float(min(self.backoff_base_secs ** attempt, self.backoff_max_secs))

    def fields(self) -> PolicyFields:
        """The policy as a delivery record keeps it (`Policy(**fields)` reads it back): the
        fields in their declared order, as `dataclasses.asdict` wrote them."""
        return {"attempt_timeout_secs": self.attempt_timeout_secs, "total_timeout_secs": self.total_timeout_secs,
                "max_attempts": self.max_attempts, "backoff_base_secs": self.backoff_base_secs,
                "backoff_max_secs": self.backoff_max_secs}


class PolicyFields(TypedDict):
    attempt_timeout_secs: float
    total_timeout_secs: float
    max_attempts: int
    backoff_base_secs: float
    backoff_max_secs: float


DEFAULTS = {
    "decision": Policy(300, 1800, 10),
    "llm": Policy(180, 1800, 5),
    "tool": Policy(120, 600, 1),
    "client_tool": Policy(UNBOUNDED, UNBOUNDED, 1),
    "sub_agent": Policy(60, 3600, 3),
    "webhook": Policy(10, 3600, 5),  # a notification webhook: 5 attempts, 2/4/8/16 s apart
}


def policy(agent: AgentConfig | None, kind: str, override: JsonValue = None) -> Policy:
    """The default for `kind`, then the agent's `retry.{kind}` (checked when declared), then a
    per-call `retry` block. A layer that is not an object is a TypeError (it never was a policy)."""
    out = DEFAULTS[kind]
    declared = (agent.retry or {}).get(kind) if agent is not None else None
    if declared is not None:
        out = replace(out, **declared.model_dump(exclude_none=True))
    if override:
        named = _holdpoint_names(override)
        out = replace(out, **{k: v for k, v in named.items() if v is not None and hasattr(out, k)})
    return out


def _holdpoint_names(layer: object) -> dict[str, Any]:
    """Upstream's `RetryPolicy` spelling (`max_retries`, `timeout_secs`) in Holdpoint's names. Its
    values are `Any` on purpose: a layer is JSON nothing validated (a per-call block, a tool's
    declaration, a worker's config), and its fields go to the policy unchecked, as they always
    have, so a value that is not a number fails where the policy uses it, and only there."""
    if not isinstance(layer, dict):
        raise TypeError(f"a retry policy is not an object: {layer!r}")
    out = dict(layer)
    retries = out.get("max_retries")
    if isinstance(retries, int) and "max_attempts" not in out:
        out["max_attempts"] = retries + 1
    if out.get("timeout_secs") is not None and "attempt_timeout_secs" not in out:
        out["attempt_timeout_secs"] = out["timeout_secs"]
    return out
