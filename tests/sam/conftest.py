"""The container tier: `sam build`'s artifact, invoked with `sam local invoke` in Lambda-shaped
containers (local/holdpoint_local/containers.py), each function calling the moto server with
temporary credentials of its own role, as on AWS.

Session fixtures: the Docker engine (started when none answers, stopped by the last process of the
run to leave it, if one of them started it), the
base image (built once, cached by the digest of its inputs), one `sam build` into a temporary build
directory, and one stack of template.yaml provisioned into the run's moto server (reached from the
containers through a relay on Docker's bridge address). When this machine cannot run containers,
every test here fails with one line naming what is missing; none is skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest

from holdpoint_local import FAKE_ENV, REGION, containers
from holdpoint_local.emulators import samlocal
from holdpoint_local.emulators.credentials import RoleSessions
from holdpoint_local.emulators.samlocal import (
    ARCHITECTURE,
    CREDENTIAL_VARS,
    ENDPOINT_VAR,
    REPORT,
    SAM,
    Built,
    ContainerFunction,
    Invocation,
    LambdaEndpoint,
    build,
)
from holdpoint_local.emulators.wsgateway import WebSocketGateway, read_live
from holdpoint_local.moto.server import MotoServer
from holdpoint_local.provision import TEMPLATE_PATH, Provisioned, provision

API_KEY = "hp_sam_local_key"
OPS_KEY = "hp_sam_local_ops_key"
TENANT, SUBJECT, ORIGIN = "dev", "dev-user", "client"


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


def sam_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    try:
        return samlocal.sam_env(extra)
    except containers.Unavailable as exc:
        fail_unavailable(exc)
        raise


@pytest.fixture(scope="session")
def sam_build(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """`sam build` of template.yaml on x86_64 (`samlocal.ARCHITECTURE`), once per run, into a temporary directory."""
    sam_env()
    return samlocal.build_x86_64(tmp_path_factory.mktemp("sam"))


@pytest.fixture(scope="session")
def arm64_build(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """`sam build` of template.yaml itself (arm64), as `make sam-check` and `make deploy` build it."""
    sam_env()
    build_dir = tmp_path_factory.mktemp("sam-arm64") / "build"
    seconds = build(TEMPLATE_PATH, build_dir)
    return Built(build_dir, build_dir / "template.yaml", seconds)


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

    def function(self, name: str) -> ContainerFunction:
        """`name` as the local stack's front ends call it."""
        assert self.lambdas is not None, "start-lambda first"
        return ContainerFunction(self.lambdas, name, self.reports, self.provisioned.functions[name].role_arn)


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
    # The WebSocket API (emulators/wsgateway.py) on the bridge address: the functions post to its management API.
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
    live.start(routes, {name: deployment.function(name) for name in provisioned.functions}, moto_server.endpoint)
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
