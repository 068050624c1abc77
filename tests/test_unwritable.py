"""Places that cannot be written, for every command that writes: one `error:` line, exit 2.

The places are real (a path under a file, a symlink loop, a symlink to nothing, a name longer
than the file system allows, a directory of /proc); the writes go through the one writer
(clineval.rundir: make_dir, atomic_write_text), so each command meets the same CannotWrite.
A read-only file system and a full disk need a mount: the full disk is exercised in
tests/test_run_directory.py (SQLite's max_page_count) and below with an injected ENOSPC.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from test_run_directory import _run_args, _verdicts

from clineval import rundir
from clineval.cli import main
from clineval.rundir import CannotWrite, atomic_write_text


def _under_a_file(base: Path) -> Path:
    (base / "a-file").write_text("x", encoding="utf-8")
    return base / "a-file" / "sub"


def _symlink_loop(base: Path) -> Path:
    (base / "loop-a").symlink_to(base / "loop-b")
    (base / "loop-b").symlink_to(base / "loop-a")
    return base / "loop-a"


def _dangling(base: Path) -> Path:
    (base / "dangling").symlink_to(base / "nowhere" / "x")
    return base / "dangling"


def _name_too_long(base: Path) -> Path:
    return base / ("n" * 300)


def _proc(base: Path) -> Path:
    return Path("/proc/1/clineval-out")


PLACES: dict[str, Callable[[Path], Path]] = {
    "under a file": _under_a_file,
    "symlink loop": _symlink_loop,
    "symlink to nothing": _dangling,
    "name too long": _name_too_long,
}
if sys.platform.startswith("linux") and Path("/proc/1").is_dir():
    PLACES["/proc"] = _proc


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A finished ClinConsensus run and a finished --shard 1/1 run (verdicts files, no model)."""
    base = tmp_path_factory.mktemp("runs")
    verdicts = _verdicts(base / "verdicts.jsonl", 3)
    out = {}
    for name, extra in (("run", []), ("shard", ["--shard", "1/1"])):
        out[name] = base / name
        argv = ["--quiet", *_run_args(out[name], verdicts), *extra]
        assert main(argv) in (0, 1)  # 1: cases without verdicts count as judge errors
    out["verdicts"] = verdicts
    return out


COMMANDS: dict[str, Callable[[dict[str, Path], Path], list[str]]] = {
    "run": lambda r, place: _run_args(place, r["verdicts"]),
    "report": lambda r, place: ["report", str(r["run"]), "-o", str(place / "report.html")],
    "export": lambda r, place: [
        "export",
        str(r["run"]),
        "--format",
        "samples-csv",
        "-o",
        str(place),
    ],
    "merge": lambda r, place: ["merge", str(r["shard"]), "-o", str(place)],
    "skills install": lambda r, place: ["skills", "install", "--target", str(place)],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("place", list(PLACES))
def test_an_unwritable_place_is_one_line(
    command: str,
    place: str,
    runs: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = PLACES[place](tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    capsys.readouterr()
    assert main(["--quiet", *COMMANDS[command](runs, target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    # `run` checks its --output-dir before anything else and names the flag
    assert "cannot write" in err or (command == "run" and "--output-dir" in err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing made beside it


def test_no_space_is_cannot_write_and_a_last_word_goes_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Disk full (ENOSPC injected where the new file is made): CannotWrite naming the file,
    the old file intact; a run's final status (in_place_if_full) overwrites the old file
    within its blocks instead of being lost."""
    path = tmp_path / "manifest.json"
    old = json.dumps({"status": "running", "notes": "x" * 200}) + "\n"
    atomic_write_text(path, old)

    def no_space(target: Path, text: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(rundir, "_replace", no_space)
    with pytest.raises(CannotWrite, match="No space left") as caught:
        atomic_write_text(path, "{}\n")
    assert caught.value.path == str(path)
    assert path.read_text(encoding="utf-8") == old
    stopped = json.dumps({"status": "stopped: disk full"}) + "\n"
    atomic_write_text(path, stopped, in_place_if_full=True)
    assert path.read_text(encoding="utf-8") == stopped
    # More than the file's blocks hold cannot go in place: refused, the old file kept.
    with pytest.raises(CannotWrite, match="No space left"):
        atomic_write_text(path, "x" * 1_000_000, in_place_if_full=True)
    assert path.read_text(encoding="utf-8") == stopped


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_written_files_follow_the_umask(tmp_path: Path, umask: int) -> None:
    """Run files (and the cache's downloads, through the same new_file) get 0666 less the
    umask, like any file a program creates: not mkstemp's 0600 whatever the umask."""
    from clineval.data.cache import open_partial

    previous = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "results.json", "{}\n")
        fd, partial = open_partial(tmp_path / "cache", "file.bin")
        os.close(fd)
    finally:
        os.umask(previous)
    assert (tmp_path / "results.json").stat().st_mode & 0o777 == 0o666 & ~umask
    assert partial.stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.parametrize("place", list(PLACES))
def test_data_synth_into_an_unwritable_place_is_one_line(
    place: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from clineval.datapaths import resolve_data_root

    root = resolve_data_root(None)
    if root is None or not (root / "tcm-sd").is_dir():
        pytest.skip("the data root with tcm-sd/ (vocabulary, knowledge corpus) is not available")
    target = PLACES[place](tmp_path)
    argv = ["data", "synth", "tcm-sd", "--out", str(target), "--scale", "0.01"]
    assert main(["--quiet", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "cannot write" in err, err
