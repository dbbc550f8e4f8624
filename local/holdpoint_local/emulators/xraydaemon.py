"""The X-Ray daemon, for the local stack: Lambda runs one beside every traced function, listening on
UDP (`AWS_XRAY_DAEMON_ADDRESS`) for segment documents in the daemon's protocol (a JSON header line,
`{"format":"json","version":1}`, then the document) and forwarding them in batches to X-Ray's
PutTraceSegments. Here one listener serves the stack's functions and forwards to moto's X-Ray.

A datagram that is not the protocol is dropped, as the daemon drops it; a refused batch is logged
and dropped (a lost segment never fails the work it describes). `received` counts the documents
taken, `forwarded` those moto accepted (tests wait on it, never on time)."""

from __future__ import annotations

import json
import logging
import os
import queue
import socket
import threading
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from .. import REGION

log = logging.getLogger("holdpoint_local.emulators.xraydaemon")

ADDRESS_ENV = "AWS_XRAY_DAEMON_ADDRESS"
HEADER = '{"format":"json","version":1}'
BATCH = 50  # PutTraceSegments takes at most 50 documents a call (the daemon's batch)


def port_from_env() -> int:
    """The port `AWS_XRAY_DAEMON_ADDRESS` names (`host:port`), or 0 for any free one."""
    address = os.environ.get(ADDRESS_ENV, "")
    tail = address.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def document_of(datagram: bytes) -> str | None:
    """The segment document a datagram carries, or None when it is not the daemon's protocol."""
    text = datagram.decode("utf-8", errors="replace")
    head, _, doc = text.partition("\n")
    if head.strip() != HEADER or not doc.strip():
        return None
    try:
        json.loads(doc)
    except ValueError:
        return None
    return doc


class XRayDaemon:
    """UDP in, PutTraceSegments out, on two threads; `address` is what functions are told."""

    def __init__(self, endpoint_url: str, host: str = "127.0.0.1", port: int = 0) -> None:
        self.xray: Any = boto3.client("xray", endpoint_url=endpoint_url, region_name=REGION,
                                      aws_access_key_id="testing", aws_secret_access_key="testing",
                                      config=Config(retries={"max_attempts": 3}))
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self.sock.bind((host, port))
        except OSError:  # the port is another stack's (one left in the environment): any free one
            self.sock.bind((host, 0))
        self.sock.settimeout(0.2)
        self.address = f"{host}:{self.sock.getsockname()[1]}"
        self.received = 0
        self.forwarded = 0
        self._docs: queue.Queue[str] = queue.Queue()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._listen, name="xray-daemon-udp", daemon=True),
                         threading.Thread(target=self._forward, name="xray-daemon-send", daemon=True)]

    def start(self) -> XRayDaemon:
        for thread in self._threads:
            thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        for thread in self._threads:
            if thread.is_alive():
                thread.join(timeout)
        self.sock.close()

    def _listen(self) -> None:
        while not self._stop.is_set():
            try:
                datagram = self.sock.recv(65_535)
            except TimeoutError:
                continue
            except OSError:
                return
            doc = document_of(datagram)
            if doc is not None:
                self.received += 1
                self._docs.put(doc)

    def _forward(self) -> None:
        while not (self._stop.is_set() and self._docs.empty()):
            try:
                batch = [self._docs.get(timeout=0.2)]
            except queue.Empty:
                continue
            while len(batch) < BATCH and not self._docs.empty():
                batch.append(self._docs.get_nowait())
            self._send(batch)

    def _send(self, batch: list[str]) -> None:
        try:
            out = self.xray.put_trace_segments(TraceSegmentDocuments=batch)
        except (BotoCoreError, ClientError) as exc:
            log.warning("PutTraceSegments refused %d segments: %s", len(batch), exc)
            return
        self.forwarded += len(batch) - len(out.get("UnprocessedTraceSegments") or [])
