#!/usr/bin/env python3
"""Import metrics over the project's own packages (stdlib only, reads the source with ``ast``).

Prints, for the packages under ROOT (default: the repository this script lives in):

- import circles: strongly connected components of the file-level import graph between project
  modules, function-level imports included (``if TYPE_CHECKING:`` imports are not edges: they
  never run), each with its files;
- imports between project modules, and how many of them are function-level (count and %);
- cross-app ``models`` imports: a module of one app importing another app's ``models`` module
  (or package) or names from it directly, outside ``if TYPE_CHECKING:``; the kernel
  (``cloudcore``) is not an app here, its models are the abstract bases every app builds on;
- ``using=`` sites outside ``cells/``: ``using=`` keywords, ``.using(...)`` and
  ``.db_manager(...)`` calls, and ``connections[...]`` look-ups.

Project packages are the top-level directories holding an ``__init__.py``, except ``tests``,
``bench`` and ``scripts``; ``migrations`` directories and ``.venv`` are skipped.

Usage: ``python scripts/import_metrics.py [ROOT] [--json]``.
"""
from __future__ import annotations

import argparse
import ast
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

EXCLUDED_PACKAGES = frozenset({"tests", "bench", "scripts", ".venv", "venv", "var", "docs"})
EXCLUDED_DIRS = frozenset({"migrations", "__pycache__", ".venv"})
KERNEL_PACKAGES = frozenset({"cloudcore"})
CELLS_PACKAGE = "cells"


@dataclass(frozen=True)
class Import:
    importer: str
    target: str
    line: int
    function_level: bool
    type_checking: bool
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class UsingSite:
    module: str
    path: str
    line: int
    kind: str


@dataclass
class Metrics:
    modules: dict[str, Path] = field(default_factory=dict)
    imports: list[Import] = field(default_factory=list)
    using_sites: list[UsingSite] = field(default_factory=list)

    @property
    def runtime_imports(self) -> list[Import]:
        return [imp for imp in self.imports if not imp.type_checking]

    @property
    def function_level_imports(self) -> list[Import]:
        return [imp for imp in self.runtime_imports if imp.function_level]

    def circles(self) -> list[list[str]]:
        graph: dict[str, set[str]] = {name: set() for name in self.modules}
        for imp in self.runtime_imports:
            if imp.importer != imp.target:
                graph[imp.importer].add(imp.target)
        return [sorted(c) for c in strongly_connected_components(graph) if len(c) > 1]

    def cross_app_models_imports(self) -> list[Import]:
        return [imp for imp in self.runtime_imports if is_cross_app_models(imp.importer, imp.target)]


def app_of(module: str) -> str:
    return module.split(".", 1)[0]


def is_models_module(module: str) -> bool:
    parts = module.split(".")
    return len(parts) >= 2 and parts[1] == "models"


def is_cross_app_models(importer: str, target: str) -> bool:
    if not is_models_module(target) or app_of(target) in KERNEL_PACKAGES:
        return False
    return app_of(importer) != app_of(target)


