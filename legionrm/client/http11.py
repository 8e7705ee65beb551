"""HTTP/1.1 as the gateway's client speaks it: one request, one answer, on a kept-alive socket.

The standard library's ``http.client`` parses an answer's header fields with
the ``email`` package, whose import is a third of what a CLI call costs
(``benchmarks/bench_cli.py``); a gateway call needs far less.  A
:class:`Connection` sends a request with a ``Content-Length`` body and reads
the answer's status line, its header fields and its body: by
``Content-Length``, chunked, or up to the close.  It is kept open unless the
answer says otherwise (``Connection: close``, HTTP/1.0, a body read to the
close).  A malformed answer or a closed socket raises :class:`ProtocolError`
(an ``OSError``, as the socket's own failures are).

The TLS context (https) is the caller's; this module never imports ``ssl``.
A call's target and its gateway's address are made here too (:func:`quote`,
:func:`query`, :func:`split_url`: ``urllib.parse``'s answers for what a
client sends, without its import; tests hold them equal).
"""

from __future__ import annotations

import socket
from collections import namedtuple

TYPE_CHECKING = False  # typing's, without importing typing: a CLI call never loads it
if TYPE_CHECKING:
    import io
    import ssl

MAX_LINE = 65_536
"""The longest status line, header line or chunk-size line accepted (as ``http.client``)."""
MAX_FIELDS = 100
"""The most header fields an answer may carry (as ``http.client``)."""


UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~")
"""The bytes a URL carries as themselves (RFC 3986 section 2.3); ``quote`` escapes every other."""


def quote(text: str) -> str:
    """``urllib.parse.quote(text, safe="")``: each byte of ``text``'s UTF-8 but :data:`UNRESERVED` as ``%XX``
    (a request id with a ``/`` stays one path segment)."""
    data = text.encode("utf-8")
    return "".join(chr(b) if b in UNRESERVED else f"%{b:02X}" for b in data)


def query(params: dict[str, object]) -> str:
    """``urllib.parse.urlencode(params, quote_via=quote)`` for text and number values."""
    return "&".join(f"{quote(str(k))}={quote(str(v))}" for k, v in params.items())


def split_url(url: str) -> tuple[str, str, int | None, str]:
    """A gateway's ``scheme://host[:port][/path]`` as ``urllib.parse.urlsplit`` reads it: the scheme and
    host in lower case (an IPv6 host without its brackets, any ``user@`` dropped), the port (None when
    not given) and the path (no query or fragment); ValueError for a URL without ``://`` or a port
    that is not one."""
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme.isascii() or not scheme.isalpha():
        raise ValueError(f"not a scheme://host URL: {url!r}")
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    hostport, path = rest[:end].rpartition("@")[2], rest[end:].split("#", 1)[0].split("?", 1)[0]
    if hostport.startswith("["):
        host, _, after = hostport[1:].partition("]")
        port = after[1:] if after.startswith(":") else ""
    else:
        host, _, port = hostport.partition(":")
    if port and not (port.isascii() and port.isdigit() and int(port) <= 65535):
        raise ValueError(f"not a port: {port!r} in {url!r}")
    return scheme.lower(), host.lower(), int(port) if port else None, path


class ProtocolError(ConnectionError):
    """The gateway's answer is not HTTP/1.x, or the connection ended inside it."""


class Answer(namedtuple("Answer", ("status", "reason", "fields", "body", "will_close"))):
    """An answer: its ``status`` (int), ``reason`` phrase, header ``fields`` (a dict, names in lower
    case), ``body`` (bytes), and whether the connection closed after it (``will_close``)."""

    __slots__ = ()


