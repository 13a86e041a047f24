"""A compute host's address (Nova's ``my_ip``): the setting when given, else the address the
default route leaves by, else the loopback address."""
from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest

from compute.startup import my_ip


def test_the_setting_wins(settings: Any) -> None:
    settings.MY_IP = "203.0.113.9"
    assert my_ip() == "203.0.113.9"


def test_found_from_the_default_route(settings: Any) -> None:
    settings.MY_IP = ""
    found = ipaddress.ip_address(my_ip())
    assert found.version == 4


def test_loopback_without_a_route(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.MY_IP = ""

    def unreachable(self: socket.socket, address: Any) -> None:
        raise OSError(101, "Network is unreachable")

    monkeypatch.setattr(socket.socket, "connect", unreachable)
    assert my_ip() == "127.0.0.1"
