"""Docker for the container tier (tests/sam/): the engine `sam local` talks to, arm64 emulation,
and the Lambda-shaped base image SAM CLI builds its invoke image on.

No image registry is reachable here, so the base image SAM CLI would pull
(`public.ecr.aws/lambda/python:3.13-arm64`) is built locally under that name: a Debian `trixie`
minbase root (its python3.13) from `debootstrap`, the Lambda runtime interface client
(`awslambdaric`, from PyPI, for the image's architecture) under /var/runtime, and a
/var/runtime/bootstrap that starts it. SAM CLI layers the runtime interface emulator
(`samcli/local/rapid/aws-lambda-rie-<arch>`, its entry point) and the function's layers (/opt) on top
and mounts the function's code read-only at /var/task. The image carries the digest of its inputs
as the label `holdpoint.base-digest`, so it is built once and rebuilt when an input changes.

When the machine cannot run it (not root, no Docker engine, no debootstrap, no arm64 emulation),
`Unavailable` says in one line what is missing: the container tier fails then, it never skips.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import ipaddress
import json
import os
import platform
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .processes import end, end_pid

SUITE = "trixie"
"""Debian's release with python3.13 (Lambda's python3.13 runs on Amazon Linux 2023)."""
MIRROR = "http://deb.debian.org/debian"
PYTHON = "3.13"
AWSLAMBDARIC = "4.2.2"
LABEL = "holdpoint.base-digest"
ARCHES = {"arm64": ("arm64", "manylinux2014_aarch64", "aarch64"), "x86_64": ("amd64", "manylinux2014_x86_64", "x86_64")}
"""Lambda architecture -> (Debian architecture, wheel platform, machine name)."""

BOOTSTRAP = f"""#!/bin/sh
# Lambda's python runtime: the layer's /opt/python, then the runtime interface client.
export PYTHONPATH="/opt/python:/opt/python/lib/python{PYTHON}/site-packages:/var/runtime${{PYTHONPATH:+:$PYTHONPATH}}"
export PYTHONUNBUFFERED=1
cd "${{LAMBDA_TASK_ROOT:-/var/task}}"
exec /usr/bin/python{PYTHON} -m awslambdaric "$_HANDLER"
"""


class Unavailable(RuntimeError):
    """This machine cannot run the container tier; the message is one line naming what is missing."""


def image_name(architecture: str = "arm64") -> str:
    """The base image SAM CLI looks for (samcli.local.docker.lambda_image: `_INVOKE_REPO_PREFIX`
    and `Runtime.get_image_name_tag`)."""
    return f"public.ecr.aws/lambda/python:{PYTHON}-{architecture}"


def _run(cmd: list[str], *, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)


def _need(tool: str, package: str) -> str:
    found = shutil.which(tool, path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin")
    if found is None:
        raise Unavailable(f"the container tier needs {tool} (Debian: apt-get install {package}; `make test` does)")
    return found


def _is_root() -> bool:
    return os.geteuid() == 0


LOCKS = Path(tempfile.gettempdir())
"""Where the processes of one run (pytest-xdist's workers, a bench beside them) coordinate."""


@contextlib.contextmanager
def exclusive(name: str) -> Iterator[None]:
    """One process at a time on this machine (an flock on LOCKS/holdpoint-<name>.lock)."""
    with open(LOCKS / f"holdpoint-{name}.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class Engine:
    """The Docker engine, shared by every process of a run: used when one answers, otherwise
    started (as root) by the first process that needs it. Each user holds a shared lock while it
    uses the engine, and the last one to `stop()` stops it if a Holdpoint process started it (its
    pid is in STARTED), so one worker never stops the engine under another's containers."""

    STARTED = LOCKS / "holdpoint-dockerd.pid"

    def __init__(self, log_path: str | os.PathLike[str] | None = None) -> None:
        self.log_path = Path(log_path) if log_path else Path(tempfile.gettempdir()) / "holdpoint-dockerd.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._use: IO[bytes] | None = None

    @staticmethod
    def answers() -> bool:
        docker = shutil.which("docker")
        return docker is not None and _run([docker, "info", "--format", "{{.ServerVersion}}"]).returncode == 0

    def start(self, timeout: float = 60) -> Engine:
        _need("docker", "docker.io")
        with exclusive("dockerd"):
            if not self.answers():
                self._launch(timeout)
            if self._use is None:
                self._use = open(LOCKS / "holdpoint-dockerd-users.lock", "a+b")  # noqa: SIM115 (held until stop)
                fcntl.flock(self._use, fcntl.LOCK_SH)
        return self

    def _launch(self, timeout: float) -> None:
        dockerd = _need("dockerd", "docker.io")
        if not _is_root():
            raise Unavailable("the container tier needs a running Docker engine, or root to start dockerd")
        with open(self.log_path, "ab") as log:
            # No userland proxy: a published port then refuses connections until the container listens, so
            # SAM CLI's wait for the emulator's port means what it says (docker-proxy accepts at once, and
            # SAM's three quick retries of the invoke run out before an emulated arm64 emulator listens).
            self._proc = subprocess.Popen([dockerd, "--userland-proxy=false"], stdout=log, stderr=subprocess.STDOUT,
                                          start_new_session=True)
        self.STARTED.write_text(str(self._proc.pid))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                self._proc = None
                self.STARTED.unlink(missing_ok=True)
                raise Unavailable(f"dockerd exited at start; see {self.log_path}")
            if self.answers():
                return
            time.sleep(0.2)
        self._end()
        raise Unavailable(f"dockerd did not answer within {timeout:.0f} s; see {self.log_path}")

    @property
    def started(self) -> bool:
        """This object started the engine."""
        return self._proc is not None

    def stop(self) -> None:
        """Leave the engine; the last user stops it if a Holdpoint process started it."""
        if self._use is None:
            return
        with exclusive("dockerd"):
            self._use.close()  # drops this user's shared lock
            self._use = None
            with open(LOCKS / "holdpoint-dockerd-users.lock", "a+b") as users:
                try:
                    fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return  # another process still uses it
                self._end()
                fcntl.flock(users, fcntl.LOCK_UN)

    def _end(self) -> None:
        """Stop the dockerd STARTED names (this process's child, or another's)."""
        if self._proc is not None:
            end(self._proc)
            self._proc = None
        elif self.STARTED.exists():
            with contextlib.suppress(ValueError):
                end_pid(int(self.STARTED.read_text()), "dockerd")
        self.STARTED.unlink(missing_ok=True)


BINFMT = Path("/proc/sys/fs/binfmt_misc")


def ensure_emulation(architecture: str) -> None:
    """Make binaries of `architecture` run on this host (qemu-user-static through binfmt_misc, with
    the F flag, so it works inside containers too); nothing to do on a host of that architecture."""
    machine = ARCHES[architecture][2]
    if platform.machine() == machine:
        return
    entry = BINFMT / f"qemu-{machine}"
    if entry.exists() and entry.read_text().startswith("enabled"):
        return
    _need(f"qemu-{machine}-static", "qemu-user-static")
    update = _need("update-binfmts", "binfmt-support")
    if not _is_root():
        raise Unavailable(f"the container tier needs qemu-{machine} registered in binfmt_misc (root can)")
    with exclusive("binfmt"):  # two processes mounting and registering at once would each refuse the other
        if not (BINFMT / "register").exists():
            _run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)])
        _run([update, "--enable", f"qemu-{machine}"])
    if not (entry.exists() and entry.read_text().startswith("enabled")):
        raise Unavailable(f"qemu-{machine} could not be registered in {BINFMT} (is binfmt_misc mountable here?)")


