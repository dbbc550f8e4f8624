"""Least privilege, shown: per function, the IAM actions its role grants (template.yaml through the
Serverless transform, managed policies expanded from moto's copy of them) next to the actions its
code called during a test run (credentials.CallLog, written to `HOLDPOINT_IAM_CALL_LOG`).

    HOLDPOINT_IAM_CALL_LOG=/tmp/calls.jsonl .venv/bin/python -m pytest tests/e2e tests/security
    .venv/bin/python -m holdpoint_local.least_privilege /tmp/calls.jsonl   # the table in docs/SECURITY.md
"""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .provision import TEMPLATE_PATH, load_template, translate

POLLER_POLICIES = {"AWSLambdaBasicExecutionRole", "AWSLambdaSQSQueueExecutionRole", "AWSLambdaDynamoDBExecutionRole",
                   "AWSXrayWriteOnlyAccess"}
"""Managed policies the transform attaches itself (logs, X-Ray, the event source mapping's polling)."""


NO_GRANT_NEEDED = {"sts:GetCallerIdentity"}
"""Actions AWS allows every principal."""


def _actions_of(node: Any) -> Iterator[str]:
    """Every Action string in a policy document (both branches of an Fn::If)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Action":
                yield from ([value] if isinstance(value, str) else [a for a in value if isinstance(a, str)])
            else:
                yield from _actions_of(value)
    elif isinstance(node, list):
        for item in node:
            yield from _actions_of(item)


@functools.cache
def _managed_policies() -> dict[str, Any]:
    """moto's copy of the AWS managed policies (megabytes of JSON), parsed once, not once per role's ARN."""
    from moto.iam.aws_managed_policies import aws_managed_policies_data

    policies: dict[str, Any] = json.loads(aws_managed_policies_data)
    return policies


def _managed(arn: str) -> set[str]:
    data = _managed_policies().get(arn.rsplit("/", 1)[-1], {})
    return set(_actions_of(data.get("Document", {})))


def granted(template_path: Path = TEMPLATE_PATH) -> dict[str, dict[str, set[str]]]:
    """{function: {"inline": actions of its own policies, "managed": actions of the transform's managed policies}}."""
    translated = translate(load_template(template_path), parameters={"WorkerLambdaArnPattern": "arn:aws:lambda:*"})
    resources = translated["Resources"]
    out: dict[str, dict[str, set[str]]] = {}
    for logical, res in resources.items():
        if res["Type"] != "AWS::Lambda::Function":
            continue
        role = resources[res["Properties"]["Role"]["Fn::GetAtt"][0]]["Properties"]
        managed = set().union(*(_managed(a) for a in role.get("ManagedPolicyArns", []) if isinstance(a, str)))
        out[logical] = {"inline": set(_actions_of(role.get("Policies", []))), "managed": managed}
    return out


def called(log: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        out.setdefault(entry["function"], set()).add(entry["action"])
    return out


def _covers(grant: str, action: str) -> bool:
    from fnmatch import fnmatchcase

    return fnmatchcase(action, grant)


def report(log: Path, template_path: Path = TEMPLATE_PATH) -> str:
    grants, calls = granted(template_path), called(log)
    lines = ["| function | granted (own policies) | called during the suite | granted, never called |",
             "| --- | --- | --- | --- |"]
    for function in sorted(grants):
        inline, used = grants[function]["inline"], calls.get(function, set())
        unused = sorted(g for g in inline if not any(_covers(g, a) for a in used))
        ungranted = sorted(a for a in used - NO_GRANT_NEEDED
                           if not any(_covers(g, a) for g in inline | grants[function]["managed"]))
        row = [function, ", ".join(f"`{a}`" for a in sorted(inline)), ", ".join(f"`{a}`" for a in sorted(used)),
               ", ".join(f"`{a}`" for a in unused) or "none"]
        lines.append("| " + " | ".join(row) + " |")
        if ungranted:
            lines.append(f"| {function}: called without a grant (denied) | | {', '.join(ungranted)} | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log", type=Path, help="the HOLDPOINT_IAM_CALL_LOG file of a test run")
    parser.add_argument("--template", type=Path, default=TEMPLATE_PATH)
    args = parser.parse_args(argv)
    print(report(args.log, args.template))


if __name__ == "__main__":
    main()
