"""A small in-process Lambda runtime: load `app.py` by file path and invoke `handler(event, context)`.

Each concurrent invocation gets its own *instance* of the module (loaded under a unique module name),
the way each Lambda execution environment has its own globals. That matters because module-level
objects such as Powertools' resolver keep per-request state and are not safe to share across threads.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import itertools
import logging
import queue
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from .. import ACCOUNT_ID, REGION

Handler = Callable[[Any, Any], Any]


def records_in(event: Any) -> int:
    """How many event source records (an SQS batch's messages, a stream batch's records) an event carries."""
    records = event.get("Records") if isinstance(event, dict) else None
    return len(records) if isinstance(records, list) else 0


class Function(Protocol):
    """What the front ends (HTTP, WebSocket, pollers, stream readers) invoke: a `LocalFunction` here,
    or a `samlocal.ContainerFunction` in its container. `invoke` answers the function's response
    and raises when the function raised."""

    name: str
    invocations: int
    records: int  # the event source records (SQS messages, stream records) its invocations carried
    in_flight: int

    def invoke(self, event: Any) -> Any: ...

    def acting(self) -> contextlib.AbstractContextManager[None]: ...


def acting(name: str, role_arn: str) -> contextlib.AbstractContextManager[None]:
    """This thread calls AWS as function `name`'s execution role (the operator when it has none):
    a function's own calls, and its event source mapping's polls, sign with that role."""
    from .credentials import acting_as

    return acting_as(name, role_arn) if role_arn else contextlib.nullcontext()

_REQUEST = threading.local()
_log = logging.getLogger("holdpoint_local.emulators.runtime")


def _per_thread(name: str) -> property:
    return property(lambda self: getattr(_REQUEST, name, None), lambda self, value: setattr(_REQUEST, name, value))


def isolate_powertools_requests() -> None:
    """Powertools keeps the request being routed on a class attribute (`BaseRouter.current_event`,
    `lambda_context`), which is safe where one process serves one request at a time, as a Lambda
    execution environment does. Here threads serve requests side by side, so both attributes
    become per thread, read and written the same way, and each thread routes its own request."""
    from aws_lambda_powertools.event_handler.api_gateway import BaseRouter

    if getattr(BaseRouter, "__holdpoint_per_thread__", False):
        return
    meta = type(BaseRouter)
    per_thread = type("PerThreadRouterMeta", (meta,), {name: _per_thread(name)
                                                       for name in ("current_event", "lambda_context")})
    for name in ("current_event", "lambda_context"):
        setattr(BaseRouter, name, _per_thread(name))  # instance reads, while the metaclass is the original
    BaseRouter.__holdpoint_per_thread__ = True  # type: ignore[attr-defined]
    BaseRouter.__class__ = per_thread  # type: ignore[method-assign]  # class-level writes (`BaseRouter.current_event = ...`) go per thread

class PerFunctionCache(MutableMapping[str, str]):
    """A container's cache of secret values (`holdpoint.aws.secretrefs`), one per function. On Lambda
    each execution environment holds only what its own role has read; here every function shares
    the process's modules, so without this a value one function read (the notifier, the signing key)
    would be served to another whose role may not read it (the engine), and IAM would never see
    the call it refuses on AWS. Outside any function (the operator) the key is ""."""

    def __init__(self) -> None:
        self._by_function: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()

    def _mine(self) -> dict[str, str]:
        from .credentials import current

        acting = current()
        with self._lock:
            return self._by_function.setdefault(acting.function if acting else "", {})

    def __getitem__(self, key: str) -> str:
        return self._mine()[key]

    def __setitem__(self, key: str, value: str) -> None:
        self._mine()[key] = value

    def __delitem__(self, key: str) -> None:
        del self._mine()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._mine()))

    def __len__(self) -> int:
        return len(self._mine())


def isolate_secret_caches() -> None:
    """Each function reads its own secrets, as its own execution environment would (`PerFunctionCache`)."""
    from holdpoint.aws import secretrefs

    if not isinstance(secretrefs._CACHE, PerFunctionCache):
        secretrefs._CACHE = PerFunctionCache()


_module_counter = itertools.count(1)
_import_lock = threading.Lock()


@dataclass
class LambdaContext:
    """The attributes of the Python runtime's context object that code commonly reads."""

    function_name: str
    memory_limit_in_mb: int
    timeout_seconds: int
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    invoked_function_arn: str = ""
    log_group_name: str = ""
    log_stream_name: str = "local"
    identity: Any = None
    client_context: Any = None
    _deadline: float = 0.0

    def __post_init__(self) -> None:
        if not self.invoked_function_arn:
            self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{self.function_name}"
        if not self.log_group_name:
            self.log_group_name = f"/aws/lambda/{self.function_name}"
        self._deadline = time.monotonic() + self.timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def load_handler(code_dir: Path, handler: str = "app.handler", tag: str = "fn") -> Handler:
    """Import `<code_dir>/<module>.py` under a fresh module name and return its handler function.

    The code dir is on sys.path while the module executes (as LAMBDA_TASK_ROOT is on Lambda), so a
    sibling import works; keep sibling module names unique across functions, since sys.modules is
    shared in this process.
    """
    module_name, _, func_name = handler.rpartition(".")
    path = Path(code_dir) / f"{module_name.replace('.', '/')}.py"
    unique = f"holdpoint_fn_{tag}_{next(_module_counter)}"
    spec = importlib.util.spec_from_file_location(unique, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module: ModuleType = importlib.util.module_from_spec(spec)
    with _import_lock:
        sys.modules[unique] = module  # pydantic resolves annotations through sys.modules
        sys.path.insert(0, str(code_dir))
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(unique, None)
            raise
        finally:
            with contextlib.suppress(ValueError):
                sys.path.remove(str(code_dir))
    handler_fn: Handler = getattr(module, func_name)
    return handler_fn


class LocalFunction:
    """One function: a pool of handler instances, grown on demand up to `max_instances`.

    Pass `handler` to share one callable across invocations (tests inject throwaway handlers);
    otherwise `code_dir`/`handler_path` are loaded once per instance.
    """

    def __init__(
        self,
        name: str,
        *,
        code_dir: Path | None = None,
        handler_path: str = "app.handler",
        handler: Handler | None = None,
        timeout: int = 30,
        memory: int = 512,
        max_instances: int = 4,
        role_arn: str = "",
    ) -> None:
        if handler is None and code_dir is None:
            raise ValueError(f"{name}: need a code_dir or a handler")
        isolate_powertools_requests()
        isolate_secret_caches()
        self.name = name
        self.code_dir = code_dir
        self.handler_path = handler_path
        self.timeout = timeout
        self.memory = memory
        self.max_instances = max(1, max_instances)
        self.role_arn = role_arn  # its execution role: every AWS call it makes signs with it (credentials.py)
        self._shared = handler
        self._idle: queue.LifoQueue[Handler] = queue.LifoQueue()
        self._created = 0
        self._lock = threading.Lock()
        self.invocations = 0
        self.records = 0
        self.in_flight = 0

    def _acquire(self) -> Handler:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            grow = self._created < self.max_instances
            if grow:
                self._created += 1
        if not grow:
            return self._idle.get()
        try:
            assert self.code_dir is not None
            return load_handler(self.code_dir, self.handler_path, tag=self.name)
        except BaseException:
            with self._lock:
                self._created -= 1
            raise

    def acting(self) -> contextlib.AbstractContextManager[None]:
        return acting(self.name, self.role_arn)

    def context(self) -> LambdaContext:
        return LambdaContext(function_name=self.name, memory_limit_in_mb=self.memory, timeout_seconds=self.timeout)

    def invoke(self, event: Any, context: LambdaContext | None = None) -> Any:
        """Call the handler with a private copy of the event, as Lambda deserializes a fresh one."""
        ctx = context or self.context()
        payload = copy.deepcopy(event)
        with self._lock:
            self.invocations += 1
            self.records += records_in(event)
            self.in_flight += 1
        try:
            with self.acting():
                if self._shared is not None:
                    return self._shared(payload, ctx)
                fn = self._acquire()
                try:
                    return fn(payload, ctx)
                finally:
                    self._idle.put(fn)
        finally:
            with self._lock:
                self.in_flight -= 1


def run_until_stopped(stop_event: threading.Event, step: Callable[[], Any], what: str) -> None:
    """Call `step` until `stop_event` is set, surviving whatever it raises, as a Lambda event source
    mapping survives its function's failures (AWS errors are logged, anything else with its trace)."""
    from botocore.exceptions import BotoCoreError, ClientError

    while not stop_event.is_set():
        try:
            step()
        except (BotoCoreError, ClientError) as exc:
            if stop_event.is_set():
                return
            _log.warning("%s failed: %s", what, exc)
            stop_event.wait(0.5)
        except Exception:
            _log.exception("%s crashed", what)
            stop_event.wait(0.5)
