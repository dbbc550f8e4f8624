"""`make deploy`: build and deploy the SAM app, print the API URL, create the first operator key.

1. `sam build` (the layer resolves arm64 wheels, no container needed), then its modules compiled to
   bytecode by the runtime's python3.13 (deploy/bytecode.py: without it every cold start on AWS
   compiles boto3 and the layer from source, as the container tier measured);
2. `sam deploy --guided` when the stack does not exist yet (SAM asks for the region and the
   parameters and saves the answers in samconfig.toml), a plain `sam deploy` after that;
3. the stack's outputs: `ApiUrl` (printed) and `TableName`;
4. on the first deploy (or with `--new-key`), an API key of origin `operator` for `--tenant`,
   stored by its hash in the deployed table and printed once.

It needs AWS credentials in the environment, as the SAM CLI does. Steps 3 and 4 are `post_deploy`,
which takes its CloudFormation and DynamoDB clients: tests/e2e/test_deploy_emulated.py runs it (and
`main`, with `sam deploy` played by the local stack creating the translated template.yaml in moto's
CloudFormation) against that stack, then the smoke scenario with the key it made;
tests/unit/test_deploy.py checks the SAM CLI command lines with the CLI recorded. It has not been
run against a real AWS account from this repository (README, "First run on AWS", lists what that
leaves unproven).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import ClientError

from holdpoint.admin import create_key
from holdpoint.core.ids import ID_PATTERN

from ..provision import REPO_ROOT
from . import bytecode

Run = Callable[[Sequence[str]], int]
STACK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,127}$")  # CloudFormation's rule for stack names
REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")


def run_command(cmd: Sequence[str]) -> int:
    """Run a SAM CLI command in the repository, attached to this terminal (guided deploys ask)."""
    return subprocess.run(list(cmd), cwd=REPO_ROOT, check=False).returncode


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m holdpoint_local.deploy.deploy",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--sam", default="sam", help="the SAM CLI (make deploy uses .venv-sam's)")
    parser.add_argument("--stack-name", default="holdpoint")
    parser.add_argument("--region", default=None, help="default: samconfig.toml's, then the AWS CLI's")
    parser.add_argument("--tenant", default="default", help="the tenant of the first operator key")
    parser.add_argument("--subject", default="first-operator", help="who the first operator key names")
    parser.add_argument("--guided", choices=("auto", "always", "never"), default="auto",
                        help="auto: guided only when the stack does not exist yet")
    parser.add_argument("--new-key", action="store_true", help="create an operator key on a redeploy too")
    args = parser.parse_args(argv)
    if not STACK_NAME.match(args.stack_name):
        parser.error("--stack-name must be a CloudFormation stack name (a letter, then letters, digits, -)")
    if args.region and not REGION.match(args.region):
        parser.error("--region must be an AWS region such as us-east-1")
    for name in ("tenant", "subject"):
        if not ID_PATTERN.match(getattr(args, name)):
            parser.error(f"--{name} must match {ID_PATTERN.pattern}")
    return args


def samconfig_region(path: Path = REPO_ROOT / "samconfig.toml") -> str | None:
    """The region a guided deploy saved (`[default.deploy.parameters] region`), if any."""
    try:
        config = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    region = config.get("default", {}).get("deploy", {}).get("parameters", {}).get("region")
    return region if isinstance(region, str) and region else None


def sam_commands(sam: str, stack: str, region: str | None, guided: bool) -> list[list[str]]:
    where = ["--region", region] if region else []
    deploy = [sam, "deploy", "--stack-name", stack, *(["--guided"] if guided else []), *where]
    return [[sam, "build", *where], deploy]


def runtime_python(sam: str) -> str:
    """The interpreter that compiles for the runtime: the python3.13 beside the SAM CLI (`make deploy`
    passes .venv-sam's), else the one on PATH."""
    beside = Path(sam).parent / bytecode.RUNTIME
    return str(beside) if Path(sam).parent != Path() and beside.exists() else bytecode.RUNTIME


def deploy_steps(sam: str, stack: str, region: str | None, guided: bool) -> list[list[str]]:
    """`sam build`, the built artifact compiled (`.aws-sam/build`, where `sam deploy` packages from),
    then `sam deploy`."""
    build, deploy = sam_commands(sam, stack, region, guided)
    return [build, bytecode.command(REPO_ROOT / ".aws-sam" / "build", runtime_python(sam)), deploy]


def stack_outputs(cfn: Any, stack: str) -> dict[str, str] | None:
    """The stack's outputs, or None when there is no such stack."""
    try:
        stacks = cfn.describe_stacks(StackName=stack)["Stacks"]
    except ClientError as exc:
        if "does not exist" in str(exc):
            return None
        raise
    return {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}


@dataclass(frozen=True)
class Deployed:
    """What a deploy leaves the operator: the API's base URL, its table, and the key made now (if any)."""

    api_url: str
    table: str
    key: str | None


def post_deploy(cfn: Any, dynamodb: Any, stack: str, *, tenant: str, subject: str, new_key: bool,
                region: str | None = None) -> Deployed | None:
    """After `sam deploy`: read the stack's `ApiUrl` and `TableName` (DescribeStacks), create an operator
    key in that table when `new_key`, and print what the operator needs next. The clients say which
    AWS (the real one, or an emulator's endpoint); None when the stack lacks those outputs."""
    outputs = stack_outputs(cfn, stack) or {}
    if not {"ApiUrl", "TableName"} <= set(outputs):
        print(f"deploy: stack {stack} has no ApiUrl/TableName outputs ({region})", file=sys.stderr)
        return None
    api_url, table = outputs["ApiUrl"], outputs["TableName"]
    print(f"API URL: {api_url}")
    key = create_key(table, tenant, subject, "operator", dynamodb) if new_key else None
    if key:
        print(f"operator key for tenant {tenant} (shown once, stored only as its hash): {key}")
        print(f"next: make smoke URL={api_url} KEY={key} WORKER_URL=https://<your worker>/")
    else:
        print(f"the stack existed: no new key (make deploy NEW_KEY=1, or python -m holdpoint.admin create-key "
              f"--table {table} --tenant {tenant} --subject ... --origin operator)")
    print(f"tear down: sam delete --stack-name {stack}{f' --region {region}' if region else ''} "
          f"(the table and the payload bucket are retained: delete them after)")
    return Deployed(api_url, table, key)


def main(argv: list[str] | None = None, run: Run = run_command) -> int:
    args = parse_args(argv)
    region = args.region or samconfig_region() or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    before = stack_outputs(boto3.client("cloudformation", region_name=region), args.stack_name)
    guided = args.guided == "always" or (args.guided == "auto" and before is None)
    for cmd in deploy_steps(args.sam, args.stack_name, region, guided):
        if run(cmd) != 0:
            print(f"deploy: `{' '.join(cmd)}` failed; nothing else was done", file=sys.stderr)
            return 1
    region = args.region or samconfig_region() or region  # a guided deploy may have chosen it
    done = post_deploy(boto3.client("cloudformation", region_name=region), boto3.client("dynamodb", region_name=region),
                       args.stack_name, tenant=args.tenant, subject=args.subject,
                       new_key=before is None or args.new_key, region=region)
    return 0 if done else 1


if __name__ == "__main__":
    raise SystemExit(main())
