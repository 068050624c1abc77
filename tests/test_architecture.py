"""The shape of the code, checked on every module of the package (top-level ones included):
data flows one way, generic code knows a benchmark only through the registry and its
declaration, benchmark packages do not reach into each other, and no module grows past ~450
lines without saying why at its top. Read from the source with `ast`, so a lazy import inside
a function counts as much as one at the top (imports under `if TYPE_CHECKING:` do not run)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "clineval"
MAX_LINES = 450  # "about 400": past this a module's docstring must say why it is one module
LONG_REASON = "Long module:"

# Layers, lowest first: a module may import modules of its own layer or a lower one. A module
# belongs to the layer of the longest prefix that names it.
LAYERS: tuple[tuple[str, ...], ...] = (
    # 0 foundations: usable from anywhere
    ("clineval.errors", "clineval.version", "clineval.jsonio", "clineval.jsonl",
     "clineval.secrets", "clineval.retry", "clineval.concurrency", "clineval.progress",
     "clineval.shard", "clineval.datapaths", "clineval.store", "clineval.store_json",
     "clineval.store_damage", "clineval.store_reuse", "clineval.rundir",
     "clineval.rundir_lock", "clineval.run_record", "clineval.options", "clineval.console"),
    # 1 generic data handling and metric helpers
    ("clineval.data", "clineval.metrics"),
    # 2 models, their settings, judging
    ("clineval.models", "clineval.config", "clineval.config_file", "clineval.judge"),
    # 3 the kit benchmarks build on: the task protocol, the call plan, the report's and the
    #   export's building blocks
    ("clineval.benchmarks.base", "clineval.benchmarks.declaration", "clineval.benchmarks.kit",
     "clineval.benchmarks.results_view", "clineval.benchmarks.judged",
     "clineval.benchmarks.judged_flow", "clineval.benchmarks.judged_task", "clineval.plan",
     "clineval.report.rundata", "clineval.report.plots", "clineval.report.sections_common",
     "clineval.report.statistics", "clineval.report.jsonembed", "clineval.export.run_files"),
    # 4 the benchmark packages
    ("clineval.benchmarks",),
    # 5 what knows every benchmark through the registry
    ("clineval.benchmarks.registry", "clineval.report", "clineval.export",
     "clineval.skills_install", "clineval.run_checks", "clineval.run_inputs",
     "clineval.run_result", "clineval.comparison", "clineval.judge_agreement",
     "clineval.run_summary", "clineval.option_flags"),
    # 6 running
    ("clineval.runner", "clineval.merge"),
    # 7 front ends
    ("clineval.cli", "clineval.cli_groups", "clineval.cli_output", "clineval.api",
     "clineval.entry", "clineval.__main__", "clineval"),
)  # fmt: skip

BENCHMARKS = "clineval.benchmarks"
BENCHMARK_KIT = (
    "clineval.benchmarks.base",
    "clineval.benchmarks.declaration",
    "clineval.benchmarks.kit",
    "clineval.benchmarks.results_view",
    "clineval.benchmarks.judged",
    "clineval.benchmarks.judged_flow",
    "clineval.benchmarks.judged_task",
)
REGISTRY = "clineval.benchmarks.registry"
# Known exceptions, each with its reason; any other import across the lines fails.
EXCEPTIONS: set[tuple[str, str]] = set()


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out.append((name, path))
    return out


MODULES = dict(_modules())


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    nodes: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        nodes.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and getattr(child.test, "id", None) == "TYPE_CHECKING":
                todo.extend(child.orelse)
                continue
            todo.append(child)
    return nodes


def _resolve(name: str) -> str | None:
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(source: str, module: str, is_package: bool) -> set[str]:
    """The clineval modules `source` imports at run time."""
    found: set[str] = set()
    base = module.split(".") if is_package else module.split(".")[:-1]
    for node in _runtime_nodes(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                head = ".".join(base[: len(base) - node.level + 1])
                head = f"{head}.{node.module}" if node.module else head
            else:
                head = node.module or ""
            subs = [f"{head}.{alias.name}" for alias in node.names]
            # `from pkg import sub` imports the submodule; the package only for plain names
            plain = [n for n in subs if n not in MODULES]
            names = [*subs, *([head] if plain or not subs else [])]
        for name in names:
            target = _resolve(name) if name.startswith("clineval") else None
            if target is not None and target != module:
                found.add(target)
    return found


def layer_of(module: str) -> int:
    best, best_len = len(LAYERS), -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    return best


def family_of(module: str) -> str | None:
    """The benchmark package a module belongs to (None for generic code)."""
    if not module.startswith(BENCHMARKS + "."):
        return None
    if module in BENCHMARK_KIT or module == "clineval.benchmarks.registry":
        return None
    return module.split(".")[2]


def violations(module: str, imported: set[str]) -> list[str]:
    problems = []
    for target in sorted(imported):
        if (module, target) in EXCEPTIONS:
            continue
        if module == REGISTRY and target.count(".") == 2 and target.startswith(BENCHMARKS):
            continue  # the registry lists the built-in benchmarks' declarations
        if layer_of(target) > layer_of(module):
            problems.append(f"{module} (layer {layer_of(module)}) imports {target} (higher)")
        own, theirs = family_of(module), family_of(target)
        if theirs is not None and own != theirs:
            who = "generic code" if own is None else f"benchmark {own}"
            problems.append(f"{module}: {who} imports benchmark {theirs} ({target})")
    return problems


def test_every_module_has_a_layer() -> None:
    assert [m for m in MODULES if layer_of(m) == len(LAYERS)] == []


@pytest.mark.parametrize(("module", "path"), _modules(), ids=lambda v: str(v))
def test_imports_follow_the_layers(module: str, path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    imported = _imports(source, module, path.name == "__init__.py")
    assert violations(module, imported) == []


def test_the_layer_rules_can_fail() -> None:
    """The checker on real violations: a model importing a task, generic code importing a
    benchmark package, one benchmark importing another, a lazy import inside a function."""
    lazy = "def f():\n    from clineval.benchmarks.ner.task import NerTask\n"
    imported = _imports(lazy, "clineval.models.llm", False)
    assert imported == {"clineval.benchmarks.ner.task"}
    assert violations("clineval.models.llm", imported)  # layer 2 -> layer 4
    report = _imports(lazy, "clineval.report.html", False)
    assert any(
        "generic code imports benchmark ner" in p
        for p in violations("clineval.report.html", report)
    )
    other = _imports(lazy, "clineval.benchmarks.tcm_sd.task", False)
    assert any(
        "benchmark tcm_sd imports benchmark ner" in p
        for p in violations("clineval.benchmarks.tcm_sd.task", other)
    )
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import clineval.cli\n"
    assert _imports(typed, "clineval.models.llm", False) == set()
    # and a clean import passes
    assert violations("clineval.benchmarks.ner.task", {"clineval.models.llm"}) == []


@pytest.mark.parametrize(("module", "path"), _modules(), ids=lambda v: str(v))
def test_long_modules_say_why(module: str, path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    if text.count("\n") <= MAX_LINES:
        return
    doc = ast.get_docstring(ast.parse(text)) or ""
    assert LONG_REASON in doc, f"{module}: {text.count(chr(10))} lines and no '{LONG_REASON}' note"


# ---- the public authoring surface -------------------------------------------------------------

PUBLIC = ("clineval", "clineval.benchmarks")
EXAMPLES = PACKAGE.parent / "examples"


def _public_names() -> set[str]:
    """`clineval.benchmarks.__all__`, read from its `_HOME` table without importing it."""
    tree = ast.parse((PACKAGE / "benchmarks" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "_HOME":
            assert isinstance(node.value, ast.Dict)
            return {
                k.value
                for k in node.value.keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            }
    raise AssertionError("clineval/benchmarks/__init__.py has no _HOME table")


def outside_violations(source: str) -> list[str]:
    """Imports of an outside package's module (a benchmark plugin) that reach past the public
    surface: a clineval module other than `clineval` / `clineval.benchmarks`, or a name
    `clineval.benchmarks` does not export."""
    public = _public_names()
    out: list[str] = []
    for node in ast.walk(ast.parse(source)):  # TYPE_CHECKING imports count: types are API too
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            modules = [node.module or ""]
            if node.module == BENCHMARKS:
                out += [f"clineval.benchmarks has no {a.name}" for a in node.names
                        if a.name not in public]  # fmt: skip
        else:
            continue
        out += [m for m in modules if m.split(".")[0] == "clineval" and m not in PUBLIC]
    return out


def test_examples_use_only_the_public_surface() -> None:
    # build/ is what a pip install of an example leaves behind (a copy, maybe an old one)
    files = sorted(p for p in EXAMPLES.glob("*/**/*.py") if not {"build", "dist"} & set(p.parts))
    assert files, "no example package found"
    found = {str(p.relative_to(EXAMPLES)): outside_violations(p.read_text()) for p in files}
    assert {path: bad for path, bad in found.items() if bad} == {}


def test_the_public_surface_rule_can_fail() -> None:
    assert outside_violations("from clineval.errors import InputError") == ["clineval.errors"]
    assert outside_violations("import clineval.models.llm_base") == ["clineval.models.llm_base"]
    assert outside_violations("from clineval.benchmarks import NoSuchName") == [
        "clineval.benchmarks has no NoSuchName"
    ]
    assert outside_violations("from clineval.benchmarks import Task\nimport clineval") == []
    assert outside_violations("from clineval_example_mcq import TASK") == []


def test_every_public_name_loads_and_is_typed() -> None:
    import clineval.benchmarks as public

    names = _public_names()
    assert set(public.__all__) == names
    for name in sorted(names):
        assert getattr(public, name) is not None, name
    # the TYPE_CHECKING block gives type checkers every lazy name, under its public spelling
    tree = ast.parse((PACKAGE / "benchmarks" / "__init__.py").read_text())
    typed = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module != "__future__"
        for alias in node.names
        if alias.asname == alias.name
    }
    assert typed == names


@pytest.mark.parametrize(
    "module", [m for m, p in MODULES.items() if p.name == "__init__.py" and m not in PUBLIC]
)
def test_internal_packages_say_so(module: str) -> None:
    """Every package but the public ones says in its docstring that it is internal (what an
    editor shows on hover, and what a reader of the source meets first)."""
    doc = ast.get_docstring(ast.parse(MODULES[module].read_text())) or ""
    assert "Internal: not part of clineval's public API" in doc, module
