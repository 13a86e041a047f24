"""The trace bodies' two durations (issue 22) are settings read from the environment at start-up
(``CLOUDCORE_SCHEDULER_TRACE_BODY_REMEMBERED``, ``CLOUDCORE_SCHEDULER_TRACE_ORPHAN_GRACE``,
seconds), and a grace that does not outlast what a process remembers stops start-up: a process
could otherwise name a body the archive has deleted."""
from __future__ import annotations

import subprocess
from datetime import timedelta

from django.test import override_settings

from scheduling.services import traces
from tests.settings_process import settings_loaded

SHOW = "print(settings.SCHEDULER_TRACE_BODY_REMEMBERED, settings.SCHEDULER_TRACE_ORPHAN_GRACE)"


def _load_settings(**env: str) -> subprocess.CompletedProcess[str]:
    return settings_loaded(SHOW, {f"CLOUDCORE_SCHEDULER_TRACE_{k}": v for k, v in env.items()})


def test_the_durations_come_from_the_environment() -> None:
    # given both durations set, the grace outlasting what is remembered by the scope's margin
    loaded = _load_settings(BODY_REMEMBERED="60", ORPHAN_GRACE="3660")
    # then they are the settings
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split() == ["60", "3660"]
    # and unset, they are an hour and a day
    defaults = _load_settings()
    assert defaults.returncode == 0, defaults.stderr
    assert defaults.stdout.split() == ["3600", "86400"]


def test_a_grace_shorter_than_what_is_remembered_stops_start_up() -> None:
    # given a grace that does not outlast the remembered time by the scope's margin
    loaded = _load_settings(BODY_REMEMBERED="7200", ORPHAN_GRACE="9000")
    # then the settings refuse to load, naming the variable
    assert loaded.returncode != 0
    assert "ImproperlyConfigured: CLOUDCORE_SCHEDULER_TRACE_ORPHAN_GRACE=9000 must be at least" in loaded.stderr
    # as a value that is not a number of seconds does
    assert "CLOUDCORE_SCHEDULER_TRACE_BODY_REMEMBERED='1h' is not an integer" in \
        _load_settings(BODY_REMEMBERED="1h").stderr


def test_the_trace_services_read_the_settings_when_they_use_them() -> None:
    with override_settings(SCHEDULER_TRACE_BODY_REMEMBERED=90, SCHEDULER_TRACE_ORPHAN_GRACE=7200):
        assert traces.body_remembered() == timedelta(seconds=90)
        assert traces.orphan_grace() == timedelta(hours=2)
