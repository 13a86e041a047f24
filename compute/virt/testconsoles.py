"""The consoles a guest of libvirt's test driver would have on a real host, as TCP servers.

libvirt's test driver runs no guest, so nothing would listen where its guests' consoles are: the
libvirt driver in test mode (``LibvirtDriver.get_serial_console`` / ``get_vnc_console``) stands
these up at the ports it hands out, as QEMU would have at the guest's start, and stops them when
the guest stops; the in-process test driver (tests/cloud.py ``serve_consoles``) uses them too.

- ``SerialLine``: the guest's first serial port as libvirt exposes it (``<serial type='tcp'>``
  in bind mode, raw protocol, its output also logged): the guest's output is its console log; a
  client that attaches gets what the guest has printed so far (the test guest printed its boot
  before anyone could attach), then the guest's tty echoes what is typed, and the echo is logged
  too, as virtlogd would.
- ``VncScreen``: a VNC server as QEMU's (RFB 3.8, security type None, raw encoding) with a
  fixed screen: ``SCREEN`` pixels of ``COLOUR``, named after the guest.
"""
from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Callable

#: the VNC screen's size and its one colour (r, g, b)
SCREEN = (320, 200)
COLOUR = (31, 111, 235)


class TCPConsole:
    """A listening socket on ``host``:``port`` (0: a free one); each client is served in its own
    thread. Raises ``OSError`` when the port is taken."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.server = socket.create_server((host, port))
        # blocking, whatever socket.setdefaulttimeout a host process set (kombu does): a console
        # waits for its client as long as the guest runs
        self.server.settimeout(None)
        self.port = int(self.server.getsockname()[1])
        self.clients: list[socket.socket] = []
        self.closed = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.server.accept()
            except OSError:
                continue  # closed (the loop ends) or a client that gave up mid-handshake
            conn.settimeout(None)
            self.clients.append(conn)
            threading.Thread(target=self._serve_safely, args=(conn,), daemon=True).start()

    def _serve_safely(self, conn: socket.socket) -> None:
        try:
            with conn:
                self.serve(conn)
        except OSError:
            pass  # the client (the console proxy) went away

    def serve(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        # shutdown wakes the thread blocked in accept(); close alone would leave it listening
        self.closed = True
        with contextlib.suppress(OSError):
            self.server.shutdown(socket.SHUT_RDWR)
        self.server.close()
        for conn in self.clients:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()


class SerialLine(TCPConsole):
    """``read_log()`` is the guest's output so far; ``append_log(data)`` logs what it prints."""

    def __init__(self, read_log: Callable[[], bytes], append_log: Callable[[bytes], None], host: str = "127.0.0.1",
                 port: int = 0) -> None:
        self.read_log, self.append_log = read_log, append_log
        super().__init__(host, port)

    def serve(self, conn: socket.socket) -> None:
        conn.sendall(self.read_log())
        while data := conn.recv(1024):
            echo = data.replace(b"\r", b"\r\n")  # the tty's echo: a typed Enter starts a new line
            self.append_log(echo)
            conn.sendall(echo)


def _recv_exact(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionResetError("the VNC client went away")
        data += chunk
    return data


class VncScreen(TCPConsole):
    """An RFB 3.8 server: no authentication, one screen of one colour, raw rectangles."""

    def __init__(self, name: str, host: str = "127.0.0.1", port: int = 0) -> None:
        self.name = name.encode()
        self.updates = 0
        super().__init__(host, port)

    def serve(self, conn: socket.socket) -> None:
        width, height = SCREEN
        conn.sendall(b"RFB 003.008\n")
        _recv_exact(conn, 12)  # the client's version
        conn.sendall(bytes([1, 1]))  # one security type: None
        _recv_exact(conn, 1)
        conn.sendall(struct.pack(">I", 0))  # security result: OK
        _recv_exact(conn, 1)  # ClientInit (shared flag)
        # 32 bpp, depth 24, little endian, true colour, 8 bits a channel: red at 16, green 8, blue 0
        shifts, big_endian = [16, 8, 0], False
        pixel_format = struct.pack(">BBBBHHHBBB3x", 32, 24, 0, 1, 255, 255, 255, *shifts)
        conn.sendall(struct.pack(">HH", width, height) + pixel_format + struct.pack(">I", len(self.name)) + self.name)
        while True:
            kind = _recv_exact(conn, 1)[0]
            if kind == 0:  # SetPixelFormat: the client's choice of channel shifts
                fmt = _recv_exact(conn, 19)[3:]
                big_endian = bool(fmt[2])
                shifts = list(fmt[10:13])
            elif kind == 2:  # SetEncodings
                count = struct.unpack(">xH", _recv_exact(conn, 3))[0]
                _recv_exact(conn, 4 * count)
            elif kind == 3:  # FramebufferUpdateRequest: the whole screen, unless an incremental one
                incremental = _recv_exact(conn, 9)[0]
                if not incremental or not self.updates:
                    value = sum(c << s for c, s in zip(COLOUR, shifts, strict=True))
                    pixel = value.to_bytes(4, "big" if big_endian else "little")
                    header = struct.pack(">BxHHHHHi", 0, 1, 0, 0, width, height, 0)
                    conn.sendall(header + pixel * (width * height))
                    self.updates += 1
            elif kind == 4:  # KeyEvent
                _recv_exact(conn, 7)
            elif kind == 5:  # PointerEvent
                _recv_exact(conn, 5)
            elif kind == 6:  # ClientCutText
                length = struct.unpack(">3xI", _recv_exact(conn, 7))[0]
                _recv_exact(conn, length)
            else:
                return  # a message this server does not speak: hang up, as a strict server would
