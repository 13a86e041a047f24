"""Print Nova's compute policy rules and their default checks as JSON (``{name: check}``), for
``tests/unit/identity/nova_policy_defaults.json``: run it with the Python of a venv that has Nova
(the bench's: ``bench/out/nova-venv/bin/python scripts/nova_policy_defaults.py``). Only the names
of the compute API's rules are kept (``os_compute_api:``, ``compute:``, ``network:``), not Nova's
base rules (``context_is_admin``, ...), which cloudcore's persona checks stand for."""
from __future__ import annotations

import json

from nova import policies, version  # type: ignore[import-not-found]

PREFIXES = ("os_compute_api:", "compute:", "network:")


def main() -> None:
    rules = {r.name: r.check_str for r in policies.list_rules() if r.name.startswith(PREFIXES)}
    print(json.dumps({"nova": version.version_string(), "rules": dict(sorted(rules.items()))}, indent=1))


if __name__ == "__main__":
    main()
