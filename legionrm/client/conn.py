"""One keep-alive HTTP/1.1 connection to the gateway: a request out whole, its answer read back.

The Wire's calls are small JSON bodies to one server.  ``http.client`` builds
a request header by header and reads every answer's header through the
``email`` package's parser (made for mail), which was half of what a call
cost the client.  :class:`Connection` writes the request in one piece and
reads the status line, the header fields and the body itself: a
``Content-Length`` body, a chunked one, or (neither) one read up to the
close.  An https gateway's socket is wrapped with the pinned context the
Wire made.  Anything that is not HTTP/1.x as this reads it raises
:class:`ProtocolError` (an ``OSError``, as a broken connection is).  No
retries here: the Wire decides.
"""

from __future__ import annotations

import select
import socket
import ssl
from typing import NamedTuple

MAX_LINE = 65_536
"""The longest status or header line read."""
MAX_FIELDS = 200
"""The most header fields an answer may have."""


class ProtocolError(OSError):
    """The server's bytes are not an HTTP/1.x answer as this client reads them."""


class Answer(NamedTuple):
    """One answer: its status, reason phrase, body, and whether the server closes the connection after it."""

    status: int
    reason: str
    body: bytes
    closes: bool


class Connection:
    """A connection to ``host:port`` (through ``tls`` when given), opened at the first request."""

    def __init__(self, host: str, port: int, timeout: float, tls: ssl.SSLContext | None = None) -> None:
        self.host, self.port, self.timeout, self.tls = host, port, timeout, tls
        default = 443 if tls is not None else 80
        self._host_field = host if port == default else f"{host}:{port}"
        self._sock: socket.socket | None = None
        self._in = None  # the socket's buffered reader

    def stale(self) -> bool:
        """Was it opened and then closed (by :meth:`close`, or by the server while idle: readable now)?"""
        return self._sock is None or bool(select.select([self._sock], [], [], 0)[0])

    def close(self) -> None:
        sock, reader, self._sock, self._in = self._sock, self._in, None, None
        for part in (reader, sock):
            if part is not None:
                try:
                    part.close()
                except OSError:
                    pass

    def request(self, method: str, target: str, headers: dict[str, str], body: bytes) -> Answer:
        """Send ``method target`` with ``headers`` and ``body``; its answer.  OSError (ProtocolError,
        a timeout) when the connection breaks or the answer is not HTTP/1.x."""
        if any(c in target for c in " \r\n") or any(c in f"{k}{v}" for k, v in headers.items() for c in "\r\n"):
            raise ProtocolError("a request target with a space or a line break, or a field with a line break")
        if self._sock is None:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sock = self.tls.wrap_socket(sock, server_hostname=self.host) if self.tls is not None else sock
            self._in = self._sock.makefile("rb")
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self._host_field}", f"Content-Length: {len(body)}",
                 *(f"{k}: {v}" for k, v in headers.items()), "", ""]
        self._sock.sendall("\r\n".join(lines).encode("latin-1") + body)
        return self._answer(method)

    def _answer(self, method: str) -> Answer:
        reader = self._in
        assert reader is not None
        while True:
            status, reason, version = _status(_line(reader))
            fields = _fields(reader)
            if not 100 <= status < 200:  # an interim answer (never asked for): the real one follows
                break
        closes = fields.get("connection", "").lower() == "close" or (
            version == "HTTP/1.0" and fields.get("connection", "").lower() != "keep-alive")
        if method == "HEAD" or status in (204, 304):
            return Answer(status, reason, b"", closes)
        if "chunked" in fields.get("transfer-encoding", "").lower():
            return Answer(status, reason, _chunked(reader), closes)
        length = fields.get("content-length")
        if length is None:  # the body runs to the close
            return Answer(status, reason, reader.read(), True)
        if not length.isdigit():
            raise ProtocolError(f"a Content-Length of {length!r}")
        body = reader.read(int(length))
        if len(body) != int(length):
            raise ProtocolError(f"the connection closed {len(body)} bytes into a body of {length}")
        return Answer(status, reason, body, closes)


def _line(reader: object) -> bytes:
    line: bytes = reader.readline(MAX_LINE + 1)  # type: ignore[attr-defined]
    if not line:
        raise ProtocolError("the server closed the connection")
    if len(line) > MAX_LINE or not line.endswith(b"\n"):
        raise ProtocolError("a line too long, or cut short")
    return line


def _status(line: bytes) -> tuple[int, str, str]:
    """``(status, reason, version)`` of a status line."""
    parts = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not (parts[1].isdigit() and len(parts[1]) == 3):
        raise ProtocolError(f"not an HTTP/1.x status line: {line[:80]!r}")
    return int(parts[1]), parts[2] if len(parts) > 2 else "", parts[0]


def _fields(reader: object) -> dict[str, str]:
    """The header fields up to the blank line, by lowercase name (a repeated one: its values joined)."""
    fields: dict[str, str] = {}
    for _ in range(MAX_FIELDS + 1):
        line = _line(reader)
        if line in (b"\r\n", b"\n"):
            return fields
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep or not name or name != name.strip():
            raise ProtocolError(f"not a header field: {line[:80]!r}")
        key, value = name.lower(), value.strip()
        fields[key] = f"{fields[key]}, {value}" if key in fields else value
    raise ProtocolError(f"more than {MAX_FIELDS} header fields")


def _chunked(reader: object) -> bytes:
    """A chunked body (RFC 9112 section 7.1), its trailer fields read and dropped."""
    parts: list[bytes] = []
    while True:
        size_text = _line(reader).split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise ProtocolError(f"not a chunk size: {size_text[:20]!r}") from None
        if size == 0:
            _fields(reader)
            return b"".join(parts)
        chunk = reader.read(size)  # type: ignore[attr-defined]
        if len(chunk) != size or _line(reader) not in (b"\r\n", b"\n"):
            raise ProtocolError("a chunk cut short")
        parts.append(chunk)
