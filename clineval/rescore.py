"""`clineval score`: recompute a run's results from its store, calling no model; the
scoring-only settings it may change."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from clineval.benchmarks.registry import naming_fetch_commands, option_groups
from clineval.config import RunConfig, declared_settings
from clineval.errors import InputError
from clineval.option_flags import config_from_manifest
from clineval.run_checks import (
    check_scoring_settings,
    run_facts,
)
from clineval.run_record import Manifest, read_manifest, read_results
from clineval.rundir import MANIFEST, RESULTS
from clineval.rundir_lock import run_dir_lock
from clineval.runner import (
    execute,
)
from clineval.store import STORE_FILENAME, RunStore, check_intact

log = logging.getLogger("clineval")


def scoring_config(
    config: RunConfig, settings: dict[str, Any], options: dict[str, str]
) -> RunConfig:
    """`config` with scoring-only `settings` (fields declared `Setting.scoring`) and `--option`
    items of keys declared `scoring_only`; InputError naming the flag for anything else (a
    setting that changes what a model is asked needs `clineval run`)."""
    from clineval.benchmarks.registry import active_namespaces
    from clineval.options import check_options

    declared = declared_settings()
    unknown = [name for name in settings if name not in declared or not declared[name].scoring]
    if unknown:
        raise ValueError(f"not scoring-only settings: {unknown}")  # a caller's bug
    groups = option_groups()
    scoring = {key for group in groups for key in group.scoring_keys()}
    for key in options:
        if key not in scoring:
            raise InputError(
                f"--option {key}: score only changes scoring settings "
                f"({', '.join(sorted(scoring))}); rerun with clineval run to change the rest"
            )
    check_options(options, groups, active_namespaces(config.tasks), run_facts(config))
    check_scoring_settings(config.tasks, list(settings))
    data = config.model_dump()
    data.update(settings)
    data["options"] = {**config.options, **options}
    return RunConfig.checked(**data)


@naming_fetch_commands()  # a missing corpus: say which fetch gets it
def score(
    output_dir: Path,
    data_dir: str | None = None,
    *,
    force: bool = False,
    settings: dict[str, Any] | None = None,
    options: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Recompute results from the run store of a finished (or interrupted) run; no model calls.

    `settings` / `options` change scoring-only settings (`scoring_config`), e.g. counting judge
    errors as unmet; the manifest's config then records them, so results and config agree.
    Refused when the run directory has no store or an empty one, and when a task's results
    would be computed from fewer stored outputs than the results already written (a store
    replaced by an older copy, say) unless `force`.
    """
    with run_dir_lock(output_dir):
        manifest = read_manifest(output_dir)
        config = config_from_manifest(manifest.config, str(output_dir / MANIFEST))
        if settings or options:
            config = scoring_config(config, settings or {}, options or {})
            manifest.config = {
                **manifest.config,
                **{k: getattr(config, k) for k in settings or {}},
                "options": dict(config.options),
            }
        if data_dir is not None:
            config.data_dir = data_dir
        counts = _stored_record_counts(output_dir)
        if not force:
            _refuse_poorer_results(output_dir, manifest, config.tasks, counts)
        # Re-scoring keeps the run's own record and notes when it was re-scored.
        manifest.mark_rescored()
        with manifest.counting_replacements():
            return execute(config, output_dir, manifest, predict=False, keep_primaries=not force)


def _stored_record_counts(output_dir: Path) -> dict[str, int]:
    """Records per task in the run store; InputError when there is no store or nothing in it
    (scoring would write empty results over the real ones)."""
    path = output_dir / STORE_FILENAME
    if not path.is_file():
        raise InputError(
            f"no run store ({STORE_FILENAME}): nothing to score; the results already here "
            "are left as they are",
            path=output_dir,
        )
    check_intact(path)
    with RunStore(path) as store:
        counts = store.record_counts()
    if not counts:
        raise InputError(
            "the run store holds no stored outputs: nothing to score; the results already "
            "here are left as they are",
            path=path,
        )
    return counts


def _refuse_poorer_results(
    output_dir: Path, manifest: Manifest, tasks: list[str], counts: dict[str, int]
) -> None:
    """InputError when a task's new results would rest on fewer stored outputs than the ones
    in results.json (as the manifest noted when they were written)."""
    written: set[str] | None = None  # tasks in results.json, read only when a note lacks a count
    for name in tasks:
        note = manifest.tasks.get(name)
        noted = note.stored_records if note is not None else None
        now = counts.get(name, 0)
        if noted is not None:
            poorer, shown = now < noted, str(noted)
        else:  # results written before the manifest noted it
            if written is None:
                exists = (output_dir / RESULTS).is_file()
                written = set(read_results(output_dir, manifest)) if exists else set()
            poorer, shown = now == 0 and name in written, "some"
        if poorer:
            raise InputError(
                f"the run store holds {now} stored output(s) of {name}, but its results in "
                f"{RESULTS} were computed from {shown}: re-scoring would replace them with "
                "poorer ones (pass --force to do it anyway)",
                path=output_dir / STORE_FILENAME,
            )
