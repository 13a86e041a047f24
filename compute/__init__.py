"""The compute host's side of server operations (runs in ``manage.py compute`` workers)."""
