"""The Python API's boundary (clineval.api, clineval.run_result, the API's compare): every
argument of a public function checked against its type hints before the body runs, a wrong one
an InputError naming the function and the parameter; the path type it knows (`PathLike`), and
pandas, loaded where a DataFrame is asked for. Standard library only at the top: pydantic
is imported at the first call, so `import clineval` stays light."""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from clineval.errors import InputError
from clineval.messages import EMPTY_PATH, clip, is_empty_path

# A path argument: checked_arguments refuses an empty one (it would be the working directory).
PathLike = str | os.PathLike[str]


def pandas_module() -> Any:
    """pandas, which clineval does not depend on: an ImportError with one line of advice."""
    try:
        return importlib.import_module("pandas")
    except ImportError:
        raise ImportError(
            "a DataFrame needs pandas, which clineval does not install: pip install pandas"
        ) from None


_F = TypeVar("_F", bound=Callable[..., Any])


def checked_arguments(function: _F) -> _F:
    """The Python API's boundary: every argument of `function` is checked against its type
    hints (pydantic's validate_call, strict: `limit=True` is no int, `wait="no"` no bool, "DIR"
    no list of paths) before the body runs, and a wrong one is an InputError naming the
    function and the parameter, never a TypeError from deep inside. pydantic is imported at
    the first call: `import clineval` stays light (clineval/entry.py)."""
    name = f"clineval.{function.__qualname__}"
    signature = inspect.signature(function)
    validator: Callable[..., Any] | None = None

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal validator
        from pydantic import ConfigDict, ValidationError, validate_call

        if validator is None:
            config = ConfigDict(strict=True, arbitrary_types_allowed=True)
            validator = validate_call(config=config)(_arguments_only(function))
        try:
            validator(*args, **kwargs)
        except ValidationError as exc:
            raise _argument_error(name, signature, exc, args, kwargs) from None
        _refuse_empty_paths(name, signature, args, kwargs)
        return function(*args, **kwargs)  # the values as given: checked, not converted

    return wrapper  # type: ignore[return-value]


def _refuse_empty_paths(
    name: str, signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """A path parameter (its hint names PathLike) given as "" is refused: it would be the
    working directory. Run settings are checked by RunConfig, with the flag's name."""
    for parameter, value in signature.bind(*args, **kwargs).arguments.items():
        if "PathLike" not in str(signature.parameters[parameter].annotation):
            continue
        values = value if isinstance(value, list | tuple) else [value]
        if any(is_empty_path(v) for v in values):
            raise InputError(f"{name}: {parameter}={clip(value)}: {EMPTY_PATH}")


def _arguments_only(function: Callable[..., Any]) -> Callable[..., None]:
    """A function with `function`'s signature and type hints that does nothing: what
    validate_call checks, so a ValidationError from the body is never taken for an argument's."""

    def check(*args: Any, **kwargs: Any) -> None:
        return None

    # `**settings` are checked where every run setting is (RunConfig), with the messages that
    # name the command line's flag; their TypedDict is for type checkers and readers.
    signature = inspect.signature(function)
    hints = typing.get_type_hints(function)
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            hints[parameter.name] = Any
    check.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[
            p.replace(annotation=Any) if p.kind is inspect.Parameter.VAR_KEYWORD else p
            for p in signature.parameters.values()
        ]
    )
    check.__annotations__ = hints
    check.__name__ = function.__name__
    check.__qualname__ = function.__qualname__
    check.__module__ = function.__module__
    return check


def _argument_error(
    name: str, signature: inspect.Signature, exc: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> InputError:
    first = exc.errors()[0]
    kind = str(first.get("type", ""))
    location = first.get("loc") or ()
    where = location[0] if location else "?"
    parameters = list(signature.parameters.values())
    if isinstance(where, int):  # a positional argument: its parameter's name
        where = parameters[where].name if where < len(parameters) else f"argument {where + 1}"
    if kind.startswith("missing"):
        return InputError(f"{name}: {where}= is missing")
    if kind == "unexpected_positional_argument":
        return InputError(f"{name}: too many positional arguments")
    parameter = signature.parameters.get(str(where))
    if parameter is None or parameter.kind is inspect.Parameter.VAR_KEYWORD:
        return InputError(f"{name}: {where}={clip(first.get('input'))}: {first.get('msg')}")
    try:
        value = signature.bind(*args, **kwargs).arguments[parameter.name]
    except (TypeError, KeyError):
        value = first.get("input")
    expected = str(parameter.annotation).replace(" | ", " or ")
    if "PathLike" in expected:
        expected += " (PathLike: str or os.PathLike)"
    if isinstance(value, os.PathLike) and where == "model":
        # A path is not a model: the spec says what the file is (guessing from its name
        # would take a GGUF, a checkpoint folder and a predictions file apart by luck).
        return InputError(
            f"{name}: model={clip(value)} is a path, and a model is a spec string: "
            f"model='predictions:{os.fspath(value)}' for a predictions file, 'llamacpp:PATH' "
            "for a GGUF, 'hf:DIR' or 'gliner:DIR' for a checkpoint"
        )
    return InputError(f"{name}: {where}={clip(value)} is not {expected}")
