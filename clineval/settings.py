"""What a run setting is, beside its type, default and bounds: one `Setting` per RunConfig
field, attached to the field's annotation (`Annotated[int | None, Field(ge=1), Setting(...)]`).

RunConfig's fields are the one declaration of the run's settings: their name is the Python
API's keyword, their type, default and bounds are pydantic's, and the `Setting` says the rest.
Everything else is read from it at run time: the options of `clineval run` and their help
(clineval.cli.run_flags), the keys of a `--config` file and of `clineval config`
(clineval.config_file), the settings a resume must keep (clineval.runner), the ones the
shards of one run may differ in (clineval.merge), the ones `score` may change
(clineval.rescore), the ones the manifest masks, and the table in docs/command-line.md.

Internal: not part of clineval's public API (`clineval`, `clineval.benchmarks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# The sections of `clineval run --help` and of the docs' table, in the order they are shown.
MODEL, DATA, CONTROL, JUDGE, OUTPUT, BATCH = (
    "Model",
    "Data",
    "Run control",
    "Judge",
    "Output",
    "Batch",
)
BENCHMARK = "Benchmark flags (each one --option KEY of a benchmark)"
GROUPS = (MODEL, DATA, CONTROL, JUDGE, OUTPUT, BATCH, BENCHMARK)

# What a shell completes for a setting's value (clineval.cli.run_flags knows how).
Completion = Literal["tasks", "backends"]


@dataclass(frozen=True)
class Setting:
    """How a run setting is given and what it takes part in (see the module doc)."""

    help: str
    group: str | None  # a section of GROUPS; None for the tasks, the command's argument
    metavar: str | None = None  # None: a flag that takes no value (a bool)
    flag: str | None = None  # default: --NAME with dashes (timeout_s: --timeout)
    short: str | None = None  # -m
    argument: bool = False  # the command's positional argument (TASK...)
    path: bool = False  # a path: empty refused; the API takes os.PathLike
    # The answers depend on it: a run directory resumed with another value would mix runs.
    identity: bool = False
    # It says how, not what, a run asked: the shards of one run may differ in it (merge).
    per_shard: bool = False
    scoring: bool = False  # only scoring reads it: `clineval score` may change it
    # It may hold a credential (a URL's user:password): masked in the manifest.
    secret: bool = False
    complete: Completion | None = None

    def flag_of(self, name: str) -> str:
        """The command-line spelling of the setting called `name` (TASK for the argument)."""
        if self.argument:
            return (self.metavar or name).upper()
        return self.flag or "--" + name.replace("_", "-")

    def file_key(self, name: str) -> str:
        """The key of a --config file: the flag, written with underscores (`max_tokens`)."""
        if self.argument:
            return name
        return self.flag_of(name).removeprefix("--").replace("-", "_")
