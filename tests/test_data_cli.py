"""`clineval data verify` / `clineval data fetch`, checksums and downloads.

Downloads go to a real HTTP server on 127.0.0.1 (stdlib http.server in a thread) serving either
the real data root or a scratch mirror with one altered file (fault injection).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import shutil
import threading
from collections.abc import Callable, Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from clineval.benchmarks.registry import data_sources
from clineval.cli import main
from clineval.data import fetch as fetch_module
from clineval.data.checksums import (
    MISMATCH,
    MISSING,
    NOT_CHECKED,
    OK,
    file_status,
    load_manifest,
    sha256_file,
)
from clineval.data.fetch import Source, fetch
from clineval.errors import InputError
from clineval.retry import RetryPolicy

SOURCES = {name: source.files for name, source in data_sources().items()}
Serve = Callable[[Path], tuple[str, list[str]]]
NCBI_FILES = [e.path for e in load_manifest() if e.group == "ner:ncbi"]


class _CountingHandler(SimpleHTTPRequestHandler):
    """A plain static file server that records the paths it was asked for."""

    requests: list[str]

    def do_GET(self) -> None:
        self.requests.append(self.path)
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:  # keep test output clean
        return


@pytest.fixture
def serve() -> Iterator[Serve]:
    """serve(directory) -> (base_url, requested paths); servers stop at teardown."""
    servers: list[ThreadingHTTPServer] = []

    def start(directory: Path) -> tuple[str, list[str]]:
        requests: list[str] = []
        handler = type("Handler", (_CountingHandler,), {"requests": requests})
        server = ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(handler, directory=str(directory))
        )
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        host, port = server.server_address[:2]
        return f"http://{host!s}:{port}", requests

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _copy(data_root: Path, dest: Path, relatives: list[str]) -> None:
    for rel in relatives:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(data_root / rel, dest / rel)


def _flat(text: str) -> str:
    """Console output without whitespace: rich wraps long paths at the terminal width."""
    return "".join(text.split())


def _corrupt(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # one flipped bit, same size
    path.write_bytes(bytes(data))


# --- manifest --------------------------------------------------------------------------


def test_manifest_matches_source_md_and_real_files(data_root: Path) -> None:
    """Every pinned hash appears in the SOURCE.md of its folder and matches the real file."""
    sources = {
        top: (data_root / top / "SOURCE.md").read_text(encoding="utf-8")
        for top in ("ner", "tcm-sd")
    }
    checked = 0
    for entry in load_manifest():
        top = entry.path.split("/")[0]
        if top == "clinconsensus":  # pinned from the authors' manifest: test_clinconsensus_fetch
            continue
        if entry.sha256 is None:
            assert entry.optional
            continue
        assert entry.sha256 in sources[top]
        path = data_root / entry.path
        if entry.sha256_uncompressed is not None:
            assert entry.sha256_uncompressed in sources[top]
            assert len(gzip.decompress(path.read_bytes())) == entry.size_uncompressed
        assert path.stat().st_size == entry.size
        assert sha256_file(path) == hashlib.sha256(path.read_bytes()).hexdigest() == entry.sha256
        checked += 1
    # the files with a published hash: NCER 4 + 7 + 6 + 3 and TCM-SD 9 (docs/data-sources.md)
    assert checked == 29


def test_file_status(data_root: Path, tmp_path: Path) -> None:
    rel = "ner/ncbi_disease/LICENSE.txt"
    assert file_status(data_root, rel) == OK
    assert file_status(tmp_path, rel) == MISSING
    assert file_status(None, rel) == MISSING
    _copy(data_root, tmp_path, [rel])
    _corrupt(tmp_path / rel)
    assert file_status(tmp_path, rel) == MISMATCH
    (tmp_path / "tcm-sd").mkdir()
    (tmp_path / "tcm-sd/train.json").write_text("{}\n")  # no published hash
    assert file_status(tmp_path, "tcm-sd/train.json") == NOT_CHECKED


def test_regzipped_copy_checks_by_content(data_root: Path, tmp_path: Path) -> None:
    """A .gz with other bytes but the same content (another gzip) is ok; other content is not."""
    rel = "ner/biored/Test.BioC.XML.gz"
    content = gzip.decompress((data_root / rel).read_bytes())
    (tmp_path / rel).parent.mkdir(parents=True)
    (tmp_path / rel).write_bytes(gzip.compress(content, compresslevel=1, mtime=123))
    assert sha256_file(tmp_path / rel) != sha256_file(data_root / rel)
    assert file_status(tmp_path, rel) == OK
    (tmp_path / rel).write_bytes(gzip.compress(content + b" ", mtime=0))
    assert file_status(tmp_path, rel) == MISMATCH


# --- data verify -------------------------------------------------------------------------


def test_verify_real_data_root(data_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "verify", "--data-dir", str(data_root)]) == 0
    out = _flat(capsys.readouterr().out)
    assert "ner/ncbi_disease/NCBItestset_corpus.txt" in out
    assert "MISMATCH" not in out


def test_verify_corrupted_copy_exits_2(
    data_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _copy(data_root, tmp_path, NCBI_FILES)
    assert main(["data", "verify", "--data-dir", str(tmp_path)]) == 0  # other corpora absent
    capsys.readouterr()
    _corrupt(tmp_path / "ner/ncbi_disease/NCBIdevelopset_corpus.txt")
    assert main(["data", "verify", "--data-dir", str(tmp_path)]) == 2
    out = _flat(capsys.readouterr().out)
    assert "MISMATCH" in out
    assert _flat("ner/ncbi_disease/NCBIdevelopset_corpus.txt: checksum mismatch") in out


def test_verify_incomplete_corpus_and_empty_dir_fail(
    data_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "verify", "--data-dir", str(tmp_path)]) == 2
    assert "noknowndatafile" in _flat(capsys.readouterr().out)
    _copy(data_root, tmp_path, NCBI_FILES[:2])
    assert main(["data", "verify", "--data-dir", str(tmp_path)]) == 2
    assert "ner:ncbiisincomplete" in _flat(capsys.readouterr().out)


def test_verify_missing_data_dir_is_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere"
    assert main(["data", "verify", "--data-dir", str(missing)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {missing}: data directory does not exist"


# --- data fetch ----------------------------------------------------------------------------


def test_fetch_from_mirror_verifies_and_skips_present_files(
    data_root: Path, tmp_path: Path, serve: Serve
) -> None:
    base_url, requests = serve(data_root)
    cache = tmp_path / "cache"
    paths = fetch(data_sources()["ncbi"], cache_dir=cache, base_url=base_url)
    assert sorted(p.relative_to(cache).as_posix() for p in paths) == sorted(NCBI_FILES)
    for rel in NCBI_FILES:
        assert file_status(cache, rel) == OK
    assert len(requests) == len(NCBI_FILES)
    assert not list(cache.rglob("*.part"))
    # Second run: everything present with the right hash, nothing downloaded.
    fetch(data_sources()["ncbi"], cache_dir=cache, base_url=base_url)
    assert len(requests) == len(NCBI_FILES)
    # A corrupted cached file is downloaded again and repaired.
    _corrupt(cache / NCBI_FILES[0])
    fetch(data_sources()["ncbi"], cache_dir=cache, base_url=base_url)
    assert len(requests) == len(NCBI_FILES) + 1
    assert file_status(cache, NCBI_FILES[0]) == OK


def test_fetch_chia_from_mirror_then_load(data_root: Path, tmp_path: Path, serve: Serve) -> None:
    """The fetched cache works as a data root: CHIA gold equals the shared data's."""
    from clineval.benchmarks.ner.corpora import load_ner_split

    base_url, _ = serve(data_root)
    cache = tmp_path / "cache"
    paths = fetch(data_sources()["chia"], cache_dir=cache, base_url=base_url)
    assert len(paths) == 3  # both zips + the split ids (a mirror has them)
    fetched = load_ner_split("chia", "test", cache)
    reference = load_ner_split("chia", "test", data_root)
    assert [(d.id, d.entities) for d in fetched.documents] == [
        (d.id, d.entities) for d in reference.documents
    ]


