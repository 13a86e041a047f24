from tests.cloud import cloud  # noqa: F401
