"""`make smoke` (holdpoint_local/deploy/smoke.py) against this test's local stack, as against `make serve`:
the seed scenario passes in one line, signed or not, and a failure says where, in one line."""

from __future__ import annotations

from typing import Any

import pytest

from holdpoint_local.deploy import smoke


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    """Smoke's own lines: the stack's handlers run in this process and print their metrics (EMF JSON)."""
    code = smoke.main(list(argv))
    return code, [line for line in capsys.readouterr().out.splitlines() if not line.startswith('{"_aws"')]


@pytest.mark.parametrize("signed", [False, True])
def test_smoke_passes_against_the_local_stack(stack: Any, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch, signed: bool) -> None:
    if signed:
        monkeypatch.setenv(smoke.SECRET_ENV, "smoke-test-secret")  # the stack runs here: it sees it too
    else:
        monkeypatch.delenv(smoke.SECRET_ENV, raising=False)
    code, lines = run(capsys, "--url", stack.base_url, "--key", stack.api_key)
    assert code == 0 and len(lines) == 1 and lines[0].startswith("smoke: PASS "), lines


def test_smoke_says_where_it_failed(stack: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = run(capsys, "--url", stack.base_url, "--key", "hp_not_a_key")
    assert code == 1 and len(lines) == 1, lines
    assert lines[0].startswith("smoke: FAIL at declare agent: ") and "403" in lines[0]


@pytest.mark.parametrize("argv", [["--url", "ftp://x"], ["--worker-url", "file:///etc"], ["--timeout", "0"]])
def test_smoke_refuses_bad_arguments(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        smoke.main(argv)
    assert exited.value.code == 2
