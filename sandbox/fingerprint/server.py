"""A site that checks its clients' fingerprints, as Cloudflare's and Akamai's defences do.

    with FingerprintServer(make_authority(tmp)) as server:   # https://localhost:PORT
        ...fetch server.url...
        server.visits        # each request: its JA3, JA3N, JA4, Akamai text, ALPN, agent, verdict

Each connection's ClientHello is read off the socket before the handshake (peeked: the
TLS library then reads it as usual), an h2 connection's first frames as they arrive
(``http2.Http2Sniffer``), then ``ssl`` completes the handshake, offering h2 and
http/1.1 by ALPN, and ``h2`` frames the HTTP/2 answers. Every request is judged:

- a TLS fingerprint (JA4) that is no known browser's: 403;
- over h2, an HTTP/2 fingerprint (Akamai) that is not that browser's: 403;
- a User-Agent naming another browser than the handshake did: 403;
- otherwise 200, and the fingerprint as JSON.

``BROWSERS`` holds what real browsers send, as public fingerprinting services record
them (browserleaks.com shows these for Chrome 143; desktop Chrome has sent them since
131, when it moved ALPS to its new code point): a client that only says "Chrome" in its
User-Agent over Python's or curl's own handshake is refused, as on a defended site.
Loopback only; every loop is bounded (requests per connection, bytes before a request,
an idle timeout).
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
from dataclasses import asdict, dataclass
from types import TracebackType
from typing import Self

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import ConnectionTerminated, RequestReceived

from sandbox.fingerprint.hello import ClientHello, NotAHello
from sandbox.fingerprint.http2 import Http2Sniffer
from sandbox.tls import Authority

# JA4 -> the browser family that sends it; Akamai HTTP/2 text -> the same. A hello that
# resumes a session adds pre_shared_key (0x0029): the same browser, one extension more.
BROWSERS = {"t13d1516h2_8daaf6152771_d8a2da3f94cd": "Chromium",  # Chrome 131+, with SNI
            "t13d1517h2_8daaf6152771_b6f405a00624": "Chromium",  # the same, resuming
            "t13i1515h2_8daaf6152771_d8a2da3f94cd": "Chromium",  # to an address (no SNI)
            "t13i1516h2_8daaf6152771_b6f405a00624": "Chromium"}  # that, resuming
BROWSERS_H2 = {"1:65536;2:0;4:6291456;6:262144|15663105|0|m,a,s,p": "Chromium"}
MAX_HELLO = 64 * 1024
MAX_REQUESTS = 100  # per connection
MAX_HEAD = 64 * 1024
IDLE_S = 10.0


@dataclass(frozen=True)
class Visit:
    """One request as the server saw and judged it (``refused``: why, or None)."""

    path: str
    alpn: str
    ja3: str
    ja3n: str
    ja3n_text: str
    ja4: str
    akamai: str | None
    user_agent: str
    browser: str | None
    refused: str | None


def agent_family(user_agent: str) -> str | None:
    """The browser family a User-Agent names (Chromium: Chrome, Edge, Opera), or None."""
    if "Firefox/" in user_agent:
        return "Firefox"
    if "Chrome/" in user_agent or "CriOS/" in user_agent:
        return "Chromium"
    if "Safari/" in user_agent and "Version/" in user_agent:
        return "Safari"
    return None


def judge(ja4: str, akamai: str | None, user_agent: str) -> tuple[str | None, str | None]:
    """(the browser the handshake names, why the request is refused or None)."""
    browser = BROWSERS.get(ja4)
    if browser is None:
        return None, f"TLS fingerprint {ja4} is no browser's"
    if akamai is not None and BROWSERS_H2.get(akamai) != browser:
        return browser, f"HTTP/2 fingerprint {akamai!r} is not {browser}'s"
    claimed = agent_family(user_agent)
    if claimed != browser:
        return browser, (f"the User-Agent says {claimed or 'no browser'}, the TLS handshake "
                         f"says {browser}")
    return browser, None


def read_hello(conn: socket.socket) -> ClientHello:
    """The ClientHello, peeked record by record (it stays in the socket for the handshake)."""
    message, offset = b"", 0
    while len(message) < 4 or len(message) < 4 + int.from_bytes(message[1:4], "big"):
        header = _peek(conn, offset + 5)[offset:]
        if header[0] != 0x16:
            raise NotAHello("not a TLS handshake record")
        length = int.from_bytes(header[3:5], "big")
        message += _peek(conn, offset + 5 + length)[offset + 5:]
        offset += 5 + length
    return ClientHello.parse(message)


def _peek(conn: socket.socket, size: int) -> bytes:
    if size > MAX_HELLO:
        raise NotAHello("a ClientHello past 64 KiB")
    data = conn.recv(size, socket.MSG_PEEK | socket.MSG_WAITALL)
    if len(data) < size:
        raise NotAHello("the connection closed inside the ClientHello")
    return data


class FingerprintServer:
    """The server on 127.0.0.1 and, where there is IPv6, on ::1 with the same port, as
    ``localhost`` may resolve to either; a thread each connection. ``url`` uses
    ``localhost``, so clients send SNI as they do for a site."""

    def __init__(self, authority: Authority) -> None:
        """``authority``: a test's own CA (``sandbox.tls``), whose server certificate
        names ``localhost`` and 127.0.0.1; clients trust its ``ca`` file."""
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(authority.server_cert, authority.server_key)
        self.context.set_alpn_protocols(["h2", "http/1.1"])
        self.visits: list[Visit] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listeners = [socket.create_server(("127.0.0.1", 0))]
        self.port = self._listeners[0].getsockname()[1]
        with contextlib.suppress(OSError):  # no IPv6 loopback, or the port taken there
            self._listeners.append(socket.create_server(("::1", self.port),
                                                        family=socket.AF_INET6))
        self.url = f"https://localhost:{self.port}"
        self._threads = [threading.Thread(target=self._accept, args=(listener,), daemon=True)
                         for listener in self._listeners]
        for thread in self._threads:
            thread.start()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        for listener in self._listeners:
            listener.close()
        for thread in self._threads:
            thread.join(timeout=5)

    def _accept(self, listener: socket.socket) -> None:
        listener.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn: socket.socket) -> None:
        conn.settimeout(IDLE_S)
        try:
            hello = read_hello(conn)
            with self.context.wrap_socket(conn, server_side=True) as tls:
                if tls.selected_alpn_protocol() == "h2":
                    self._serve_h2(tls, hello)
                else:
                    self._serve_h1(tls, hello)
        except (OSError, NotAHello, ssl.SSLError):
            conn.close()

    def _visit(self, hello: ClientHello, path: str, alpn: str, akamai: str | None,
               user_agent: str) -> Visit:
        ja4 = hello.ja4()
        browser, refused = judge(ja4, akamai, user_agent)
        visit = Visit(path, alpn, hello.ja3(), hello.ja3n(), hello.ja3_text(True), ja4, akamai,
                      user_agent, browser, refused)
        with self._lock:
            self.visits.append(visit)
        return visit

    def _serve_h2(self, tls: ssl.SSLSocket, hello: ClientHello) -> None:
        sniffer, akamai = Http2Sniffer(), None
        h2 = H2Connection(H2Configuration(client_side=False, header_encoding="utf-8"))
        h2.initiate_connection()
        tls.sendall(h2.data_to_send())
        for _ in range(MAX_REQUESTS * 8):
            data = tls.recv(65536)
            if not data:
                return
            sniffer.feed(data)
            for event in h2.receive_data(data):
                if isinstance(event, ConnectionTerminated):
                    return
                if isinstance(event, RequestReceived) and event.stream_id is not None:
                    headers = [(str(k), str(v)) for k, v in event.headers or []]
                    if akamai is None:
                        akamai = sniffer.fingerprint([name for name, _ in headers])
                    fields = dict(headers)
                    visit = self._visit(hello, fields.get(":path", ""), "h2", akamai,
                                        fields.get("user-agent", ""))
                    status, body = _answer(visit)
                    h2.send_headers(event.stream_id, [
                        (":status", str(status)), ("content-type", "application/json"),
                        ("content-length", str(len(body)))])
                    h2.send_data(event.stream_id, body, end_stream=True)
            tls.sendall(h2.data_to_send())

    def _serve_h1(self, tls: ssl.SSLSocket, hello: ClientHello) -> None:
        head = b""
        while b"\r\n\r\n" not in head and len(head) < MAX_HEAD:
            data = tls.recv(4096)
            if not data:
                return
            head += data
        lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        path = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else ""
        fields = {name.strip().lower(): value.strip() for name, _, value
                  in (line.partition(":") for line in lines[1:])}
        visit = self._visit(hello, path, "http/1.1", None, fields.get("user-agent", ""))
        status, body = _answer(visit)
        tls.sendall(f"HTTP/1.1 {status} {'OK' if status == 200 else 'Forbidden'}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                    f"Connection: close\r\n\r\n".encode() + body)


def _answer(visit: Visit) -> tuple[int, bytes]:
    return (403 if visit.refused else 200), json.dumps(asdict(visit)).encode()
