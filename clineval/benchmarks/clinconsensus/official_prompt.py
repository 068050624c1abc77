"""`--judge-prompt official`: the prompt the released ClinConsensus judge model was trained with.

Its text is the authors' (the PROMPT constant of scripts/run_local_judge.py in their repository),
not clineval's, so clineval does not ship it: `clineval data fetch clinconsensus` downloads the
script at the pinned commit into the data cache, checked against the sha256 pinned in the
package manifest, and this module reads it from there each run (checking the sha256 again, so a
changed file is refused, never used):
  * the script is parsed, never run: the prompt is the string assigned to PROMPT at module level
    (Python's own parser finds it, escapes and all);
  * it is a str.format template: its fields user_message, response and rubric_item become
    clineval's {query}, {response} and {criterion}, and its doubled braces single ones;
  * inserted text (query, answer, criterion) is sent verbatim, as str.format sends it: no
    rewriting of clineval's delimiter text, which this template does not use;
  * it asks for a ```json fence holding {"explanation", "criteria_met"}: the judge's calls are
    plain text (no response_format, as the model was trained), and clineval.judge.parse reads
    the fence (after any <think> block).
The prompt's version (part of every judge call's cache key) is "official-" + the script's
sha256, shortened.
"""

from __future__ import annotations

import ast
import hashlib
import string
from pathlib import Path
from typing import TYPE_CHECKING

from clineval.benchmarks.clinconsensus.fetch import PROMPT_RELATIVE, PROMPT_SCRIPT
from clineval.benchmarks.clinconsensus.wording import builtin_prompt
from clineval.data.cache import CACHE_ENV, default_cache_dir
from clineval.data.checksums import manifest_entry
from clineval.errors import InputError
from clineval.judge.prompt import PLACEHOLDERS, JudgePrompt, load_judge_prompt

if TYPE_CHECKING:
    from clineval.config import RunConfig

OFFICIAL = "official"  # --judge-prompt official (a file named "official": ./official)

PROMPT_NAME = "PROMPT"
FIELDS = {"user_message": "{query}", "response": "{response}", "rubric_item": "{criterion}"}
_FETCH = "run `clineval data fetch clinconsensus`"


def official_script() -> Path:
    """The fetched script in the data cache; InputError saying how to fetch it."""
    path = default_cache_dir() / PROMPT_RELATIVE
    if not path.is_file():
        raise InputError(
            f"--judge-prompt official: the official judge prompt is not in the data cache: "
            f"{_FETCH} first (it downloads it; clineval does not ship its text), with "
            f"${CACHE_ENV} naming the cache if it is not the default",
            path=path,
        )
    return path


def pinned_sha256() -> str:
    entry = manifest_entry(PROMPT_RELATIVE)
    assert entry is not None and entry.sha256 is not None, "the package manifest pins it"
    return entry.sha256


def extract_template(source: str, path: Path) -> str:
    """The PROMPT string of the script as a clineval template (see the module doc)."""
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise InputError(f"not Python source: {exc.msg}", path=path, line=exc.lineno) from None
    texts = [
        node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and [getattr(t, "id", None) for t in node.targets] == [PROMPT_NAME]
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    ]
    if len(texts) != 1:
        raise InputError(f"expected one string {PROMPT_NAME} = '...' in {PROMPT_SCRIPT}", path=path)
    pieces: list[str] = []
    seen: set[str] = set()
    try:
        parsed = list(string.Formatter().parse(texts[0]))
    except ValueError as exc:
        raise InputError(f"{PROMPT_NAME} is not a format string: {exc}", path=path) from None
    for literal, field, spec, conversion in parsed:
        if any(p in literal for p in PLACEHOLDERS):
            raise InputError(f"{PROMPT_NAME} holds clineval's placeholder text", path=path)
        pieces.append(literal)
        if field is None:
            continue
        if field not in FIELDS or spec or conversion:
            raise InputError(f"{PROMPT_NAME} has an unknown field {{{field}}}", path=path)
        seen.add(field)
        pieces.append(FIELDS[field])
    missing = sorted(set(FIELDS) - seen)
    if missing:
        raise InputError(f"{PROMPT_NAME} lacks field(s) {', '.join(missing)}", path=path)
    return "".join(pieces)


def load_official_prompt() -> JudgePrompt:
    path = official_script()
    entry = manifest_entry(PROMPT_RELATIVE)
    pinned_size = entry.size if entry is not None else None
    size = path.stat().st_size
    if pinned_size is not None and size != pinned_size:
        # before reading it: a file of another size cannot have the pinned hash, and a
        # 3 GB one would be read whole into memory only to be refused
        raise InputError(
            f"--judge-prompt official: the cached prompt script has {size:,} bytes, not the "
            f"pinned {pinned_size:,}: {_FETCH} again",
            path=path,
        )
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != pinned_sha256():
        raise InputError(
            f"--judge-prompt official: the cached prompt script has sha256 {digest[:12]}..., not "
            f"the pinned {pinned_sha256()[:12]}...: {_FETCH} again",
            path=path,
        )
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("the prompt script is not UTF-8 text", path=path) from None
    template = extract_template(source, path)
    # Inserted text goes in verbatim (defuse=False): the template has none of clineval's
    # delimiters to protect, and the authors' str.format never re-reads what it inserts.
    return JudgePrompt(
        template, f"official-{digest[:16]}", None, custom=False, constrained=False, defuse=False
    )


def judge_prompt(setting: str | None) -> JudgePrompt:
    """The prompt `--judge-prompt` names: the built-in one (unset), the authors' (`official`,
    read from the data cache) or a user's template file."""
    if setting == OFFICIAL:
        return load_official_prompt()
    return load_judge_prompt(setting, builtin_prompt())


def check_judge_prompt(config: RunConfig) -> None:
    """The declaration's `check_settings`: the prompt `--judge-prompt` names exists, reads and
    has the placeholders, before the run loads or writes anything."""
    judge_prompt(config.judge_prompt)
