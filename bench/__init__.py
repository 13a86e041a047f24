"""cloudcore benchmarks: ``python -m bench [scenario ...]`` (``make bench``).

Each scenario is a module ``bench/scenarios/<name>.py`` defining ``run(env: BenchEnv) -> None``
(it prints its own figures) and optionally ``DESCRIPTION``. ``bench.env`` gives every scenario a
private var dir with an API database and two migrated cell databases.
"""
