"""Benchmark scenarios, one module each (see ``bench/__init__.py``)."""
