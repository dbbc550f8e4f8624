"""The functions as AWS runs them: `sam build`'s artifact, invoked through `sam local start-lambda`'s
Lambda Invoke API, each function in a Lambda-shaped container of its own (holdpoint_local/containers.py)
calling the moto server with temporary credentials of its own role.

The local stack's front ends (HTTP, WebSocket, SQS pollers, stream readers) call a
`ContainerFunction` exactly as they call an in-process `runtime.LocalFunction`: `invoke(event)`,
which answers the function's response or raises when it raised. `LocalStack(invoke="sam")` (and
`make serve INVOKE=sam`) runs every function so; the container tier (tests/sam/) does too.

The invocations run on x86_64: template.yaml says arm64, and arm64 does run under qemu-user-static
here (tests/sam/test_arm64.py imports the layer's arm64 wheels in the arm64 image), but an emulated
cold start takes longer than the authorizer's 10 s timeout (boto3's import alone takes about 4 s
with bytecode, 30 s without). So they run natively on a copy of template.yaml that differs only in
its three architecture lines (`x86_64_template`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import yaml
from botocore.config import Config

from .. import REGION, containers
from ..deploy import bytecode
from ..moto.server import free_port
from ..processes import end
from ..provision import REPO_ROOT, TEMPLATE_PATH, Provisioned
from . import runtime
from .credentials import RoleSessions

SAM = REPO_ROOT / ".venv-sam" / "bin" / "sam"
ARCHITECTURE = "x86_64"
ARM64_LINES = ("    Architectures: [arm64]\n", "      CompatibleArchitectures: [arm64]\n",
               "      BuildArchitecture: arm64\n")
ENDPOINT_VAR = "AWS_ENDPOINT_URL"
CREDENTIAL_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
REPORT = re.compile(r"REPORT RequestId: \S+\s+(?:Init Duration: (?P<init>[\d.]+) ms\s+)?Duration: (?P<dur>[\d.]+) ms")


def sam_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The SAM CLI's environment: its venv's python3.13 first on PATH (`sam build` runs it), no telemetry."""
    if not SAM.exists():
        raise containers.Unavailable("no .venv-sam: `make .venv-sam/.installed` installs the pinned SAM CLI")
    path = f"{SAM.parent}:{os.environ.get('PATH', '')}"
    # An emulated container's runtime interface emulator takes seconds to listen (20 s is SAM's default).
    return {**os.environ, "PATH": path, "SAM_CLI_TELEMETRY": "0", "SAM_CLI_CONTAINER_CONNECTION_TIMEOUT": "120",
            **(extra or {})}


def x86_64_template(out_dir: Path, template: Path = TEMPLATE_PATH) -> Path:
    """`template` with its functions and layer on x86_64 and nothing else changed."""
    text = template.read_text()
    for line in ARM64_LINES:
        if text.count(line) != 1:
            raise AssertionError(f"{template.name} no longer has exactly one {line!r}")
        text = text.replace(line, line.replace("arm64", "x86_64"))
    if "arm64" in text:
        raise AssertionError("an arm64 the copy does not move")
    out = out_dir / "template.x86_64.yaml"
    out.write_text(text)
    return out


def local_template(built: Path, declared: dict[str, tuple[str, ...]] | None = None) -> Path:
    """The built template with `AWS_ENDPOINT_URL` and the three credential variables declared on
    every function (Globals), and `declared` (function -> names) on each function: `sam local` lets
    `--env-vars` set only the variables a template declares. The first points the SDK at the moto
    server, the credentials give each function its own role's (one `sam local start-lambda` serves
    them all, and would otherwise pass every function its own process's), and `declared` are the
    local stack's own additions to that function (`own_settings`). Nothing else differs from what
    `sam build` wrote."""
    declared = declared or {}
    template = yaml.safe_load((built / "template.yaml").read_text())
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    for name in (ENDPOINT_VAR, *CREDENTIAL_VARS):
        variables.setdefault(name, "")
    for function, names in declared.items():
        props = template["Resources"][function]["Properties"]
        own = props.setdefault("Environment", {}).setdefault("Variables", {})
        for name in names:
            own.setdefault(name, "")
    key = json.dumps(declared, sort_keys=True)
    suffix = hashlib.sha256(key.encode()).hexdigest()[:8] if declared else "local"
    out = built / f"template.{suffix}.yaml"
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
    if done.returncode != 0:
        raise AssertionError(done.stdout[-3000:] + done.stderr[-3000:])
    return time.monotonic() - start


def compile_bytecode(build_dir: Path) -> None:
    """The artifact's bytecode, compiled as `make deploy` compiles it (deploy/bytecode.py) by the SAM
    CLI venv's python3.13."""
    bytecode.compile_artifact(build_dir, SAM.parent / bytecode.RUNTIME)


