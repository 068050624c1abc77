"""The parts of RunConfig's checks that need no RunConfig: which judge a `--judge-base-url`
item names, what a user may call a model, and a validation error in a user's words."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clineval.errors import InputError
from clineval.models.registry import backend_info
from clineval.models.spec import ModelSpec


def judge_named(name: str | None, item: str, judges: list[ModelSpec]) -> ModelSpec:
    """The judge (a --judge, or the candidate that judges) that JUDGE in `item` names."""
    if name is None:
        if len(judges) != 1:
            raise InputError(
                f"--judge-base-url {shown(item)}: there are {len(judges)} judges; write JUDGE=URL"
            )
        found = judges[0]
    else:
        matches = [j for j in judges if name in names(j)]
        if not matches:
            labels = ", ".join(j.label for j in judges)
            raise InputError(
                f"--judge-base-url {shown(item)}: {name!r} is not a judge of this run "
                f"(judges: {labels})"
            )
        found = matches[0]
    if not backend_info(found).takes_base_url:
        raise InputError(
            f"--judge-base-url {shown(item)}: {found.label} is not an "
            "openai: model (base URLs are for OpenAI-compatible servers)"
        )
    return found


def split_judge_url(item: str) -> tuple[str | None, str]:
    """ "URL" -> (None, URL); "JUDGE=URL" -> (JUDGE, URL)."""
    if item.strip().lower().startswith(("http://", "https://")):
        return None, item.strip()
    name, sep, url = item.partition("=")
    if not sep or not name.strip():
        raise InputError(f"--judge-base-url {shown(item)} is not URL or JUDGE=URL")
    return name.strip(), url.strip()


def names(spec: ModelSpec) -> tuple[str, str, str]:
    """What a user may call a model in JUDGE=URL and --batch-model: as written, its label,
    its model name."""
    return spec.text, spec.label, spec.name


def shown(item: str) -> str:
    from clineval.secrets import redact

    return repr(redact(item)[:120])


def reason_of(error: Mapping[str, Any]) -> str:
    """What is wrong, in a user's words, of one error of a ValidationError."""
    limits = error.get("ctx") or {}
    return {
        "greater_than_equal": f"must be >= {number(limits.get('ge'))}",
        "greater_than": f"must be > {number(limits.get('gt'))}",
        "less_than_equal": f"must be <= {number(limits.get('le'))}",
        "finite_number": "must be a finite number",
        "int_parsing": "is not an integer",
        "float_parsing": "is not a number",
        "too_short": "must not be empty",
        # strict validation (the Python API, a config file): a value of another type
        "int_type": "is not an integer",
        "float_type": "is not a number",
        "bool_type": "is not True or False",
        "string_type": "is not a string",
        "list_type": "is not a list",
        "dict_type": "is not a mapping",
    }.get(str(error.get("type")), str(error.get("msg", "invalid value")))


def number(value: Any) -> str:
    """0.0 -> "0", 1.5 -> "1.5": floats as a user writes them."""
    return f"{value:g}" if isinstance(value, float) else str(value)
