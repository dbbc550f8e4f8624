"""`python -m holdpoint_local.serve`: run the embedded stack until Ctrl-C / SIGTERM."""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import signal
import threading
from pathlib import Path

from .stack import LocalStack


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Holdpoint local stack (moto + API front end + pollers)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("HOLDPOINT_PORT", "8787")))
    parser.add_argument("--moto-port", type=int, default=None, help="default: a free port")
    parser.add_argument("--moto-endpoint", default=os.environ.get("HOLDPOINT_MOTO_ENDPOINT"),
                        help="reuse a running moto server instead of starting one")  # fmt: skip
    parser.add_argument("--env-file", default=os.environ.get("HOLDPOINT_ENV_FILE", ENV_FILE),
                        help=f"where to write the stack's settings for a shell to source (default {ENV_FILE}; "
                             "empty: none)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for noisy in ("botocore", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())

    if args.port:  # the WebSocket API on the next port (HOLDPOINT_WS_PORT overrides; 0: a free one)
        os.environ.setdefault("HOLDPOINT_WS_PORT", str(args.port + 1))
    stack = LocalStack(http_port=args.port, moto_port=args.moto_port, moto_endpoint=args.moto_endpoint)
    stack.start()
    try:
        print(f"Holdpoint local stack ready at {stack.base_url} (functions: {stack.invoke})", flush=True)
        if stack.live is not None:
            print(f"  live events (WebSocket): {stack.live.url}", flush=True)
        print(f"  approver's inbox (paste the API key into it): {stack.base_url}/inbox", flush=True)
        print(f"  moto (AWS) endpoint: {stack.moto_endpoint}", flush=True)
        if stack.invoke == "sam":
            print(f"  the functions run in containers and reach this machine at {stack.host} "
                  "(a worker they call must listen there)", flush=True)
        print(f"  table: {stack.env.get('TABLE_NAME')}", flush=True)
        seeded = "" if stack.api_key_seeded else "  (NOT seeded: holdpoint.auth.put_api_key missing)"
        print(f"  API key: {stack.api_key}{seeded}", flush=True)
        print(f"  try: curl -H 'Authorization: Bearer {stack.api_key}' {stack.base_url}/v1/interrupts", flush=True)
        if args.env_file:
            write_env(Path(args.env_file), stack)
            print(f"  settings for a shell: set -a; . ./{args.env_file}; set +a", flush=True)
        print("Ctrl-C to stop.", flush=True)
        stop.wait()
    finally:
        print("stopping...", flush=True)
        if args.env_file:
            Path(args.env_file).unlink(missing_ok=True)
        stack.stop()
    return 0


ENV_FILE = ".holdpoint/local.env"
"""What `make serve` writes while it runs (git ignores it): the stack's API, key, moto endpoint and
table, so a shell (the README's walkthrough, the admin CLI) reads them instead of copying them."""


def write_env(path: Path, stack: LocalStack) -> None:
    settings = {
        "HOLDPOINT_URL": stack.base_url, "HOLDPOINT_API_KEY": stack.api_key,  # the CLI's own names (client.py)
        "HOLDPOINT_LIVE_URL": stack.live.url if stack.live else "",  # the WebSocket API (examples/follow_live.py)
        "AWS_ENDPOINT_URL": stack.moto_endpoint or "", "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
        "TABLE_NAME": stack.env.get("TABLE_NAME", ""),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={shlex.quote(v)}\n" for k, v in settings.items()), encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