def build_x86_64(work_dir: Path, template: Path = TEMPLATE_PATH, base_dir: Path = REPO_ROOT,
                 compiled: bool = True) -> Built:
    """`sam build` of `template`'s x86_64 copy into `work_dir`/build, compiled (unless not `compiled`, to
    measure what a cold start pays without bytecode), with its local template."""
    build_dir = work_dir / "build"
    seconds = build(x86_64_template(work_dir, template), build_dir, base_dir)
    if compiled:
        compile_bytecode(build_dir)
    return Built(build_dir, local_template(build_dir), seconds)


@dataclass
class Invocation:
    function: str
    response: Any
    stdout: str
    stderr: str
    returncode: int
    init_ms: float | None
    duration_ms: float | None


LOCAL_SETTINGS = ("HOLDPOINT_ALLOW_HTTP_WORKERS",)
"""What the local stack adds to every function beyond its template's variables: it lets agents name
`http://` workers on this machine (AWS requires https)."""
SECRET_READERS = ("ApiFunction", "ProtocolsFunction", "ChannelsFunction", "EngineFunction", "NotifierFunction")
"""The functions that read a tenant's `env:` secret references (the API checks a declaration and warns
of an unset one; the others sign or verify with them): they alone are told the worker secrets, as an
operator would declare them on AWS (docs/OPERATIONS.md, "Secrets")."""


def own_settings(function: str, declared: dict[str, str], settings: dict[str, str]) -> dict[str, str]:
    """The local stack's settings one function's container is told: those its template declares for
    it (the local values), the local relaxations, observability, and the worker secrets to a function
    that reads secret references. Nothing another function declares reaches it."""
    return {k: v for k, v in settings.items()
            if k in declared or k in LOCAL_SETTINGS or k.startswith("POWERTOOLS_")
            or (function in SECRET_READERS and k.endswith("WORKER_SECRET"))}


