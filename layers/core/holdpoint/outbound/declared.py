"""What a tenant may point the engine at, checked when an agent is declared: no in-process callable,
no Lambda outside the allow-list, no internal URL, no secret that is not the tenant's, no tool schema
that would retrieve or do unbounded work. The engine checks each again at call time; this answers the
tenant at once, naming the field, recording nothing."""

from __future__ import annotations

from typing import Any

from holdpoint.aws import secretrefs
from holdpoint.core import schemas
from holdpoint.core.agent_config import (
    IN_PROCESS,
    AgentConfig,
    EmailEntry,
    LlmConfig,
    SlackEntry,
    WorkerConfig,
    in_process_set,
)
from holdpoint.core.errors import Refusal
from holdpoint.outbound import netguard, queues
from holdpoint.outbound.workers import check_lambda_arn


def _refuse(problem: str | None, field: str) -> None:
    if problem:
        raise Refusal("validation_error", problem, field)


def check_agent(agent: AgentConfig, tenant: str) -> None:
    """Raise a `validation_error` Refusal naming the first field the tenant may not declare."""
    if in_process_set(agent):
        raise Refusal("validation_error", IN_PROCESS, "worker.python")
    worker = agent.worker or WorkerConfig()
    if worker.lambda_arn is not None:
        _refuse(check_lambda_arn(worker.lambda_arn), "worker.lambda_arn")
    if worker.url is not None:
        _refuse(netguard.check_url(worker.url, "worker.url"), "worker.url")
    if worker.queue is not None:
        _refuse(queues.check_queue_url(worker.queue, "worker.queue"), "worker.queue")
    if worker.secret is not None:
        _refuse(secretrefs.check(worker.secret, tenant, "worker.secret"), "worker.secret")
    llm_config = agent.llm or LlmConfig()
    if llm_config.extra("base_url") is not None:
        _refuse(netguard.check_url(llm_config.extra("base_url"), "llm.base_url"), "llm.base_url")
    if llm_config.extra("api_key") is not None:
        _refuse(secretrefs.check(llm_config.extra("api_key"), tenant, "llm.api_key"), "llm.api_key")
    push_secret = agent.a2a.push_secret if agent.a2a is not None else None
    if push_secret is not None:
        _refuse(secretrefs.check(push_secret, tenant, "a2a.push_secret"), "a2a.push_secret")
    for i, entry in enumerate(agent.notify or []):
        if isinstance(entry, SlackEntry):
            from holdpoint.notify.channels import check_declaration

            check_declaration(entry.slack, tenant, f"notify[{i}]")
        elif isinstance(entry, EmailEntry):
            from holdpoint.notify.channels import check_email

            check_email(entry.email, f"notify[{i}]")
        else:
            check_webhook(entry.wire(), tenant, f"notify[{i}]")
    if agent.tools and (bad := schemas.tools_error([tool.wire() for tool in agent.tools])):
        raise Refusal("validation_error", bad[1], bad[0])
    for name, target in (agent.run_targets or {}).items():
        check_run_target(target.wire(), tenant, f"run_targets.{name}")


def check_run_target(target: dict[str, Any], tenant: str, field: str) -> None:
    """A run's target follows its kind's rules: a Lambda and a queue under the deployment's
    allow-lists, a url and its secret as a webhook's."""
    if target.get("lambda") is not None:
        _refuse(check_lambda_arn(target["lambda"], f"{field}.lambda"), f"{field}.lambda")
    if target.get("queue") is not None:
        _refuse(queues.check_queue_url(target["queue"], f"{field}.queue"), f"{field}.queue")
    check_webhook(target, tenant, field)


def check_webhook(entry: dict[str, Any], tenant: str, field: str) -> None:
    """A webhook follows the worker URL and secret rules (no internal address, https in the cloud,
    the tenant's own secrets); other channels' entries are checked by their channel."""
    if entry.get("url") is not None:
        _refuse(netguard.check_url(entry["url"], f"{field}.url"), f"{field}.url")
    if entry.get("secret") is not None:
        _refuse(secretrefs.check(entry["secret"], tenant, f"{field}.secret"), f"{field}.secret")


SECRET_FIELDS = (("worker", "secret"), ("llm", "api_key"), ("a2a", "push_secret"))


def warnings(config: dict[str, Any]) -> list[dict[str, str]]:
    """What a declaration allows but will fail at run time: an `env:` secret reference to a variable
    that is not set here. The template declares such variables in `Globals`, which the functions
    that declare agents and the engine that signs with them share, so unset here is unset there."""
    refs = [(f"{block}.{key}", (config.get(block) or {}).get(key)) for block, key in SECRET_FIELDS]
    refs += [(f"notify[{i}].secret", entry.get("secret")) for i, entry in enumerate(config.get("notify") or [])]
    out = []
    for field, ref in refs:
        if isinstance(ref, str) and ref.startswith("env:") and not secretrefs.env_set(ref[len("env:"):]):
            out.append({"param": field, "message": f"{ref} is not set where the engine runs, so every request "
                        f"that needs it will fail (the session waits, retrying): set {ref[len('env:'):]} in the "
                        "deployment's environment, or name a secretsmanager: secret"})
    return out
