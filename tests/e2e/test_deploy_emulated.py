"""`make deploy`'s own logic on the emulator: the stack is template.yaml translated by the Serverless
transform and created with moto's CloudFormation (the local stack's provisioning), and deploy reads
that stack's outputs through DescribeStacks and stores the first operator key in that stack's table,
with no recorder between them. Then `make smoke`'s scenario passes with that key.

The `ApiUrl` output is the `https://<api id>.execute-api.<region>.amazonaws.com/` URL CloudFormation
resolves from template.yaml; that host does not resolve here. The tests map it to the local front
end explicitly (`stage_url`): the front end plays the `$default` stage of that API (the API id it
puts in each request's context is the created ApiGatewayV2 Api's). Only `sam build`/`sam deploy`
themselves are not run: the SAM CLI's deploy needs an AWS account (README, "First run on AWS")."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import boto3
import pytest

from holdpoint.aws.store import Store
from holdpoint.core.credentials import hash_key
from holdpoint.ports import ApiKey
from holdpoint_local import REGION
from holdpoint_local.deploy import deploy, smoke
from holdpoint_local.stack import LocalStack

EXECUTE_API = re.compile(r"https://(?P<api>[a-z0-9]+)\.execute-api\.(?P<region>[a-z0-9-]+)\.amazonaws\.com/")
QUIET = {"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING"}
TENANT = "acme"


def stage_url(api_url: str, stack: LocalStack) -> str:
    """The local front end's URL for the `ApiUrl` output: only when that URL names the stack's own
    HTTP API (the id CloudFormation gave the `HttpApi` resource), in this region."""
    match = EXECUTE_API.fullmatch(api_url)
    assert match, f"ApiUrl {api_url!r} is not an execute-api URL"
    assert match["region"] == REGION
    cfn, apigw = stack.client("cloudformation"), stack.client("apigatewayv2")
    http_api = cfn.describe_stack_resource(StackName=stack.stack_name, LogicalResourceId="HttpApi")
    api_id = http_api["StackResourceDetail"]["PhysicalResourceId"]
    assert match["api"] == api_id == stack.provisioned.api_id == stack.gateway.api_id  # type: ignore[union-attr]
    assert apigw.get_api(ApiId=api_id)["ApiEndpoint"] == api_url.rstrip("/")
    return stack.base_url + urlsplit(api_url).path.rstrip("/")


def smoke_lines(capsys: pytest.CaptureFixture[str], url: str, key: str) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = smoke.main(["--url", url, "--key", key])
    return code, [line for line in capsys.readouterr().out.splitlines() if not line.startswith('{"_aws"')]


def printed_key(out: str) -> str:
    return out.split("stored only as its hash): ", 1)[1].split()[0]


def test_deploy_post_deploy_reads_the_created_stack_and_its_key_passes_smoke(
        local_stack_factory: Callable[..., LocalStack], capsys: pytest.CaptureFixture[str]) -> None:
    stack = local_stack_factory(tenant=TENANT, seed_api_key=False, extra_env=QUIET)  # no dev key: deploy's only
    done = deploy.post_deploy(stack.client("cloudformation"), stack.client("dynamodb"), stack.stack_name,
                              tenant=TENANT, subject="first-operator", new_key=True, region=REGION)
    assert done is not None and done.key is not None
    out = capsys.readouterr().out
    assert f"API URL: {done.api_url}" in out and printed_key(out) == done.key
    assert done.table == stack.env["TABLE_NAME"] == stack.provisioned.resources["Table"]  # type: ignore[union-attr]
    assert Store(done.table).get_api_key(hash_key(done.key)) == ApiKey(TENANT, "first-operator", "operator")
    code, lines = smoke_lines(capsys, stage_url(done.api_url, stack), done.key)
    assert code == 0 and len(lines) == 1 and lines[0].startswith("smoke: PASS "), lines


def test_deploy_post_deploy_refuses_a_stack_without_the_outputs(
        moto_server: Any, stack_name: str, capsys: pytest.CaptureFixture[str]) -> None:
    clients = {s: boto3.client(s, endpoint_url=moto_server.endpoint, region_name=REGION)
               for s in ("cloudformation", "dynamodb")}
    clients["cloudformation"].create_stack(StackName=stack_name,
                                           TemplateBody='{"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}}')
    for name in (stack_name, f"{stack_name}-none"):  # no ApiUrl/TableName outputs; no such stack
        assert deploy.post_deploy(clients["cloudformation"], clients["dynamodb"], name, tenant=TENANT,
                                  subject="first-operator", new_key=True, region=REGION) is None
        assert "has no ApiUrl/TableName outputs" in capsys.readouterr().err


class SamOnEmulator:
    """The SAM CLI with its deploy played by the local stack: `sam build` and the compile step are
    recorded; `sam deploy` translates template.yaml and creates (or updates) the stack in moto's
    CloudFormation, as the change set `sam deploy` executes would, and starts the handlers behind the
    local front end."""

    def __init__(self, factory: Callable[..., LocalStack], stack_name: str) -> None:
        self.factory, self.stack_name = factory, stack_name
        self.commands: list[list[str]] = []
        self.stacks: list[LocalStack] = []

    def __call__(self, cmd: Sequence[str]) -> int:
        self.commands.append(list(cmd))
        if cmd[1] == "deploy":
            assert cmd[cmd.index("--stack-name") + 1] == self.stack_name
            self.stacks.append(self.factory(tenant=TENANT, seed_api_key=False, extra_env=QUIET))
        return 0


def test_deploy_main_on_the_emulator_is_guided_once_and_its_key_passes_smoke(
        local_stack_factory: Callable[..., LocalStack], moto_server: Any, stack_name: str,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server.endpoint)  # deploy's own boto3 clients reach moto
    sam = SamOnEmulator(local_stack_factory, stack_name)
    assert deploy.main(["--stack-name", stack_name, "--tenant", TENANT], run=sam) == 0
    assert sam.commands == [["sam", "build", "--region", REGION],
                            ["python3.13", "-m", "compileall", "-q", "-j", "0", "--invalidation-mode",
                             "unchecked-hash", str(deploy.REPO_ROOT / ".aws-sam" / "build")],
                            ["sam", "deploy", "--stack-name", stack_name, "--guided", "--region", REGION]]
    out = capsys.readouterr().out
    api_url = out.split("API URL: ", 1)[1].split()[0]
    key = printed_key(out)
    table = sam.stacks[0].env["TABLE_NAME"]
    assert Store(table).get_api_key(hash_key(key)) == ApiKey(TENANT, "first-operator", "operator")
    code, lines = smoke_lines(capsys, stage_url(api_url, sam.stacks[0]), key)
    assert code == 0 and lines[0].startswith("smoke: PASS "), lines

    sam.stacks[0].stop(keep_moto=True)  # a redeploy: the stack exists, so not guided and no new key
    assert deploy.main(["--stack-name", stack_name, "--tenant", TENANT], run=sam) == 0
    assert "--guided" not in sam.commands[-1]
    out = capsys.readouterr().out
    assert f"API URL: {api_url}" in out and "no new key" in out and "stored only as its hash" not in out
    code, lines = smoke_lines(capsys, stage_url(api_url, sam.stacks[1]), key)  # the first key still works
    assert code == 0 and lines[0].startswith("smoke: PASS "), lines