@dataclass(frozen=True)
class BaseImage:
    architecture: str = "arm64"
    suite: str = SUITE
    python: str = PYTHON
    awslambdaric: str = AWSLAMBDARIC
    bootstrap: str = BOOTSTRAP

    @property
    def name(self) -> str:
        return image_name(self.architecture)

    @property
    def digest(self) -> str:
        inputs = {"architecture": self.architecture, "suite": self.suite, "python": self.python,
                  "awslambdaric": self.awslambdaric, "bootstrap": self.bootstrap}
        return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]

    def current(self) -> bool:
        """The image exists under its name with the digest of these inputs."""
        fmt = "{{ index .Config.Labels \"" + LABEL + "\" }}"
        done = _run(["docker", "image", "inspect", "--format", fmt, self.name])
        return done.returncode == 0 and done.stdout.strip() == self.digest

    def ensure(self, work_dir: str | os.PathLike[str] | None = None) -> str:
        """Build the image unless it is current (one process at a time: the others then find it built); its name."""
        with exclusive(f"base-image-{self.architecture}"):
            return self._ensure(work_dir)

    def _ensure(self, work_dir: str | os.PathLike[str] | None) -> str:
        if self.current():
            return self.name
        debootstrap = _need("debootstrap", "debootstrap")
        if not _is_root():
            raise Unavailable("building the Lambda base image needs root (debootstrap)")
        ensure_emulation(self.architecture)
        deb_arch = ARCHES[self.architecture][0]
        with tempfile.TemporaryDirectory(prefix="holdpoint-base-", dir=work_dir) as tmp:
            root = Path(tmp) / "root"
            done = _run([debootstrap, f"--arch={deb_arch}", "--variant=minbase",
                         f"--include=python{self.python},ca-certificates", self.suite, str(root), MIRROR],
                        timeout=1800)
            if done.returncode != 0:
                tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["?"]
                raise Unavailable(f"debootstrap {self.suite} ({deb_arch}) failed: {tail[0]}")
            self.import_root(root)
        if not self.current():
            raise Unavailable(f"{self.name} was imported without its {LABEL} label")
        return self.name

    def import_root(self, root: Path) -> None:
        """Add the runtime interface client and the bootstrap to a debootstrapped root, and build the image from it."""
        deb_arch, wheel_platform, _ = ARCHES[self.architecture]
        runtime = root / "var" / "runtime"
        done = _run([sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--upgrade",
                     "--only-binary=:all:", "--platform", wheel_platform, "--python-version", self.python,
                     "--implementation", "cp", "--target", str(runtime), f"awslambdaric=={self.awslambdaric}"],
                    timeout=600)
        if done.returncode != 0:
            raise Unavailable(f"pip could not fetch awslambdaric {self.awslambdaric}: {done.stderr.strip()[-200:]}")
        (runtime / "bootstrap").write_text(self.bootstrap)
        (runtime / "bootstrap").chmod(0o755)
        (root / "var" / "task").mkdir(parents=True, exist_ok=True)
        (root / "opt").mkdir(exist_ok=True)
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            shutil.rmtree(root / cache, ignore_errors=True)
        # `docker build` from scratch, not `docker import`: an imported image is marked with the host's
        # architecture whatever --platform says (Docker 20.10), and SAM CLI builds on it for linux/arm64.
        dockerfile = "\n".join([
            "FROM scratch", "ADD root.tar /", f"LABEL {LABEL}={self.digest}", "ENV LAMBDA_TASK_ROOT=/var/task",
            "ENV LAMBDA_RUNTIME_DIR=/var/runtime", "ENV LANG=C.UTF-8", "WORKDIR /var/task",
            'ENTRYPOINT ["/var/runtime/bootstrap"]', ""])
        with tempfile.TemporaryDirectory(prefix="holdpoint-base-context-") as context:
            (Path(context) / "Dockerfile").write_text(dockerfile)
            packed = _run(["tar", "--numeric-owner", "-C", str(root), "-cf", str(Path(context) / "root.tar"), "."],
                          timeout=600)
            if packed.returncode != 0:
                raise Unavailable(f"tar of the base image's root failed: {packed.stderr.strip()}")
            built = _run(["docker", "build", "--platform", f"linux/{deb_arch}", "-t", self.name, context], timeout=900)
            if built.returncode != 0:
                raise Unavailable(f"docker build of {self.name} failed: {built.stderr.strip()[-300:]}")


