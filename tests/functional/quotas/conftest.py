"""Fixtures of the quota functional tests: the in-process test cloud (tests/cloud.py)."""
from tests.cloud import cloud  # noqa: F401
