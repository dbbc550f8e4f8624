"""Outbound HTTP to tenant-declared URLs (worker URLs, `llm.base_url`, webhooks) goes through here.

A tenant chooses these URLs, so without a guard the engine would dial whatever they name: the
instance metadata service, the VPC's private services, loopback. The rules, one set for every
caller:

- http(s) only; https in the cloud (http only with `HOLDPOINT_ALLOW_HTTP_WORKERS=1`, the local stack);
- no userinfo (`user:pass@host`): credentials in URLs end up in logs, and parsers disagree on them;
- every spelling of an address is normalised first: IPv4 embedded in IPv6 (mapped, compatible,
  translated, NAT64, 6to4, Teredo) and the inet_aton forms (`2852039166`, `0251.0376.0251.0376`,
  `0xa9fea9fe`, `169.254.43518`);
- always refused: link-local, cloud metadata, unspecified, multicast, reserved and broadcast;
- refused in the cloud, allowed locally: loopback, private, CGNAT, unique-local;
- the address actually connected to is checked again after `connect()` (a name that resolved to
  a public address at the check may resolve to an internal one at the connect: DNS rebinding);
- redirects are never followed (they would carry the request to a URL nobody checked) and
  environment proxies are never used (the connected-address check must see the real peer).
"""

from __future__ import annotations

import http.client
import ipaddress
import os
import re
import socket
import urllib.parse
import urllib.request
from typing import Any

from holdpoint.outbound.errors import AddressRefused

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

LOCAL_FLAG = "HOLDPOINT_ALLOW_HTTP_WORKERS"


def local_rules() -> bool:
    """The local stack's relaxations (http, loopback and private addresses) are in force."""
    return os.environ.get(LOCAL_FLAG) == "1"


# --- address classification ---------------------------------------------------------------

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

