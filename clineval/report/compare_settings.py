"""What differs between the runs of a comparison, and what each figure stands on.

A three-judge study is three runs with the same candidate: named by model alone they read as
three identical rows. So compare names, for every run, the settings that differ among the runs
(candidate, judges, judge prompt, seed, limit, shard, every option such as a ClinConsensus k,
and any other setting that changes what is scored), gives each leaderboard figure its n, and
flags a run whose samples of a task are not the samples the other runs scored (a `--limit 5`
run beside a full one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clineval.run_record import RunFiles
from clineval.secrets import redact

# Run settings that change how a run is made, not what it scores: never a difference.
_NOT_SCORED = frozenset(
    {
        "tasks",
        "data_dir",
        "base_urls",
        "judge_base_urls",
        "concurrency",
        "timeout_s",
        "max_retries",
        "price_table",
        "batch",
        "batch_models",
        "batch_file_out",
        "batch_file_in",
        "reuse",
        "output_dir",
    }
)
# Readable names of the settings a reader compares first, in this order.
_NAMES = {
    "model": "candidate",
    "judges": "judges",
    "judge_prompt": "judge prompt",
    "seed": "seed",
    "limit": "limit",
    "shard": "shard",
}


def _text(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, list | tuple):
        return ", ".join(_text(v) for v in value) if value else "(none)"
    return redact(str(value))


def settings_of(run: RunFiles) -> dict[str, str]:
    """A run's scored settings as text: its config's keys (options one by one, as
    `option NAME`), secrets redacted."""
    config = run.manifest.get("config")
    config = config if isinstance(config, dict) else {}
    out: dict[str, str] = {}
    for key, value in config.items():
        if key in _NOT_SCORED:
            continue
        if key == "options" and isinstance(value, dict):
            for name, option in value.items():
                out[f"option {name}"] = _text(option)
        else:
            out[_NAMES.get(key, key.replace("_", " "))] = _text(value)
    if "seed" not in out and "seed" in run.manifest:
        out["seed"] = _text(run.manifest.get("seed"))
    # the prompts the verdicts were made with, where a task's results record them: two runs
    # whose --judge-prompt paths match (or are both the default) can still differ there
    recorded = sorted(
        {
            str(p)
            for metrics in run.results.values()
            if isinstance(metrics.get("judge_prompt"), list)
            for p in metrics["judge_prompt"]
        }
    )
    if recorded:
        out["judge prompt"] = _text(recorded)
    return out


@dataclass(frozen=True)
class RunDifferences:
    """The settings that differ among the runs (in reading order) and each run's values."""

    keys: list[str]
    values: list[dict[str, str]]  # per run: key -> value, for `keys`

    def describe(self, i: int, skip: tuple[str, ...] = ()) -> str:
        """Run i's differing settings as one line, e.g. `judges openai:j2 · seed 1`
        (without the `skip` keys, e.g. the candidate where a model column names it)."""
        return " · ".join(
            f"{k} {self.values[i].get(k, '(none)')}" for k in self.keys if k not in skip
        )


def run_differences(runs: list[RunFiles]) -> RunDifferences:
    settings = [settings_of(run) for run in runs]
    seen: dict[str, None] = {}
    for s in settings:
        seen.update(dict.fromkeys(s))
    order = [*(_NAMES[k] for k in _NAMES), *sorted(seen)]
    keys = [
        k
        for k in dict.fromkeys(order)
        if k in seen and len({s.get(k, "(none)") for s in settings}) > 1
    ]
    values = [{k: s.get(k, "(none)") for k in keys} for s in settings]
    return RunDifferences(keys, values)


def sample_ids(run: RunFiles, task: str) -> frozenset[str] | None:
    """The ids of the samples run scored for task (None: it kept no samples)."""
    rows = run.samples.get(task)
    if not rows:
        return None
    return frozenset(str(r.get("id", k)) for k, r in enumerate(rows))


def differing_samples(runs: list[RunFiles], tasks: list[str]) -> dict[tuple[int, str], str]:
    """(run, task) -> how many samples it scored, for every run that did not score all the
    sample ids of a task that the runs scored between them (`5 of the 100 ...`): a `--limit`
    or a shard beside a full run. The full runs are not flagged."""
    out: dict[tuple[int, str], str] = {}
    for task in tasks:
        ids = {i: s for i, run in enumerate(runs) if (s := sample_ids(run, task)) is not None}
        if len(set(ids.values())) <= 1:
            continue
        union = frozenset().union(*ids.values())
        for i, s in ids.items():
            if s != union:
                out[(i, task)] = f"{len(s):,} of the {len(union):,} samples the runs scored"
    return out


def figure_n(run: RunFiles, task: str, basis: int | None) -> int | None:
    """What a figure stands on: its metric's declared basis, else the task's samples."""
    if basis is not None:
        return basis
    rows = run.samples.get(task)
    return len(rows) if rows else None
