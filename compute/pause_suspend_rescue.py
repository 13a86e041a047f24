"""The compute host's half of pause/unpause, suspend/resume, rescue/unrescue and trigger_crash_dump.

Cast by ``servers.services.pause_suspend_rescue`` through ``compute.rpc``; each operation drives
the virt driver (libvirt: ``virDomainSuspend``/``virDomainResume`` for pause, a managed save for
suspend and a start from it for resume, a rescue domain booted from the rescue image with the
server's own disk second, ``virDomainInjectNMI`` for the crash dump) and finishes the state change.
``registry.server_action`` emits ``instance.<action>.start/end`` and records the
``compute_<op>_instance`` event.

Failures, as Nova's compute manager has them: a pause or unpause that fails gives up the task
only (the guest is as it was); a failed suspend, resume, rescue or unrescue puts the server in
ERROR (the guest may be half-way), except a rescue image that cannot be read, which fails before
the guest is touched; a failed crash dump leaves the state alone. Each failure records a fault.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from cloudcore.core.context import RequestContext
from servers.choices import PowerState, VmState

from .build import image_meta
from .clients import networks as neutron
from .drivers import driver_for
from .registry import server_action

if TYPE_CHECKING:
    from servers.models import Instance

#: libvirt's domain states → Nova's power states (a managed-saved guest is shut off)
_LIBVIRT_POWER = {1: PowerState.RUNNING, 2: PowerState.RUNNING, 3: PowerState.PAUSED, 4: PowerState.SHUTDOWN,
                  5: PowerState.SHUTDOWN, 6: PowerState.CRASHED, 7: PowerState.SUSPENDED}


def _finish(instance: Instance, driver: Any, *, vm_state: str, default_power: int, **fields: Any) -> None:
    """End the task: ``vm_state``, the guest's power state as the hypervisor reports it."""
    try:
        state = driver.get_info(instance).get("state")
    except Exception:
        state = None
    instance.vm_state, instance.task_state = vm_state, None
    instance.power_state = _LIBVIRT_POWER.get(state, default_power) if state is not None else default_power
    for key, value in fields.items():
        setattr(instance, key, value)
    instance.save(update_fields=["vm_state", "task_state", "power_state", *fields, "updated_at"])


@contextmanager
def _guest_untouched(instance: Instance) -> Iterator[None]:
    """A failure in here leaves the guest as it was: the server keeps its vm_state (only the task
    is given up, ``registry._failed``), instead of going to ERROR."""
    vm_state = instance.vm_state
    try:
        yield
    except Exception as exc:
        exc.restore_vm_state = vm_state  # type: ignore[attr-defined]
        raise


@server_action("pause", action="pause", notification="pause", event="compute_pause_instance")
def pause(ctx: RequestContext, instance: Instance) -> None:
    driver = driver_for(str(instance.host))
    with _guest_untouched(instance):
        driver.pause(instance=instance)
    _finish(instance, driver, vm_state=VmState.PAUSED, default_power=PowerState.PAUSED)


@server_action("unpause", action="unpause", notification="unpause", event="compute_unpause_instance")
def unpause(ctx: RequestContext, instance: Instance) -> None:
    driver = driver_for(str(instance.host))
    with _guest_untouched(instance):
        driver.unpause(instance=instance)
    _finish(instance, driver, vm_state=VmState.ACTIVE, default_power=PowerState.RUNNING)


@server_action("suspend", action="suspend", notification="suspend", event="compute_suspend_instance")
def suspend(ctx: RequestContext, instance: Instance) -> None:
    """The vm_state it had is kept in system metadata (``old_vm_state``) for the resume."""
    driver = driver_for(str(instance.host))
    sysmeta = {**(instance.system_metadata or {}), "old_vm_state": instance.vm_state}
    driver.suspend(instance=instance)
    _finish(instance, driver, vm_state=VmState.SUSPENDED, default_power=PowerState.SHUTDOWN,
            system_metadata=sysmeta)


@server_action("resume", action="resume", notification="resume", event="compute_resume_instance")
def resume(ctx: RequestContext, instance: Instance) -> None:
    driver = driver_for(str(instance.host))
    driver.resume(instance=instance, network_info=neutron.network_info(instance_uuid=instance.uuid))
    sysmeta = dict(instance.system_metadata or {})
    old_vm_state = sysmeta.pop("old_vm_state", VmState.ACTIVE)
    _finish(instance, driver, vm_state=old_vm_state, default_power=PowerState.RUNNING, system_metadata=sysmeta)


@server_action("rescue", action="rescue", notification="rescue", event="compute_rescue_instance")
def rescue(ctx: RequestContext, instance: Instance, admin_pass: str | None = None,
           rescue_image_ref: str | None = None) -> None:
    """Power the guest off and boot the rescue domain: the rescue image (``rescue_image_ref``, else
    the image the server was built from) first, the server's own disk second."""
    driver = driver_for(str(instance.host))
    with _guest_untouched(instance):
        rescue_image = image_meta(rescue_image_ref or instance.image_ref or None)
        network_info = neutron.network_info(instance_uuid=instance.uuid)
    driver.power_off(instance=instance)
    driver.rescue(instance=instance, rescue_image_meta=rescue_image, network_info=network_info,
                  admin_password=admin_pass)
    _finish(instance, driver, vm_state=VmState.RESCUED, default_power=PowerState.RUNNING,
            launched_at=timezone.now())


@server_action("unrescue", action="unrescue", notification="unrescue", event="compute_unrescue_instance")
def unrescue(ctx: RequestContext, instance: Instance) -> None:
    """Drop the rescue domain and its disk; the server boots from its own disk again."""
    driver = driver_for(str(instance.host))
    driver.unrescue(instance=instance)
    _finish(instance, driver, vm_state=VmState.ACTIVE, default_power=PowerState.RUNNING)


@server_action("trigger_crash_dump", action="trigger_crash_dump", notification="trigger_crash_dump",
               event="compute_trigger_crash_dump")
def trigger_crash_dump(ctx: RequestContext, instance: Instance) -> None:
    """An NMI to the guest; the states do not change (what the guest does with it is its own)."""
    driver_for(str(instance.host)).trigger_crash_dump(instance=instance)
