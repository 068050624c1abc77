"""The flags benchmarks keep for their options, wherever a run's settings enter.

A setting that one benchmark alone reads is that benchmark's option (`clinconsensus.cases`,
`tcm.dedupe`), with one value in one place: `RunConfig.options`. Where the benchmark keeps a
flag for it (clineval.options.Flag: `--cases FILE`, `--dedupe`), the flag is another spelling
of the same option, known only from the declarations: the command line's `clineval run`
(clineval.cli adds the declared flags to it), a `--config` file's key and the Python API's
keyword (`cases = "..."`, `dedupe = true`), and the config of a manifest written while the
setting was still a run field all become the option here. A flag and `--option` of the same
key together are refused: two values of one setting.

An option may be a file of its task's outputs that stands in for the model
(clineval.options.Option.replaces_model: ClinConsensus's `--verdicts FILE`): a run given it
and no model takes the file as its model, `predictions:FILE` (`model_from_options`).

Internal: not part of clineval's public API (`clineval`, `clineval.benchmarks`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
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
            flag_left_out(flag.name, group.key(option), "clineval has a setting of that name")
        else:
            out[setting] = (group, option, flag)
    for group in groups:
        for option in group.options:
            first = out.get(option.flag.setting) if option.flag is not None else None
            if option.flag is not None and first is not None and first[1] is not option:
                other = first[0].key(first[1])
                flag_left_out(option.flag.name, group.key(option), f"--option {other} has it")
    return out


def flag_left_out(flag: str, key: str, why: str) -> None:
    """The one warning of a benchmark's flag (a plugin's, mostly) that is not made a flag of
    `clineval run`, whichever name it clashes with: its option stays, as --option KEY."""
    log.warning(
        "the flag %s of --option %s is left out (%s); give --option %s=VALUE", flag, key, why, key
    )


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


def stand_ins(
    groups: Iterable[OptionGroup] | None = None,
) -> list[tuple[OptionGroup, Option]]:
    """The options whose file stands in for the model (Option.replaces_model), of `groups`
    (default: every group the benchmarks and the model layer declare)."""
    if groups is None:
        from clineval.benchmarks.registry import option_groups

        groups = option_groups()
    return [
        (group, option) for group in groups for option in group.options if option.replaces_model
    ]


def stand_ins_given(
    options: Mapping[str, str], groups: Iterable[OptionGroup] | None = None
) -> list[tuple[OptionGroup, Option, str]]:
    """The options of `options` (a run's, by full key) whose file stands in for the model,
    each with its value (`groups` as for stand_ins)."""
    return [
        (group, option, options[group.key(option)])
        for group, option in stand_ins(groups)
        if group.key(option) in options
    ]


def stand_in_spelling(group: OptionGroup, option: Option, api: bool = False) -> str:
    """How a user gives a stand-in option: its flag (`--verdicts FILE`, or the keyword
    `verdicts=FILE` of the Python API), else `--option KEY=FILE`."""
    if option.flag is not None:
        if api:
            return f"{option.flag.setting}={option.flag.metavar}"
        return f"{option.flag.name} {option.flag.metavar}"
    key = group.key(option)
    return f"options={{{key!r}: FILE}}" if api else f"--option {key}=FILE"


def model_from_options(
    options: Mapping[str, str], groups: Iterable[OptionGroup] | None = None
) -> str | None:
    """The model of a run given none: `predictions:FILE` of the one option given whose file
    stands in for it (the spec clineval wrote into the manifest when `--verdicts` was a run
    field, so such a run still resumes), None when no such option is given. Two of them would
    be two models: refused, naming both. (`groups` as for stand_ins.)"""
    given = stand_ins_given(options, groups)
    if not given:
        return None
    if len(given) > 1:
        names = " and ".join(stand_in_spelling(g, o) for g, o, _ in given)
        raise InputError(
            f"{names} both stand in for the model; give --model predictions:TASK=FILE,... "
            "to say which task reads which file"
        )
    return f"predictions:{given[0][2]}"