def test_fetch_corrupted_file_leaves_nothing(data_root: Path, tmp_path: Path, serve: Serve) -> None:
    mirror = tmp_path / "mirror"
    _copy(data_root, mirror, NCBI_FILES)
    bad = "ner/ncbi_disease/NCBItestset_corpus.txt"
    _corrupt(mirror / bad)
    base_url, _ = serve(mirror)
    cache = tmp_path / "cache"
    with pytest.raises(InputError, match="checksum mismatch") as info:
        fetch(data_sources()["ncbi"], cache_dir=cache, base_url=base_url)
    assert info.value.path == str(cache / bad)
    assert not (cache / bad).exists()
    assert not list(cache.rglob("*.part"))


def test_fetch_404_is_a_clear_error(tmp_path: Path, serve: Serve) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    base_url, requests = serve(empty)
    with pytest.raises(InputError, match=r"HTTP 404 .*NCBItrainset_corpus\.txt"):
        fetch(data_sources()["ncbi"], cache_dir=tmp_path / "cache", base_url=base_url)
    assert len(requests) == 1  # a 404 is final: no retries
    assert not (tmp_path / "cache" / "ner").exists()


def test_fetch_gzips_uncompressed_upstream_file(
    data_root: Path, tmp_path: Path, serve: Serve
) -> None:
    """Official BioC XML is served uncompressed: checked against the content hash, gzipped."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    rel = "ner/bc5cdr/CDR_TestSet.BioC.xml.gz"
    (upstream / "CDR_TestSet.BioC.xml").write_bytes(gzip.decompress((data_root / rel).read_bytes()))
    base_url, _ = serve(upstream)
    entry = next(e for e in load_manifest() if e.path == rel)
    source = Source(rel, f"{base_url}/CDR_TestSet.BioC.xml", gzip_here=True)
    cache = tmp_path / "cache"
    path = fetch_module._fetch_one(source, entry, cache, None)
    assert path == cache / rel
    assert file_status(cache, rel) == OK
    assert gzip.decompress(path.read_bytes()) == gzip.decompress((data_root / rel).read_bytes())


def test_fetch_replaces_a_truncated_gzip_in_the_cache(
    data_root: Path, tmp_path: Path, serve: Serve
) -> None:
    """A cached .gz cut short (gzip header, no end) is downloaded again, not an error."""
    rel = "ner/bc5cdr/CDR_TestSet.BioC.xml.gz"
    cache = tmp_path / "cache"
    (cache / rel).parent.mkdir(parents=True)
    good = (data_root / rel).read_bytes()
    (cache / rel).write_bytes(good[: len(good) // 2])
    base_url, requests = serve(data_root)
    entry = next(e for e in load_manifest() if e.path == rel)
    path = fetch_module._fetch_one(Source(rel, None), entry, cache, base_url)
    assert requests == [f"/{rel}"]
    assert path.read_bytes() == good
    assert file_status(cache, rel) == OK


def test_official_sources_cover_every_required_ner_file() -> None:
    official = {
        s.relative
        for sources in SOURCES.values()
        for s in sources
        if s.url and s.relative[:4] == "ner/"
    }
    required = {e.path for e in load_manifest() if e.group.startswith("ner:") and not e.optional}
    assert official == required
    for sources in SOURCES.values():
        for source in sources:
            assert source.url is None or source.url.startswith("https://raw.githubusercontent.com/")


def test_cli_fetch_ok_and_bad(
    data_root: Path,
    tmp_path: Path,
    serve: Serve,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base_url, _ = serve(data_root)
    cache = tmp_path / "cache"
    args = ["--quiet", "data", "fetch", "biored", "--cache-dir", str(cache), "--base-url", base_url]
    assert main(args) == 0
    out = _flat(capsys.readouterr().out)
    assert str(cache / "ner/biored/Test.PubTator") in out
    assert main(["data", "verify", "--data-dir", str(cache)]) == 0
    capsys.readouterr()

    assert main(["data", "fetch", "mimic", "--cache-dir", str(cache)]) == 2
    assert capsys.readouterr().err.strip().startswith("error: unknown corpus 'mimic'")

    mirror = tmp_path / "mirror"
    _copy(data_root, mirror, NCBI_FILES)
    _corrupt(mirror / "ner/ncbi_disease/LICENSE.txt")
    bad_url, _ = serve(mirror)
    args = ["--quiet", "data", "fetch", "ncbi", "--cache-dir", str(cache), "--base-url", bad_url]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "LICENSE.txt" in err[0] and "checksum mismatch" in err[0]


def test_default_cache_dir_honours_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLINEVAL_CACHE_DIR", str(tmp_path / "c"))
    assert fetch_module.default_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("CLINEVAL_CACHE_DIR")
    assert fetch_module.default_cache_dir() == Path.home() / ".cache" / "clineval" / "data"


class _FlakyHandler(SimpleHTTPRequestHandler):
    """Fault injection: answers 503 to the first `failures` requests, then serves files."""

    failures: int
    seen: list[str]

    def do_GET(self) -> None:
        self.seen.append(self.path)
        if len(self.seen) <= self.failures:
            self.send_error(503, "try later")
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        return


def _flaky_server(directory: Path, failures: int) -> tuple[ThreadingHTTPServer, list[str]]:
    seen: list[str] = []
    handler = type("Flaky", (_FlakyHandler,), {"failures": failures, "seen": seen})
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(directory))
    )
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server, seen


@pytest.mark.parametrize(("failures", "succeeds"), [(2, True), (3, False)])
def test_fetch_retries_server_errors_a_bounded_number_of_times(
    data_root: Path,
    tmp_path: Path,
    failures: int,
    succeeds: bool,
) -> None:
    fast = RetryPolicy(max_retries=2, base_delay_s=0.01, max_delay_s=0.05)  # keep the test fast
    mirror = tmp_path / "mirror"
    _copy(data_root, mirror, NCBI_FILES)
    server, seen = _flaky_server(mirror, failures)
    host, port = server.server_address[:2]
    try:
        if succeeds:
            paths = fetch(
                data_sources()["ncbi"], tmp_path / "cache", f"http://{host!s}:{port}", retry=fast
            )
            assert len(paths) == len(NCBI_FILES)
            assert len(seen) == len(NCBI_FILES) + failures
        else:
            with pytest.raises(InputError, match="download failed after 3 attempts: HTTP 503"):
                fetch(
                    data_sources()["ncbi"],
                    tmp_path / "cache",
                    f"http://{host!s}:{port}",
                    retry=fast,
                )
            assert len(seen) == fast.max_retries + 1
            assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    finally:
        server.shutdown()
        server.server_close()
