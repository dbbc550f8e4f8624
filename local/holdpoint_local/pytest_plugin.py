"""Pytest fixtures for the local stack; tests/conftest.py re-exports them.

- `moto_server` (session): one moto server ("AWS") for the whole run, Step Functions execution on.
- `stack_name`: a unique resource prefix per test, so tests sharing the moto server stay isolated.
- `local_stack_factory`: build and start `LocalStack`s on the shared moto server; all are stopped at
  test end (the moto server keeps running, so a test can stop one stack and start another on the
  same state to act out a restart).
- `local_stack`: one started stack with the real handlers from functions/.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from holdpoint import assembly

from . import FAKE_ENV
from .moto.server import MotoServer
from .stack import LocalStack


@pytest.fixture(scope="session")
def aws_env() -> Iterator[dict[str, str]]:
    """Fake credentials/region for the whole run, so nothing can reach real AWS."""
    saved = {k: os.environ.get(k) for k in FAKE_ENV}
    os.environ.update(FAKE_ENV)
    yield dict(FAKE_ENV)
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def moto_server(aws_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    server = MotoServer(log_path=log).start()
    yield server
    server.stop()


@pytest.fixture
def stack_name() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture
def local_stack_factory(moto_server: MotoServer, stack_name: str) -> Iterator[Callable[..., LocalStack]]:
    started: list[LocalStack] = []
    saved_env = dict(os.environ)

    def make(**kwargs: Any) -> LocalStack:
        kwargs.setdefault("moto_endpoint", moto_server.endpoint)
        kwargs.setdefault("stack_name", stack_name)
        kwargs.setdefault("http_port", 0)
        stack = LocalStack(**kwargs).start()
        started.append(stack)
        return stack

    yield make
    for stack in reversed(started):
        stack.stop(keep_moto=True)
    os.environ.clear()
    os.environ.update(saved_env)
    # What `assembly` built from the stacks' environment (the stacks' own adapters are dropped by
    # stop(); this drops any a request still in flight built after it) is not the environment restored.
    assembly.reset()


@pytest.fixture
def local_stack(local_stack_factory: Callable[..., LocalStack]) -> LocalStack:
    return local_stack_factory()
