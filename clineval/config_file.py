"""`clineval run --config FILE.toml`, and a finished run's settings written as such a file.

The file's keys are the run's flags, written with underscores (`max_tokens`, `judge`,
`base_url`, `option`) plus `tasks` and `output_dir`; they are derived from RunConfig's fields
and their declared Setting (clineval.settings), so a new run setting is a key without another
edit here; the flags
benchmarks keep for their options (`cases`, `dedupe`: clineval.options.Flag) are keys too,
given by the caller, which knows the declarations. A flag that
may be repeated takes a string or a list of strings; `option` also takes a table
(`option = {"ner.chunking" = "ncer"}`). Values are checked strictly here, where they enter:
TOML has types, so `limit = "5"` is a mistake to name, not a string to convert. What the
command line gives overrides the file (the command line's own values, checked as ever).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import TypeAdapter, ValidationError

from clineval.config import RunConfig, declared_settings
from clineval.config_checks import reason_of
from clineval.errors import InputError
from clineval.jsonio import deepest_nesting, read_text_file
from clineval.messages import clip, did_you_mean
from clineval.run_record import Manifest
from clineval.secrets import mask_settings_text
from clineval.version import __version__

OUTPUT_DIR = "output_dir"  # the one key that is no RunConfig field (the run's directory)
_OPTIONS = "options"


def file_keys() -> dict[str, str]:
    """{key in the file: RunConfig field}, in the order a written file lists them (tasks,
    model, output_dir, then as the fields are declared); output_dir maps to itself."""
    keys = {}
    for field, setting in declared_settings().items():
        keys[setting.file_key(field)] = field
        if field == "model":
            keys[OUTPUT_DIR] = OUTPUT_DIR
    return keys


def _is_list(field: str) -> bool:
    annotation = RunConfig.model_fields[field].annotation
    return getattr(annotation, "__origin__", None) is list


def read_run_file(path: Path, flags: Mapping[str, bool] | None = None) -> dict[str, Any]:
    """The settings of a TOML run file as {key: value}, each value in the shape its flag has on
    the command line (a repeatable flag: a list of strings; option: KEY=VALUE strings).
    `flags`: the benchmarks' declared option flags by setting name, True for one that takes
    a value (a string), False for one that takes none (true or false).
    InputError naming the file (and line, for TOML syntax) for anything else."""
    text = read_text_file(path, "config file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        found = re.search(r" \(at (line (\d+), column \d+|end of document)\)$", message)
        line = int(found.group(2)) if found and found.group(2) else None
        message = message[: found.start()] if found else message
        raise InputError(f"not TOML: {message}", path=path, line=line) from None
    except RecursionError:  # Python's TOML reader recurses once per level of nesting
        depth, line = deepest_nesting(text)
        raise InputError(
            f"nested too deeply for a run file ({depth:,} levels)", path=path, line=line
        ) from None
    flags = flags or {}
    keys = file_keys() | {name: name for name in flags}
    out: dict[str, Any] = {}
    for written, value in data.items():
        key = written.replace("-", "_")
        if key not in keys:
            raise InputError(
                f"unknown key {clip(written)}{did_you_mean(key, keys)} (keys: {', '.join(keys)})",
                path=path,
            )
        if key in out:
            raise InputError(f"key {key!r} is given twice (- and _ spellings)", path=path)
        if key in flags and key not in RunConfig.model_fields:
            out[key] = _flag_value(key, value, flags[key], path)
        else:
            out[key] = _checked(key, keys[key], value, path)
    return out


def _flag_value(key: str, value: Any, takes_value: bool, path: Path) -> Any:
    """The value of a benchmark's option flag: a non-empty string, or true / false for a flag
    that takes no value (its option's own parser checks it further, naming the flag)."""
    if takes_value and (not isinstance(value, str) or not value.strip()):
        raise InputError(f"key {key!r}: must be a non-empty string, not {clip(value)}", path=path)
    if not takes_value and not isinstance(value, bool):
        raise InputError(f"key {key!r}: must be true or false, not {clip(value)}", path=path)
    return value


def _checked(key: str, field: str, value: Any, path: Path) -> Any:
    """`value` of `key` checked against its setting's type and bounds (strict: no string is
    taken for a number), in the shape of the flag's value."""

    def wrong(reason: str) -> InputError:
        return InputError(f"key {key!r}: {reason}", path=path)

    if field == OUTPUT_DIR:
        if not isinstance(value, str) or not value:
            raise wrong("must be a non-empty string (a directory)")
        return value
    if field == _OPTIONS:
        return _option_items(value, wrong)
    if _is_list(field) and isinstance(value, str):
        value = [value]
    info = RunConfig.model_fields[field]
    kind: Any = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
    adapter: TypeAdapter[Any] = TypeAdapter(kind)
    try:
        checked = adapter.validate_python(value, strict=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "".join(f"[{part}]" for part in first.get("loc", ()))
        raise wrong(f"{clip(value)}{where} {reason_of(first)}") from None
    if isinstance(checked, str) and not checked.strip():
        raise wrong("must not be empty")
    return checked


def _option_items(value: Any, wrong: Any) -> list[str]:
    """`option` as the command line's KEY=VALUE items: a table {KEY: VALUE} (a number written
    as the command line would take it), a list of "KEY=VALUE" strings, or one such string."""
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            if isinstance(item, bool) or not isinstance(item, str | int | float):
                raise wrong(f"{key}: the value must be a string or a number, not {clip(item)}")
            items.append(f"{key}={item}")
        return items
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise wrong('must be a table {KEY = "VALUE"} or a list of "KEY=VALUE" strings')
    for item in value:
        name, sep, _ = item.partition("=")
        if not sep or not name.strip():
            raise wrong(f"{clip(item)} is not KEY=VALUE")
    return list(value)


# --- a finished run's settings as a file -----------------------------------------------------


def run_file_text(manifest: Manifest, config: RunConfig, run_dir: Path) -> str:
    """The TOML run file of the run in `run_dir`, whose manifest recorded `config`: every
    setting it ran with (defaults included, so that a later version's other default does not
    change a reproduction), secrets masked."""
    version = manifest.clineval_version or "unknown"
    lines = [
        f"# The settings of the clineval run in {_toml(str(run_dir))} (clineval {version};",
        f"# written by clineval {__version__}). Run them again with:",
        "#   clineval run --config THIS_FILE [-o NEW_DIR]",
        "# Flags given with --config override the file's keys. Secrets are never written: keys",
        "# come from the environment, credentials in URLs are masked (***: give them again,",
        "# a run refuses a URL holding ***).",
    ]
    for key, field in file_keys().items():
        value = str(run_dir) if field == OUTPUT_DIR else getattr(config, field)
        if value is None or value == [] or value == {}:
            continue
        lines.append(f"{key} = {_toml(value)}")
    return "\n".join(lines) + "\n"


def _toml(value: Any) -> str:
    """`value` as a TOML value (strings through `mask_settings_text`: the credentials the
    process knows and a URL's never reach the file; a path that merely looks like a key stays
    as it is, so that the file runs)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        # a JSON string is a TOML basic string, but for DEL, which TOML wants escaped
        text = mask_settings_text(value)
        return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = ", ".join(f"{_toml(str(k))} = {_toml(v)}" for k, v in value.items())
        return "{ " + pairs + " }" if pairs else "{}"
    raise TypeError(f"no TOML form for {type(value).__name__}")
