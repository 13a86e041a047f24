"""The compute host's half of the consoles: a guest's console log and where its interactive
consoles (VNC, serial) listen on this host.

Called by ``servers.services.consoles`` through ``compute.rpc`` (the API waits for the answer);
nothing here changes a row. The console token itself is the API's business (it lives in the API
database, which a compute host never writes).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cloudcore.core.context import RequestContext

from .drivers import driver_for
from .registry import host_call
from .virt.driver import ConsoleTypeUnavailable

if TYPE_CHECKING:
    from servers.models import Instance


def tail_lines(log: bytes, length: int | None) -> bytes:
    """The last ``length`` lines of ``log`` (None: all of it; 0: nothing), as Nova's compute
    manager tails a console log."""
    if length is None:
        return log
    if length == 0:
        return b""
    return b"\n".join(log.split(b"\n")[-length:])


@host_call("get_console_output")
def get_console_output(ctx: RequestContext, instance: Instance, length: int | None = None) -> dict[str, Any]:
    log = driver_for(str(instance.host)).get_console_output(instance=instance)
    return {"output": tail_lines(log, length).decode("utf-8", "replace")}


@host_call("get_console_connection")
def get_console_connection(ctx: RequestContext, instance: Instance, console_type: str) -> dict[str, Any]:
    driver = driver_for(str(instance.host))
    if console_type == "novnc":
        return dict(driver.get_vnc_console(instance=instance))
    if console_type == "serial":
        return dict(driver.get_serial_console(instance=instance))
    # spice-html5 and friends: the libvirt guests have no such graphics device
    raise ConsoleTypeUnavailable(host=instance.host, console_type=console_type)
