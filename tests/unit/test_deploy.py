"""`make deploy` (holdpoint_local/deploy/deploy.py) with the SAM CLI recorded and CloudFormation and
DynamoDB from moto: guided only the first time, the API URL printed, the first operator key
stored by its hash; a failing step stops everything after it; bad arguments are refused. That the
SAM CLI command lines and samconfig.toml's deploy keys parse in the pinned SAM CLI is checked in
tests/integration/test_sam_cli.py (`make test`). tests/e2e/test_deploy_emulated.py runs the
post-deploy step against the stack the local stack creates from template.yaml. (Not run against a
real AWS account: there are no credentials here.)"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import boto3
import pytest

from holdpoint.aws.store import Store
from holdpoint.core.credentials import hash_key
from holdpoint.ports import ApiKey
from holdpoint_local.deploy import deploy

API_URL = "https://abc123.execute-api.us-east-1.amazonaws.com/"


class RecordedSam:
    """Stands in for the SAM CLI and the compile step: records each command; `deploy` creates the stack
    (in moto) with the outputs template.yaml declares; `fail` makes the named subcommand (or
    `compileall`) exit 1."""

    def __init__(self, fail: str | None = None) -> None:
        self.commands: list[list[str]] = []
        self.fail = fail

    def __call__(self, cmd: Sequence[str]) -> int:
        self.commands.append(list(cmd))
        if self.fail in cmd[1:3]:
            return 1
        if cmd[1] == "deploy" and "--guided" in cmd:
            template = {"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}},
                        "Outputs": {"ApiUrl": {"Value": API_URL}, "TableName": {"Value": "holdpoint"}}}
            boto3.client("cloudformation").create_stack(StackName=cmd[cmd.index("--stack-name") + 1],
                                                        TemplateBody=json.dumps(template))
        return 0


def stored_key(out: str) -> ApiKey | None:
    key = out.split("stored only as its hash): ", 1)[1].split()[0]
    return Store("holdpoint").get_api_key(hash_key(key))


def test_first_deploy_is_guided_prints_the_url_and_creates_an_operator_key(
        aws: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    sam = RecordedSam()
    assert deploy.main(["--sam", "/x/sam", "--stack-name", "hp-test", "--tenant", "acme"], run=sam) == 0
    assert sam.commands == [["/x/sam", "build", "--region", "us-east-1"],
                            ["python3.13", "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash",
                             str(deploy.REPO_ROOT / ".aws-sam" / "build")],
                            ["/x/sam", "deploy", "--stack-name", "hp-test", "--guided", "--region", "us-east-1"]]
    out = capsys.readouterr().out
    assert f"API URL: {API_URL}" in out and "sam delete --stack-name hp-test" in out
    assert stored_key(out) == ApiKey("acme", "first-operator", "operator")


def test_a_redeploy_is_not_guided_and_makes_no_key_unless_asked(
        aws: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    deploy.main(["--stack-name", "hp-test"], run=RecordedSam())
    capsys.readouterr()
    sam = RecordedSam()
    assert deploy.main(["--stack-name", "hp-test"], run=sam) == 0
    assert [c[:2] for c in sam.commands] == [["sam", "build"], ["python3.13", "-m"], ["sam", "deploy"]]
    assert "--guided" not in sam.commands[2]
    out = capsys.readouterr().out
    assert "no new key" in out and "stored only as its hash" not in out
    assert deploy.main(["--stack-name", "hp-test", "--new-key", "--tenant", "t2"], run=RecordedSam()) == 0
    assert stored_key(capsys.readouterr().out) == ApiKey("t2", "first-operator", "operator")


@pytest.mark.parametrize("step", ["build", "compileall", "deploy"])
def test_a_failing_step_stops_everything_after_it(aws: dict[str, str], capsys: pytest.CaptureFixture[str],
                                                  step: str) -> None:
    sam = RecordedSam(fail=step)
    assert deploy.main(["--stack-name", "hp-test"], run=sam) == 1
    assert step in sam.commands[-1][1:3]
    captured = capsys.readouterr()
    assert "failed; nothing else was done" in captured.err and "operator key" not in captured.out


@pytest.mark.parametrize("argv", [["--stack-name", "9lives"], ["--stack-name", "a_b"], ["--region", "mars"],
                                  ["--tenant", "two words"], ["--guided", "sometimes"]])
def test_bad_arguments_are_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        deploy.main(argv, run=RecordedSam())
    assert exited.value.code == 2


def test_the_region_a_guided_deploy_saved_is_read_back(tmp_path: Path) -> None:
    config = tmp_path / "samconfig.toml"
    config.write_text('version = 0.1\n[default.deploy.parameters]\nstack_name = "holdpoint"\nregion = "eu-west-1"\n')
    assert deploy.samconfig_region(config) == "eu-west-1"
    assert deploy.samconfig_region(tmp_path / "missing.toml") is None
    assert deploy.samconfig_region(deploy.REPO_ROOT / "samconfig.toml") is None  # none until a guided deploy


def test_the_artifact_is_compiled_by_the_python_beside_the_sam_cli(tmp_path: Path) -> None:
    """`make deploy` passes .venv-sam's sam, whose venv has the runtime's python3.13."""
    (tmp_path / "python3.13").touch()
    assert deploy.runtime_python(str(tmp_path / "sam")) == str(tmp_path / "python3.13")
    assert deploy.runtime_python("sam") == deploy.runtime_python("/nowhere/sam") == "python3.13"


def test_make_deploy_and_smoke_are_targets() -> None:
    makefile = (deploy.REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    assert "\ndeploy: " in makefile and "-m holdpoint_local.deploy.deploy " in makefile
    assert "\nsmoke: " in makefile and "-m holdpoint_local.deploy.smoke" in makefile
