"""The shape of the code, checked: data flows one way (data -> metrics -> models / judge ->
tasks -> runner -> cli / api), models know nothing of tasks, and no module grows past ~400
lines without saying why at its top. Read from the source with `ast`, so a lazy import inside
a function counts as much as one at the top."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "clineval"
MAX_LINES = 450  # "about 400": past this a module's docstring must say why it is one module
LONG_REASON = "Long module:"

# layer of a module -> layers it must never import (by the top-level package path)
FORBIDDEN = {
    "clineval.metrics": ("clineval.models", "clineval.judge", "clineval.benchmarks", "clineval.runner",
                         "clineval.cli", "clineval.api", "clineval.report"),
    "clineval.data": ("clineval.models", "clineval.judge", "clineval.benchmarks", "clineval.runner",
                      "clineval.cli", "clineval.api", "clineval.report"),
    "clineval.models": ("clineval.benchmarks", "clineval.runner", "clineval.cli", "clineval.api",
                        "clineval.report", "clineval.judge"),
    "clineval.judge": ("clineval.benchmarks", "clineval.runner", "clineval.cli", "clineval.api"),
    "clineval.benchmarks": ("clineval.runner", "clineval.cli", "clineval.api", "clineval.report"),
    "clineval.report": ("clineval.runner", "clineval.cli", "clineval.api"),
}  # fmt: skip


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out.append((name, path))
    return out


def _imports(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".")[: -node.level]
                found.add(".".join([*base, node.module or ""]).rstrip("."))
            elif node.module:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _is_under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


@pytest.mark.parametrize(("module", "path"), _modules(), ids=lambda v: str(v))
def test_imports_follow_the_layers(module: str, path: Path) -> None:
    for layer, forbidden in FORBIDDEN.items():
        if not _is_under(module, layer):
            continue
        bad = sorted(
            name for name in _imports(path, module) if any(_is_under(name, f) for f in forbidden)
        )
        assert bad == [], f"{module} ({layer}) imports {bad}"


def test_the_layer_rules_can_fail() -> None:
    """The checker itself, on a module that breaks the rule (so the test above cannot pass by
    finding nothing)."""
    source = PACKAGE / "models" / "llm.py"
    assert "clineval.models.spec" in _imports(source, "clineval.models.llm")
    assert _is_under("clineval.benchmarks.base", "clineval.benchmarks")
    assert not _is_under("clineval.taskset", "clineval.benchmarks")


@pytest.mark.parametrize(("module", "path"), _modules(), ids=lambda v: str(v))
def test_long_modules_say_why(module: str, path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    if text.count("\n") <= MAX_LINES:
        return
    doc = ast.get_docstring(ast.parse(text)) or ""
    assert LONG_REASON in doc, f"{module}: {text.count(chr(10))} lines and no '{LONG_REASON}' note"
