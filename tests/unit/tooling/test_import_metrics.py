"""scripts/import_metrics.py on a tiny synthetic project written to tmp_path."""
from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "import_metrics.py"


@pytest.fixture(scope="module")
def import_metrics() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_metrics", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["import_metrics"] = module  # dataclasses look their module up while the class is made
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["import_metrics"]
    return module


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    _write(tmp_path, {
        "alpha/__init__.py": "",
        # alpha.a -> alpha.b at module level, alpha.b -> alpha.a inside a function: one circle
        "alpha/a.py": "from alpha import b\n",
        "alpha/b.py": """
            def late():
                from alpha.a import b  # dodges the cycle
                return b
        """,
        "alpha/models.py": "class Thing: ...\n",
        "alpha/migrations/__init__.py": "",
        "alpha/migrations/0001_initial.py": "from beta.models import Other\n",
        "beta/__init__.py": "",
        "beta/models.py": "class Other: ...\n",
        # a cross-app models import and a using= site, and a type-only import that is no edge
        "beta/services.py": """
            from typing import TYPE_CHECKING

            from alpha.models import Thing
            from django.db import transaction

            if TYPE_CHECKING:
                from alpha.a import b

            def save():
                with transaction.atomic(using="default"):
                    return Thing()
        """,
        "beta/selectors.py": "from .models import Other\nfrom . import services\n",
        # a type-only import of another app's models: neither an edge nor a cross-app models import
        "beta/typed.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from alpha.models import Thing\n",
        "cells/__init__.py": "",
        "cells/db.py": "def atomic(alias):\n    return transaction.atomic(using=alias)\n",
        "tests/__init__.py": "",
        "tests/test_x.py": "from alpha.models import Thing\n",
        "loose.py": "import alpha\n",
    })
    return tmp_path


def test_modules_skip_tests_migrations_and_loose_files(import_metrics, project):
    # when the project is analysed
    metrics = import_metrics.analyse(project)
    # then only the packages' own modules count
    assert set(metrics.modules) == {
        "alpha", "alpha.a", "alpha.b", "alpha.models", "beta", "beta.models", "beta.services",
        "beta.selectors", "beta.typed", "cells", "cells.db",
    }


def test_circle_through_a_function_level_import(import_metrics, project):
    # when the project is analysed
    metrics = import_metrics.analyse(project)
    # then alpha.a and alpha.b form the one circle (the TYPE_CHECKING import adds no edge)
    assert metrics.circles() == [["alpha.a", "alpha.b"]]


def test_counts_function_level_imports(import_metrics, project):
    # when the numbers are summarised
    data = import_metrics.summary(import_metrics.analyse(project))
    # then: alpha.a->b, alpha.b->a (function), beta.services->alpha.models,
    # beta.selectors->beta.models and ->beta.services; the two TYPE_CHECKING ones are apart
    assert data["imports"] == 5
    assert data["type_checking_imports"] == 2
    assert data["function_level_imports"] == 1
    assert data["function_level_percent"] == 20.0


def test_cross_app_models_imports(import_metrics, project):
    # when the project is analysed
    data = import_metrics.summary(import_metrics.analyse(project))
    # then beta importing alpha's models is listed; beta importing its own models, or alpha's for
    # annotations only, is not
    assert data["cross_app_models_imports"] == ["beta.services:4 -> alpha.models (Thing)"]


def test_using_sites_outside_cells(import_metrics, project):
    # when the project is analysed
    data = import_metrics.summary(import_metrics.analyse(project))
    # then the using= in beta is listed and the one in cells/ is not
    assert data["using_sites"] == ["beta/services.py:11 using="]


def test_relative_import_of_a_submodule_is_an_edge(import_metrics, tmp_path):
    # given a package whose __init__ imports its submodule relatively, which imports the package back
    _write(tmp_path, {
        "pkg/__init__.py": "from . import sub\n",
        "pkg/sub.py": "from pkg import NAME\n",
    })
    # then the two form a circle
    assert import_metrics.analyse(tmp_path).circles() == [["pkg", "pkg.sub"]]


def test_main_prints_the_report(import_metrics, project, capsys):
    # when the script runs on the project
    assert import_metrics.main([str(project)]) == 0
    out = capsys.readouterr().out
    # then the report names the circle and the numbers
    assert "import circles: 1 (2 files)" in out
    assert "function-level imports: 1 (20.0%)" in out
    assert "using= sites outside cells/: 1" in out
