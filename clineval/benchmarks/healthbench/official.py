"""`--judge-prompt official`: the authors' grader template, never shipped with clineval.

At use time the authors' `healthbench_eval.py` is fetched into the data cache at a pinned commit
of openai/simple-evals and checked against its pinned sha256 (a cached copy is checked again on
every use). The script is parsed, never run: the template is the string GRADER_TEMPLATE is
given (with its `.strip()`); its `<<conversation>>` becomes the conversation with the answer
appended as the assistant's turn and `<<rubric_item>>` the rubric item, as the authors fill
them. Its calls are plain text (no response format), as the authors send them, and inserted
text goes in verbatim.
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


def _template_text(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if (  # """...""".strip()
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "strip"
        and not node.args
        and not node.keywords
    ):
        inner = _template_text(node.func.value)
        return None if inner is None else inner.strip()
    return None


def extract_template(source: str, where: str) -> str:
    """GRADER_TEMPLATE of the script as clineval's template ({query}, {response},
    {criterion})."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise InputError(f"not Python source: {exc.msg}", path=where, line=exc.lineno) from None
    found = [
        _template_text(node.value)
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
