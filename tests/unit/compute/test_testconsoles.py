"""The test driver's guest consoles (compute/virt/testconsoles.py) as a console proxy meets them."""
from __future__ import annotations

import socket
import struct
import time

from compute.virt.testconsoles import COLOUR, SCREEN, SerialLine, VncScreen


def _recv(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        assert chunk, data
        data += chunk
    return data


def test_consoles_keep_listening_under_a_default_socket_timeout() -> None:
    # given a host process that set a default socket timeout (kombu does) before the guest's consoles started
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(0.2)
    log: list[bytes] = [b"boot\nvm login: "]
    try:
        line = SerialLine(lambda: b"".join(log), log.append)
        screen = VncScreen("vm")
    finally:
        socket.setdefaulttimeout(previous)
    try:
        # when a client comes later than that timeout
        time.sleep(0.6)
        with socket.create_connection(("127.0.0.1", line.port), timeout=5) as client:
            # then the serial line still answers with the log and echoes (and logs) what is typed
            assert _recv(client, 15) == b"boot\nvm login: "
            client.sendall(b"root\r")
            assert _recv(client, 6) == b"root\r\n"
        assert log[-1] == b"root\r\n"
        with socket.create_connection(("127.0.0.1", screen.port), timeout=5) as client:
            # and the VNC server goes through the RFB 3.8 handshake to a raw frame of its colour
            assert _recv(client, 12) == b"RFB 003.008\n"
            client.sendall(b"RFB 003.008\n")
            assert _recv(client, 2) == bytes([1, 1])
            client.sendall(bytes([1]))
            assert _recv(client, 4) == b"\0\0\0\0"
            client.sendall(bytes([1]))
            width, height = struct.unpack(">HH", _recv(client, 4))
            _recv(client, 16)
            assert _recv(client, struct.unpack(">I", _recv(client, 4))[0]) == b"vm"
            client.sendall(struct.pack(">BBHHHH", 3, 0, 0, 0, width, height))
            header = _recv(client, 16)
            assert struct.unpack(">BxHHHHHi", header) == (0, 1, 0, 0, *SCREEN, 0)
            first = _recv(client, 4)
            assert first == (COLOUR[0] << 16 | COLOUR[1] << 8 | COLOUR[2]).to_bytes(4, "little")
    finally:
        line.close()
        screen.close()
