"""cloudcore's settings loaded in a process of their own, for tests of what the settings make of
the environment at start-up (a value read, a default chosen, a start-up refused)."""
from __future__ import annotations

import os
import subprocess
import sys


def settings_loaded(show: str, env: dict[str, str], *, own_only: bool = False) -> subprocess.CompletedProcess[str]:
    """A Python process that imports ``cloudcore.settings`` and runs ``show`` (``settings`` is the
    module), with ``env`` over this process's environment; ``own_only``: without the suite's
    ``CLOUDCORE_*`` variables (its databases among them), only ``env``'s."""
    base = {k: v for k, v in os.environ.items() if not (own_only and k.startswith("CLOUDCORE_"))}
    return subprocess.run([sys.executable, "-c", f"from cloudcore import settings; {show}"],  # noqa: S603
                          capture_output=True, text=True, check=False, env={**base, **env})
