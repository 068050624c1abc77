"""`--shard I/N`: a deterministic part of the samples, so N machines can split one run.

A sample belongs to shard I (1-based, I in 1..N) when the stable hash of its id, modulo N, is
I - 1. Membership depends on the id alone, never on file order, on --limit or on which other
samples exist, so the N shards are disjoint, together cover everything, and a shard rerun
later (resume) picks exactly the same samples. Apply it AFTER --limit: `--limit 100 --shard
1/4` runs shard 1 of the first 100 samples, and merging the four shards gives the unsharded
`--limit 100` run.

`--shard auto` takes I and N from a job array's environment, so one command line serves every
task of the array (`resolve_auto`): a Slurm array (SLURM_ARRAY_TASK_ID, _COUNT, _MIN and
_STEP: I = (ID - MIN) / STEP + 1, N = COUNT) or a Kubernetes Indexed Job
(JOB_COMPLETION_INDEX + 1, with N given as `--shard auto/N`: a pod is not told its Job's
completions). The run records the resolved I/N, so `clineval merge` sees ordinary shards.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from clineval.errors import InputError
from clineval.messages import clip

T = TypeVar("T")


# A whole number as written in a shard spec or a job array's environment: ASCII digits only.
# int() also takes "1_0" (as 10), "+3", " -1" and other scripts' digits ("\u0661" as 1).
_DIGITS = re.compile(r"[0-9]+")
# At most this many significant digits: a Slurm array index or count is below its
# MaxArraySize (at most 4,000,001), a Kubernetes completion index an int32. More is a broken
# environment, and int() of over 4,300 digits raises Python's own int-limit error.
MAX_DIGITS = 9


def _too_long(text: str) -> bool:
    return len(text.strip().lstrip("0")) > MAX_DIGITS


def _number(text: str) -> int | None:
    text = text.strip()
    return int(text) if _DIGITS.fullmatch(text) and not _too_long(text) else None


def _refuse_too_long(spec: str, texts: Iterable[str]) -> None:
    """A number of digits only that is too long is refused as too large, not as malformed."""
    for text in texts:
        if _DIGITS.fullmatch(text.strip()) and _too_long(text):
            digits = len(text.strip().lstrip("0"))
            raise InputError(
                f"--shard {clip(spec)}: a number of {digits:,} digits is too large "
                f"(at most {MAX_DIGITS} digits: fewer than 10^{MAX_DIGITS} shards)"
            )


def parse_shard(spec: str) -> tuple[int, int]:
    """ "I/N" -> (I, N) with 1 <= I <= N; InputError on anything else."""
    index_text, sep, count_text = spec.strip().partition("/")
    _refuse_too_long(spec, (index_text, count_text) if sep else ())
    index, count = _number(index_text) or 0, _number(count_text) or 0
    if not sep or count < 1 or not 1 <= index <= count:
        raise InputError(f"--shard {spec!r} is not I/N with 1 <= I <= N (e.g. 1/4 ... 4/4)")
    return index, count


KUBERNETES_INDEX = "JOB_COMPLETION_INDEX"


def is_auto(spec: str) -> bool:
    return spec.strip().lower().split("/", 1)[0] == "auto"


def _whole(environ: Mapping[str, str], name: str, default: int | None = None) -> int:
    raw = environ.get(name)
    if raw is None or not raw.strip():
        if default is None:
            raise InputError(f"--shard auto: {name} is not set (SLURM_ARRAY_TASK_ID is)")
        return default
    if _DIGITS.fullmatch(raw.strip()) and _too_long(raw):
        raise InputError(
            f"--shard auto: {name} has {len(raw.strip()):,} digits: at most {MAX_DIGITS} "
            "(a job array index or count is below 10^9)"
        )
    value = _number(raw)
    if value is None:
        raise InputError(
            f"--shard auto: {name}={raw[:40]!r} is not a whole number (0, 1, 2, ... in digits 0-9)"
        )
    return value


def resolve_auto(spec: str, environ: Mapping[str, str]) -> str:
    """ "auto" or "auto/N" -> "I/N" from a job array's environment (see the module doc);
    InputError naming --shard when the environment does not give a shard."""
    _, sep, count_text = spec.strip().partition("/")
    given: int | None = None
    if sep:
        _refuse_too_long(spec, (count_text,))
        given = _number(count_text) or 0
        if given < 1:
            raise InputError(f"--shard {spec!r}: write auto or auto/N with N >= 1")
    slurm = environ.get("SLURM_ARRAY_TASK_ID", "").strip()
    kube = environ.get(KUBERNETES_INDEX, "").strip()
    if slurm and kube:
        raise InputError(
            f"--shard auto: both SLURM_ARRAY_TASK_ID and {KUBERNETES_INDEX} are set; "
            "give --shard I/N"
        )
    if slurm:
        task_id = _whole(environ, "SLURM_ARRAY_TASK_ID")
        count = _whole(environ, "SLURM_ARRAY_TASK_COUNT")
        first = _whole(environ, "SLURM_ARRAY_TASK_MIN", 0)
        step = _whole(environ, "SLURM_ARRAY_TASK_STEP", 1)
        for name, value in (("SLURM_ARRAY_TASK_COUNT", count), ("SLURM_ARRAY_TASK_STEP", step)):
            if value < 1:  # not taken as 1: a scheduler never sets 0, so something else did
                raise InputError(f"--shard auto: {name}={value} must be at least 1")
        offset, off_step = divmod(task_id - first, step)
        if off_step or not 0 <= offset < count or count < 1:
            raise InputError(
                f"--shard auto: array task {task_id} is not one of {count} tasks from "
                f"{first} by {step} (the array must be a range, e.g. --array=0-{count - 1})"
            )
        if given is not None and given != count:
            raise InputError(
                f"--shard auto/{given}: the Slurm array has {count} tasks (SLURM_ARRAY_TASK_COUNT)"
            )
        return f"{offset + 1}/{count}"
    if kube:
        index = _whole(environ, KUBERNETES_INDEX)
        if given is None:
            raise InputError(
                f"--shard auto: {KUBERNETES_INDEX}={index} gives this pod's index, not the "
                "number of shards: write --shard auto/N with N = the Job's completions"
            )
        if not 0 <= index < given:
            raise InputError(
                f"--shard auto/{given}: {KUBERNETES_INDEX}={index} is not below {given} "
                "(N must be the Job's completions)"
            )
        return f"{index + 1}/{given}"
    raise InputError(
        "--shard auto: no job array in the environment (SLURM_ARRAY_TASK_ID of a Slurm array "
        f"job, or {KUBERNETES_INDEX} of a Kubernetes Indexed Job); give --shard I/N"
    )


def shard_of(sample_id: str, count: int) -> int:
    """The 1-based shard of a sample id among `count` shards."""
    digest = hashlib.sha256(str(sample_id).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def select_shard(
    ids: Iterable[T], shard_spec: str | None, key: Callable[[T], str] | None = None
) -> list[T]:
    """The members of shard I/N, in their given order; everything when `shard_spec` is None.

    `ids` are sample ids, or samples with `key(sample)` giving the id.
    """
    items = list(ids)
    if shard_spec is None:
        return items
    index, count = parse_shard(shard_spec)
    get_id = key or str
    return [item for item in items if shard_of(get_id(item), count) == index]