_METADATA = {ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")}

# (networks, what) refused whatever the rules: nothing legitimate for a tenant lives there.
_ALWAYS: list[tuple[list[Any], str]] = [
    ([_V4("169.254.0.0/16"), _V6("fe80::/10")], "a link-local or metadata address"),
    ([_V4("0.0.0.0/8"), _V6("::/128")], "an unspecified address"),
    ([_V4("224.0.0.0/4"), _V6("ff00::/8")], "a multicast address"),
    ([_V4("240.0.0.0/4"), _V4("192.0.0.0/24"), _V4("192.0.2.0/24"), _V4("198.51.100.0/24"),
      _V4("203.0.113.0/24"), _V6("fec0::/10"), _V6("2001:db8::/32"), _V6("100::/64")],
     "a reserved or broadcast address"),
]

# Refused in the cloud only: the local stack's workers and model servers live there.
_CLOUD_ONLY: list[tuple[list[Any], str]] = [
    ([_V4("127.0.0.0/8"), _V6("::1/128")], "a loopback address"),
    ([_V4("10.0.0.0/8"), _V4("172.16.0.0/12"), _V4("192.168.0.0/16"), _V4("198.18.0.0/15")],
     "a private address"),
    ([_V4("100.64.0.0/10")], "a shared (CGNAT) address"),
    ([_V6("fc00::/7")], "a unique-local address"),
]

_MAPPED = _V6("::ffff:0:0/96")
_TRANSLATED = _V6("::ffff:0:0:0/96")
_COMPATIBLE = _V6("::/96")
_NAT64 = [_V6("64:ff9b::/96"), _V6("64:ff9b:1::/48")]
_SIXTOFOUR = _V6("2002::/16")
_TEREDO = _V6("2001::/32")
# Whatever ::/8 holds beyond the forms above (and ::1, ::) is IETF-reserved.
_V6_RESERVED_ZERO = _V6("::/8")
_V6_SPECIAL = (ipaddress.IPv6Address("::"), ipaddress.IPv6Address("::1"))


def _low32(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries, for every embedding a router or stack honours."""
    if ip in _V6_SPECIAL:
        return []
    if ip in _MAPPED or ip in _TRANSLATED or ip in _COMPATIBLE or any(ip in n for n in _NAT64):
        return [_low32(ip)]
    if ip in _SIXTOFOUR and ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip in _TEREDO and ip.teredo is not None:
        server, client = ip.teredo
        return [server, client]
    return []


def _first(ip: IPAddress, table: list[tuple[list[Any], str]]) -> str | None:
    for networks, what in table:
        if any(ip.version == n.version and ip in n for n in networks):
            return what
    return None


def address_problem(ip: IPAddress, local_ok: bool | None = None) -> str | None:
    """What is wrong with an address, or None when allowed. An IPv6 address is judged with every
    IPv4 address it embeds, the worst verdict winning."""
    local_ok = local_rules() if local_ok is None else local_ok
    candidates: list[IPAddress] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            return "a scoped (zone) address"
        inner = embedded_ipv4(ip)
        if not inner and ip in _V6_RESERVED_ZERO and ip not in _V6_SPECIAL:
            return "a reserved or broadcast address"
        candidates = [*inner, ip]
    for candidate in candidates:
        if candidate in _METADATA:
            return "a link-local or metadata address"
        why = _first(candidate, _ALWAYS)
        if why:
            return why
    if not local_ok:
        for candidate in candidates:
            why = _first(candidate, _CLOUD_ONLY)
            if why:
                return why
    return None


_LOOSE_PART = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")


def parse_ipv4_loose(host: str) -> ipaddress.IPv4Address | None:
    """An IPv4 address in any inet_aton spelling (1-4 parts, each decimal, octal with a leading 0,
    or hex with 0x; the last part fills the remaining bytes), as resolvers accept it; else None."""
    text = host.lower()
    if text.endswith("."):
        text = text[:-1]
    parts = text.split(".")
    if not 1 <= len(parts) <= 4 or not all(_LOOSE_PART.match(p) for p in parts):
        return None
    values = []
    for p in parts:
        if p.startswith("0x"):
            values.append(int(p[2:] or "0", 16))
        elif len(p) > 1 and p.startswith("0"):
            if not all(c in "01234567" for c in p):
                return None
            values.append(int(p, 8))
        else:
            values.append(int(p))
    *head, last = values
    if any(v > 255 for v in head) or last >= 1 << (8 * (4 - len(head))):
        return None
    number = 0
    for v in head:
        number = number << 8 | v
    number = number << (8 * (4 - len(head))) | last
    return ipaddress.IPv4Address(number)


def literal_address(host: str) -> IPAddress | None:
    """The address a host names literally (any IPv6 text, any inet_aton IPv4 spelling), else None."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    return parse_ipv4_loose(host)


def check_address(address: str, field: str, local_ok: bool | None = None) -> str | None:
    """Why `field` may not reach `address` (text, as `getpeername()` gives it), or None."""
    ip = literal_address(address)
    if ip is None:
        return f"{field} connected to an address that is not an IP address"
    why = address_problem(ip, local_ok)
    return f"{field} points at {why}" if why else None


# --- URLs -------------------------------------------------------------------------------------

_HOSTNAME = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*\.?$")


def check_url(url: Any, field: str) -> str | None:
    """Why a tenant-declared URL is refused (a message naming `field`), or None.

    Host names are resolved and every address checked; a name that does not resolve yet passes
    in the cloud (the connect-time check still applies) but not locally, where it is a typo."""
    if not isinstance(url, str) or not url:
        return f"{field} must be a URL string"
    local_ok = local_rules()
    if any(c.isspace() or ord(c) < 0x20 or c == "\\" for c in url):
        return f"{field} contains whitespace, control characters or backslashes"
    if not url.isascii():
        return f"{field} must be ASCII: percent-encode the path, and give the host in its xn-- form"
    try:
        parsed = urllib.parse.urlsplit(url)
        port = parsed.port
    except ValueError:
        return f"{field} is not a valid URL"
    scheme = parsed.scheme.lower()
    if scheme not in ("http", "https"):
        return f"{field} must be an https URL" if not local_ok else f"{field} must be an http or https URL"
    if scheme != "https" and not local_ok:
        return f"{field} must be https"
    if "@" in parsed.netloc or parsed.username is not None or parsed.password is not None:
        return f"{field} must not carry credentials (user:password@)"
    host = (parsed.hostname or "").lower()
    if not host:
        return f"{field} has no host"
    if "%" in host:
        return f"{field} points at a scoped (zone) address"
    literal = literal_address(host)
    if literal is not None:
        why = address_problem(literal, local_ok)
        return f"{field} points at {why}" if why else None
    if not _HOSTNAME.match(host):
        return f"{field} has an invalid host name"
    try:
        infos = socket.getaddrinfo(host, port or (443 if scheme == "https" else 80), proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        return None if not local_ok else f"{field} host does not resolve"
    for info in infos:
        why = check_address(str(info[4][0]), field, local_ok)
        if why:
            return why
    return None


# --- the guarded opener -------------------------------------------------------------------------


class GuardedHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection that checks the peer it actually connected to, before a byte is sent."""

    guard_field = "url"

    def connect(self) -> None:
        super().connect()
        peer = self.sock.getpeername()[0]
        why = check_address(str(peer), self.guard_field)
        if why:
            self.sock.close()
            self.sock = None
            raise AddressRefused(f"{why} (connected address {peer})")


class GuardedHTTPSConnection(http.client.HTTPSConnection, GuardedHTTPConnection):
    """HTTPS over `GuardedHTTPConnection.connect`: the peer is checked before the TLS handshake
    (HTTPSConnection.connect calls the TCP connect through the MRO, then wraps the socket)."""


def _bound(cls: type[GuardedHTTPConnection], field: str) -> Any:
    """A connection class whose refusals name `field`."""
    return type(cls.__name__, (cls,), {"guard_field": field})


class _GuardedHTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, field: str) -> None:
        super().__init__()
        self.connection = _bound(GuardedHTTPConnection, field)

    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(self.connection, req)


class _GuardedHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, field: str) -> None:
        super().__init__()
        self.connection = _bound(GuardedHTTPSConnection, field)

    def https_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(self.connection, req, context=getattr(self, "_context", None))


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect would carry the request (a signed decision, an API key, a prompt) to a URL the
    checks never saw: the 3xx is returned to the caller as an HTTPError instead."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
        return None


def opener(field: str) -> urllib.request.OpenerDirector:
    """A urllib opener with no proxies, no redirects and the connected-address check."""
    return urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect(),
                                       _GuardedHTTPHandler(field), _GuardedHTTPSHandler(field))


def urlopen(request: urllib.request.Request, field: str, timeout: float) -> Any:
    """Check the URL, then open it through the guarded opener. Raises `AddressRefused` for a refused URL
    or connected address; otherwise what `urllib` raises (HTTPError, URLError, TimeoutError)."""
    why = check_url(request.full_url, field)
    if why:
        raise AddressRefused(why)
    return opener(field).open(request, timeout=timeout)