def discover_modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every project package under ``root``."""
    modules: dict[str, Path] = {}
    for package in sorted(p for p in root.iterdir() if p.is_dir()):
        if package.name in EXCLUDED_PACKAGES or package.name.startswith("."):
            continue
        if not (package / "__init__.py").is_file():
            continue
        for path in sorted(package.rglob("*.py")):
            relative = path.relative_to(root)
            if any(part in EXCLUDED_DIRS for part in relative.parts[:-1]):
                continue
            parts = list(relative.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def strongly_connected_components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (no recursion limit on long chains)."""
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        index[start] = lowlink[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            if successors:
                succ = successors.pop(0)
                if succ not in index:
                    index[succ] = lowlink[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, sorted(graph.get(succ, ()))))
                elif succ in on_stack:
                    lowlink[node] = min(lowlink[node], index[succ])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                lowlink[parent] = min(lowlink[parent], lowlink[node])
            if lowlink[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
    return components


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str, path: Path, is_package: bool, modules: dict[str, Path]) -> None:
        self.module = module
        self.path = path
        self.package = module if is_package else module.rpartition(".")[0]
        self.modules = modules
        self.function_depth = 0
        self.type_checking_depth = 0
        self.imports: list[Import] = []
        self.using_sites: list[UsingSite] = []

    # --- scopes ---
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.function_depth += 1
        self.generic_visit(node)
        self.function_depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]
    visit_Lambda = visit_FunctionDef  # type: ignore[assignment]

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            self.type_checking_depth += 1
            for child in node.body:
                self.visit(child)
            self.type_checking_depth -= 1
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    # --- imports ---
    def _project_module(self, dotted: str) -> str | None:
        """The longest prefix of ``dotted`` that is a project module."""
        parts = dotted.split(".")
        while parts:
            candidate = ".".join(parts)
            if candidate in self.modules:
                return candidate
            parts.pop()
        return None

    def _record(self, target: str, line: int, names: tuple[str, ...] = ()) -> None:
        self.imports.append(
            Import(
                importer=self.module,
                target=target,
                line=line,
                function_level=self.function_depth > 0,
                type_checking=self.type_checking_depth > 0,
                names=names,
            )
        )

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            target = self._project_module(alias.name)
            if target is not None:
                self._record(target, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base_parts = self.package.split(".") if self.package else []
            if node.level > 1:
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
            base = ".".join([*base_parts, *([node.module] if node.module else [])])
        else:
            base = node.module or ""
        plain_names: list[str] = []
        for alias in node.names:
            submodule = f"{base}.{alias.name}" if base else alias.name
            if submodule in self.modules:
                self._record(submodule, node.lineno)
            else:
                plain_names.append(alias.name)
        if plain_names:
            target = self._project_module(base)
            if target is not None:
                self._record(target, node.lineno, tuple(plain_names))

    # --- database aliases ---
    def _using(self, node: ast.AST, kind: str) -> None:
        self.using_sites.append(UsingSite(self.module, str(self.path), getattr(node, "lineno", 0), kind))

    def visit_Call(self, node: ast.Call) -> None:
        for keyword in node.keywords:
            if keyword.arg == "using":
                self._using(node, "using=")
        if isinstance(node.func, ast.Attribute) and node.func.attr in {"using", "db_manager"}:
            self._using(node, f".{node.func.attr}()")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        value = node.value
        name = value.id if isinstance(value, ast.Name) else value.attr if isinstance(value, ast.Attribute) else None
        if name == "connections":
            self._using(node, "connections[]")
        self.generic_visit(node)


def analyse(root: Path) -> Metrics:
    root = Path(root)
    metrics = Metrics(modules=discover_modules(root))
    for module, path in metrics.modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        collector = _Collector(module, path.relative_to(root), path.name == "__init__.py", metrics.modules)
        collector.visit(tree)
        metrics.imports.extend(collector.imports)
        if app_of(module) != CELLS_PACKAGE:
            metrics.using_sites.extend(collector.using_sites)
    return metrics


def summary(metrics: Metrics) -> dict[str, object]:
    runtime = metrics.runtime_imports
    function_level = metrics.function_level_imports
    circles = metrics.circles()
    cross = metrics.cross_app_models_imports()
    return {
        "modules": len(metrics.modules),
        "imports": len(runtime),
        "type_checking_imports": len(metrics.imports) - len(runtime),
        "function_level_imports": len(function_level),
        "function_level_percent": round(100 * len(function_level) / len(runtime), 1) if runtime else 0.0,
        "circles": circles,
        "files_in_circles": sum(len(c) for c in circles),
        "cross_app_models_imports": [
            f"{imp.importer}:{imp.line} -> {imp.target}" + (f" ({', '.join(imp.names)})" if imp.names else "")
            for imp in cross
        ],
        "using_sites": [f"{site.path}:{site.line} {site.kind}" for site in metrics.using_sites],
    }


def render(data: dict[str, object]) -> str:
    circles: list[list[str]] = data["circles"]  # type: ignore[assignment]
    cross: list[str] = data["cross_app_models_imports"]  # type: ignore[assignment]
    using: list[str] = data["using_sites"]  # type: ignore[assignment]
    lines = [
        f"project modules: {data['modules']}",
        f"imports between project modules: {data['imports']}"
        f" (plus {data['type_checking_imports']} under TYPE_CHECKING)",
        f"function-level imports: {data['function_level_imports']} ({data['function_level_percent']}%)",
        f"import circles: {len(circles)} ({data['files_in_circles']} files)",
    ]
    for number, circle in enumerate(circles, 1):
        lines.append(f"  circle {number} ({len(circle)} files):")
        lines.extend(f"    {member}" for member in circle)
    lines.append(f"cross-app models imports: {len(cross)}")
    lines.extend(f"  {entry}" for entry in cross)
    lines.append(f"using= sites outside cells/: {len(using)}")
    lines.extend(f"  {entry}" for entry in using)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parent.parent))
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    data = summary(analyse(Path(args.root)))
    print(json.dumps(data, indent=2) if args.json else render(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
