"""The container tier: `sam build`'s artifact, invoked with `sam local invoke` in Lambda-shaped
containers (local/holdpoint_local/containers.py), each function calling the moto server with
temporary credentials of its own role, as on AWS.

Session fixtures: the Docker engine (started when none answers, stopped only if started here), the
base image (built once, cached by the digest of its inputs), one `sam build` into a temporary build
directory, and one stack of template.yaml provisioned into the run's moto server (reached from the
containers through a relay on Docker's bridge address). When this machine cannot run containers,
every test here fails with one line naming what is missing; none is skipped.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from botocore.config import Config

from holdpoint_local import FAKE_ENV, REGION, containers
from holdpoint_local.credentials import RoleSessions
from holdpoint_local.moto_server import MotoServer, free_port
from holdpoint_local.processes import end
from holdpoint_local.provision import REPO_ROOT, TEMPLATE_PATH, Provisioned, provision
from holdpoint_local.wsgateway import WebSocketGateway, read_live
from tests.waiting import wait_for

SAM = REPO_ROOT / ".venv-sam" / "bin" / "sam"
API_KEY = "hp_sam_local_key"
OPS_KEY = "hp_sam_local_ops_key"
TENANT, SUBJECT, ORIGIN = "dev", "dev-user", "client"
ARCHITECTURE = "x86_64"
"""The architecture the functions are invoked on here. template.yaml says arm64, and arm64 does run
under qemu-user-static here (`test_arm64.py` imports the layer's arm64 wheels in the arm64 image),
but an emulated cold start takes longer than the authorizer's 10 s timeout (boto3's import alone
takes about 4 s with bytecode, 30 s without), so the invocations run natively on a copy of
template.yaml that differs only in its three architecture lines (`x86_64_template`)."""
ARM64_LINES = ("    Architectures: [arm64]\n", "      CompatibleArchitectures: [arm64]\n",
               "      BuildArchitecture: arm64\n")
ENDPOINT_VAR = "AWS_ENDPOINT_URL"
CREDENTIAL_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
REPORT = re.compile(r"REPORT RequestId: \S+\s+(?:Init Duration: (?P<init>[\d.]+) ms\s+)?Duration: (?P<dur>[\d.]+) ms")


def fail_unavailable(exc: containers.Unavailable) -> None:
    pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def docker_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[containers.Engine]:
    engine = containers.Engine(tmp_path_factory.mktemp("dockerd") / "dockerd.log")
    try:
        engine.start()
    except containers.Unavailable as exc:
        fail_unavailable(exc)
    yield engine
    engine.stop()


def ensure_image(architecture: str) -> str:
    try:
        containers.ensure_emulation(architecture)
        return containers.BaseImage(architecture).ensure()
    except containers.Unavailable as exc:
        fail_unavailable(exc)
        raise


@pytest.fixture(scope="session")
def base_image(docker_engine: containers.Engine) -> str:
    return ensure_image(ARCHITECTURE)


@pytest.fixture(scope="session")
def arm64_image(docker_engine: containers.Engine) -> str:
    return ensure_image("arm64")


def x86_64_template(out_dir: Path) -> Path:
    """template.yaml with its functions and layer on x86_64 and nothing else changed."""
    text = TEMPLATE_PATH.read_text()
    for line in ARM64_LINES:
        assert text.count(line) == 1, f"template.yaml no longer has exactly one {line!r}"
        text = text.replace(line, line.replace("arm64", "x86_64"))
    assert "arm64" not in text, "an arm64 the copy does not move"
    out = out_dir / "template.x86_64.yaml"
    out.write_text(text)
    return out


def sam_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The SAM CLI's environment: its venv's python3.13 first on PATH (`sam build` runs it), no telemetry."""
    if not SAM.exists():
        pytest.fail("no .venv-sam: `make test` installs the pinned SAM CLI (make .venv-sam/.installed)", pytrace=False)
    path = f"{SAM.parent}:{os.environ.get('PATH', '')}"
    # An emulated container's runtime interface emulator takes seconds to listen (20 s is SAM's default).
    return {**os.environ, "PATH": path, "SAM_CLI_TELEMETRY": "0", "SAM_CLI_CONTAINER_CONNECTION_TIMEOUT": "120",
            **(extra or {})}


