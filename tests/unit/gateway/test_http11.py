"""The client's HTTP/1.1 (legionrm.client.http11) against answers written byte by byte."""

from __future__ import annotations

import socket
import threading
import urllib.parse
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legionrm.client.http11 import Connection, ProtocolError, query, quote, split_url


class Server:
    """A listening socket on 127.0.0.1 that answers each request it reads with the next canned
    answer, on one connection at a time; what it read is kept in ``requests``."""

    def __init__(self, answers: list[bytes], hang_up: bool = False) -> None:
        self.answers, self.requests, self.hang_up = list(answers), [], hang_up
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.answers:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                reader = conn.makefile("rb")
                while self.answers:
                    head = b""
                    while not head.endswith(b"\r\n\r\n"):
                        line = reader.readline()
                        if not line:
                            break
                        head += line
                    if not head:
                        break
                    length = next((int(h.split(b":")[1]) for h in head.split(b"\r\n")
                                   if h.lower().startswith(b"content-length:")), 0)
                    self.requests.append(head + reader.read(length))
                    answer = self.answers.pop(0)
                    conn.sendall(answer)
                    if self.hang_up or b"connection: close" in answer.lower() or b"content-length" not in answer.lower() \
                            and b"chunked" not in answer.lower():
                        break

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def serve() -> Iterator:
    """``serve(*answers, hang_up=False)``: a :class:`Connection` to a new :class:`Server` giving those
    answers (``hang_up``: closing the connection after each), and the server."""
    made: list[Server] = []

    def make(*answers: bytes, hang_up: bool = False) -> tuple[Connection, Server]:
        s = Server(list(answers), hang_up)
        made.append(s)
        return Connection("127.0.0.1", s.port, timeout=5), s
    yield make
    for s in made:
        s.close()


OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}"
ANSWERS = [
    ("content-length", OK, 200, b'{"a":1}', False),
    ("chunked", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\n{\"a\r\n4\r\n\":1}\r\n0\r\nTrailer: t\r\n\r\n",
     200, b'{"a":1}', False),
    ("connection close", b"HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}", 404, b"{}", True),
    ("to the close", b"HTTP/1.1 200 OK\r\n\r\nall of it", 200, b"all of it", True),
    ("http/1.0", b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 200, b"ok", True),
    ("continue first", b"HTTP/1.1 100 Continue\r\n\r\n" + OK, 200, b'{"a":1}', False),
    ("no content", b"HTTP/1.1 204 No Content\r\n\r\n", 204, b"", False),
    ("folded names", b"HTTP/1.1 200 OK\r\nCONTENT-LENGTH: 2\r\nX-A: 1\r\nx-a: 2\r\n\r\nok", 200, b"ok", False),
]


@pytest.mark.parametrize("answer, status, body, closes", [a[1:] for a in ANSWERS], ids=[a[0] for a in ANSWERS])
def test_an_answer_is_read_whole(serve, answer: bytes, status: int, body: bytes, closes: bool) -> None:
    conn, _ = serve(answer)
    got = conn.request("GET", "/api/v1/requests?user=ann", b"", {"Accept": "application/json"})
    assert (got.status, got.body, got.will_close) == (status, body, closes)
    assert (conn.sock is None) == closes  # a closing answer leaves nothing open


def test_a_kept_connection_carries_the_next_request_and_each_is_sent_as_http_1_1(serve) -> None:
    conn, server = serve(OK, OK)
    conn.request("POST", "/api/v1/requests/cancel", b'{"ids":[]}', {"Signature": "legionrm=:AA==:"})
    first = conn.sock
    assert conn.request("POST", "/api/v1/hosts/h/resume", b"", {}).body == b'{"a":1}' and conn.sock is first
    assert server.connections == 1
    post, empty = server.requests
    assert post == (f"POST /api/v1/requests/cancel HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                    "Accept-Encoding: identity\r\nSignature: legionrm=:AA==:\r\nContent-Length: 10\r\n\r\n"
                    '{"ids":[]}').encode()
    assert empty.endswith(b"Content-Length: 0\r\n\r\n")  # a POST without a body says so


def test_a_closed_connection_is_opened_anew_on_the_next_request(serve) -> None:
    conn, server = serve(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}", OK)
    assert conn.request("GET", "/a", b"", {}).will_close and conn.sock is None
    assert conn.request("GET", "/b", b"", {}).body == b'{"a":1}' and server.connections == 2


@pytest.mark.parametrize("answer, problem", [
    (b"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP answer"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "ended after 5 of 10 bytes"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size"),
    (b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 101 + b"\r\n", "more than 100 header fields"),
    (b"HTTP/1.1 200 OK\r\nX: " + b"y" * 70_000 + b"\r\n\r\n", "too long"),
], ids=["not http", "short body", "bad chunk", "too many fields", "long line"])
def test_a_broken_answer_is_a_protocol_error(serve, answer: bytes, problem: str) -> None:
    conn, _ = serve(answer, hang_up=True)
    with pytest.raises(ProtocolError, match=problem):
        conn.request("GET", "/", b"", {})


def test_no_answer_at_all_is_a_protocol_error() -> None:
    sock = socket.create_server(("127.0.0.1", 0))

    def hang_up() -> None:
        conn, _ = sock.accept()
        conn.recv(65536)
        conn.close()
    t = threading.Thread(target=hang_up, daemon=True)
    t.start()
    with pytest.raises(ProtocolError, match="closed the connection without answering"):
        Connection("127.0.0.1", sock.getsockname()[1], timeout=5).request("GET", "/", b"", {})
    t.join(5)
    sock.close()


def test_protocol_errors_are_os_errors_as_the_sockets_own() -> None:
    assert issubclass(ProtocolError, OSError)  # the Wire turns every OSError into client.unreachable


# --- a call's target and the gateway's address, as urllib.parse makes and reads them -------------


@settings(max_examples=300, deadline=None)
@given(text=st.text(st.characters(blacklist_categories=("Cs",)), max_size=20))
def test_quote_is_urllibs_with_nothing_safe(text: str) -> None:
    assert quote(text) == urllib.parse.quote(text, safe="")


@settings(max_examples=200, deadline=None)
@given(params=st.dictionaries(st.sampled_from(["user", "state", "cursor", "since", "all", "instance"]),
                              st.one_of(st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
                                        st.integers(), st.floats(allow_nan=False))))
def test_query_is_urlencode_quoted_as_a_path(params: dict) -> None:
    assert query(params) == urllib.parse.urlencode(params, quote_via=urllib.parse.quote)


URLS = ["http://127.0.0.1:8470", "https://10.1.2.3:8470", "http://127.0.0.1:8470/", "https://Gw.Example.ORG/base/",
        "http://[::1]:8470/p?x=1#f", "http://[fe80::1]/", "https://user@host:1/a/b", "http://host", "HTTP://h:0",
        "http://h:65535/x#y", "https://h?q", "http://h:/p"]


@pytest.mark.parametrize("url", URLS)
def test_split_url_reads_a_gateway_url_as_urlsplit(url: str) -> None:
    u = urllib.parse.urlsplit(url)
    assert split_url(url) == (u.scheme, u.hostname or "", u.port, u.path)


@pytest.mark.parametrize("url", ["http://h:x", "http://h:70000", "127.0.0.1:8470", "http://h:-1", "http://h:８"])
def test_a_url_that_is_not_a_gateways_is_a_value_error(url: str) -> None:
    with pytest.raises(ValueError):
        split_url(url)


@pytest.mark.parametrize("target, fields", [("/a b", {}), ("/a\r\nX: y", {}), ("/", {"A": "b\r\nX: y"}),
                                            ("/", {"A\nX": "y"})],
                         ids=["space", "target-crlf", "field-value-crlf", "field-name-lf"])
def test_a_request_that_would_split_is_refused_before_it_is_sent(serve, target: str, fields: dict[str, str]) -> None:
    conn, server = serve(OK)
    with pytest.raises(ProtocolError):
        conn.request("GET", target, b"", fields)
    assert server.requests == []
