"""The maintainer docs stay true to the tree: every file and test they cite exists, and the
module map of docs/architecture.md lists every module of the package (and no module that is
gone). A renamed test or a new module fails here, naming the doc line to change."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("docs/metrics.md", "docs/data-sources.md", "docs/architecture.md")
_PATH = re.compile(r"`((?:clineval|tests|perf)/[\w./-]+\.(?:py|md|jsonl|json))`")
_LINK = re.compile(r"\]\(([\w./-]+\.md)(?:#([\w-]+))?\)")
_TEST_NAME = re.compile(r"`(?:tests/[\w/]+\.py::)?(test_\w+?)(\*)?`")
_MODULE = re.compile(r"`(\w+\.py)`")
_SECTION = re.compile(r"^`([\w/]+)/`")


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation other than - and _ removed, spaces
    to hyphens."""
    headings = re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def _test_functions() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "tests").glob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names.update(n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    return names


@pytest.mark.parametrize("doc", DOCS)
def test_cited_files_exist(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    cited = set(_PATH.findall(text))
    assert cited, f"{doc} cites no file: the pattern is broken"
    missing = sorted(p for p in cited if not (ROOT / p).exists())
    assert missing == [], f"{doc} cites files that do not exist: {missing}"


@pytest.mark.parametrize("doc", [*DOCS, "README.md"])
def test_links_to_docs_resolve(doc: str) -> None:
    """Relative links between the docs (and from the README into docs/), anchors included."""
    source = ROOT / doc
    broken = []
    for target, anchor in _LINK.findall(source.read_text(encoding="utf-8")):
        path = (source.parent / target).resolve()
        if doc == "README.md" and not target.startswith("docs/"):
            continue
        if not path.is_file() or (anchor and anchor not in _anchors(path)):
            broken.append(f"{target}#{anchor}" if anchor else target)
    assert broken == [], f"{doc} has broken links: {broken}"


@pytest.mark.parametrize("doc", DOCS)
def test_cited_tests_exist(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    functions = _test_functions()
    missing = []
    for name, wildcard in _TEST_NAME.findall(text):
        found = any(f.startswith(name) for f in functions) if wildcard else name in functions
        if not found:
            missing.append(name + wildcard)
    assert missing == [], f"{doc} cites tests that do not exist: {missing}"


def _module_map() -> set[str]:
    """Package-relative paths of the modules listed under "## Module map"."""
    listed: set[str] = set()
    section: str | None = None
    in_map = False
    for line in (ROOT / "docs/architecture.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            in_map = line == "## Module map"
            section = None
            continue
        if not in_map:
            continue
        if line.startswith("Top level"):
            section = ""
        elif match := _SECTION.match(line):
            section = match.group(1) + "/"
        if section is not None:
            listed.update(section + name for name in _MODULE.findall(line))
    return listed


def test_module_map_lists_every_module() -> None:
    listed = _module_map()
    assert "runner.py" in listed and "benchmarks/base.py" in listed, "module map not parsed"
    package = ROOT / "clineval"
    modules = {
        p.relative_to(package).as_posix()
        for p in package.rglob("*.py")
        if p.name != "__init__.py" or p.parent == package
    }
    unlisted = sorted(modules - listed)
    assert unlisted == [], (
        f"docs/architecture.md, Module map: add one line (its one job) for {unlisted}"
    )
    gone = sorted(m for m in listed - modules if not m.endswith("__init__.py"))
    assert gone == [], f"docs/architecture.md, Module map: these modules no longer exist: {gone}"
