"""local/holdpoint_local/containers.py without Docker: what is missing is named in one line, the base
image's digest follows its inputs, and the relay passes bytes both ways unchanged."""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from holdpoint_local import containers, processes
from tests.waiting import wait_for


def test_a_missing_docker_is_named_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(containers.shutil, "which", lambda *a, **k: None)
    with pytest.raises(containers.Unavailable) as caught:
        containers.Engine().start()
    assert str(caught.value).splitlines() == [
        "the container tier needs docker (Debian: apt-get install docker.io; `make test` does)"]


def test_without_root_the_engine_is_not_started(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(containers.shutil, "which", lambda tool, **k: f"/usr/bin/{tool}")
    monkeypatch.setattr(containers.Engine, "answers", staticmethod(lambda: False))
    monkeypatch.setattr(containers, "_is_root", lambda: False)
    with pytest.raises(containers.Unavailable, match="^the container tier needs a running Docker engine, or root"):
        containers.Engine().start()


def test_the_base_image_digest_follows_each_input() -> None:
    base = containers.BaseImage("arm64")
    assert base.digest == containers.BaseImage("arm64").digest
    others = [containers.BaseImage("x86_64"), containers.BaseImage(suite="forky"),
              containers.BaseImage(python="3.14"), containers.BaseImage(awslambdaric="4.2.1"),
              containers.BaseImage(bootstrap=containers.BOOTSTRAP + "\n")]
    assert len({base.digest, *(o.digest for o in others)}) == 1 + len(others)
    assert base.name == "public.ecr.aws/lambda/python:3.13-arm64"


@pytest.fixture
def echo() -> Iterator[tuple[socket.socket, list[bytes]]]:
    """A server that answers each chunk reversed, and the chunks it was sent."""
    upstream = socket.create_server(("127.0.0.1", 0))
    heard: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = upstream.accept()
            except OSError:
                return
            with conn:
                while data := conn.recv(65536):
                    heard.append(data)
                    conn.sendall(data[::-1])

    threading.Thread(target=serve, daemon=True).start()
    yield upstream, heard
    upstream.close()


def _exchange(relay: containers.Relay, data: bytes) -> bytes:
    with socket.create_connection((relay.host, relay.port), timeout=10) as client:
        client.sendall(data)
        return client.recv(65536)


def test_the_relay_passes_bytes_both_ways(echo: tuple[socket.socket, list[bytes]]) -> None:
    relay = containers.Relay("127.0.0.1", ("127.0.0.1", echo[0].getsockname()[1])).start()
    try:
        assert _exchange(relay, b"signed request") == b"tseuqer dengis"
    finally:
        relay.stop()


def test_r33_a_cut_relay_loses_calls_before_and_after_aws_did_them(echo: tuple[socket.socket, list[bytes]]) -> None:
    """The container soak's network faults: a lost request never reaches AWS; a lost answer is of a
    call AWS did. Either way the function's connection closes with nothing read."""
    relay = containers.Relay("127.0.0.1", ("127.0.0.1", echo[0].getsockname()[1])).start()
    try:
        relay.cut(1.0)
        assert _exchange(relay, b"lost") == b""
        assert echo[1] == [] and relay.cuts == {"request": 1}
        relay.cuts.clear()
        relay.cut(1.0, ways=("answer",))
        assert _exchange(relay, b"done") == b""
        wait_for(lambda: echo[1] == [b"done"], "the answered call to reach the server", timeout=10)
        assert relay.cuts == {"answer": 1}
        relay.cut(0.0)
        assert _exchange(relay, b"kept") == b"tpek"
    finally:
        relay.stop()


def test_the_engine_one_process_started_is_stopped_by_its_last_user_only(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """pytest-xdist's workers share one engine: the first starts it, and a worker that ends first
    leaves it running under the other's containers. (Two Engine objects hold their locks as two
    processes would: an flock belongs to an open file, not to a process.)"""
    fake = tmp_path / "dockerd"  # a process named dockerd, as end_pid checks
    fake.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(600)\n")
    fake.chmod(0o755)
    monkeypatch.setattr(containers, "LOCKS", tmp_path)
    monkeypatch.setattr(containers.Engine, "STARTED", tmp_path / "dockerd.pid")
    monkeypatch.setattr(containers, "_need", lambda tool, package: str(fake) if tool == "dockerd" else tool)
    monkeypatch.setattr(containers, "_is_root", lambda: True)

    def running() -> bool:
        pid = containers.Engine.STARTED
        return pid.exists() and processes._alive(int(pid.read_text()))

    monkeypatch.setattr(containers.Engine, "answers", staticmethod(running))
    first, second = containers.Engine(tmp_path / "log"), containers.Engine(tmp_path / "log")
    first.start()
    second.start()
    pid = int(containers.Engine.STARTED.read_text())
    assert first.started and not second.started
    first.stop()
    assert processes._alive(pid), "stopped under another user"
    second.stop()
    assert not processes._alive(pid) and not containers.Engine.STARTED.exists()
