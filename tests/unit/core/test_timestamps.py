"""The API's timestamps (``versioned.timestamp``, ``versioned.seconds_z``) are what ``strftime``
writes, whatever the datetime: aware in any zone or naive, with or without microseconds, any year."""
from __future__ import annotations

import datetime

import pytest

from cloudcore.core.api.versioned import seconds_z, timestamp

ZONES = [None, datetime.UTC, datetime.timezone(datetime.timedelta(hours=5, minutes=30)),
         datetime.timezone(-datetime.timedelta(hours=11))]
VALUES = [datetime.datetime(2026, 11, 25, 7, 16, 25, 123456), datetime.datetime(2026, 1, 2, 3, 4, 5),
          datetime.datetime(1999, 12, 31, 23, 59, 59, 999999), datetime.datetime(1000, 1, 1),
          datetime.datetime(999, 10, 9, 8, 7, 6, 5), datetime.datetime(1, 1, 1, 0, 0, 0, 1),
          datetime.datetime(9999, 12, 31, 23, 59, 59, 999999), datetime.datetime(2026, 10, 10, 10, 10, 10, 10)]


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize("naive", VALUES)
def test_timestamps_are_what_strftime_writes(naive: datetime.datetime, zone: datetime.tzinfo | None) -> None:
    # given a datetime (in a zone or naive)
    value = naive.replace(tzinfo=zone)
    # when it is shown, then it is strftime's text (the fields as they are in its zone)
    assert timestamp(value) == value.strftime("%Y-%m-%dT%H:%M:%S.%f")
    assert seconds_z(value) == value.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_no_value_is_no_timestamp() -> None:
    assert timestamp(None) is None
