"""`clineval merge DIR... -o OUT`: join the run directories of `--shard I/N` runs into one run.

Everything a result is computed from lives in the run store, so merging is: copy every shard's
stored calls, per-sample records and artifacts into OUT's store, write a manifest whose config
is the shards' config without `shard`, and re-score (`clineval.runner.score`) - the same code
path as `clineval score`, over all samples. Because the shards are a deterministic partition
of the sample ids (clineval.shard), the merged results equal those of an unsharded run.

Settings that only say HOW a shard ran (server URLs, concurrency, timeouts, retries, data
location, price table) may differ between shards; settings that change WHAT was asked (model,
judges, seed, temperature, limit, prompt, options, ...) must be identical, or the shards are
not parts of one run and the merge is refused.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path
from typing import Any

from clineval.config import declared_settings, with_spec_labels
from clineval.errors import InputError
from clineval.option_flags import manifest_config
from clineval.run_record import (
    Manifest,
    MergedShard,
    new_manifest,
    read_manifest,
    write_manifest,
)
from clineval.rundir import MANIFEST, RESULTS, SAMPLES
from clineval.rundir_lock import run_dir_lock
from clineval.shard import parse_shard
from clineval.store import STORE_FILENAME, RunStore, check_intact, store_error, transaction

log = logging.getLogger("clineval")

_TABLES = ("calls", "records", "artifacts")
# A shard in any other state (running: killed or still going; stopped: ...) lacks outputs it
# was meant to have; merging it would score the missing ones as judge errors or absent
# predictions, under a "merged" status that says nothing is missing.
_COMPLETE_STATUSES = frozenset({"finished", "failed"})
# The files a merge writes into its output directory.
_RUN_FILES = (STORE_FILENAME, MANIFEST, RESULTS, SAMPLES)


def _read_shard(run_dir: Path) -> tuple[Manifest, tuple[int, int]]:
    if not (run_dir / STORE_FILENAME).is_file():
        raise InputError("not a run directory (no run store)", path=run_dir)
    manifest = read_manifest(run_dir)
    check_intact(run_dir / STORE_FILENAME)
    shard = manifest.config.get("shard")
    if not shard:
        raise InputError("not a --shard run (its config has no shard)", path=run_dir / MANIFEST)
    if not isinstance(shard, str):
        raise InputError(f"config shard {shard!r} is not I/N", path=run_dir / MANIFEST)
    if manifest.status not in _COMPLETE_STATUSES:
        raise InputError(
            f"the shard run did not finish (status {manifest.status!r}): run its command again "
            "to complete it (it resumes from its store), then merge",
            path=run_dir / MANIFEST,
        )
    return manifest, parse_shard(shard)


def _check_output(output_dir: Path, config: dict[str, Any]) -> None:
    """Refuse an output directory that holds something other than an earlier merge of the same
    run: the merge would replace its manifest and results and mix two runs in one store."""
    present = [name for name in _RUN_FILES if (output_dir / name).exists()]
    if not present:
        return
    manifest_path = output_dir / MANIFEST
    if not manifest_path.exists():
        raise InputError(
            f"the merge output holds {', '.join(present)} but no run manifest: "
            "merge into a new directory",
            path=output_dir,
        )
    earlier = read_manifest(output_dir)
    if not earlier.merged_from:  # a merge's status becomes its re-score's; merged_from stays
        raise InputError(
            f"the merge output holds a run (status {earlier.status!r}) that is not a merge; "
            "merging into it would "
            "replace its results and mix two runs in one store: merge into a new directory",
            path=output_dir,
        )
    if _what_was_asked(earlier.config) != _what_was_asked({**config, "shard": None}):
        raise InputError(
            "the merge output holds the merge of another run: merge into a new directory",
            path=output_dir,
        )


def _what_was_asked(config: dict[str, Any]) -> dict[str, Any]:
    """The config without HOW fields; model and judge specs without their @URL (a shard may
    reach the same model at another address, as with --base-url)."""
    # a shard recorded by an older clineval (a benchmark's setting still a field) too
    asked = manifest_config(config)
    # the settings that say how, not what (Setting.per_shard): shards may differ in them
    how = {name for name, setting in declared_settings().items() if setting.per_shard}
    return with_spec_labels({k: v for k, v in asked.items() if k not in how})


def _check_same_run(configs: list[dict[str, Any]], run_dirs: list[Path]) -> None:
    first = _what_was_asked(configs[0])
    for config, run_dir in zip(configs[1:], run_dirs[1:], strict=True):
        other = _what_was_asked(config)
        differing = sorted(k for k in first.keys() | other.keys() if first.get(k) != other.get(k))
        if differing:
            raise InputError(
                f"shard differs from {run_dirs[0]} in {', '.join(differing)}: not parts of one run",
                path=run_dir / MANIFEST,
            )


def copy_store_rows(sources: list[Path], target_store: Path) -> dict[str, int]:
    """Copy calls, records and artifacts of each source store into the target store.

    Rows already present are kept (INSERT OR IGNORE): merging again is harmless, and a call
    that two shards both made (the same judge question) is stored once. A record key present
    in two shards with different values means the shards overlap; it is counted as a conflict.
    """
    RunStore(target_store).close()  # create the schema
    try:
        return _copy_rows(sources, target_store)
    except sqlite3.DatabaseError as exc:  # merge_runs checked the shards: the target is at fault
        error = store_error(target_store, exc)
        if error is None:
            raise
        raise error from exc


def _copy_rows(sources: list[Path], target_store: Path) -> dict[str, int]:
    counts = dict.fromkeys((*_TABLES, "record_conflicts"), 0)
    conn = sqlite3.connect(target_store, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout=10000")
        for source in sources:
            conn.execute("ATTACH DATABASE ? AS shard", (f"file:{source}?mode=ro",))
            try:
                with transaction(conn):
                    counts["record_conflicts"] += conn.execute(
                        "SELECT COUNT(*) FROM shard.records s JOIN main.records m"
                        " ON s.task = m.task AND s.kind = m.kind AND s.key = m.key"
                        " WHERE s.value != m.value"
                    ).fetchone()[0]
                    for table in _TABLES:
                        # rowid order keeps each shard's insertion order (records() relies on it).
                        cur = conn.execute(
                            f"INSERT OR IGNORE INTO main.{table} SELECT * FROM shard.{table}"
                            " ORDER BY rowid"
                        )
                        counts[table] += cur.rowcount
            finally:
                conn.execute("DETACH DATABASE shard")
    finally:
        conn.close()
    return counts


def merge_runs(run_dirs: list[Path], output_dir: Path) -> dict[str, Any]:
    """Merge shard run directories into output_dir and return the re-scored results."""
    from clineval.rescore import score  # late: runner imports every task module

    if not run_dirs:
        raise InputError("merge needs at least one shard run directory")
    run_dirs = [Path(d) for d in run_dirs]
    output_dir = Path(output_dir)
    # realpath, not Path.resolve: that raises on a symlink loop (make_dir then says what it is)
    if any(os.path.realpath(output_dir) == os.path.realpath(d) for d in run_dirs):
        raise InputError("the merge output must be a new directory, not one of the shards")
    shards = [_read_shard(d) for d in run_dirs]
    counts_n = {n for _, (_, n) in shards}
    if len(counts_n) != 1:
        raise InputError(f"shards of different splits: N in {sorted(counts_n)}")
    (n,) = counts_n
    seen: dict[int, Path] = {}
    for run_dir, (_, (index, _)) in zip(run_dirs, shards, strict=True):
        if index in seen:
            raise InputError(f"shard {index}/{n} given twice ({seen[index]})", path=run_dir)
        seen[index] = run_dir
    configs = [m.config for m, _ in shards]
    _check_same_run(configs, run_dirs)
    missing = sorted(set(range(1, n + 1)) - set(seen))
    if missing:
        log.warning("merging %d of %d shards; missing: %s", len(seen), n, missing)

    # score (below) takes the lock again: the same process, so it does not wait for itself
    with run_dir_lock(output_dir, create=True):
        # Checked under the lock, so a run starting in it meanwhile cannot slip past.
        _check_output(output_dir, configs[0])
        config = {**configs[0], "shard": None}
        manifest = new_manifest(config)
        manifest.merged_from = [
            MergedShard(
                run_dir=str(d),
                shard=m.config["shard"],
                status=m.status,
                started=m.started,
                finished=m.finished,
                git_revision=m.git_revision,
            )
            for d, (m, _) in zip(run_dirs, shards, strict=True)
        ]
        manifest.missing_shards = [f"{i}/{n}" for i in missing]
        # Written before the store: a merge stopped while copying leaves a directory that
        # says it is a merge of this run, so the same command may finish it.
        write_manifest(output_dir, manifest)
        counts = copy_store_rows(
            [d / STORE_FILENAME for d in run_dirs], output_dir / STORE_FILENAME
        )
        if counts["record_conflicts"]:
            log.warning(
                "%d per-sample records differ between shards (the shards overlap); the first "
                "shard's value was kept",
                counts["record_conflicts"],
            )
        manifest.merge_rows_copied = counts
        manifest.status = "merged"
        write_manifest(output_dir, manifest)
        return score(output_dir)
