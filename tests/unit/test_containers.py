"""local/holdpoint_local/containers.py without Docker: what is missing is named in one line, the base
image's digest follows its inputs, and the relay passes bytes both ways unchanged."""

from __future__ import annotations

import socket
import sys
import threading
from pathlib import Path

import pytest

from holdpoint_local import containers, processes


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


def test_the_relay_passes_bytes_both_ways() -> None:
    upstream = socket.create_server(("127.0.0.1", 0))

    def echo() -> None:
        conn, _ = upstream.accept()
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data[::-1])

    threading.Thread(target=echo, daemon=True).start()
    relay = containers.Relay("127.0.0.1", ("127.0.0.1", upstream.getsockname()[1])).start()
    try:
        with socket.create_connection((relay.host, relay.port), timeout=10) as client:
            client.sendall(b"signed request")
            assert client.recv(65536) == b"tseuqer dengis"
    finally:
        relay.stop()
        upstream.close()


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
