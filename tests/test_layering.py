"""The package's layers and the one-way flow between them: file -> instance -> heuristic -> model -> backend ->
solution -> evaluator -> result.

Every ``import`` of a dlaopt module is read from the source, at module level, inside functions (lazy imports) and
under ``TYPE_CHECKING`` alike, so that an upward dependency cannot hide behind a deferred import.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dlaopt"

# From the bottom up; a unit may import units of its own layer and of the layers before it (README, "Layout").
LAYERS: list[tuple[str, ...]] = [
    ("errors", "registry"),
    ("workload",),
    ("hardware",),
    ("zoo",),
    ("specs",),
    ("io",),
    ("solvers",),
    ("formulations",),
    ("harness",),
    ("results",),
    ("plots",),
    ("bench",),
    ("pipeline",),
    ("experiments",),
    ("sweep",),
    ("cli", "__main__"),
]
LAYER_OF = {unit: i for i, units in enumerate(LAYERS) for unit in units}


def _module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the dlaopt modules it imports (``from a import b`` counts ``a.b`` when that is a module)."""
    modules = {_module_name(p, package): p for p in package.rglob("*.py")}
    out: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("dlaopt"):
                assert node.module is not None
                targets.append(node.module)
                targets += [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in modules]
            elif isinstance(node, ast.Import):
                targets += [a.name for a in node.names if a.name.startswith("dlaopt.")]
            elif isinstance(node, ast.ImportFrom) and node.level:
                pytest.fail(f"{path}: relative import; dlaopt spells its imports out")
            out[name].update(t for t in targets if t != "dlaopt" and t != name)
    return out


def _unit(module: str) -> str:
    return module.split(".")[1]


def test_every_unit_has_a_layer() -> None:
    units = {_unit(m) for m in _imports() if m != "dlaopt"}
    missing = sorted(units - set(LAYER_OF))
    assert not missing, f"place these in LAYERS (and in README's Layout): {missing}"


def test_imports_go_down_only() -> None:
    upward = []
    for module, targets in _imports().items():
        if module == "dlaopt":
            continue
        for target in targets:
            a, b = _unit(module), _unit(target)
            if LAYER_OF[b] > LAYER_OF[a]:
                upward.append(f"{module} imports {target} ({a} is below {b})")
    assert not upward, "\n".join(sorted(upward))


def test_no_import_circle() -> None:
    graph = nx.DiGraph([(m, t) for m, ts in _imports().items() for t in ts])
    module_cycles = list(nx.simple_cycles(graph))
    assert not module_cycles, module_cycles[:5]
    units = nx.DiGraph([(_unit(m), _unit(t)) for m, ts in _imports().items() if m != "dlaopt" for t in ts
                        if _unit(m) != _unit(t)])
    unit_cycles = list(nx.simple_cycles(units))
    assert not unit_cycles, unit_cycles[:5]


def test_the_check_sees_lazy_and_type_only_imports(tmp_path: Path) -> None:
    """The reader above counts imports inside functions and under TYPE_CHECKING, which a runtime check misses."""
    package = tmp_path / "dlaopt"
    (package / "io").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "io" / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from dlaopt.harness import Result\n")
    (package / "io" / "files.py").write_text("def f():\n    from dlaopt.cli import common\n    import dlaopt.sweep\n")
    (package / "cli").mkdir()
    (package / "cli" / "__init__.py").write_text("")
    (package / "cli" / "common.py").write_text("")
    found = _imports(package)
    assert found["dlaopt.io"] == {"dlaopt.harness"}
    assert found["dlaopt.io.files"] == {"dlaopt.cli", "dlaopt.cli.common", "dlaopt.sweep"}
