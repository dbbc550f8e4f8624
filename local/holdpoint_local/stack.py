"""`LocalStack`: moto ("AWS") + resources from template.yaml + API front end + SQS pollers, all calling
the real handlers: in this process (`invoke="process"`, the default), or as `sam build` built them,
each in its Lambda-shaped container behind `sam local start-lambda` (`invoke="sam"`, emulators/samlocal.py).
Tests may keep the moto server alive across a stop()/start() of the rest to act out a restart of
every Lambda while the durable state survives."""

from __future__ import annotations

import fnmatch
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Literal

from holdpoint import assembly

from . import FAKE_ENV
from .emulators import credentials, xraydaemon
from .emulators.frontend import ApiGateway, FrontEnd
from .emulators.pollers import PollerGroup
from .emulators.runtime import Function, Handler, LocalFunction
from .emulators.samlocal import Built, Containers
from .emulators.scheduler import SchedulerFirer
from .emulators.wsgateway import WebSocketGateway, port_from_env, read_live
from .moto.server import MotoServer, enable_sfn_execution, wait_ready
from .provision import REPO_ROOT, TEMPLATE_PATH, Provisioned, provision

log = logging.getLogger("holdpoint_local.stack")

DEFAULT_API_KEY = "hp_dev_local_key"
DEFAULT_TENANT = "dev"
DEFAULT_SUBJECT = "dev-user"
DEFAULT_ORIGIN = "client"
LINK_BASE_ENV = "HOLDPOINT_LINK_BASE_URL"
PUBLIC_URL_ENV = "HOLDPOINT_PUBLIC_API_URL"
LIVE_ENV = "HOLDPOINT_LIVE_ENDPOINT"
LIVE_URL_ENV = "HOLDPOINT_LIVE_URL"
INVOKE_ENV = "HOLDPOINT_INVOKE"
WAITING_FUNCTIONS = ("ApiFunction", "ProtocolsFunction")
"""The functions whose requests may wait (long-polls, event streams, AG-UI runs): on AWS each wait holds
an instance of its own, so locally they may grow by as many instances as waits may be held at once,
beyond the instances that serve; one caller's waits never leave another tenant's request queued."""
SECRET_ENV_PATTERN = "HOLDPOINT_*WORKER_SECRET"
"""`env:` secrets the local stack lets its tenant's agents reference: the demo's, the tests' and the
README walkthrough's worker secrets (HOLDPOINT_DEMO_/E2E_/NODE_WORKER_SECRET, HOLDPOINT_WORKER_SECRET)."""
EMAIL_SENDER = "approvals@holdpoint.local"
"""The stack's SES sender identity (template.yaml's EmailSenderIdentity), created verified on moto."""


def secret_env_allowlist(tenant: str = DEFAULT_TENANT) -> str:
    """The allow-list the local stack runs with: `SECRET_ENV_PATTERN` for its own tenant only."""
    return f"{tenant}={SECRET_ENV_PATTERN}"


SECRET_ENV_ALLOWLIST = secret_env_allowlist()


