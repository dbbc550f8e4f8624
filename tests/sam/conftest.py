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

from holdpoint_local import FAKE_ENV, REGION, containers
from holdpoint_local.credentials import RoleSessions
from holdpoint_local.moto_server import MotoServer
from holdpoint_local.provision import REPO_ROOT, TEMPLATE_PATH, Provisioned, provision

SAM = REPO_ROOT / ".venv-sam" / "bin" / "sam"
API_KEY = "hp_sam_local_key"
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
    """The built template with `AWS_ENDPOINT_URL` declared on every function (Globals): `sam local`
    passes a function only the variables its template declares, and this one points the SDK at the
    moto server. Nothing else differs from what `sam build` wrote."""
    template = yaml.safe_load((built / "template.yaml").read_text())
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    variables[ENDPOINT_VAR] = ""
    out = built / "template.local.yaml"
    out.write_text(yaml.safe_dump(template, sort_keys=False))
    return out


@dataclass
class Built:
    build_dir: Path
    template: Path
    seconds: float


def build(template: Path, build_dir: Path) -> float:
    """`sam build` of `template` (its code paths resolved from the repo) into `build_dir`; seconds taken."""
    start = time.monotonic()
    done = subprocess.run([str(SAM), "build", "--template-file", str(template), "--base-dir", str(REPO_ROOT),
                           "--build-dir", str(build_dir), "--region", REGION], cwd=REPO_ROOT, env=sam_env(),
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

    def client(self, service: str) -> Any:
        return boto3.client(service, endpoint_url=self.moto_endpoint, region_name=REGION,
                            aws_access_key_id="testing", aws_secret_access_key="testing")

    def env_vars(self, function: str, extra: dict[str, str] | None = None) -> dict[str, dict[str, str]]:
        spec = self.provisioned.functions[function]
        return {function: {**spec.env, ENDPOINT_VAR: self.endpoint, **(extra or {})}}

    def invoke(self, function: str, event: Any, *, extra_env: dict[str, str] | None = None,
               template: Path | None = None, timeout: float = 300) -> Invocation:
        """`sam local invoke <function>` with `event`, signed with the function's role's temporary credentials."""
        tmp = self.built.build_dir.parent
        event_file = tmp / f"event-{uuid.uuid4().hex[:8]}.json"
        event_file.write_text(json.dumps(event))
        env_file = tmp / f"env-{uuid.uuid4().hex[:8]}.json"
        env_file.write_text(json.dumps(self.env_vars(function, extra_env)))
        role = self.provisioned.functions[function].role_arn
        creds = self.roles.get(role)
        env = sam_env({"AWS_ACCESS_KEY_ID": creds.access_key, "AWS_SECRET_ACCESS_KEY": creds.secret_key,
                       "AWS_SESSION_TOKEN": creds.token, "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION})
        # botocore reads AWS_SECURITY_TOKEN before AWS_SESSION_TOKEN
        for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SECURITY_TOKEN"):
            env.pop(name, None)
        cmd = [str(SAM), "local", "invoke", function, "--template-file", str(template or self.built.template),
               "--event", str(event_file), "--env-vars", str(env_file), "--skip-pull-image",
               "--container-host", self.host, "--container-host-interface", self.host, "--region", REGION]
        done = subprocess.run(cmd, cwd=self.built.build_dir, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
        lines = [line for line in done.stdout.strip().splitlines() if line.strip()]
        response: Any = None
        if lines:
            try:
                response = json.loads(lines[-1])
            except ValueError:
                response = lines[-1]
        match = REPORT.search(done.stderr)
        out = Invocation(function, response, done.stdout, done.stderr, done.returncode,
                         float(match["init"]) if match and match["init"] else None,
                         float(match["dur"]) if match else None)
        self.reports.append(out)
        return out


@pytest.fixture(scope="session")
def deployment(docker_engine: containers.Engine, base_image: str, sam_build: Built,
               moto_server: MotoServer) -> Iterator[Deployment]:
    """One stack of template.yaml in the run's moto server, the dev API key stored, and a relay to
    moto on Docker's bridge address (this machine's own address, reachable from the containers)."""
    try:
        host = containers.bridge_gateway()
    except containers.Unavailable as exc:
        fail_unavailable(exc)
        raise
    relay = containers.Relay(host, ("127.0.0.1", moto_server.port)).start()
    stack_name = f"sam{uuid.uuid4().hex[:8]}"
    saved = dict(os.environ)
    os.environ.update(FAKE_ENV)
    provisioned = provision(moto_server.endpoint, template_path=TEMPLATE_PATH, stack_name=stack_name)
    from holdpoint.aws.keys import put_api_key

    ddb = boto3.client("dynamodb", endpoint_url=moto_server.endpoint, region_name=REGION,
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    put_api_key(provisioned.env["TABLE_NAME"], API_KEY, TENANT, SUBJECT, ORIGIN, client=ddb)
    deployment = Deployment(sam_build, provisioned, relay.url, moto_server.endpoint, RoleSessions(moto_server.endpoint),
                            host)
    yield deployment
    relay.stop()
    os.environ.clear()
    os.environ.update(saved)
    summary = [f"{r.function}: init {r.init_ms} ms, duration {r.duration_ms} ms" for r in deployment.reports]
    report = os.environ.get("HOLDPOINT_SAM_REPORT")
    if report:
        Path(report).write_text("\n".join([f"sam build {sam_build.seconds:.1f} s", *summary]) + "\n")
