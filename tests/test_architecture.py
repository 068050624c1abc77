"""The shape of the code, checked on every module of the package (top-level ones included):
data flows one way, generic code knows a benchmark only through the registry and its
declaration, benchmark packages do not reach into each other, and no module grows past ~450
lines without saying why at its top. Read from the source with `ast`, so a lazy import inside
a function counts as much as one at the top (imports under `if TYPE_CHECKING:` do not run)."""

from __future__ import annotations

import ast
import functools
import io
import keyword
import re
import sys
import tokenize
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "clineval"
MAX_LINES = 450  # "about 400": past this a module's docstring must say why it is one module
LONG_REASON = "Long module:"

# Layers, lowest first: a module may import modules of its own layer or a lower one. A module
# belongs to the layer of the longest prefix that names it.
LAYERS: tuple[tuple[str, ...], ...] = (
    # 0 foundations: usable from anywhere
    ("clineval.messages", "clineval.errors", "clineval.version", "clineval.jsonio",
     "clineval.jsonl", "clineval.secrets", "clineval.retry", "clineval.concurrency",
     "clineval.progress",
     "clineval.shard", "clineval.datapaths", "clineval.store", "clineval.store_json",
     "clineval.store_damage", "clineval.store_reuse", "clineval.rundir",
     "clineval.rundir_lock", "clineval.run_record", "clineval.options", "clineval.console",
     "clineval.references", "clineval.csv_text", "clineval.collector"),
    # 1 generic data handling and metric helpers
    ("clineval.data", "clineval.metrics"),
    # 2 models, their settings, judging
    ("clineval.models", "clineval.config", "clineval.config_checks", "clineval.config_file",
     "clineval.settings", "clineval.judge"),
    # 3 the kit benchmarks build on: the task protocol, the call plan, and the blocks their
    #   report sections, statistics and exports are built from (reportkit)
    ("clineval.benchmarks.base", "clineval.benchmarks.declaration", "clineval.benchmarks.kit",
     "clineval.benchmarks.missing", "clineval.benchmarks.answer_checks",
     "clineval.benchmarks.results_view", "clineval.benchmarks.judged",
     "clineval.benchmarks.judged_flow", "clineval.benchmarks.judged_task",
     "clineval.benchmarks.judged_pairwise", "clineval.benchmarks.finished_runs",
     "clineval.benchmarks.windows", "clineval.plan", "clineval.reportkit"),
    # 4 the benchmark packages
    ("clineval.benchmarks",),
    # 5 the rooms that use every benchmark through the registry: the report and compare
    #   (report, report.compare), export, the checks of a run, and the Python API's parts
    #   (its argument checks, a run and a comparison as Python objects)
    ("clineval.benchmarks.registry", "clineval.report", "clineval.export",
     "clineval.skills_install", "clineval.run_checks", "clineval.run_inputs",
     "clineval.api_arguments", "clineval.run_result", "clineval.judge_agreement",
     "clineval.judge_labels", "clineval.run_summary", "clineval.option_flags"),
    # 6 running
    ("clineval.runner", "clineval.planner", "clineval.rescore", "clineval.merge"),
    # 7 front ends
    ("clineval.cli", "clineval.cli_groups", "clineval.cli_output", "clineval.api",
     "clineval.entry", "clineval.__main__", "clineval"),
)  # fmt: skip

