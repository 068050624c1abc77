"""`--judge-prompt official`: the authors' grader template, never shipped with clineval.

At use time the authors' `healthbench_eval.py` (openai/simple-evals at a pinned commit) is
fetched into the data cache, checked against its pinned sha256, again on every use. It is
parsed, never run: GRADER_TEMPLATE's `<<conversation>>` becomes the conversation with the answer
appended as `assistant`, `<<rubric_item>>` the item. Calls are plain text, as the authors'.
"""

from __future__ import annotations

import ast
import hashlib

from clineval.benchmarks import InputError, JudgePrompt, fetch_pinned

COMMIT = "5e623c2b400af62a1278e23595f95b0853d7fe8a"
URL = f"https://raw.githubusercontent.com/openai/simple-evals/{COMMIT}/healthbench_eval.py"
SHA256 = "89909957f005762edaded2f0e39fc9b3b242edd55e3ac0ce4c8dd886ac59d167"
SIZE = 25_736
RELATIVE = "healthbench/official/healthbench_eval.py"
NAME = "GRADER_TEMPLATE"
FIELDS = {"<<conversation>>": "{query}\n\nassistant: {response}", "<<rubric_item>>": "{criterion}"}


def _text(node: ast.expr) -> str | None:
    """A string constant, or one with `.strip()` applied (the authors' form)."""
    match node:
        case ast.Constant(value=str() as value):
            return value
        case ast.Call(func=ast.Attribute(value=inner, attr="strip"), args=[], keywords=[]):
            return None if (text := _text(inner)) is None else text.strip()
    return None


def extract_template(source: str, where: str) -> str:
    """GRADER_TEMPLATE of the script as clineval's template ({query}, {response},
    {criterion})."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise InputError(f"not Python source: {exc.msg}", path=where, line=exc.lineno) from None
    found = [
        _text(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [NAME]
    ]
    if len(found) != 1 or found[0] is None:
        raise InputError(f"expected one string {NAME} = '...'", path=where)
    text = found[0]
    if any(p in text for p in ("{query}", "{response}", "{criterion}")):
        raise InputError(f"{NAME} holds clineval's placeholder text", path=where)
    for marker, field in FIELDS.items():
        if text.count(marker) != 1:
            raise InputError(f"{NAME} must hold {marker} once", path=where)
        text = text.replace(marker, field)
    return text


def official_prompt() -> JudgePrompt:
    path = fetch_pinned(RELATIVE, URL, SHA256, SIZE)
    data = path.read_bytes()
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("the grader script is not UTF-8 text", path=path) from None
    template = extract_template(source, str(path))
    version = "official-" + hashlib.sha256(data).hexdigest()[:16]
    return JudgePrompt(template, version, None, constrained=False, defuse=False)
