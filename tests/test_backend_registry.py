"""Backends are known by one registration each (clineval.models.registry): code outside
`clineval/models/` asks a capability, never compares a backend's name. Read with `ast`, so a
comparison anywhere (a lazy branch inside a function included) is found."""

from __future__ import annotations

import ast
from pathlib import Path

from clineval.benchmarks.registry import option_groups
from clineval.models.options import LLAMACPP_OPTIONS
from clineval.models.registry import (
    BACKEND_TABLE,
    BACKENDS,
    ModelKind,
    backend_named,
    resolve_reference,
)
from clineval.models.spec import ModelSpec

ROOT = Path(__file__).resolve().parents[1]
NAMES = frozenset(BACKENDS)


def _constants(node: ast.expr) -> list[object]:
    if isinstance(node, ast.Constant):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant)]
    return []


def _names_a_backend(node: ast.expr) -> bool:
    """`x.backend`, `spec.backend`, `backend`, `model_backend`...: an operand that holds a
    backend's name (a kind, `x.kind`, is compared with ModelKind, not a backend)."""
    if isinstance(node, ast.Attribute):
        return "backend" in node.attr.lower()
    if isinstance(node, ast.Name):
        return "backend" in node.id.lower()
    return False


def _spec_prefix(value: object) -> bool:
    """ "llamacpp:", "hf:/x": text that starts with a registered name and a colon."""
    return isinstance(value, str) and ":" in value and value.partition(":")[0] in NAMES


def name_comparisons(source: str) -> list[str]:
    """The comparisons in `source` of a backend-holding operand with a registered name, and
    the tests of a spec's text or label for a backend's prefix (`label.startswith("hf:")`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("startswith", "removeprefix")
            and any(_spec_prefix(v) for arg in node.args for v in _constants(arg))
        ):
            found.append(ast.unparse(node))
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        named = any(v in NAMES for o in operands for v in _constants(o))
        if named and any(_names_a_backend(o) for o in operands):
            found.append(ast.unparse(node))
    return found


def _outside_models() -> list[Path]:
    models = ROOT / "clineval" / "models"
    files = [*(ROOT / "clineval").rglob("*.py"), *(ROOT / "examples").rglob("*.py")]
    return [p for p in files if models not in p.parents]


def test_no_backend_name_is_compared_outside_models() -> None:
    offenders = {
        str(path.relative_to(ROOT)): found
        for path in _outside_models()
        if (found := name_comparisons(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_the_name_rule_can_fail() -> None:
    planted = (
        "def bound(spec, ctx):\n"
        "    if spec.backend == 'llamacpp':\n"
        "        return 200\n"
        "    if ctx.model.backend in ('hf', 'gliner'):\n"
        "        return None\n"
        "    backend = spec.backend\n"
        "    if ctx.model.label.startswith(('hf:', 'gliner:')):\n"
        "        return 1\n"
        "    return 'openai' != backend\n"
    )
    assert sorted(name_comparisons(planted)) == sorted(
        [
            "spec.backend == 'llamacpp'",
            "ctx.model.backend in ('hf', 'gliner')",
            "ctx.model.label.startswith(('hf:', 'gliner:'))",
            "'openai' != backend",
        ]
    )
    # nor is building a spec's text, or a prefix that names no backend
    assert name_comparisons("x = f'predictions:{path}'\ny = s.startswith('http:')") == []
    # a capability question, and a kind compared as a kind, are not name comparisons
    assert name_comparisons("x = backend_info(spec).has_batch and ctx.kind == 'chat'") == []


def test_every_backend_is_registered_once_and_parses() -> None:
    assert len(BACKENDS) == len(BACKEND_TABLE)
    # options.py sits below the models layer and keeps no list of names: every group is
    # handed the registry's with the groups, for messages that say a selector is a backend
    groups = option_groups()
    assert groups and all(group.backends == BACKENDS for group in groups)
    llamacpp = next(g for g in groups if g.namespace == LLAMACPP_OPTIONS.namespace)
    n_ctx = next(o for o in llamacpp.options if o.name == "n_ctx")
    assert llamacpp.models_text(n_ctx) == "llamacpp: models"
    assert LLAMACPP_OPTIONS.models_text(n_ctx) == "llamacpp models"  # as declared: no names
    for info in BACKEND_TABLE:
        assert info.kinds and all(isinstance(k, ModelKind) for k in info.kinds)
        spec = ModelSpec.parse(f"{info.name}:x")
        assert backend_named(spec.backend) is info
        with_url = ModelSpec.parse(f"{info.name}:x@http://127.0.0.1:1/v1")
        # only a backend that takes base URLs reads "@URL" as one; others keep it in the name
        assert bool(with_url.base_urls) is info.takes_base_url
        for reference in (info.file_check, info.opener):
            if reference is not None:
                assert callable(resolve_reference(reference)), reference
        # a backend opens a chat model exactly when it can be one
        assert (info.opener is not None) is (ModelKind.CHAT in info.kinds)