class LocalStack:
    """The embedded stack.

    - `moto_endpoint`: reuse a running moto server ("AWS" that outlives this stack); otherwise one
      is started on `moto_port` (or a free port) and owned (stopped by stop()).
    - `code_root`: where the template's CodeUri paths resolve (default: the repo).
    - `handlers`: {logical id: callable} overrides, e.g. throwaway handlers in tests.
    - `http_port`: 0 picks a free port; default $HOLDPOINT_PORT or 8787.
    - `stack_name`: prefixes resource names, so tests sharing one moto server stay isolated.
    - `parameters`: template parameter overrides (as `sam deploy --parameter-overrides`), e.g. quotas.
    - `invoke`: "process" runs the handlers in this process; "sam" runs `sam build`'s artifact in
      containers (`sam_build`: one already built, else one is built at start). Default: $HOLDPOINT_INVOKE.
      In containers, the functions reach this machine on Docker's bridge address only: the WebSocket
      API listens there, and a worker they call must too (`host`).
    """

    def __init__(
        self,
        *,
        moto_endpoint: str | None = None,
        moto_port: int | None = None,
        http_port: int | None = None,
        stack_name: str = "holdpoint",
        template_path: str | Path = TEMPLATE_PATH,
        code_root: str | Path | None = None,
        handlers: dict[str, Handler] | None = None,
        api_key: str | None = None,
        tenant: str = DEFAULT_TENANT,
        subject: str = DEFAULT_SUBJECT,
        origin: str = DEFAULT_ORIGIN,
        seed_api_key: bool = True,
        pollers_per_queue: int = 2,
        max_instances: int = 4,
        extra_env: dict[str, str] | None = None,
        moto_log: str | Path | None = None,
        cors_origins: list[str] | None = None,
        parameters: dict[str, str] | None = None,
        invoke: Literal["process", "sam"] | None = None,
        sam_build: Built | None = None,
    ) -> None:
        self.moto_endpoint = moto_endpoint.rstrip("/") if moto_endpoint else None
        self.moto_port = moto_port
        self.http_port = int(os.environ.get("HOLDPOINT_PORT", "8787")) if http_port is None else http_port
        self.stack_name = stack_name
        self.template_path = Path(template_path)
        self.code_root = Path(code_root) if code_root else (
            REPO_ROOT if self.template_path == TEMPLATE_PATH else self.template_path.resolve().parent
        )  # fmt: skip
        self.handlers = dict(handlers or {})
        self.api_key = api_key or os.environ.get("HOLDPOINT_API_KEY", DEFAULT_API_KEY)
        self.tenant, self.subject, self.origin = tenant, subject, origin
        self.seed_api_key = seed_api_key
        self.pollers_per_queue = pollers_per_queue
        self.max_instances = max_instances
        self.extra_env = dict(extra_env or {})
        self.moto_log = moto_log
        self.cors_origins = cors_origins
        self.parameters = dict(parameters or {})
        self.invoke = invoke or ("sam" if os.environ.get(INVOKE_ENV) == "sam" else "process")
        if self.invoke == "sam" and self.handlers:
            raise ValueError("handler overrides run in this process; invoke='sam' runs the built artifact")
        self.containers = Containers(Path(tempfile.mkdtemp(prefix="holdpoint-sam-")), sam_build) \
            if self.invoke == "sam" else None

        self.moto: MotoServer | None = None
        self.provisioned: Provisioned | None = None
        self.functions: dict[str, Function] = {}
        self.gateway: ApiGateway | None = None
        self.frontend: FrontEnd | None = None
        self.pollers: PollerGroup | None = None
        self.scheduler: SchedulerFirer | None = None
        self.live: WebSocketGateway | None = None  # the WebSocket API (emulators/wsgateway.py)
        self.xray: xraydaemon.XRayDaemon | None = None  # the X-Ray daemon (emulators/xraydaemon.py)
        self.env: dict[str, str] = {}
        self.api_key_seeded = False
        self._lock = threading.Lock()

    # -- lifecycle --------------------------------------------------------------
    def start(self) -> LocalStack:
        with self._lock:
            if self.moto_endpoint is None:
                self.moto = MotoServer(port=self.moto_port, log_path=self.moto_log).start()
                self.moto_endpoint = self.moto.endpoint
            else:
                wait_ready(self.moto_endpoint, timeout=30)
                enable_sfn_execution(self.moto_endpoint)
            self.provisioned = provision(
                self.moto_endpoint,
                template_path=self.template_path,
                stack_name=self.stack_name,
                code_root=self.code_root,
                parameters=self._parameters(),
            )
            self.env = self._environment(self.provisioned)
            os.environ.update(self.env)
            if self.containers:
                self.containers.prepare(self.moto_endpoint)
            network = self.containers.network if self.containers else None
            self.live = WebSocketGateway(host=self.host, port=port_from_env(),
                                         admits=network.admits if network else None)
            os.environ[LIVE_ENV] = self.live.management_url  # PostToConnection reaches this gateway
            os.environ[LIVE_URL_ENV] = self.live.url  # the session page connects here
            # Lambda's X-Ray daemon: the functions' trace segments, over UDP, to moto's X-Ray.
            self.xray = xraydaemon.XRayDaemon(self.moto_endpoint, port=xraydaemon.port_from_env()).start()
            os.environ[xraydaemon.ADDRESS_ENV] = self.xray.address
            credentials.install(self.moto_endpoint)  # each function signs with its own role
            assembly.reset()  # the container-wide adapters follow this stack's environment
            self._seed_api_key()
            self.frontend = FrontEnd(port=self.http_port)
            # One-click links in notifications point at this front end (the template's API URL on AWS);
            # not in `env`, which names the resources (a restarted stack has the same, on another port).
            os.environ[LINK_BASE_ENV] = self.frontend.url
            # The template's `PublicApiUrl` (A2A cards): a deploy sets it for a custom domain; here
            # it is the front end, which API Gateway's own domain stands for.
            os.environ[PUBLIC_URL_ENV] = self.frontend.url
            self.functions = self._functions(self.provisioned)
            self.gateway = ApiGateway(self.provisioned.routes, self.functions, api_id=self.provisioned.api_id,
                                      cors=self.provisioned.cors)
            self.frontend.start(self.gateway)
            self.pollers = PollerGroup()
            for mapping in self.provisioned.sqs_mappings:
                self.pollers.add(mapping, self.functions[mapping.function], self.moto_endpoint,
                                 count=self.pollers_per_queue)  # fmt: skip
            for stream in self.provisioned.stream_mappings:
                self.pollers.add_stream(stream, self.functions[stream.function], self.moto_endpoint)
            self.pollers.start()
            # moto keeps schedules but never fires them: the local stack is EventBridge Scheduler.
            self.scheduler = SchedulerFirer(self.moto_endpoint, self.env["TIMER_SCHEDULE_GROUP"]).start()
            live = read_live(self.moto_endpoint, self.provisioned)
            if live is not None:
                self.live.start(live, self.functions, self.moto_endpoint)
            return self

    def stop(self, *, keep_moto: bool = False) -> None:
        """Stop front end and pollers; also the moto server if this stack started it (unless keep_moto)."""
        with self._lock:
            if self.pollers:  # told first: a poller finishes its long poll (up to a second) meanwhile
                self.pollers.stop_event.set()
            if self.scheduler:
                self.scheduler.stop()
            if self.frontend:
                self.frontend.stop()
                self.frontend = None
            if self.live:
                self.live.stop()
                self.live = None
            if self.pollers:
                self.pollers.stop()
                self.pollers = None
            if self.xray:
                self.xray.stop()
                self.xray = None
            if self.containers:
                self.containers.stop()
            if self.moto and not keep_moto:
                self.moto.stop()
                self.moto = None
            # start() bound the container-wide adapters to this stack's environment (its table, timer
            # group and moto endpoint): none outlives it, or the next user of `assembly` in this process
            # (a later test, a restarted stack) would call a stack that is gone.
            assembly.reset()

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- accessors --------------------------------------------------------------
    @property
    def timers(self) -> SchedulerFirer:
        """The stack's EventBridge Scheduler stand-in (its `fired` schedules, for tests)."""
        assert self.scheduler is not None, "start() first"
        return self.scheduler

    @property
    def host(self) -> str:
        """The address the functions reach this machine at: loopback in process, Docker's bridge in containers."""
        return self.containers.host if self.containers else "127.0.0.1"

    @property
    def base_url(self) -> str:
        assert self.frontend is not None, "start() first"
        return self.frontend.url

    @property
    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}

    def client(self, service: str) -> Any:
        """A boto3 client on the moto server (for assertions in tests)."""
        import boto3

        return boto3.client(
            service, endpoint_url=self.moto_endpoint, region_name=FAKE_ENV["AWS_DEFAULT_REGION"],
            aws_access_key_id="testing", aws_secret_access_key="testing",
        )  # fmt: skip

    def quiet(self) -> bool:
        """Nothing is happening: every queue a function consumes is empty (no message visible,
        in flight or delayed) and no function is running. Durable timers still waiting are not
        work yet; a test that depends on one waits for it by name."""
        assert self.provisioned is not None, "start() first"
        sqs = self.client("sqs")
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
                 "ApproximateNumberOfMessagesDelayed"]
        for mapping in self.provisioned.sqs_mappings:
            attrs = sqs.get_queue_attributes(QueueUrl=mapping.queue_url, AttributeNames=names)["Attributes"]
            if any(int(attrs.get(name, "0")) for name in names):
                return False
        return not any(fn.in_flight for fn in self.functions.values())

    # -- internals ----------------------------------------------------------------
    def _parameters(self) -> dict[str, str]:
        """Template parameters for the local deployment: the browser origins it allows (its own
        page on a fixed port by default; tests name theirs)."""
        origins = self.cors_origins
        if origins is None and self.http_port:
            origins = [f"http://{host}:{self.http_port}" for host in ("127.0.0.1", "localhost")]
        return {"CorsAllowedOrigins": ",".join(origins or []), "EmailSenderIdentity": EMAIL_SENDER, **self.parameters}

    def _environment(self, prov: Provisioned) -> dict[str, str]:
        return {
            **FAKE_ENV,
            **prov.env,
            "AWS_ENDPOINT_URL": str(self.moto_endpoint),
            "MOTO_PORT": str(self.moto_endpoint).rsplit(":", 1)[-1],
            "HOLDPOINT_ALLOW_HTTP_WORKERS": "1",
            "HOLDPOINT_SECRET_ENV_ALLOWLIST": secret_env_allowlist(self.tenant),
            "POWERTOOLS_METRICS_NAMESPACE": "holdpoint-local",
            **self.extra_env,
        }

    def _settings(self) -> dict[str, str]:
        """What a container is told beyond the created stack's variables: the local stack's own settings
        (http workers, the secret allow-list, its front end's and WebSocket API's URLs) and the worker
        secrets the allow-list lets agents name, as this process has them."""
        own = {k: v for k, v in self.env.items() if k.startswith(("HOLDPOINT_", "POWERTOOLS_"))}
        urls = {name: os.environ[name] for name in (LINK_BASE_ENV, PUBLIC_URL_ENV, LIVE_ENV, LIVE_URL_ENV)}
        secrets = {k: v for k, v in os.environ.items() if fnmatch.fnmatchcase(k, SECRET_ENV_PATTERN)}
        return {**own, **urls, **secrets}

    def _functions(self, prov: Provisioned) -> dict[str, Function]:
        if self.containers:
            assert self.moto_endpoint is not None
            return dict(self.containers.start(prov, self._settings(), self.moto_endpoint))
        out: dict[str, Function] = {}
        for logical, spec in prov.functions.items():
            override = self.handlers.get(logical)
            if override is None and not (spec.code_dir / f"{spec.handler.rpartition('.')[0]}.py").exists():
                log.warning("%s: no %s in %s; its routes will answer 500", logical, spec.handler, spec.code_dir)
            out[logical] = LocalFunction(
                logical,
                code_dir=spec.code_dir,
                handler_path=spec.handler,
                handler=override,
                timeout=spec.timeout,
                memory=spec.memory,
                max_instances=self.max_instances + (self._waits_total() if logical in WAITING_FUNCTIONS else 0),
                role_arn=spec.role_arn,
            )
        return out

    def _waits_total(self) -> int:
        """How many stream waits the deployment lets be held at once (`QuotaStreamWaitsTotal`)."""
        parameters = self.provisioned.template.get("Parameters", {}) if self.provisioned else {}
        default = parameters.get("QuotaStreamWaitsTotal", {}).get("Default", 750)
        return int(self.parameters.get("QuotaStreamWaitsTotal", default))

    def _seed_api_key(self) -> None:
        """Store the dev API key through the layer's own function, so the authorizer accepts it."""
        if not self.seed_api_key:
            return
        from holdpoint.aws.keys import put_api_key

        put_api_key(self.env["TABLE_NAME"], self.api_key, self.tenant, self.subject, self.origin)
        self.api_key_seeded = True
