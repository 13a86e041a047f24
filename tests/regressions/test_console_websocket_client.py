"""The e2e tests' console client (tests/e2e/test_cli_consoles.py ``open_console``) lost a console's
first frame when it came in the same read as the proxy's ``101`` answer: websockify's client kept
those bytes in its buffer and its ``recv()`` waited for more from the socket, which a console that
speaks first (a VNC server's greeting, a serial line's replayed log) never sends before the client
answers. Under load the client reads late and gets both at once: the slow tier two at a time failed
``test_console_log_and_urls_through_the_proxies`` with ``no b'\\n' from the console, only b''``.

Here a server answers the upgrade and sends its first frame in one write, as the proxy does when
the console is quick and the client slow.
"""
from __future__ import annotations

import base64
import hashlib
import socket
import threading

from tests.e2e.test_cli_consoles import open_console

GREETING = b"RFB 003.008\n"


def _upgrade_and_greet(server: socket.socket, done: threading.Event) -> None:
    conn, _ = server.accept()
    with conn:
        request = b""
        while b"\r\n\r\n" not in request:
            request += conn.recv(4096)
        key = next(line.split(b":", 1)[1].strip() for line in request.split(b"\r\n")
                   if line.lower().startswith(b"sec-websocket-key:"))
        accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
        answer = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Accept: " + accept + b"\r\nSec-WebSocket-Protocol: binary\r\n\r\n")
        # the 101 and the console's first frame (binary, unmasked: from the server) in one write
        conn.sendall(answer + bytes([0x82, len(GREETING)]) + GREETING)
        done.wait(30)  # the console then waits for the client, as a VNC server does


def test_a_first_frame_that_came_with_the_upgrade_answer_is_received() -> None:
    # given a proxy whose answer to the upgrade carries the console's first frame
    done = threading.Event()
    with socket.create_server(("127.0.0.1", 0)) as server:
        thread = threading.Thread(target=_upgrade_and_greet, args=(server, done), daemon=True)
        thread.start()
        try:
            # when the e2e tests' client opens the console
            ws = open_console(int(server.getsockname()[1]), "a-token")
            ws.socket.settimeout(10)
            # then its first recv() is that frame (websockify's own client waited for more bytes)
            assert ws.recv() == GREETING
        finally:
            done.set()
            thread.join(10)
