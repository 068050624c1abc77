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
from clineval.errors import InputError
from clineval.models.spec import ModelSpec


def check_readable_file(path: Path, what: str) -> None:
    """`path` is a regular file this process can open, else InputError naming it."""
    if path.is_dir():
        raise InputError(f"{what}: expected a file, got a directory", path=path)
    try:
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        raise InputError(f"{what} not found", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror}", path=path) from None


def check_model_files(spec: ModelSpec) -> None:
    """The local file or directory a model spec names exists (servers are not contacted)."""
    if spec.backend == "predictions":
        from clineval.benchmarks.registry import task_names
        from clineval.models.predictions_files import predictions_map

        mapping = predictions_map(spec, task_names())
        for path in mapping.values() if mapping else [Path(spec.name).expanduser()]:
            check_readable_file(path, "predictions file")
    elif spec.backend == "llamacpp":
        from clineval.models.llamacpp_server import check_gguf

        check_gguf(spec.name)
    elif spec.backend == "hf":
        directory = Path(spec.name)
        if not directory.is_dir():
            raise InputError("hf model directory not found", path=directory)
        if not (directory / "config.json").is_file():
            raise InputError("not a Hugging Face checkpoint (no config.json)", path=directory)
        from clineval.models.hf_checkpoint import require_packages

        require_packages()  # else the run would write its manifest, then fail to import torch
    elif spec.backend == "gliner":
        from clineval.models.gliner_checkpoint import check_checkpoint_dir, require_package

        check_checkpoint_dir(spec.name)
        require_package()


def check_run_inputs(config: RunConfig) -> None:
    """Every file the run's model, judges and --verdicts name can be read."""
    for text in (config.model, *config.judges):
        check_model_files(ModelSpec.parse(text))
    model = ModelSpec.parse(config.model)
    if model.backend == "predictions":
        from clineval.benchmarks.registry import task_names
        from clineval.models.predictions_files import check_predictions_spec

        check_predictions_spec(model, config.tasks, task_names())
    if config.verdicts is not None:
        check_readable_file(Path(config.verdicts).expanduser(), "verdicts file")
    from clineval.benchmarks.registry import benchmark_of

    benches = [bench for task in config.tasks if (bench := benchmark_of(task)) is not None]
    for check in dict.fromkeys(bench.check_settings for bench in benches):
        if check is not None:
            check(config)  # e.g. ClinConsensus: the file --judge-prompt names
    for name in config.batch_file_in:  # their lines are checked when the run opens its models
        check_readable_file(Path(name).expanduser(), "--batch-file-in file")
