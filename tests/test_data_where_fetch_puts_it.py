"""Every task finds its data where `clineval data fetch` puts it, and a missing corpus names the
command that fetches it (in `clineval tasks` and in the run's error).

The commands run as a user meets them: a copy of the package outside any checkout (so there is
no `../shared/data` beside it), a working directory elsewhere, no data root, the corpus fetched
by the real command from a local HTTP mirror into the cache that `$CLINEVAL_CACHE_DIR` names.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from route_mirror import Route, Serve

import clineval
from clineval.benchmarks.ner.corpora import load_ner_split
from clineval.data.checksums import MISSING, OK, file_status, load_manifest, sha256_file
from clineval.datapaths import MissingDataFile, data_file, require_file, search_roots

NCBI_TEST = "ner/ncbi_disease/NCBItestset_corpus.txt"
NCBI_FILES = [e.path for e in load_manifest() if e.group == "ner:ncbi"]


def _mirror(data_root: Path) -> Route:
    """The real data files by their relative path (a `--base-url` mirror)."""

    def route(h: BaseHTTPRequestHandler) -> None:
        rel = h.path.lstrip("/")
        path = data_root / rel
        if ".." in rel or not path.is_file():
            h.send_error(404)
            return
        data = path.read_bytes()
        h.send_response(200)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    return route


@pytest.fixture
def installed(tmp_path: Path) -> Iterator[tuple[dict[str, str], Path, Path]]:
    """(env, working directory, cache): the package copied where no data root is beside it,
    a cwd far from any `shared/data`, the fetch cache named by $CLINEVAL_CACHE_DIR."""
    site = tmp_path / "site"
    shutil.copytree(
        Path(clineval.__file__).parent,
        site / "clineval",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    cwd = tmp_path / "somewhere" / "else"
    cwd.mkdir(parents=True)
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLINEVAL_", "PYTHON"))}
    env.update(
        PYTHONPATH=str(site),
        CLINEVAL_CACHE_DIR=str(cache),
        HOME=str(tmp_path / "home"),
        COLUMNS="250",
    )
    yield env, cwd, cache


def _clineval(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "clineval", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=900,
    )


def _task_row(listing: str, task: str) -> str:
    return next(line for line in listing.splitlines() if line.startswith(f"│ {task} "))


@pytest.mark.slow
def test_fetched_ncbi_runs_from_anywhere_without_a_data_root(
    data_root: Path, serve: Serve, installed: tuple[dict[str, str], Path, Path]
) -> None:
    env, cwd, cache = installed
    url, _ = serve({"*": _mirror(data_root)})
    fetched = _clineval(env, cwd, "--quiet", "data", "fetch", "ncbi", "--base-url", url)
    assert fetched.returncode == 0, fetched.stderr
    assert sorted(p.relative_to(cache).as_posix() for p in cache.rglob("*") if p.is_file()) == (
        sorted(NCBI_FILES)
    )

    listing = _clineval(env, cwd, "tasks")
    assert listing.returncode == 0, listing.stderr
    assert "data root: none" in listing.stdout
    assert f"fetch cache: {cache}" in listing.stdout
    assert "│ ok " in _task_row(listing.stdout, "ner:ncbi")
    assert "run 'clineval data fetch bc5cdr'" in _task_row(listing.stdout, "ner:bc5cdr")

    run = _clineval(
        env, cwd, "--quiet", "run", "ner:ncbi", "--model", "baseline:crf", "--limit", "3", "-o", "r"
    )
    assert run.returncode == 0, run.stderr
    results = json.loads((cwd / "r" / "results.json").read_text(encoding="utf-8"))["ner:ncbi"]
    assert results["n_documents"] == 3 and results["n_pred_spans"] > 0
    notes = json.loads((cwd / "r" / "manifest.json").read_text(encoding="utf-8"))["tasks"]
    files = notes["ner:ncbi"]["test_split"]["files"]
    # named by its path in the cache layout, with the hash of the fetched file
    assert files == [{"path": NCBI_TEST, "sha256": sha256_file(cache / NCBI_TEST)}]
    assert notes["ner:ncbi"]["crf_train_documents"] == 593  # trained from the cache as well


def test_a_missing_corpus_names_its_fetch_command(
    installed: tuple[dict[str, str], Path, Path],
) -> None:
    env, cwd, cache = installed
    listing = _clineval(env, cwd, "tasks")
    assert listing.returncode == 0, listing.stderr
    for task, name in (("ner:ncbi", "ncbi"), ("ner:chia", "chia"), ("tcm-sd", "tcm-sd")):
        assert f"missing: run 'clineval data fetch {name}'" in _task_row(listing.stdout, task)
    assert "data root: none" in listing.stdout

    run = _clineval(env, cwd, "run", "ner:ncbi", "--model", "baseline:crf", "-o", "r")
    assert run.returncode == 2
    assert run.stderr.splitlines() == [
        f"error: {cache / NCBI_TEST}: data file not in the fetch cache, and no data root "
        "(--data-dir, $CLINEVAL_DATA_DIR); run 'clineval data fetch ncbi'"
    ]
    assert not (cwd / "r" / "results.json").exists()

    empty_root = cwd / "empty-root"
    empty_root.mkdir()
    argv = ["run", "ner:chia", "--model", "baseline:crf", "-o", "r2", "--data-dir", "empty-root"]
    run = _clineval(env, cwd, *argv)
    assert run.returncode == 2
    assert run.stderr.splitlines() == [
        f"error: {empty_root.resolve() / 'ner/chia/chia_without_scope.zip'}: data file not "
        f"found, nor in the fetch cache {cache}; run 'clineval data fetch chia'"
    ]


def test_each_file_comes_from_the_data_root_else_the_cache(
    data_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rule file by file: the data root first, the cache for what the root lacks (a root
    with only the test split, the train split in the cache), nothing else searched."""
    cache, root = tmp_path / "cache", tmp_path / "root"
    monkeypatch.setenv("CLINEVAL_CACHE_DIR", str(cache))
    train = "ner/ncbi_disease/NCBItrainset_corpus.txt"
    for base, relative in ((root, NCBI_TEST), (cache, train), (cache, NCBI_TEST)):
        (base / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(data_root / relative, base / relative)
    assert search_roots(root) == [root, cache]
    assert search_roots(None) == [cache]
    assert search_roots(cache) == [cache]
    assert data_file(root, NCBI_TEST) == root / NCBI_TEST
    assert data_file(root, train) == cache / train
    assert data_file(None, NCBI_TEST) == cache / NCBI_TEST
    assert file_status(root, train) == OK and file_status(None, train) == OK
    dev = "ner/ncbi_disease/NCBIdevelopset_corpus.txt"
    assert data_file(root, dev) is None and file_status(root, dev) == MISSING
    with pytest.raises(MissingDataFile) as caught:
        require_file(root, dev)
    assert caught.value.relative == dev and caught.value.path == str(root / dev)
    # it crosses a process boundary whole (the CRF trains in worker processes)
    copied = pickle.loads(pickle.dumps(caught.value.with_hint("run 'x'")))
    assert isinstance(copied, MissingDataFile) and copied.relative == dev
    assert copied.one_line() == caught.value.with_hint("run 'x'").one_line()
    # the same documents whichever directory a split is read from
    from_root = load_ner_split("ncbi", "test", root).documents
    from_cache = load_ner_split("ncbi", "test", None).documents
    assert from_root == from_cache == load_ner_split("ncbi", "test", data_root).documents
    assert load_ner_split("ncbi", "train", root).notes["files"][0]["path"] == train
