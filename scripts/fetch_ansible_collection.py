"""Put Ansible's ``openstack.cloud`` collection under ``.venv/ansible_collections`` for the e2e
test that drives the cloud with a playbook (tests/e2e/test_ansible.py).

The collection ships inside the ``ansible`` package on PyPI (560 MB installed, a hundred other
collections); ``ansible-galaxy`` would need Galaxy's servers, which this machine cannot reach. So
the wheel is downloaded (pinned below) and only that collection is unpacked; ``ansible-core``
itself is an ordinary pinned requirement. Idempotent: does nothing when the collection is there.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

BUNDLE = "ansible==11.13.0"  # carries openstack.cloud 2.5.0
PREFIX = "ansible_collections/openstack/cloud/"


def main() -> int:
    target = Path(sys.prefix)
    if (target / PREFIX / "MANIFEST.json").exists():
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                        "-d", tmp, BUNDLE], check=True)
        (wheel,) = Path(tmp).glob("ansible-*.whl")
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(target, [name for name in archive.namelist() if name.startswith(PREFIX)])
    print(f"openstack.cloud unpacked into {target / 'ansible_collections'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
