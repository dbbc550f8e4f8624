"""Finding 2 (internal addresses): every spelling of an internal address, userinfo, schemes, and
the connected-address re-check (DNS rebinding), for every caller of `holdpoint.netguard`."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from holdpoint import llm
from holdpoint.outbound import netguard, workers
from holdpoint.outbound.errors import AddressRefused
from tests.harness import Harness
from tests.waiting import wait_for

METADATA_FORMS = [
    "169.254.169.254",
    "[::ffff:169.254.169.254]",
    "[::ffff:a9fe:a9fe]",
    "[0:0:0:0:0:ffff:169.254.169.254]",
    "[::169.254.169.254]",  # IPv4-compatible
    "[::ffff:0:169.254.169.254]",  # IPv4-translated
    "[64:ff9b::169.254.169.254]",  # NAT64
    "[64:ff9b:1::a9fe:a9fe]",  # local-use NAT64
    "[2002:a9fe:a9fe::1]",  # 6to4
    "[2001:0:4136:e378:8000:63bf:5601:5601]",  # Teredo, client 169.254.169.254 (obfuscated)
    "2852039166",  # decimal
    "0251.0376.0251.0376",  # octal
    "0xa9fea9fe",  # hex
    "0xa9.0xfe.0xa9.0xfe",
    "169.254.43518",  # short form a.b.c
    "169.16689662",  # short form a.b
    "169.254.169.254.",  # trailing dot
    "[fd00:ec2::254]",  # AWS metadata over IPv6
    "100.100.100.200",  # Alibaba metadata
    "169.254.170.2",  # ECS task metadata
    "[fe80::1]",
]
ALWAYS_REFUSED = [
    ("0.0.0.0", "unspecified"), ("0", "unspecified"), ("[::]", "unspecified"), ("[::ffff:0.0.0.0]", "unspecified"),
    ("224.0.0.1", "multicast"), ("[ff02::1]", "multicast"), ("[::ffff:239.1.1.1]", "multicast"),
    ("255.255.255.255", "reserved or broadcast"), ("240.0.0.1", "reserved or broadcast"),
    ("[::ffff:255.255.255.255]", "reserved or broadcast"), ("4294967295", "reserved or broadcast"),
]
CLOUD_ONLY_REFUSED = [
    ("127.0.0.1", "loopback"), ("127.1", "loopback"), ("2130706433", "loopback"), ("0x7f000001", "loopback"),
    ("017700000001", "loopback"), ("[::1]", "loopback"), ("[::ffff:127.0.0.1]", "loopback"),
    ("[::127.0.0.1]", "loopback"), ("[64:ff9b::7f00:1]", "loopback"), ("[2002:7f00:1::]", "loopback"),
    ("10.0.0.5", "private"), ("172.16.3.4", "private"), ("192.168.1.1", "private"),
    ("[::ffff:10.0.0.5]", "private"), ("167772165", "private"),
    ("100.64.0.1", "CGNAT"), ("[::ffff:100.64.0.1]", "CGNAT"),
    ("[fc00::1]", "unique-local"), ("[fd12:3456::1]", "unique-local"),
]
PUBLIC = ["93.184.215.14", "[2606:4700:4700::1111]", "[64:ff9b::808:808]", "[::ffff:8.8.8.8]", "134744072"]


@pytest.fixture
def cloud(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOLDPOINT_ALLOW_HTTP_WORKERS", raising=False)


@pytest.fixture
def local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLDPOINT_ALLOW_HTTP_WORKERS", "1")


@pytest.mark.parametrize("mode", ["cloud", "local"])
@pytest.mark.parametrize("host", METADATA_FORMS)
def test_internal_addresses_every_metadata_and_link_local_form_is_refused(
        host: str, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if mode == "local":
        monkeypatch.setenv("HOLDPOINT_ALLOW_HTTP_WORKERS", "1")
    else:
        monkeypatch.delenv("HOLDPOINT_ALLOW_HTTP_WORKERS", raising=False)
    for field in ("worker.url", "llm.base_url"):
        why = netguard.check_url(f"https://{host}/latest/meta-data", field)
        assert why == f"{field} points at a link-local or metadata address", (host, why)


@pytest.mark.usefixtures("local")
@pytest.mark.parametrize(("host", "what"), ALWAYS_REFUSED)
def test_internal_addresses_unspecified_multicast_reserved_refused_even_locally(host: str, what: str) -> None:
    why = netguard.check_url(f"http://{host}:8080/", "worker.url")
    assert why is not None and what in why, (host, why)


@pytest.mark.parametrize(("host", "what"), CLOUD_ONLY_REFUSED)
def test_internal_addresses_loopback_private_cgnat_ula_refused_in_the_cloud_only(
        host: str, what: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOLDPOINT_ALLOW_HTTP_WORKERS", raising=False)
    why = netguard.check_url(f"https://{host}/", "worker.url")
    assert why is not None and what in why, (host, why)
    monkeypatch.setenv("HOLDPOINT_ALLOW_HTTP_WORKERS", "1")
    assert netguard.check_url(f"http://{host}/", "worker.url") is None


@pytest.mark.usefixtures("cloud")
@pytest.mark.parametrize("host", PUBLIC)
def test_internal_addresses_public_addresses_pass(host: str) -> None:
    assert netguard.check_url(f"https://{host}/hook", "worker.url") is None


@pytest.mark.parametrize(("text", "expected"), [
    ("2852039166", "169.254.169.254"), ("0251.0376.0251.0376", "169.254.169.254"),
    ("0xa9fea9fe", "169.254.169.254"), ("169.254.43518", "169.254.169.254"), ("127.1", "127.0.0.1"),
    ("0x7f.1", "127.0.0.1"), ("1.2.3.4", "1.2.3.4"), ("example.com", None), ("1.2.3.4.5", None),
    ("256.1.1.1", None), ("09.1.1.1", None), ("4294967296", None), ("1.2.65536", None),
])
def test_internal_addresses_inet_aton_forms_are_normalised(text: str, expected: str | None) -> None:
    parsed = netguard.parse_ipv4_loose(text)
    assert (str(parsed) if parsed else None) == expected


@pytest.mark.parametrize("mode", ["cloud", "local"])
@pytest.mark.parametrize("url", ["https://user:pass@example.com/", "https://user@93.184.215.14/",
                                 "https://93.184.215.14@169.254.169.254/", "https://:@example.com/",
                                 "https://example.com:443@evil.example/"])
def test_internal_addresses_userinfo_is_refused(url: str, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLDPOINT_ALLOW_HTTP_WORKERS", "1" if mode == "local" else "0")
    why = netguard.check_url(url, "llm.base_url")
    assert why is not None and why.startswith("llm.base_url"), why
    if "169.254" not in url:
        assert "credentials" in why


@pytest.mark.parametrize("mode", ["cloud", "local"])
@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/", "gopher://example.com:70/_x",
                                 "dict://example.com:11211/", "data:text/plain,hi", "jar:https://x/!/",
                                 "//example.com/", "example.com/hook"])
def test_internal_addresses_non_http_schemes_are_refused(url: str, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLDPOINT_ALLOW_HTTP_WORKERS", "1" if mode == "local" else "0")
    why = netguard.check_url(url, "llm.base_url")
    assert why is not None and why.startswith("llm.base_url must be"), why


def test_internal_addresses_http_only_with_the_local_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOLDPOINT_ALLOW_HTTP_WORKERS", raising=False)
    assert netguard.check_url("http://93.184.215.14/", "worker.url") == "worker.url must be https"
    monkeypatch.setenv("HOLDPOINT_ALLOW_HTTP_WORKERS", "1")
    assert netguard.check_url("http://93.184.215.14/", "worker.url") is None


@pytest.mark.parametrize("url", ["https://exa mple.com/", "https://example.com\\@169.254.169.254/",
                                 "https://example.com\t/", "https://example.com:99999/", "https:///nohost",
                                 "https://[fe80::1%25eth0]/", 42])
def test_internal_addresses_malformed_urls_are_refused(url: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLDPOINT_ALLOW_HTTP_WORKERS", "1")
    assert netguard.check_url(url, "worker.url") is not None


def fake_dns(monkeypatch: pytest.MonkeyPatch, answers: dict[str, Callable[[], str]]) -> None:
    """Answer `getaddrinfo` for the given names (each call asks the callable again)."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host in answers:
            address = answers[host]()
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            sockaddr = (address, int(port or 0), 0, 0) if family == socket.AF_INET6 else (address, int(port or 0))
            return [(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", sockaddr)]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.mark.usefixtures("cloud")
def test_internal_addresses_host_names_are_resolved_and_every_address_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_dns(monkeypatch, {"meta.example": lambda: "::ffff:169.254.169.254", "vpc.example": lambda: "10.1.2.3",
                           "public.example": lambda: "93.184.215.14"})
    assert netguard.check_url("https://meta.example/", "worker.url") == \
        "worker.url points at a link-local or metadata address"
    assert netguard.check_url("https://vpc.example/", "llm.base_url") == "llm.base_url points at a private address"
    assert netguard.check_url("https://public.example/", "worker.url") is None


class Listener:
    """A bare TCP listener on 127.0.0.1 that records every byte any client sends."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.received = b""
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
            conn.settimeout(0.5)
            try:
                while chunk := conn.recv(4096):
                    with self.lock:
                        self.received += chunk
            except OSError:
                pass
            finally:
                conn.close()

    def close(self) -> None:
        """Stop listening: `shutdown` wakes the thread blocked in `accept` (a bare `close` does not)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


def accepted(listener: Listener) -> None:
    """Wait for the listener's thread to take the connection the client made (and dropped): the
    kernel completes a connect before `accept` returns it, so closing at once can lose it."""
    wait_for(lambda: listener.accepted, "the listener accepted the connection", timeout=10)


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


def rebinding(monkeypatch: pytest.MonkeyPatch, name: str) -> list[str]:
    """`name` resolves to a public address at the check, then to 127.0.0.1 (DNS rebinding)."""
    answers = iter(["93.184.215.14"])
    seen: list[str] = []

    def answer() -> str:
        address = next(answers, "127.0.0.1")
        seen.append(address)
        return address

    fake_dns(monkeypatch, {name: answer})
    return seen


@pytest.mark.usefixtures("cloud")
def test_internal_addresses_connected_address_is_rechecked_dns_rebinding(
        monkeypatch: pytest.MonkeyPatch, listener: Listener) -> None:
    seen = rebinding(monkeypatch, "rebind.example")
    request = urllib.request.Request(f"https://rebind.example:{listener.port}/", data=b"{}", method="POST")
    with pytest.raises(AddressRefused) as info:
        netguard.urlopen(request, "worker.url", timeout=5)
    assert seen == ["93.184.215.14", "127.0.0.1"]  # the check passed; the connect reached 127.0.0.1
    assert str(info.value) == "worker.url points at a loopback address (connected address 127.0.0.1)"
    accepted(listener)
    listener.close()
    listener.thread.join(timeout=5)
    assert listener.accepted == 1 and listener.received == b""  # connected, then closed before a byte


@pytest.mark.usefixtures("cloud")
@pytest.mark.parametrize("scheme", ["http", "https"])
def test_internal_addresses_guarded_connection_refuses_after_connect(scheme: str, listener: Listener) -> None:
    """The opener alone (no URL pre-check) still refuses the peer, for plain HTTP and TLS alike."""
    with pytest.raises(AddressRefused):
        netguard.opener("llm.base_url").open(f"{scheme}://127.0.0.1:{listener.port}/", timeout=5)
    listener.close()
    listener.thread.join(timeout=5)
    assert listener.received == b""


@pytest.mark.usefixtures("aws", "cloud")
def test_internal_addresses_engine_worker_call_uses_the_connected_address_check(
        monkeypatch: pytest.MonkeyPatch, listener: Listener) -> None:
    """A stored agent whose worker host rebinds to loopback: the engine connects, refuses the peer,
    sends nothing, and retries the decision as worker unavailable."""
    rebinding(monkeypatch, "worker.rebind.example")
    h = Harness(agent={"worker": {"url": f"https://worker.rebind.example:{listener.port}/"}})
    h.say("say hi")
    retries = h.events("decision.retry")
    assert retries and "connected address 127.0.0.1" in retries[0]["data"]["error"], h.events()
    accepted(listener)
    listener.close()
    listener.thread.join(timeout=5)
    assert listener.accepted == 1 and listener.received == b""


@pytest.mark.usefixtures("cloud")
def test_internal_addresses_llm_call_uses_the_connected_address_check(
        monkeypatch: pytest.MonkeyPatch, listener: Listener) -> None:
    rebinding(monkeypatch, "llm.rebind.example")
    agent = {"model": "m", "llm": {"provider": "openai", "base_url": f"https://llm.rebind.example:{listener.port}/v1"}}
    with pytest.raises(llm.LlmError) as info:
        llm.complete(agent, {}, [{"role": "user", "content": "hi"}], "c1")
    assert info.value.code == "config_error" and not info.value.retryable
    assert str(info.value) == "llm.base_url points at a loopback address (connected address 127.0.0.1)"
    listener.close()
    listener.thread.join(timeout=5)
    assert listener.received == b""


@pytest.mark.usefixtures("aws", "cloud")
@pytest.mark.parametrize("url", ["https://[::ffff:169.254.169.254]/", "https://2852039166/", "http://93.184.215.14/",
                                 "https://u:p@93.184.215.14/"])
def test_internal_addresses_engine_refuses_stored_worker_urls_at_call_time(url: str) -> None:
    h = Harness(agent={"worker": {"url": url}})
    h.say("say hi")
    retries = h.events("decision.retry")
    assert retries and retries[0]["data"]["error"].startswith("worker.url "), h.events()


@pytest.mark.usefixtures("local")
def test_internal_addresses_redirects_are_not_followed() -> None:
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            hits.append(self.path)
            self.send_response(302)
            self.send_header("Location", "http://169.254.169.254/latest/meta-data")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()  # shutdown waits one poll
    try:
        with pytest.raises(urllib.error.HTTPError) as info:
            netguard.urlopen(urllib.request.Request(f"http://127.0.0.1:{server.server_address[1]}/start"),
                             "worker.url", timeout=5)
        assert info.value.code == 302 and hits == ["/start"]
    finally:
        server.shutdown()


def test_internal_addresses_one_redirect_policy_for_every_caller() -> None:
    for module in (workers, llm, llm.openai):
        assert not hasattr(module, "_NoRedirect") and not hasattr(module, "_OPENER")


@pytest.mark.parametrize(("address", "refused"), [
    ("169.254.169.254", True), ("::ffff:169.254.169.254", True), ("127.0.0.1", True), ("::1", True),
    ("93.184.215.14", False), ("2606:4700:4700::1111", False),
])
def test_internal_addresses_connected_address_rules_match_the_url_rules(address: str, refused: bool) -> None:
    assert (netguard.check_address(address, "worker.url", local_ok=False) is not None) is refused
    assert (netguard.address_problem(ipaddress.ip_address(address), local_ok=False) is not None) is refused
