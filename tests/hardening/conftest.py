"""Fixtures of the hardening tier: the in-process test cloud (the live cloud comes from tests/conftest.py)."""
from tests.cloud import cloud  # noqa: F401