class Connection:
    """One connection to ``host:port`` (over TLS with ``tls``), opened on the first request."""

    def __init__(self, host: str, port: int, *, timeout: float, tls: ssl.SSLContext | None = None) -> None:
        self.host, self.port, self.timeout, self.tls = host, port, timeout, tls
        self.sock: socket.socket | None = None
        self._in: io.BufferedReader | None = None

    def close(self) -> None:
        sock, self.sock, reader, self._in = self.sock, None, self._in, None
        if reader is not None:
            reader.close()
        if sock is not None:
            sock.close()

    def _open(self) -> None:
        # a host name as bytes: as str, getaddrinfo encodes it with the idna codec, an import of its own
        host = self.host.encode("ascii") if self.host.isascii() else self.host
        sock = socket.create_connection((host, self.port), self.timeout)  # type: ignore[arg-type]
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls is not None:
            sock = self.tls.wrap_socket(sock, server_hostname=self.host)
        self.sock, self._in = sock, sock.makefile("rb")

    def request(self, method: str, target: str, body: bytes, fields: dict[str, str]) -> Answer:
        """Send ``method target`` with ``fields`` and ``body``; the answer, read in full.
        A target or field that would split the request (a space in the target, a line break
        anywhere) is refused (ProtocolError) before anything is sent."""
        if any(c in target for c in " \r\n") or any(c in f"{k}{v}" for k, v in fields.items() for c in "\r\n"):
            raise ProtocolError(f"refused to send {method} {target!r}: it would split the request")
        if self.sock is None:
            self._open()
        assert self.sock is not None and self._in is not None
        host = self.host if ":" not in self.host else f"[{self.host}]"
        head = [f"{method} {target} HTTP/1.1", f"Host: {host}:{self.port}", "Accept-Encoding: identity"]
        head += [f"{k}: {v}" for k, v in fields.items()]
        if body or method in ("POST", "PUT", "PATCH"):
            head.append(f"Content-Length: {len(body)}")
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        return self._answer(method)

    def _line(self) -> bytes:
        assert self._in is not None
        line = self._in.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise ProtocolError("an answer's line is too long")
        if not line:
            raise ProtocolError("the gateway closed the connection without answering")
        return line

    def _answer(self, method: str) -> Answer:
        while True:  # skip informational answers (100 Continue)
            version, _, rest = self._line().decode("latin-1").rstrip("\r\n").partition(" ")
            code, _, reason = rest.partition(" ")
            if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
                raise ProtocolError(f"not an HTTP answer: {version} {rest}"[:200])
            fields = self._fields()
            status = int(code)
            if not 100 <= status < 200:
                break
        conn = fields.get("connection", "").lower()
        will_close = "close" in conn or (version == "HTTP/1.0" and "keep-alive" not in conn)
        if method == "HEAD" or status in (204, 304):
            body = b""
        elif "chunked" in fields.get("transfer-encoding", "").lower():
            body = self._chunked()
        elif "content-length" in fields:
            body = self._exactly(int(fields["content-length"]))
        else:
            assert self._in is not None
            body, will_close = self._in.read(), True
        if will_close:
            self.close()
        return Answer(status, reason, fields, body, will_close)

    def _fields(self) -> dict[str, str]:
        fields: dict[str, str] = {}
        for _ in range(MAX_FIELDS + 1):
            line = self._line()
            if line in (b"\r\n", b"\n"):
                return fields
            name, colon, value = line.decode("latin-1").partition(":")
            if colon:
                key = name.strip().lower()
                fields[key] = f"{fields[key]}, {value.strip()}" if key in fields else value.strip()
        raise ProtocolError(f"an answer with more than {MAX_FIELDS} header fields")

    def _exactly(self, n: int) -> bytes:
        assert self._in is not None
        data = self._in.read(n)
        if len(data) < n:
            raise ProtocolError(f"the answer ended after {len(data)} of {n} bytes")
        return data

    def _chunked(self) -> bytes:
        parts = []
        while True:
            size = self._line().split(b";", 1)[0].strip()
            try:
                n = int(size, 16)
            except ValueError:
                raise ProtocolError(f"a bad chunk size {size[:40]!r}") from None
            if n == 0:
                self._fields()  # the trailer, up to its blank line
                return b"".join(parts)
            parts.append(self._exactly(n))
            self._line()  # the chunk's CRLF
