"""Fixtures of the hardening tier: the in-process test cloud and (for e2e tests) a live cloud of its own."""
from tests.cloud import cloud  # noqa: F401
from tests.e2e.conftest import live_cloud  # noqa: F401
