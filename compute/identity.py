"""A compute node's stable identity (seed 2): its uuid in ``<state_path>/compute_id``.

Read from the state path and from next to the config file (both, when both exist, must agree),
at most 40 characters, whitespace stripped, canonical uuid form. Written only to the state path,
with an exclusive create, and only for a genuinely new node (or the one node of an upgraded
service); a pre-provisioned file is used as it is.
"""
from __future__ import annotations

import os
import uuid as uuidlib
from pathlib import Path

from cloudcore.core.exceptions import InvalidNodeConfiguration

FILENAME = "compute_id"


def identity_files(state_path: Path, config_file: Path | None = None) -> list[Path]:
    paths = []
    if config_file is not None:
        paths.append(Path(config_file).resolve().parent / FILENAME)
    paths.append(Path(state_path) / FILENAME)
    return paths


def _parse(path: Path) -> str:
    try:
        raw = path.read_text()[:40].strip()
    except OSError as exc:
        raise InvalidNodeConfiguration(reason=f"Unable to read {path}: {exc}") from exc
    try:
        return str(uuidlib.UUID(raw))
    except ValueError:
        raise InvalidNodeConfiguration(reason=f"Unable to parse UUID from {path}") from None


def read_node_uuid(state_path: Path, config_file: Path | None = None) -> str | None:
    """The node uuid from the identity files, None when there is none; refuses bad or disagreeing files."""
    found: tuple[Path, str] | None = None
    for path in identity_files(state_path, config_file):
        if not path.exists():
            continue
        value = _parse(path)
        if found is not None and found[1] != value:
            raise InvalidNodeConfiguration(reason=f"UUID {value} in {path} does not match {found[1]}")
        found = found or (path, value)
    return found[1] if found else None


def write_node_uuid(state_path: Path, node_uuid: str) -> Path:
    """Persist ``node_uuid`` to ``<state_path>/compute_id`` with an exclusive create."""
    path = Path(state_path) / FILENAME
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise InvalidNodeConfiguration(reason=f"Identity file {path} appeared unexpectedly") from None
    except OSError as exc:
        raise InvalidNodeConfiguration(reason=f"Unable to write uuid to {path}: {exc}") from exc
    with os.fdopen(fd, "w") as fh:
        fh.write(node_uuid + "\n")
    return path