def bridge_gateway() -> str:
    """The address of this machine on Docker's default bridge (a container reaches the host there): the
    network's gateway, or, where the engine does not report it, the subnet's first address (its default)."""
    done = _run(["docker", "network", "inspect", "bridge", "--format", "{{json .IPAM.Config}}"])
    try:
        config = json.loads(done.stdout)[0]
        return str(config.get("Gateway") or next(ipaddress.ip_network(config["Subnet"]).hosts()))
    except (ValueError, KeyError, IndexError, TypeError, StopIteration):
        raise Unavailable(f"Docker's bridge network has no address: {(done.stdout + done.stderr).strip()}") from None


@functools.cache
def _own_address(address: str) -> bool:
    """Whether `address` is one of this machine's: only its own can be bound (a container's cannot)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((address, 0))
        except OSError:
            return False
    return True


@dataclass
class StackNetwork:
    """A Docker bridge network of one stack's own: its containers run on it (`sam local
    --docker-network`), and what they call back on this machine (the relay to moto, the WebSocket
    gateway) listens on its gateway and takes connections from its subnet alone, so no other
    container (one on the default bridge, another stack's) reaches AWS or the gateway through them."""

    name: str
    subnet: ipaddress.IPv4Network | ipaddress.IPv6Network
    gateway: str

    @classmethod
    def create(cls, name: str) -> StackNetwork:
        made = _run(["docker", "network", "create", "--driver", "bridge", name])
        if made.returncode != 0:
            raise Unavailable(f"docker network create {name} failed: {made.stderr.strip()[-300:]}")
        done = _run(["docker", "network", "inspect", name, "--format", "{{json .IPAM.Config}}"])
        try:
            config = json.loads(done.stdout)[0]
            subnet = ipaddress.ip_network(config["Subnet"])
            return cls(name, subnet, str(config.get("Gateway") or next(subnet.hosts())))
        except (ValueError, KeyError, IndexError, TypeError, StopIteration):
            _run(["docker", "network", "rm", name])
            raise Unavailable(f"the network {name} has no address: {(done.stdout + done.stderr).strip()}") from None

    def admits(self, address: str) -> bool:
        """A peer on this network (the stack's containers), or this machine itself (which connects to
        the gateway from whichever of its addresses the kernel picks)."""
        try:
            return ipaddress.ip_address(address) in self.subnet or _own_address(address)
        except ValueError:
            return False

    def remove(self) -> None:
        _run(["docker", "network", "rm", self.name])


WAYS = ("request", "answer")
"""A relayed call's two directions: the function's request to AWS, AWS's answer."""


class Relay:
    """A TCP relay from `listen_host` (a free port) to `target`: the moto server binds 127.0.0.1 (its
    Step Functions integrations call back at localhost), and containers reach it on their network's
    gateway; with `network`, only a peer on it is relayed (moto takes the well-known local credentials).
    Bytes pass unchanged, so SigV4 signatures (over the Host the function used) still verify.

    `cut(rate)` makes it lose AWS calls, as a network does: each chunk a function sends is dropped
    with the connection at `rate` (the call never reached AWS), and so is each chunk of an answer
    (AWS did the call, the function never heard). The SDK in the container sees a closed
    connection and retries; `cuts` counts each by direction."""

    def __init__(self, listen_host: str, target: tuple[str, int], network: StackNetwork | None = None) -> None:
        self.target, self.network = target, network
        self._server = socket.create_server((listen_host, 0))
        self.host, self.port = listen_host, int(self._server.getsockname()[1])
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="holdpoint-relay", daemon=True)
        self.rate = 0.0
        self.cuts: Counter[str] = Counter()
        self._rng = random.Random(0)
        self._ways: tuple[str, ...] = WAYS
        self._rng_lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> Relay:
        self._thread.start()
        return self

    def cut(self, rate: float, seed: int = 0, ways: tuple[str, ...] = WAYS) -> None:
        """Lose this share of the chunks going `ways` from now on (0 stops)."""
        with self._rng_lock:
            self.rate, self._rng, self._ways = rate, random.Random(seed), ways

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, peer = self._server.accept()
            except OSError:
                return
            if self.network is not None and not self.network.admits(peer[0]):
                client.close()  # not one of the stack's containers: it reaches no AWS through here
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            for a, b, way in ((client, upstream, WAYS[0]), (upstream, client, WAYS[1])):
                threading.Thread(target=self._pump, args=(a, b, way), daemon=True).start()

    def _lost(self, way: str) -> bool:
        with self._rng_lock:
            lost = way in self._ways and self.rate > 0 and self._rng.random() < self.rate
            if lost:
                self.cuts[way] += 1
        return lost

    def _pump(self, src: socket.socket, dst: socket.socket, way: str) -> None:
        try:
            while (data := src.recv(65536)) and not self._lost(way):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            src.close()

    def stop(self) -> None:
        self._closed.set()
        self._server.close()
