"""The files a run's settings name, checked before the run writes anything.

A model spec may name a local file (`predictions:FILE`, `llamacpp:GGUF`, `hf:DIR`,
`gliner:DIR`) that the task only opens when it predicts, long after the run directory got its
manifest. A typo there
would leave a manifest recording the typo, and the corrected command would then be refused as
"another model". So the runner calls `check_run_inputs` once the tasks' data are loaded and
before its first write; the tasks still validate each file's content when they read it.
"""

from __future__ import annotations

from pathlib import Path

from clineval.config import RunConfig
from clineval.models.predictions_files import check_readable_file
from clineval.models.registry import ModelKind, backend_info
from clineval.models.spec import ModelSpec

__all__ = ["check_model_files", "check_readable_file", "check_run_inputs"]


def check_model_files(spec: ModelSpec) -> None:
    """The local file or directory a model spec names exists (servers are not contacted):
    its backend's registered check (clineval.models.registry)."""
    from clineval.benchmarks.registry import task_names

    backend_info(spec).check_files(spec, task_names)


def check_run_inputs(config: RunConfig) -> None:
    """Every file the run's model, judges and a benchmark's stand-in for the model
    (--verdicts: clineval.options.Option.replaces_model) name can be read."""
    for spec in config.models.all:
        check_model_files(spec)
    model = config.models.candidate
    if ModelKind.PREDICTIONS in backend_info(model).kinds:  # each file names a task of the run
        from clineval.benchmarks.registry import task_names
        from clineval.models.predictions_files import check_predictions_spec

        check_predictions_spec(model, config.tasks, task_names())
    from clineval.option_flags import stand_ins_given

    for _, option, value in stand_ins_given(config.options):  # a file in place of the model
        check_readable_file(Path(value).expanduser(), f"{option.name} file")
    from clineval.benchmarks.registry import benchmark_of

    benches = [bench for task in config.tasks if (bench := benchmark_of(task)) is not None]
    # a benchmark of several tasks (ner:*) checks once
    for bench in {bench.family: bench for bench in benches}.values():
        check = bench.check_settings_function()
        if check is not None:
            check(config)  # e.g. ClinConsensus: the file --judge-prompt names
    for name in config.batch_file_in:  # their lines are checked when the run opens its models
        check_readable_file(Path(name).expanduser(), "--batch-file-in file")
