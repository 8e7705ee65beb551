"""The client's own HTTP/1.1 connection (:mod:`legionrm.client.conn`) against canned answers: each way
a body may end, keep-alive and close, and each malformed answer refused as a ProtocolError."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from legionrm.client.conn import Connection, ProtocolError


class Canned:
    """A one-connection server that answers each request (read up to its blank line and body) with
    the next of ``answers``, then closes when they run out."""

    def __init__(self, answers: list[bytes]) -> None:
        self.answers, self.requests = answers, []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:  # closed before any connection (a request refused before it was sent)
            return
        with conn, conn.makefile("rb") as reader:
            for answer in self.answers:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        return
                    head += line
                length = next((int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")), 0)
                self.requests.append(head + reader.read(length))
                conn.sendall(answer)

    def close(self) -> None:
        self.sock.close()
        self.thread.join(5)


@pytest.fixture
def canned() -> Iterator[type[Canned]]:
    made: list[Canned] = []

    def make(answers: list[bytes]) -> Canned:
        made.append(Canned(answers))
        return made[-1]

    yield make  # type: ignore[misc]
    for c in made:
        c.close()


OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}"


@pytest.mark.parametrize("raw, body, closes", [
    (OK, b'{"a":1}', False),
    (b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\n{\"a\r\n4\r\n\":1}\r\n0\r\nT: 1\r\n\r\n", b'{"a":1}', False),
    (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nto the end", b"to the end", True),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi", b"hi", True),
    (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi", b"hi", True),
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", b"", False),
], ids=["length", "chunked", "to-the-close", "connection-close", "http-1.0", "interim-then-no-content"])
def test_each_way_a_body_ends(canned, raw: bytes, body: bytes, closes: bool) -> None:
    server = canned([raw])
    answer = Connection("127.0.0.1", server.port, 5).request("POST", "/api/v1/x", {"A": "b"}, b"{}")
    assert (answer.body, answer.closes) == (body, closes)
    assert server.requests[0].startswith(b"POST /api/v1/x HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nContent-Length: 2\r\nA: b\r\n\r\n{}" in server.requests[0]


def test_a_kept_connection_serves_the_next_call_and_a_closed_one_is_stale(canned) -> None:
    server = canned([OK, OK])
    conn = Connection("127.0.0.1", server.port, 5)
    assert conn.stale()  # never opened
    assert [conn.request("GET", f"/{n}", {}, b"").status for n in range(2)] == [200, 200]
    assert len(server.requests) == 2  # one connection, two calls
    server.thread.join(5)  # the server closed it after its last answer
    assert conn.stale()
    conn.close()
    assert conn.stale()


@pytest.mark.parametrize("raw", [
    b"SPDY/3 200 OK\r\n\r\n",
    b"HTTP/1.1 2000 OK\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
    b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
    b"",
], ids=["not-http", "bad-status", "bad-field", "cut-body", "bad-length", "bad-chunk-size", "cut-chunk", "closed"])
def test_a_malformed_answer_is_a_protocol_error(canned, raw: bytes) -> None:
    server = canned([raw])
    with pytest.raises(ProtocolError):
        Connection("127.0.0.1", server.port, 5).request("GET", "/", {}, b"")


@pytest.mark.parametrize("target, headers", [("/a b", {}), ("/a\r\nX: y", {}), ("/", {"A": "b\r\nX: y"})],
                         ids=["space", "target-crlf", "field-crlf"])
def test_a_request_that_would_split_is_refused_before_it_is_sent(canned, target: str, headers: dict[str, str]) -> None:
    server = canned([OK])
    with pytest.raises(ProtocolError):
        Connection("127.0.0.1", server.port, 5).request("GET", target, headers, b"")
    assert server.requests == []