class LambdaEndpoint:
    """`sam local start-lambda`: the Lambda Invoke API on 127.0.0.1, each function run in its own
    container from `sam build`'s artifact (created on its first invoke and kept warm, as Lambda keeps
    an execution environment). Its log is read after each invoke for the invoke's REPORT line."""

    def __init__(self, built: Built, env_vars: dict[str, dict[str, str]], host: str, log_path: Path,
                 network: str | None = None) -> None:
        self.built, self.host, self.log_path, self.network = built, host, log_path, network
        self.env_file = log_path.parent / f"start-lambda-env-{os.getpid()}-{id(self)}.json"
        self.env_file.write_text(json.dumps(env_vars))
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None
        self._offset = 0
        self._log_lock = threading.Lock()
        self._client: Any = None

    command = "start-lambda"

    def start(self, timeout: float = 120) -> LambdaEndpoint:
        cmd = [str(SAM), "local", self.command, "--template-file", str(self.built.template), "--env-vars",
               str(self.env_file), "--skip-pull-image", "--warm-containers", "LAZY", "--host", "127.0.0.1",
               "--port", str(self.port), "--container-host", self.host, "--container-host-interface", self.host,
               "--region", REGION, *(["--docker-network", self.network] if self.network else [])]
        env = sam_env({"AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION})
        for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SECURITY_TOKEN", *CREDENTIAL_VARS):
            env.pop(name, None)  # the functions' own credentials come from the env-vars file
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(cmd, cwd=self.built.build_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while not self._listening():
            if time.monotonic() > deadline:
                raise AssertionError(f"sam local {self.command} did not listen: {self.log_path.read_text()[-2000:]}")
            time.sleep(0.2)
        self._client = boto3.client("lambda", endpoint_url=f"http://127.0.0.1:{self.port}", region_name=REGION,
                                    aws_access_key_id="x", aws_secret_access_key="x",
                                    config=Config(read_timeout=900, retries={"max_attempts": 0},
                                                  max_pool_connections=64))
        return self

    def _listening(self) -> bool:
        assert self._proc is not None
        if self._proc.poll() is not None:
            raise AssertionError(f"sam local {self.command} exited: {self.log_path.read_text()[-3000:]}")
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", self.port)) == 0

    def invoke(self, function: str, event: Any) -> Invocation:
        assert self._client is not None, "start() first"
        answer = self._client.invoke(FunctionName=function, Payload=json.dumps(event).encode())
        payload = answer["Payload"].read()
        response: Any = json.loads(payload) if payload else None
        with self._log_lock, open(self.log_path, "rb") as log:  # only what this invoke added
            log.seek(self._offset)
            data = log.read()
            self._offset += len(data)
        fresh = data.decode(errors="replace")
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


class ApiEndpoint(LambdaEndpoint):
    """`sam local start-api`: SAM CLI's own emulation of the HTTP API (its routes, its Lambda
    authorizer) in front of the same containers' functions; `url` is its base URL. What it does
    differently from API Gateway is in local/README.md ("The HTTP API through sam local start-api")."""

    command = "start-api"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class ContainerFunction:
    """What the local stack's front ends call for a function (`invoke(event)`), run in its container;
    raises when the function raised or gave no answer, as the front ends expect of a function."""

    def __init__(self, lambdas: LambdaEndpoint, name: str, reports: list[Invocation] | None = None,
                 role_arn: str = "") -> None:
        self.lambdas, self.name, self.role_arn = lambdas, name, role_arn
        self.reports = reports if reports is not None else []
        self.last: Invocation | None = None
        self.invocations = 0
        self.records = 0
        self.in_flight = 0
        self._lock = threading.Lock()

    def acting(self) -> contextlib.AbstractContextManager[None]:
        """Its event source mappings poll in this process, with its execution role."""
        return runtime.acting(self.name, self.role_arn)

    def invoke(self, event: Any) -> Any:
        with self._lock:
            self.invocations += 1
            self.records += runtime.records_in(event)
            self.in_flight += 1
        try:
            self.last = out = self.lambdas.invoke(self.name, event)
        finally:
            with self._lock:
                self.in_flight -= 1
        self.reports.append(out)
        if out.response is None:
            raise RuntimeError(f"{self.name} gave no answer: {out.stderr[-4000:]}")
        if isinstance(out.response, dict) and "errorType" in out.response:
            raise RuntimeError(out.response.get("errorMessage") or f"{self.name} raised: {out.response}")
        return out.response


class Containers:
    """Everything `LocalStack(invoke="sam")` runs its functions with: the Docker engine (started when
    none answers, stopped only if started here), the x86_64 base image (built once, cached by the
    digest of its inputs), a relay to the moto server on Docker's bridge address (this machine's own
    address, the only one the containers reach), `sam build`'s artifact (`built`, or one built into
    `work_dir`) and one `sam local start-lambda` serving every function."""

    def __init__(self, work_dir: Path, built: Built | None = None) -> None:
        self.work_dir, self.built = work_dir, built
        self.engine = containers.Engine(work_dir / "dockerd.log")
        self.host = ""
        self.network: containers.StackNetwork | None = None
        self.relay: containers.Relay | None = None
        self.lambdas: LambdaEndpoint | None = None
        self.api: ApiEndpoint | None = None
        self.reports: list[Invocation] = []

    def prepare(self, moto_endpoint: str) -> Containers:
        """The engine, the base image, the bridge address and the relay to moto (raises
        `containers.Unavailable`, naming what is missing, when this machine cannot run them)."""
        sam_env()
        self.engine.start()
        containers.ensure_emulation(ARCHITECTURE)
        containers.BaseImage(ARCHITECTURE).ensure()
        self.network = containers.StackNetwork.create(f"holdpoint-{self.work_dir.name[-12:]}")
        self.host = self.network.gateway
        port = int(moto_endpoint.rsplit(":", 1)[-1])
        self.relay = containers.Relay(self.host, ("127.0.0.1", port), self.network).start()
        if self.built is None:
            self.built = build_x86_64(self.work_dir)
        return self

    def start(self, provisioned: Provisioned, settings: dict[str, str],
              moto_endpoint: str) -> dict[str, ContainerFunction]:
        """start-lambda with each function's variables as the created stack has them, `settings`
        (the local stack's own) over them, the relay as its endpoint and its role's credentials."""
        assert self.built is not None and self.relay is not None, "prepare() first"
        roles = RoleSessions(moto_endpoint)
        env_vars: dict[str, dict[str, str]] = {}
        for name, spec in provisioned.functions.items():
            creds = roles.get(spec.role_arn)
            env_vars[name] = {**spec.env, **own_settings(name, spec.env, settings), ENDPOINT_VAR: self.relay.url,
                              **dict(zip(CREDENTIAL_VARS, (creds.access_key, creds.secret_key, creds.token),
                                         strict=True))}
        declared = {name: tuple(sorted(set(env_vars[name]) - set(spec.env)))
                    for name, spec in provisioned.functions.items()}
        template = local_template(self.built.build_dir, declared)
        built = Built(self.built.build_dir, template, self.built.seconds)
        self.lambdas = LambdaEndpoint(built, env_vars, self.host, self.work_dir / "start-lambda.log",
                                      self.network.name if self.network else None).start()
        return {name: ContainerFunction(self.lambdas, name, self.reports, spec.role_arn)
                for name, spec in provisioned.functions.items()}

    def start_api(self) -> ApiEndpoint:
        """`sam local start-api` with the functions' environment as `start` gave it (stopped by `stop`)."""
        assert self.lambdas is not None, "start() first"
        env_vars = json.loads(self.lambdas.env_file.read_text())
        api = ApiEndpoint(self.lambdas.built, env_vars, self.host, self.work_dir / "start-api.log",
                          self.network.name if self.network else None)
        self.api = api
        api.start()
        return api

    def stop(self) -> None:
        if self.api:
            self.api.stop()
            self.api = None
        if self.lambdas:
            self.lambdas.stop()
            self.lambdas = None
        if self.relay:
            self.relay.stop()
            self.relay = None
        if self.network:
            self.network.remove()
            self.network = None
        self.engine.stop()
