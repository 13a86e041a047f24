"""Status mapping, PENDING included (seed 3)."""
import pytest

from servers.choices import TaskState, VmState
from servers.status import shown_vm_state, states_for_status, status_from_state


@pytest.mark.parametrize(
    ("vm_state", "task_state", "expected"),
    [
        (VmState.ACTIVE, None, "ACTIVE"),
        (VmState.ACTIVE, TaskState.REBUILDING, "REBUILD"),
        (VmState.STOPPED, TaskState.REBUILD_SPAWNING, "REBUILD"),
        (VmState.ERROR, TaskState.REBUILD_BLOCK_DEVICE_MAPPING, "REBUILD"),
        (VmState.STOPPED, None, "SHUTOFF"),
        (VmState.BUILDING, TaskState.SCHEDULING, "BUILD"),
        (VmState.SHELVED, TaskState.UNSHELVING, "SHELVED"),
        (VmState.SHELVED_OFFLOADED, TaskState.SPAWNING, "SHELVED_OFFLOADED"),
        (VmState.RESIZED, None, "VERIFY_RESIZE"),
        (VmState.RESIZED, TaskState.RESIZE_REVERTING, "REVERT_RESIZE"),
        (VmState.ACTIVE, TaskState.REBOOTING_HARD, "HARD_REBOOT"),
        ("made-up", None, "UNKNOWN"),
    ],
)
def test_nova_state_map(vm_state, task_state, expected):
    assert status_from_state(vm_state, task_state, (2, 1)) == expected


def test_pending_is_error_below_2_105_and_pending_from_it():
    # given a server buried with vm_state pending
    # then old clients see ERROR in both places, 2.105 clients see PENDING
    assert status_from_state(VmState.PENDING, None, (2, 104)) == "ERROR"
    assert shown_vm_state(VmState.PENDING, (2, 104)) == VmState.ERROR
    assert status_from_state(VmState.PENDING, None, (2, 105)) == "PENDING"
    assert shown_vm_state(VmState.PENDING, (2, 105)) == VmState.PENDING


def test_status_filter_maps_back_to_states():
    vm_states, task_states = states_for_status("ERROR", (2, 104))
    assert VmState.ERROR in vm_states and VmState.PENDING in vm_states and task_states is None
    vm_states, _ = states_for_status("ERROR", (2, 105))
    assert VmState.PENDING not in vm_states
    assert states_for_status("PENDING", (2, 105))[0] == [VmState.PENDING]
    assert states_for_status("PENDING", (2, 1))[0] == []
    vm_states, task_states = states_for_status("REBUILD", (2, 1))
    assert set(vm_states) >= {VmState.ACTIVE, VmState.STOPPED, VmState.ERROR}
    assert TaskState.REBUILDING in task_states
