"""Nova side by side (placeholder while being written)."""
from __future__ import annotations

from pathlib import Path
from typing import Any


def side_by_side(out_dir: Path, *, quick: bool, results: dict[str, Any]) -> dict[str, Any]:
    return {"run": False, "reason": "not implemented yet"}
