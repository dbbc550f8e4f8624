"""`python -m holdpoint_local.serve`: run the embedded stack until Ctrl-C / SIGTERM."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading

from .stack import LocalStack


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Holdpoint local stack (moto + API front end + pollers)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("HOLDPOINT_PORT", "8787")))
    parser.add_argument("--moto-port", type=int, default=None, help="default: a free port")
    parser.add_argument("--moto-endpoint", default=os.environ.get("HOLDPOINT_MOTO_ENDPOINT"),
                        help="reuse a running moto server instead of starting one")  # fmt: skip
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
        print(f"Holdpoint local stack ready at {stack.base_url}", flush=True)
        if stack.live is not None:
            print(f"  live events (WebSocket): {stack.live.url}", flush=True)
        print(f"  approver's inbox (paste the API key into it): {stack.base_url}/inbox", flush=True)
        print(f"  moto (AWS) endpoint: {stack.moto_endpoint}", flush=True)
        print(f"  table: {stack.env.get('TABLE_NAME')}", flush=True)
        seeded = "" if stack.api_key_seeded else "  (NOT seeded: holdpoint.auth.put_api_key missing)"
        print(f"  API key: {stack.api_key}{seeded}", flush=True)
        print(f"  try: curl -H 'Authorization: Bearer {stack.api_key}' {stack.base_url}/v1/interrupts", flush=True)
        print("Ctrl-C to stop.", flush=True)
        stop.wait()
    finally:
        print("stopping...", flush=True)
        stack.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
