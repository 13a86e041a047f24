"""cloudcore benchmarks: ``python -m bench [scenario ...] [--quick] [--out DIR] [--nova auto|skip]``
(``make bench``).

Each scenario is a module ``bench/scenarios/<name>.py`` defining ``run(env: BenchEnv) -> dict`` (it
prints its own figures and returns them) and optionally ``DESCRIPTION``. ``bench.env`` gives every
scenario a private var dir with an API database and two migrated cell databases, put back to their
just-migrated state before each scenario. ``bench.report`` writes one report of the run,
``report.md`` + ``report.json``, under ``bench/out/`` (git-ignored); ``bench.nova_compare`` runs the
matching scenarios in Nova's own functional-test harness (``bench/nova_harness.py``, in a separate
venv under ``bench/out/``) when it can, and the report says plainly when it could not.
"""
