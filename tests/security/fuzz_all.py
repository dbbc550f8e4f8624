"""The long schemathesis run over the whole document (every check, many cases, a fixed seed),
against a local stack of its own on loopback: `PYTHONPATH=local:layers/core:. .venv/bin/python -m
tests.security.fuzz_all`.
The bounded run in CI is test_schemathesis.py; this one is for a deeper look, with the same
exclusions (each with its reason there)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from holdpoint_local.stack import LocalStack
from tests.security.test_schemathesis import EXCLUDED, REJECTED
from tests.stack import Api, declare_agent, seed_worker


def toml_value(value: Any) -> str:
    return json.dumps(value)  # strings, numbers, booleans and flat lists read the same in TOML


def config_text(excluded: list[dict[str, Any]]) -> str:
    """The exclusions as a schemathesis.toml (`[[operations]]` tables)."""
    lines = [f"checks.negative_data_rejection.expected-statuses = {toml_value(REJECTED)}",
             # API Gateway routes on method and path: a method no route has gets its own 404
             # {"message": "Not Found"} before any authorizer or function runs, never a 405.
             "checks.unsupported_method.enabled = false", ""]
    for entry in excluded:
        lines.append("[[operations]]")
        for key, value in entry.items():
            if key != "checks":
                lines.append(f"{key} = {toml_value(value)}")
        for check, options in entry.get("checks", {}).items():
            for key, value in options.items():
                lines.append(f"checks.{check}.{key} = {toml_value(value)}")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", "--max-examples", type=int, default=100)
    parser.add_argument("--seed", type=int, default=4242)
    parser.add_argument("--bare", action="store_true", help="schemathesis' defaults: no exclusions")
    parser.add_argument("--report-dir", default=str(Path(tempfile.gettempdir()) / "holdpoint-fuzz"))
    parser.add_argument("extra", nargs="*", help="more `st run` arguments (after --)")
    args = parser.parse_args(argv)
    os.environ["HOLDPOINT_LONG_POLL_SECS"] = "1"
    secret = os.urandom(16).hex()
    os.environ["HOLDPOINT_E2E_WORKER_SECRET"] = secret
    server, _ = seed_worker.serve(0, secret)
    stack = LocalStack(http_port=0, extra_env={"POWERTOOLS_METRICS_DISABLED": "true",
                                               "POWERTOOLS_LOG_LEVEL": "ERROR"}).start()
    try:
        api = Api(stack.base_url, stack.api_key)
        declare_agent(api, f"http://127.0.0.1:{server.server_address[1]}/")
        api.wait_status(api.start("say hi"), "done")
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as config:
            config.write("" if args.bare else config_text(EXCLUDED))
        command = [str(Path(sys.executable).parent / "st"), "--config-file", config.name, "run",
                   f"{stack.base_url}/v1/openapi.json", "--seed", str(args.seed),
                   "-n", str(args.max_examples), "--workers", "1", "--request-timeout", "30",
                   "-H", f"Authorization: Bearer {stack.api_key}", "--report", "ndjson",
                   "--report-dir", args.report_dir, "--no-color", *args.extra]
        return subprocess.run(command, check=False, cwd=tempfile.gettempdir()).returncode
    finally:
        stack.stop()
        server.shutdown()


if __name__ == "__main__":
    raise SystemExit(main())