def local_template(built: Path) -> Path:
    """The built template with `AWS_ENDPOINT_URL` and the three credential variables declared on every
    function (Globals): `sam local` lets `--env-vars` set only the variables a template declares, the
    first points the SDK at the moto server, and the others give each function its own role's
    temporary credentials (one `sam local start-lambda` serves them all, and would otherwise pass
    every function its own process's). Nothing else differs from what `sam build` wrote."""
    template = yaml.safe_load((built / "template.yaml").read_text())
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    for name in (ENDPOINT_VAR, *CREDENTIAL_VARS):
        variables[name] = ""
    out = built / "template.local.yaml"
    out.write_text(yaml.safe_dump(template, sort_keys=False))
    return out


@dataclass
class Built:
    build_dir: Path
    template: Path
    seconds: float


def build(template: Path, build_dir: Path, base_dir: Path = REPO_ROOT) -> float:
    """`sam build` of `template` (its code paths resolved from `base_dir`) into `build_dir`; seconds taken."""
    start = time.monotonic()
    done = subprocess.run([str(SAM), "build", "--template-file", str(template), "--base-dir", str(base_dir),
                           "--build-dir", str(build_dir), "--region", REGION], cwd=base_dir, env=sam_env(),
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return time.monotonic() - start


@pytest.fixture(scope="session")
def sam_build(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """`sam build` of template.yaml on x86_64 (`ARCHITECTURE`), once per run, into a temporary directory."""
    tmp = tmp_path_factory.mktemp("sam")
    build_dir = tmp / "build"
    seconds = build(x86_64_template(tmp), build_dir)
    compile_bytecode(build_dir)
    return Built(build_dir, local_template(build_dir), seconds)


@pytest.fixture(scope="session")
def arm64_build(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """`sam build` of template.yaml itself (arm64), as `make sam-check` and `make deploy` build it."""
    build_dir = tmp_path_factory.mktemp("sam-arm64") / "build"
    seconds = build(TEMPLATE_PATH, build_dir)
    return Built(build_dir, build_dir / "template.yaml", seconds)


def compile_bytecode(build_dir: Path) -> None:
    """Compile the built layer's and functions' modules (python3.13, .pyc that are never re-checked
    against their sources). Under qemu a cold start would otherwise compile boto3 alone for about
    30 s, in every container (each `sam local invoke` is a new one, and its writes are lost); with
    the bytecode it imports in about 4 s. The sources are what `sam build` wrote."""
    python = SAM.parent / "python3.13"
    done = subprocess.run([str(python), "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash",
                           str(build_dir)], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def sam_invoke(build_dir: Path, template: Path, function: str, event: Any, *, host: str,
               env_vars: dict[str, dict[str, str]] | None = None, credentials: dict[str, str] | None = None,
               timeout: float = 300) -> Invocation:
    """`sam local invoke <function>` of a built template with `event`: the function's answer (the last
    line SAM prints on stdout, None when it gave none: SAM exits 0 even then), and its REPORT figures."""
    tmp = build_dir.parent
    event_file = tmp / f"event-{uuid.uuid4().hex[:8]}.json"
    event_file.write_text(json.dumps(event))
    env_file = tmp / f"env-{uuid.uuid4().hex[:8]}.json"
    env_file.write_text(json.dumps(env_vars or {}))
    env = sam_env({"AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION, **(credentials or {})})
    # botocore reads AWS_SECURITY_TOKEN before AWS_SESSION_TOKEN
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SECURITY_TOKEN"):
        env.pop(name, None)
    cmd = [str(SAM), "local", "invoke", function, "--template-file", str(template), "--event", str(event_file),
           "--env-vars", str(env_file), "--skip-pull-image", "--container-host", host,
           "--container-host-interface", host, "--region", REGION]
    done = subprocess.run(cmd, cwd=build_dir, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    lines = [line for line in done.stdout.strip().splitlines() if line.strip()]
    response: Any = None
    if lines:
        try:
            response = json.loads(lines[-1])
        except ValueError:
            response = lines[-1]
    match = REPORT.search(done.stderr)
    return Invocation(function, response, done.stdout, done.stderr, done.returncode,
                      float(match["init"]) if match and match["init"] else None,
                      float(match["dur"]) if match else None)


@dataclass
class Invocation:
    function: str
    response: Any
    stdout: str
    stderr: str
    returncode: int
    init_ms: float | None
    duration_ms: float | None


@dataclass
class Deployment:
    """template.yaml provisioned into moto, and `sam local invoke` of its built functions."""

    built: Built
    provisioned: Provisioned
    endpoint: str  # the moto server as the containers reach it (the relay on the bridge address)
    moto_endpoint: str  # as this process reaches it
    roles: RoleSessions
    host: str
    reports: list[Invocation] = field(default_factory=list)
    lambdas: LambdaEndpoint | None = None
    live_url: str = ""

    def client(self, service: str) -> Any:
        return boto3.client(service, endpoint_url=self.moto_endpoint, region_name=REGION,
                            aws_access_key_id="testing", aws_secret_access_key="testing")

    def env_vars(self, function: str, extra: dict[str, str] | None = None) -> dict[str, dict[str, str]]:
        spec = self.provisioned.functions[function]
        return {function: {**spec.env, ENDPOINT_VAR: self.endpoint, **(extra or {})}}

    def credentials(self, function: str) -> dict[str, str]:
        creds = self.roles.get(self.provisioned.functions[function].role_arn)
        return dict(zip(CREDENTIAL_VARS, (creds.access_key, creds.secret_key, creds.token), strict=True))

    def all_env_vars(self) -> dict[str, dict[str, str]]:
        """Every function's variables as the created stack has them, the endpoint, its role's credentials."""
        return {name: {**self.env_vars(name)[name], **self.credentials(name)} for name in self.provisioned.functions}

    def invoke(self, function: str, event: Any) -> Invocation:
        """Invoke `function` on the `sam local start-lambda` endpoint (one container per function, kept warm)."""
        assert self.lambdas is not None, "start-lambda first"
        out = self.lambdas.invoke(function, event)
        self.reports.append(out)
        return out


class ContainerFunction:
    """What the local stack's front ends call for a function (`invoke(event)`), run in its container;
    raises when the function raised or gave no answer, as the front ends expect of a function."""

    def __init__(self, deployment: Deployment, logical_id: str) -> None:
        self.deployment, self.logical_id = deployment, logical_id
        self.last: Invocation | None = None

    def invoke(self, event: Any) -> Any:
        self.last = self.deployment.invoke(self.logical_id, event)
        assert self.last.response is not None, self.last.stderr[-4000:]
        if isinstance(self.last.response, dict) and "errorType" in self.last.response:
            message = self.last.response.get("errorMessage")
            raise RuntimeError(message or f"{self.logical_id} raised: {self.last.response}")
        return self.last.response


class LambdaEndpoint:
    """`sam local start-lambda`: the Lambda Invoke API on 127.0.0.1, each function run in its own
    container from `sam build`'s artifact (created on its first invoke and kept warm, as Lambda keeps
    an execution environment). Its log is read after each invoke for the invoke's REPORT line."""

    def __init__(self, built: Built, env_vars: dict[str, dict[str, str]], host: str, log_path: Path) -> None:
        self.built, self.host, self.log_path = built, host, log_path
        self.env_file = log_path.parent / "start-lambda-env.json"
        self.env_file.write_text(json.dumps(env_vars))
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None
        self._offset = 0

    def start(self, timeout: float = 120) -> LambdaEndpoint:
        cmd = [str(SAM), "local", "start-lambda", "--template-file", str(self.built.template), "--env-vars",
               str(self.env_file), "--skip-pull-image", "--warm-containers", "LAZY", "--host", "127.0.0.1",
               "--port", str(self.port), "--container-host", self.host, "--container-host-interface", self.host,
               "--region", REGION]
        env = sam_env({"AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION})
        for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SECURITY_TOKEN", *CREDENTIAL_VARS):
            env.pop(name, None)  # the functions' own credentials come from the env-vars file
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(cmd, cwd=self.built.build_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
        wait_for(self._listening, "sam local start-lambda listens", timeout=timeout,
                 describe=lambda: self.log_path.read_text()[-2000:])
        return self

    def _listening(self) -> bool:
        assert self._proc is not None
        if self._proc.poll() is not None:
            raise AssertionError(f"sam local start-lambda exited: {self.log_path.read_text()[-3000:]}")
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", self.port)) == 0

    def invoke(self, function: str, event: Any) -> Invocation:
        client = boto3.client("lambda", endpoint_url=f"http://127.0.0.1:{self.port}", region_name=REGION,
                              aws_access_key_id="x", aws_secret_access_key="x",
                              config=Config(read_timeout=600, retries={"max_attempts": 1}))
        answer = client.invoke(FunctionName=function, Payload=json.dumps(event).encode())
        payload = answer["Payload"].read()
        response: Any = json.loads(payload) if payload else None
        log = self.log_path.read_text(errors="replace")
        fresh, self._offset = log[self._offset:], len(log)
        match = REPORT.search(fresh)
        return Invocation(function, response, "", fresh, 1 if answer.get("FunctionError") else 0,
                          float(match["init"]) if match and match["init"] else None,
                          float(match["dur"]) if match else None)

    def stop(self) -> None:
        """Ctrl-C, as SAM CLI expects: it then removes the warm containers it started."""
        if self._proc is None:
            return
        end(self._proc, sig=signal.SIGINT, grace=60)
        self._proc = None


@pytest.fixture(scope="session")
def bridge_host(docker_engine: containers.Engine) -> str:
    """This machine's address on Docker's bridge: SAM publishes the emulator's port there, and the
    containers reach this machine's servers there."""
    try:
        return containers.bridge_gateway()
    except containers.Unavailable as exc:
        fail_unavailable(exc)
        raise


@pytest.fixture(scope="session")
def deployment(docker_engine: containers.Engine, base_image: str, sam_build: Built, bridge_host: str,
               moto_server: MotoServer) -> Iterator[Deployment]:
    """One stack of template.yaml in the run's moto server, the dev API key stored, and a relay to
    moto on Docker's bridge address (this machine's own address, reachable from the containers)."""
    host = bridge_host
    relay = containers.Relay(host, ("127.0.0.1", moto_server.port)).start()
    stack_name = f"sam{uuid.uuid4().hex[:8]}"
    saved = dict(os.environ)
    os.environ.update(FAKE_ENV)
    provisioned = provision(moto_server.endpoint, template_path=TEMPLATE_PATH, stack_name=stack_name)
    from holdpoint.aws.keys import put_api_key

    ddb = boto3.client("dynamodb", endpoint_url=moto_server.endpoint, region_name=REGION,
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    put_api_key(provisioned.env["TABLE_NAME"], API_KEY, TENANT, SUBJECT, ORIGIN, client=ddb)
    put_api_key(provisioned.env["TABLE_NAME"], OPS_KEY, TENANT, "ops", "operator", client=ddb)
    deployment = Deployment(sam_build, provisioned, relay.url, moto_server.endpoint, RoleSessions(moto_server.endpoint),
                            host)
    # The WebSocket API (wsgateway.py) on the bridge address: the functions post to its management API.
    live = WebSocketGateway(host=host)
    deployment.live_url = live.url
    env_vars = deployment.all_env_vars()
    for variables in env_vars.values():
        variables.update({"HOLDPOINT_LIVE_ENDPOINT": live.management_url, "HOLDPOINT_LIVE_URL": live.url})
    log = sam_build.build_dir.parent / "start-lambda.log"
    lambdas = LambdaEndpoint(sam_build, env_vars, host, log)
    deployment.lambdas = lambdas.start()
    routes = read_live(moto_server.endpoint, provisioned)
    assert routes is not None, "template.yaml has no WebSocket API"
    live.start(routes, {name: ContainerFunction(deployment, name) for name in provisioned.functions},  # type: ignore[misc]
               moto_server.endpoint)
    yield deployment
    live.stop()
    lambdas.stop()
    relay.stop()
    os.environ.clear()
    os.environ.update(saved)
    summary = [f"{r.function}: init {r.init_ms} ms, duration {r.duration_ms} ms" for r in deployment.reports]
    report = os.environ.get("HOLDPOINT_SAM_REPORT")
    if report:
        Path(report).write_text("\n".join([f"sam build {sam_build.seconds:.1f} s", *summary]) + "\n")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tier's tests share one deployment and one answered session, and some read what an
    earlier one left (the notifier test publishes the operator interrupt's events): they run in
    their files' own order, in the places the shuffle (pytest-randomly, which reorders before this
    hook) gave the tier."""
    slots = [n for n, item in enumerate(items) if "tests/sam/" in item.nodeid]
    ordered = sorted((items[n] for n in slots), key=lambda item: (str(item.path), item.reportinfo()[1] or 0))
    for n, item in zip(slots, ordered, strict=True):
        items[n] = item
