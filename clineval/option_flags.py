"""The flags benchmarks keep for their options, wherever a run's settings enter.

A setting that one benchmark alone reads is that benchmark's option (`clinconsensus.cases`,
`tcm.dedupe`), with one value in one place: `RunConfig.options`. Where the benchmark keeps a
flag for it (clineval.options.Flag: `--cases FILE`, `--dedupe`), the flag is another spelling
of the same option, known only from the declarations: the command line's `clineval run`
(clineval.cli adds the declared flags to it), a `--config` file's key and the Python API's
keyword (`cases = "..."`, `dedupe = true`), and the config of a manifest written while the
setting was still a run field all become the option here. A flag and `--option` of the same
key together are refused: two values of one setting.

Internal: not part of clineval's public API (`clineval`, `clineval.benchmarks`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from clineval.config import RunConfig
from clineval.errors import InputError
from clineval.options import Flag, Option, OptionGroup, flag_settings, flagged

log = logging.getLogger(__name__)


def declared_flags() -> dict[str, tuple[OptionGroup, Option, Flag]]:
    """Every declared option flag, by its setting name ("cases" of --cases). A flag named as
    a run setting of clineval's own (`limit`, `output_dir`), or as another option's flag, is
    left out with a warning: the name would mean two settings."""
    from clineval.benchmarks.registry import option_groups
    from clineval.config_file import file_keys

    groups = option_groups()
    own = set(RunConfig.model_fields) | set(file_keys())
    out: dict[str, tuple[OptionGroup, Option, Flag]] = {}
    for setting, (group, option, flag) in flagged(groups).items():
        if setting in own:
            log.warning(
                "the flag %s of --option %s is left out: clineval has a setting of that name",
                flag.name,
                group.key(option),
            )
        else:
            out[setting] = (group, option, flag)
    claimed = [
        group.key(option)
        for group in groups
        for option in group.options
        if option.flag is not None
        and option.flag.setting in out
        and out[option.flag.setting][1] is not option
    ]
    for key in claimed:
        log.warning("the flag of --option %s is left out: another option declares it", key)
    return out


def with_flags(options: Mapping[str, str], given: Mapping[str, Any]) -> dict[str, str]:
    """`options` with the values of the declared flags in `given` ({setting name: value}) as
    their options (clineval.options.flag_settings)."""
    from clineval.benchmarks.registry import option_groups

    return flag_settings(options, given, option_groups())


def manifest_config(data: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest's config in today's shape: a field an older clineval kept for a setting that
    is now a benchmark's option with a flag of its own (`cases`, `dedupe`) moved into
    `options`; a flag's false or empty value was the setting left unset."""
    flags = declared_flags()
    moved = {
        name: value
        for name, value in data.items()
        if name in flags and name not in RunConfig.model_fields
    }
    if not moved:
        return dict(data)
    out = {name: value for name, value in data.items() if name not in moved}
    options = out.get("options")
    given = {name: value for name, value in moved.items() if value not in (None, False, "")}
    out["options"] = with_flags(options if isinstance(options, dict) else {}, given)
    return out


def config_from_manifest(data: Any, path: str) -> RunConfig:
    """The config a manifest recorded, as every command reads one (score, resume, merge,
    `clineval config`, judge-agreement); InputError naming the manifest if it is not one."""
    if isinstance(data, dict):
        try:
            data = manifest_config(data)
        except InputError as exc:
            raise InputError(
                f"the manifest's config is not valid: {exc.message}", path=path
            ) from None
    return RunConfig.from_manifest(data, path)
