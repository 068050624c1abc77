"""Objects named by "module:attribute" strings, imported only when first used.

A declaration that is read at startup (a benchmark's parts, a backend's file check and chat
opener) names the code it needs by such a string, so that reading it imports nothing heavy
(torch, a tokenizer, the HTTP stack). The attribute may be a dotted path (`module:Class.method`),
as in an entry point. A string that does not resolve is bad input from whoever declared it,
said in one line; an import that fails inside a module that does exist (a missing optional
dependency) is not a misspelt reference and is raised as it is.
"""

from __future__ import annotations

import importlib
import inspect

from clineval.errors import InputError


class UnresolvedReference(InputError):
    """A "module:attribute" string names no importable object."""


def resolve_reference(reference: str) -> object:
    """The object `reference` ("module:attribute") names, its module imported now."""
    module_name, colon, attribute = reference.partition(":")
    if not colon or not module_name.strip() or not attribute.strip():
        raise UnresolvedReference(f"{reference!r} is not of the form 'module:attribute'")
    try:
        found: object = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        # only the named module (or a package on its way) missing is a misspelt reference
        if missing and (module_name == missing or module_name.startswith(missing + ".")):
            raise UnresolvedReference(f"{reference!r}: no module named {missing!r}") from None
        raise
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise UnresolvedReference(
                f"{reference!r}: {module_name!r} has no attribute {attribute!r}"
            ) from None
    return found


def call_shape_problem(target: object, call: str, arguments: int) -> str | None:
    """Why `target` cannot be called as `call` (e.g. "statistics(metrics, samples)") with its
    `arguments` positional arguments; None when it can, or when its signature cannot be read
    (some built-ins)."""
    if not callable(target):
        return f"is not callable (it is a {type(target).__name__})"
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*([None] * arguments))
    except TypeError as exc:
        return f"cannot be called as {call}: {exc}"
    return None