BENCHMARKS = "clineval.benchmarks"
BENCHMARK_KIT = (
    "clineval.benchmarks.base",
    "clineval.benchmarks.declaration",
    "clineval.benchmarks.kit",
    "clineval.benchmarks.missing",
    "clineval.benchmarks.answer_checks",
    "clineval.benchmarks.results_view",
    "clineval.benchmarks.judged",
    "clineval.benchmarks.judged_flow",
    "clineval.benchmarks.judged_task",
    "clineval.benchmarks.judged_pairwise",
    "clineval.benchmarks.finished_runs",
    "clineval.benchmarks.windows",
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


_REFERENCE = re.compile(r"^(clineval(?:\.\w+)+):[\w.]+$")


def _imports(
    source: str, module: str, is_package: bool, *, typing: bool = False, references: bool = True
) -> set[str]:
    """The clineval modules `source` imports at run time (with `typing`, also those it
    imports for type checkers only, under `if TYPE_CHECKING:`), and those its
    "module:attribute" strings name (unless `references` is False)."""
    found: set[str] = set()
    base = module.split(".") if is_package else module.split(".")[:-1]
    tree = ast.parse(source)
    for node in ast.walk(tree) if typing else _runtime_nodes(tree):
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
        elif references and isinstance(node, ast.Constant) and isinstance(node.value, str):
            # a "module:attribute" reference (a declaration's part, a backend's opener) is an
            # import made later: it follows the same rules
            reference = _REFERENCE.match(node.value)
            names = [reference.group(1)] if reference else []
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


ARCHITECTURE_DOC = PACKAGE.parent / "docs" / "architecture.md"
_LAYER_ROW = re.compile(r"^\| (\d) [^|]*\| (.*) \|$", re.M)


def _named_modules(name: str) -> set[str]:
    """The modules a name of the doc's layer table stands for: `folder/` a package and all
    under it, `prefix*` every module so named, `path.py` or `module` one module."""
    if name.endswith("*"):
        prefix = "clineval." + name[:-1].replace("/", ".")
        return {m for m in MODULES if m.startswith(prefix)}
    dotted = name.removesuffix(".py").removesuffix("__init__").rstrip("/").replace("/", ".")
    module = "clineval" + ("." + dotted if dotted else "")
    if name.endswith("/"):
        return {m for m in MODULES if m == module or m.startswith(module + ".")}
    return {module} & set(MODULES)


def _doc_layers(text: str) -> list[tuple[str, int]]:
    """Each name in backticks of the doc's layer table, with its row's layer."""
    return [
        (name, int(layer))
        for layer, cell in _LAYER_ROW.findall(text)
        for name in re.findall(r"`([^`]+)`", cell)
    ]


def _layer_table_problems(text: str) -> list[str]:
    named = _doc_layers(text)
    rows = {layer for _, layer in named}
    problems = [f"no row for layer {i}" for i in range(len(LAYERS)) if i not in rows]
    covered: set[str] = set()
    for name, layer in named:
        modules = _named_modules(name)
        if not modules:
            problems.append(f"`{name}` (layer {layer}) names no module")
        problems += [
            f"`{name}`: {m} is in layer {layer_of(m)}, not {layer}"
            for m in sorted(modules)
            if layer_of(m) != layer
        ]
        covered |= modules
    problems += [f"{m} is in no row" for m in sorted(set(MODULES) - covered)]
    return problems


def test_the_docs_layer_table_is_the_tests() -> None:
    """docs/architecture.md's layer table names every module, each in the layer LAYERS puts
    it in: the drawing cannot go stale while this test passes."""
    assert _layer_table_problems(ARCHITECTURE_DOC.read_text(encoding="utf-8")) == []


def test_the_layer_table_check_can_fail() -> None:
    text = ARCHITECTURE_DOC.read_text(encoding="utf-8")
    moved = text.replace("| 6 running | `runner`, ", "| 6 running | `errors`, `runner`, ")
    assert "`errors`: clineval.errors is in layer 0, not 6" in _layer_table_problems(moved)
    dropped = text.replace("`planner`, ", "")
    assert _layer_table_problems(dropped) == ["clineval.planner is in no row"]
    stale = text.replace("`merge` |", "`merge`, `gone` |")
    assert _layer_table_problems(stale) == ["`gone` (layer 6) names no module"]


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
    # a "module:attribute" string reaches a module as an import does
    named = 'make_task = "clineval.benchmarks.ner.task:NerTask"\n'
    assert _imports(named, "clineval.benchmarks.tcm_sd", True) == {"clineval.benchmarks.ner.task"}
    assert violations("clineval.benchmarks.tcm_sd", {"clineval.benchmarks.ner.task"})
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import clineval.cli\n"
    assert _imports(typed, "clineval.models.llm", False) == set()
    # and a clean import passes
    assert violations("clineval.benchmarks.ner.task", {"clineval.models.llm"}) == []


# ---- rooms: no two folders import each other, no module cycle ---------------------------------
# A room is a folder directly under clineval/ (or a top-level module). Two rooms that import
# each other are one room in two places: a reader cannot understand either alone, and neither
# can move. Imports for type checkers count here: a type names its room as much as a call does.


def room_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


@functools.cache
def import_graph(references: bool = True) -> dict[str, frozenset[str]]:
    """Every module's clineval imports, at run time and for type checkers; with `references`,
    also the modules its "module:attribute" strings name (imported later, by name)."""
    return {
        module: frozenset(_imports(path.read_text(encoding="utf-8"), module,
                                   path.name == "__init__.py", typing=True,
                                   references=references))
        for module, path in MODULES.items()
    }  # fmt: skip


def rooms_both_ways(graph: Mapping[str, frozenset[str]]) -> list[str]:
    """Each pair of rooms that import each other, with one import of each direction."""
    first: dict[tuple[str, str], str] = {}
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            pair = (room_of(module), room_of(target))
            if pair[0] != pair[1]:
                first.setdefault(pair, f"{module} -> {target}")
    return [
        f"{a} <-> {b}: {first[(a, b)]}; {first[(b, a)]}"
        for (a, b) in sorted(first)
        if a < b and (b, a) in first
    ]


def module_cycle(graph: Mapping[str, frozenset[str]]) -> list[str]:
    """One cycle of modules importing each other (run time or type level), or []."""
    import graphlib

    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return []


def test_no_two_rooms_import_each_other() -> None:
    assert rooms_both_ways(import_graph()) == []


def test_no_module_cycle_even_at_type_level() -> None:
    # A declaration names its parts by string and the parts import the declaration's package:
    # that is the lazy registration (nothing is imported in a loop), so strings do not count.
    assert module_cycle(import_graph(references=False)) == []


def test_the_room_rules_can_fail() -> None:
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import clineval.cli\n"
    assert _imports(typed, "clineval.models.llm", False, typing=True) == {"clineval.cli"}
    graph = {
        "clineval.report.html": frozenset({"clineval.benchmarks.registry"}),
        "clineval.benchmarks.declaration": frozenset({"clineval.report.plots"}),
        "clineval.benchmarks.registry": frozenset({"clineval.benchmarks.declaration"}),
        "clineval.report.plots": frozenset(),
    }
    assert rooms_both_ways(graph) == [
        "benchmarks <-> report: clineval.benchmarks.declaration -> clineval.report.plots; "
        "clineval.report.html -> clineval.benchmarks.registry"
    ]
    assert module_cycle(graph) == []  # rooms both ways without a module cycle
    graph["clineval.report.plots"] = frozenset({"clineval.benchmarks.registry"})
    assert set(module_cycle(graph)) >= {"clineval.report.plots", "clineval.benchmarks.registry"}
    one_way = {"clineval.report.html": frozenset({"clineval.reportkit.plots"})}
    assert rooms_both_ways(one_way) == [] and module_cycle(one_way) == []


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


HEALTHBENCH = "clineval.benchmarks.healthbench"


def test_healthbench_is_written_on_the_public_surface_alone() -> None:
    """The fourth benchmark is built as an outside plugin would be: it imports nothing of
    clineval but `clineval.benchmarks` (and its own modules), in at most 700 lines."""
    files = sorted((PACKAGE / "benchmarks" / "healthbench").glob("*.py"))
    assert len(files) > 3
    found = {
        p.name: [
            m
            for m in outside_violations(p.read_text())
            if m != HEALTHBENCH and not m.startswith(HEALTHBENCH + ".")
        ]
        for p in files
    }
    assert {name: bad for name, bad in found.items() if bad} == {}
    assert sum(len(p.read_text().splitlines()) for p in files) <= 700


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


def test_every_public_class_and_function_says_what_it_is() -> None:
    """What `help()` shows an author of a benchmark: a docstring of the name's own (a
    dataclass's generated signature, or the comments beside its fields, say nothing there)."""
    import dataclasses
    import inspect

    import clineval.benchmarks as public

    silent = []
    for name in sorted(_public_names()):
        value = getattr(public, name)
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue
        doc = value.__doc__ or ""
        if not doc.strip() or (dataclasses.is_dataclass(value) and doc.startswith(f"{name}(")):
            silent.append(name)
    assert silent == []


@pytest.mark.parametrize(
    "module", [m for m, p in MODULES.items() if p.name == "__init__.py" and m not in PUBLIC]
)
def test_internal_packages_say_so(module: str) -> None:
    """Every package but the public ones says in its docstring that it is internal (what an
    editor shows on hover, and what a reader of the source meets first)."""
    doc = ast.get_docstring(ast.parse(MODULES[module].read_text())) or ""
    assert "Internal: not part of clineval's public API" in doc, module


# ---- the model layer: what it is given --------------------------------------------------------

# Where spec text enters and is parsed: the config's validator (flags, the API, a config file,
# a manifest read back) and the spec's own module. Everything else reads `RunConfig.models`.
SPEC_PARSERS = ("clineval.config", "clineval.models.spec")
# A model gets the settings it reads (clineval.models.settings), never the run's whole config.
NOT_FOR_MODELS = ("clineval.config",)


def spec_parses(source: str) -> list[str]:
    """The `ModelSpec.parse(...)` calls in `source`."""
    return [
        ast.unparse(node)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "parse"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "ModelSpec"
    ]


def config_imports(source: str, module: str) -> list[str]:
    """Imports of `NOT_FOR_MODELS` by a model module, those for type checkers included (a
    signature taking the config is the dependence the rule is about)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or "", *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        found += [n for n in names if n in NOT_FOR_MODELS]
    return found if module.startswith("clineval.models") else []


def test_the_spec_is_parsed_only_where_its_text_enters() -> None:
    files = {m: p for m, p in MODULES.items() if m not in SPEC_PARSERS}
    files.update({str(p.relative_to(EXAMPLES)): p for p in EXAMPLES.glob("*/**/*.py")})
    found = {m: spec_parses(p.read_text(encoding="utf-8")) for m, p in files.items()}
    assert {m: calls for m, calls in found.items() if calls} == {}


def test_models_do_not_import_the_config() -> None:
    found = {m: config_imports(p.read_text(encoding="utf-8"), m) for m, p in MODULES.items()}
    assert {m: names for m, names in found.items() if names} == {}


def test_the_model_layer_rules_can_fail() -> None:
    planted = "def f(config):\n    return ModelSpec.parse(config.model, ()).label\n"
    assert spec_parses(planted) == ["ModelSpec.parse(config.model, ())"]
    assert spec_parses("spec = config.models.candidate\nx = json.parse(s)") == []
    typed = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from clineval.config import RunConfig\n"
    )
    assert config_imports(typed, "clineval.models.llm") == ["clineval.config"]
    assert config_imports("import clineval.config", "clineval.models.batch") == ["clineval.config"]
    assert config_imports("from clineval import config", "clineval.models.x") == ["clineval.config"]
    # the layer above may: the task layer builds the models' settings from the config
    assert config_imports(typed, "clineval.benchmarks.base") == []


# ---- benchmark names in generic text -----------------------------------------------------------
#
# An import is not the only way generic code can know a benchmark: a report template with a
# renderer per family, a formatter that special-cases a metric key, a config file or a message
# that names a task do too. Every file of the package outside the benchmark packages is scanned
# for the words that name a registered benchmark: in Python, its identifiers and string
# literals (docstrings and comments explain, and may name one as an example); in any other file
# (templates, scripts, styles, JSON/TOML/YAML), all of its text. Prose pages (Markdown: the
# generic Agent Skill) are documentation, like docstrings, and are not scanned.

FAMILY_PACKAGES = PACKAGE / "benchmarks"
EXAMPLE_FOLDERS = (
    EXAMPLES / "plugin-benchmark",
    EXAMPLES / "plugin-judged",
    EXAMPLES / "plugin-pairwise",
)
UNSCANNED_SUFFIXES = {".md", ".pyc", ".typed"}

# Generic text that may name a benchmark, each with why: {(file under clineval/, fragment of the
# line): reason}. A fragment of None allows the whole file.
NAMES_ALLOWED: dict[tuple[str, str | None], str] = {
    ("benchmarks/registry.py", "from clineval.benchmarks."): "it lists the built-in declarations",
    ("benchmarks/registry.py", "BENCHMARK as HEALTHBENCH"): "the same, two of one package",
    ("benchmarks/registry.py", "return [NER, TCM_SD, CLINCONSENSUS, HEALTHBENCH"): "the same list",
    # the agreement statistic judge-agreement reports is the one HealthBench's meta-eval names
    ("judge_agreement.py", '"balanced_f1"'): "a generic agreement statistic",
    ("report/agreement_section.py", '"balanced_f1"'): "the same statistic, shown",
    # `clineval head-to-head` is the front door of the head-to-head task: it writes the pairs
    # file that task reads and hands the rest to `run`, so it names the task it runs.
    ("cli/head_to_head.py", None): "the command that runs the head-to-head task",
    ("cli/__init__.py", "import clineval.cli.head_to_head"): "its registration",
    # The command line's own help: the product's one-line description and the examples of
    # `run --help` / `score --help` name the built-in benchmarks a user has, as the README does.
    ("cli/app.py", "Evaluate models on Clinical NER (NCER), TCM-SD and ClinConsensus."): "product",
    ("cli/run.py", "clineval run tcm-sd -m baseline:tfidf"): "an example",
    ("cli/run.py", "clineval run ner:ncbi -m baseline:crf"): "an example",
    ("cli/run.py", "clineval run clinconsensus -m openai:qwen"): "an example",
    ("cli/reports.py", "clineval score runs/cc --"): "an example",
    ("cli/tasks.py", "clineval tasks ner:ncbi --options"): "an example",
    # the kit's count of samples without a prediction, in every benchmark's results: the
    # name NER's results had for it before the rule was generic, kept so they do not change
    ("benchmarks/missing.py", 'MISSING_KEY = "missing_predictions"'): "one rule for all",
}


def _declarations() -> tuple[list[Any], list[Any]]:
    """(the built-in benchmarks' declarations, the example plugins' declarations)."""
    import importlib
    import sys

    from clineval.benchmarks.registry import _builtin

    examples = []
    for folder in EXAMPLE_FOLDERS:
        sys.path.insert(0, str(folder))
        try:
            package = next(p.name for p in folder.iterdir() if (p / "__init__.py").is_file())
            examples.append(importlib.import_module(package).BENCHMARK)
        finally:
            sys.path.remove(str(folder))
    return _builtin(), examples


def _split_identifier(name: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", name)]


# Words of a part's own name that say what it is, not whose (ner_statistics, ClinConsensusTask).
_PART_WORDS = {"task", "statistics", "build", "section", "report", "rows", "long", "view"}


def naming_words(bench: Any, shared_keys: set[str]) -> set[str]:
    """The words that name one benchmark, from its declaration alone: family, tasks, option
    namespaces, data sources; its metric and table keys that no other benchmark declares (and
    the stem of a `key@k` family, e.g. cacs for cacs@7); and the name its code parts carry
    before the part's own word (cc of cc_statistics, ner of NerTask)."""
    words = {bench.family, bench.family.replace("-", "_"), *bench.tasks}
    words.update(group.namespace for group in bench.options)
    words.update(source.name for source in bench.data_sources)
    keys = {m.key for m in bench.metrics.metrics} | set(bench.metrics.tables)
    words.update(keys - shared_keys)
    for key in keys - shared_keys:
        stem, at, _ = key.partition("@")
        if at:
            words.add(f"{stem}@")
            if not keyword.iskeyword(stem):  # pass@k: `pass` is Python; only `pass@` names it
                words.add(stem)
    import clineval.benchmarks as kit

    for part in (bench.make_task, bench.statistics, bench.report_section):
        name = part.rpartition(":")[2] if isinstance(part, str) else getattr(part, "__name__", "")
        if not isinstance(part, str) and getattr(kit, name, None) is part:
            continue  # the kit's own function (score_statistics), shared: nobody's name
        own = [w for w in _split_identifier(name.rpartition(".")[2]) if w not in _PART_WORDS]
        if own:
            words.update({"".join(own), "_".join(own)})
    words.discard("")
    return words


def _pattern(word: str) -> re.Pattern[str]:
    # A word stands alone: not inside a longer word (ner in general, cc in accept). A snake_case
    # key must be the whole identifier (macro_f1 is not macro_f1_statistic); a plain word may
    # be one part of one (ner in ner_statistics, cc in DETAIL.cc).
    inner = "A-Za-z0-9_" if "_" in word else "A-Za-z0-9"
    right = "" if word[-1] in "@:" else rf"(?![{inner}])"
    return re.compile(rf"(?<![{inner}]){re.escape(word)}{right}", re.IGNORECASE)


def _docstrings(tree: ast.AST) -> set[tuple[int, int]]:
    starts = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = node.body[0] if node.body else None
            value = first.value if isinstance(first, ast.Expr) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                starts.add((value.lineno, value.col_offset))
    return starts


def _scanned_text(path: Path) -> list[tuple[int, str, str]]:
    """(line, the text scanned there, the whole line) of a file: Python's identifiers and
    string literals without docstrings; every line of any other file."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    if path.suffix != ".py":
        return [(i, line, line) for i, line in enumerate(lines, 1)]
    docs = _docstrings(ast.parse(source))
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME or (tok.type == tokenize.STRING and tok.start not in docs):
            out.append((tok.start[0], tok.string, lines[tok.start[0] - 1]))
    return out


def _generic_files() -> list[Path]:
    families = {p.parent for p in FAMILY_PACKAGES.glob("*/__init__.py")}
    return [
        path
        for path in sorted(PACKAGE.rglob("*"))
        if path.is_file()
        and path.suffix not in UNSCANNED_SUFFIXES
        and "__pycache__" not in path.parts
        and not any(family in path.parents for family in families)
    ]


def _camel_case_names(text: str, words: set[str]) -> set[str]:
    """The words a CamelCase identifier spells (NerMetrics, ClinConsensusMetrics): the regular
    expressions see one word there, so its parts and each run of consecutive parts are
    checked against the names."""
    if not text.isidentifier() or text.islower() or text.isupper():
        return set()
    parts = _split_identifier(text)
    runs = (parts[i:j] for i in range(len(parts)) for j in range(i + 1, len(parts) + 1))
    return {joined for run in runs for sep in ("", "_", "-") if (joined := sep.join(run)) in words}


def benchmark_names_in(
    files: list[Path], words: dict[str, set[str]], allowed: Mapping[tuple[str, str | None], str]
) -> list[str]:
    """Each place in `files` that names a benchmark ({family: its words}) and is not allowed."""
    patterns = [(family, word, _pattern(word)) for family, ws in words.items() for word in ws]
    all_words = {word.lower() for ws in words.values() for word in ws}
    found = []
    for path in files:
        where = path.relative_to(PACKAGE).as_posix()
        fragments = [fragment for (file, fragment) in allowed if file == where]
        if None in fragments:
            continue
        for line, text, whole in _scanned_text(path):
            named = sorted(
                {word for family, word, p in patterns if p.search(text)}
                | _camel_case_names(text, all_words)
            )
            if named and not any(f is not None and f in whole for f in fragments):
                found.append(f"clineval/{where}:{line}: names {', '.join(named)}: {text[:80]}")
    return found


@functools.cache
def _naming_words() -> dict[str, set[str]]:
    builtin, examples = _declarations()
    owners: dict[str, set[str]] = {}
    for bench in (*builtin, *examples):
        for key in {m.key for m in bench.metrics.metrics} | set(bench.metrics.tables):
            owners.setdefault(key, set()).add(bench.family)
    shared = {key for key, families in owners.items() if len(families) > 1}
    words = {bench.family: naming_words(bench, shared) for bench in builtin}
    # the templates' names too: generic code must not know the example plugins either
    words.update({bench.family: {bench.family, *bench.tasks} for bench in examples})
    return words


def test_generic_files_name_no_benchmark() -> None:
    assert benchmark_names_in(_generic_files(), _naming_words(), NAMES_ALLOWED) == []


def test_every_allowed_name_is_still_there() -> None:
    """An allow-list entry whose text has gone would let the next such line in unseen."""
    stale = [
        (file, fragment)
        for (file, fragment) in NAMES_ALLOWED
        if fragment is not None and fragment not in (PACKAGE / file).read_text(encoding="utf-8")
    ]
    assert stale == []


def test_the_names_come_from_the_declarations() -> None:
    words = _naming_words()
    assert {"ner", "ner:chia", "chia", "token_macro_f1", "per_type"} <= words["ner"]
    assert {"tcm-sd", "tcm_sd", "tcm", "macro_f1", "per_class"} <= words["tcm-sd"]
    assert {"clinconsensus", "cacs", "cacs@7", "pass@", "cc"} <= words["clinconsensus"]
    # words another benchmark declares too are not names (the example declares accuracy)
    assert "accuracy" not in words["tcm-sd"] and "pass" not in words["clinconsensus"]
    assert words["example-mcq"] == {"example-mcq"}


def test_the_name_rule_can_fail(tmp_path: Path) -> None:
    """The scanner on a renderer per family in a script, a formatter that special-cases a
    metric, a config naming a task; and what it lets through."""
    words = _naming_words()
    script = tmp_path / "report.js"
    script.write_text('DETAIL.cc = function (row) {};\nvar accept = "ok"; // ner in a comment\n')
    formatter = tmp_path / "fmt.py"
    formatter.write_text(
        '"""Formats a metric (e.g. cacs@7: a docstring may say so)."""\n'
        "def fmt(key):\n"
        "    # comments too: tcm-sd\n"
        '    return key.startswith("cacs")\n'
        "def general(macro_f1_statistic):\n"
        "    return macro_f1_statistic\n"
        "NerMetrics = TcmSdMetrics = dict\n"
    )
    config = tmp_path / "defaults.toml"
    config.write_text('task = "ner:ncbi"\n')
    files = [script, formatter, config]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys.modules[__name__], "PACKAGE", tmp_path)
        found = benchmark_names_in(files, words, {})
        assert found == [
            "clineval/report.js:1: names cc: DETAIL.cc = function (row) {};",
            'clineval/report.js:2: names ner: var accept = "ok"; // ner in a comment',
            'clineval/fmt.py:4: names cacs: "cacs"',
            "clineval/fmt.py:7: names ner: NerMetrics",
            "clineval/fmt.py:7: names tcm, tcm-sd, tcm_sd, tcmsd: TcmSdMetrics",
            'clineval/defaults.toml:1: names ncbi, ner, ner:ncbi: task = "ner:ncbi"',
        ]
        allowed = {("report.js", "DETAIL.cc"): "a test", ("defaults.toml", None): "a test"}
        assert benchmark_names_in(files, words, allowed) == found[1:5]
