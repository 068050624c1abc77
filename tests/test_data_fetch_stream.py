"""Streamed, bounded, verified downloads (clineval.data.download) and the fetch cache.

Every download goes to a real HTTP server on 127.0.0.1 (http.server in a thread) whose handler
serves fixture bytes made in the test, or misbehaves on purpose (fault injection): a body without
end, a body shorter than its Content-Length, a flipped byte, 503/429 with Retry-After.
"""

from __future__ import annotations

import base64
import fcntl
import gzip
import hashlib
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from cli_inprocess import clineval_inprocess
from route_mirror import Route, Serve

from clineval.benchmarks.registry import data_sources
from clineval.cli import main
from clineval.cli_output import stdout as results_console
from clineval.data import download as download_module
from clineval.data.cache import STAGING
from clineval.data.checksums import MISMATCH, OK, file_status, load_manifest
from clineval.data.digests import AnyOfCheck, GzipContentSha256Check, Sha256Check
from clineval.data.download import Pace, SizeBound, download_verified
from clineval.data.fetch import SIZE_CAP, fetch
from clineval.errors import InputError
from clineval.retry import RetryPolicy

FAST = RetryPolicy(max_retries=2, base_delay_s=0.001, max_delay_s=0.01, max_retry_after_s=0.01)
NCBI_FILES = [e.path for e in load_manifest() if e.group == "ner:ncbi"]
NCBI_FIRST = "ner/ncbi_disease/NCBItrainset_corpus.txt"  # fetched first: its size is the bound
NCBI_FIRST_SIZE = next(e.size for e in load_manifest() if e.path == NCBI_FIRST)


def body(data: bytes, declared: int | None = None, status: int = 200) -> Route:
    """Reply with `data`; `declared` is the Content-Length sent (more than len(data): the
    connection closes before the body is complete)."""

    def route(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        h.send_header("Content-Length", str(len(data) if declared is None else declared))
        h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(data)
        h.close_connection = True

    return route


def endless(declared: int | None = None) -> Route:
    """A body that never ends (no Content-Length, or a false one): writes until the client
    hangs up."""

    def route(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        if declared is not None:
            h.send_header("Content-Length", str(declared))
        h.send_header("Connection", "close")
        h.end_headers()
        block = b"x" * 65536
        while True:
            h.wfile.write(block)

    return route


def status(code: int, retry_after: str | None = None) -> Route:
    def route(h: BaseHTTPRequestHandler) -> None:
        h.send_response(code)
        if retry_after is not None:
            h.send_header("Retry-After", retry_after)
        h.send_header("Content-Length", "0")
        h.end_headers()

    return route


def in_turn(*routes: Route) -> Route:
    """The n-th request gets the n-th route (the last one from then on)."""
    calls = iter(range(10**9))

    def route(h: BaseHTTPRequestHandler) -> None:
        routes[min(next(calls), len(routes) - 1)](h)

    return route


def fixture_bytes(n: int, seed: int = 7) -> bytes:
    """Synthetic fixture content (not data): deterministic pseudo-random bytes."""
    return random.Random(seed).randbytes(n)


def cache_files(cache: Path) -> list[Path]:
    """Every file under the cache, staging area included."""
    return sorted(p for p in cache.rglob("*") if p.is_file()) if cache.exists() else []


def get(
    url: str,
    cache: Path,
    data: bytes,
    *,
    limit: int | None = None,
    retry: RetryPolicy = FAST,
    gzip_output: bool = False,
) -> Path:
    """download_verified of `url` onto cache/fixture/file.bin, expecting `data`'s sha256."""
    expected = hashlib.sha256(data).hexdigest()
    return download_verified(
        url,
        cache / "fixture" / "file.bin",
        staging_root=cache,
        bound=SizeBound(len(data) if limit is None else limit, "the size in the fixture"),
        check=lambda: Sha256Check(expected),
        what="fixture/file.bin",
        gzip_output=gzip_output,
        retry=retry,
    )


# --- download_verified on fixture bytes ------------------------------------------------------


def test_good_download_lands_verified_and_staging_is_clean(tmp_path: Path, serve: Serve) -> None:
    data = fixture_bytes(300_000)  # several chunks
    url, requests = serve({"/f": body(data)})
    cache = tmp_path / "cache"
    path = get(url + "/f", cache, data)
    assert path.read_bytes() == data
    assert cache_files(cache) == [path]  # nothing left in the staging area
    assert len(requests) == 1


def test_gzip_output_stores_the_checked_body_compressed(tmp_path: Path, serve: Serve) -> None:
    data = b"fixture line\n" * 5000
    url, _ = serve({"/f": body(data)})
    path = get(url + "/f", tmp_path / "cache", data, gzip_output=True)
    assert gzip.decompress(path.read_bytes()) == data


def test_corrupt_byte_is_an_error_and_nothing_is_cached(tmp_path: Path, serve: Serve) -> None:
    data = fixture_bytes(100_000)
    bad = bytearray(data)
    bad[50_000] ^= 0x01
    url, requests = serve({"/f": body(bytes(bad))})
    cache = tmp_path / "cache"
    with pytest.raises(InputError, match=r"checksum mismatch for fixture/file\.bin") as info:
        get(url + "/f", cache, data)
    assert info.value.path == str(cache / "fixture" / "file.bin")
    assert cache_files(cache) == []
    assert len(requests) == 1  # a wrong body is final: the same server would send it again


def test_truncated_body_is_retried_then_an_error_and_nothing_is_cached(
    tmp_path: Path, serve: Serve
) -> None:
    """Content-Length larger than the body, then the connection closes."""
    data = fixture_bytes(100_000)
    url, requests = serve({"/f": body(data[:60_000], declared=len(data))})
    cache = tmp_path / "cache"
    with pytest.raises(InputError) as info:
        get(url + "/f", cache, data)
    assert info.value.message == (
        "download failed after 3 attempts: connection closed after 60,000 of 100,000 bytes"
    )
    assert info.value.path == url + "/f"
    assert len(requests) == FAST.max_retries + 1
    assert cache_files(cache) == []


def test_truncated_body_then_a_good_one(tmp_path: Path, serve: Serve) -> None:
    data = fixture_bytes(100_000)
    url, requests = serve({"/f": in_turn(body(data[:10], declared=len(data)), body(data))})
    path = get(url + "/f", tmp_path / "cache", data)
    assert path.read_bytes() == data
    assert len(requests) == 2


@pytest.mark.parametrize("declared", [None, 10**12], ids=["no-length", "huge-length"])
def test_endless_body_stops_at_the_bound(
    tmp_path: Path, serve: Serve, declared: int | None
) -> None:
    data = fixture_bytes(5_000)
    url, requests = serve({"/f": endless(declared)})
    cache = tmp_path / "cache"
    with pytest.raises(InputError) as info:
        get(url + "/f", cache, data)
    assert info.value.one_line() == (
        f"{url}/f: response body exceeds 5,000 bytes (the size in the fixture); "
        "download stopped, nothing written to the cache"
    )
    assert len(requests) == 1  # too large is final
    assert cache_files(cache) == []


def test_body_exactly_at_the_bound_is_accepted(tmp_path: Path, serve: Serve) -> None:
    data = fixture_bytes(65536 * 2)  # a multiple of the chunk size: EOF right at the bound
    url, _ = serve({"/f": body(data)})
    assert get(url + "/f", tmp_path / "cache", data).read_bytes() == data


def trickle(n: int, pause_s: float) -> Route:
    """A body of `n` bytes (so declared) sent a byte at a time with a pause between: a mirror
    that never stops but never gets anywhere."""

    def route(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(n))
        h.end_headers()
        for _ in range(n):  # ends when the client hangs up (a broken pipe)
            h.wfile.write(b"x")
            h.wfile.flush()
            time.sleep(pause_s)

    return route


def test_a_trickling_mirror_is_too_slow_after_a_window(tmp_path: Path, serve: Serve) -> None:
    """One byte per 20 ms against a pace of 1,000 bytes/s per 0.2 s window: each attempt is
    given up after its first window (the body would take 2,000 s at that pace), then the usual
    failure line. Only the message and the count are asserted, no time."""
    data = fixture_bytes(100_000)
    url, requests = serve({"/f": trickle(len(data), 0.02)})
    cache = tmp_path / "cache"
    with pytest.raises(InputError) as info:
        download_verified(
            url + "/f",
            cache / "fixture" / "file.bin",
            staging_root=cache,
            bound=SizeBound(len(data), "the size in the fixture"),
            check=lambda: Sha256Check(hashlib.sha256(data).hexdigest()),
            what="fixture/file.bin",
            retry=FAST,
            pace=Pace(min_rate=1000.0, window_s=0.2),
        )
    assert info.value.message.startswith("download failed after 3 attempts: too slow: ")
    assert "(at least 1,000 bytes/s needed)" in info.value.message
    assert len(requests) == FAST.max_retries + 1
    assert cache_files(cache) == []


def test_a_body_sent_in_small_pieces_at_the_pace_arrives(tmp_path: Path, serve: Serve) -> None:
    """read1 returns what each socket read brings: a body in many small writes is whole."""
    data = fixture_bytes(3_000)
    url, _ = serve({"/f": trickle_of(data, pieces=30)})
    assert get(url + "/f", tmp_path / "cache", data).read_bytes() == data


def trickle_of(data: bytes, pieces: int) -> Route:
    def route(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        step = len(data) // pieces
        for start in range(0, len(data), step):
            h.wfile.write(data[start : start + step])
            h.wfile.flush()

    return route


def test_a_redirect_to_ftp_is_not_followed(tmp_path: Path, serve: Serve) -> None:
    def to_ftp(h: BaseHTTPRequestHandler) -> None:
        h.send_response(302)
        h.send_header("Location", "ftp://127.0.0.1/file.bin")
        h.send_header("Content-Length", "0")
        h.end_headers()

    url, requests = serve({"/f": to_ftp})
    with pytest.raises(InputError, match="only http:// and https:// are followed") as info:
        get(url + "/f", tmp_path / "cache", b"x")
    assert info.value.path == url + "/f"
    assert len(requests) == 1  # final, not retried
    assert cache_files(tmp_path / "cache") == []


def test_retry_after_is_honoured_and_capped(
    tmp_path: Path, serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []
    monkeypatch.setattr(download_module.time, "sleep", waits.append)  # record, do not wait
    data = fixture_bytes(1000)
    url, requests = serve({"/f": in_turn(status(503, "7"), status(429, "86400"), body(data))})
    budget = RetryPolicy(max_retries=2, base_delay_s=0.5, max_delay_s=30.0, max_retry_after_s=30.0)
    assert get(url + "/f", tmp_path / "cache", data, retry=budget).read_bytes() == data
    # as asked, a day cut to the cap; each plus up to 10% jitter (a crowd does not return at once)
    assert 7.0 <= waits[0] <= 7.7 and 30.0 <= waits[1] <= 33.0 and len(waits) == 2
    assert len(requests) == 3


def test_retries_are_bounded_and_404_is_final(
    tmp_path: Path, serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []
    monkeypatch.setattr(download_module.time, "sleep", waits.append)
    url, requests = serve({"/busy": status(503), "/gone": status(404)})
    budget = RetryPolicy(max_retries=3, base_delay_s=1.0, max_delay_s=3.0, max_retry_after_s=3.0)
    with pytest.raises(InputError, match="download failed after 4 attempts: HTTP 503"):
        get(url + "/busy", tmp_path / "cache", b"x", retry=budget)
    assert len(requests) == 4
    assert len(waits) == 3  # no wait after the last attempt
    assert all(0.5 <= w <= 3.0 for w in waits)  # jittered backoff, never above the cap
    with pytest.raises(InputError, match="HTTP 404"):
        get(url + "/gone", tmp_path / "cache", b"x", retry=budget)
    assert len(requests) == 5


def test_credentials_are_sent_to_the_host_and_never_shown(tmp_path: Path, serve: Serve) -> None:
    data = fixture_bytes(2000)
    url, requests = serve({"/f": body(data), "/endless": endless()})
    authed = url.replace("http://", "http://reader:s3cr%40t-pass@")
    assert get(authed + "/f", tmp_path / "cache", data).read_bytes() == data
    expected = "Basic " + base64.b64encode(b"reader:s3cr@t-pass").decode()
    assert requests[-1] == ("/f", expected)
    with pytest.raises(InputError) as info:
        get(authed + "/endless", tmp_path / "cache2", data)
    line = info.value.one_line()
    assert "s3cr" not in line and "reader" not in line
    assert line.startswith(url.replace("http://", "http://***@") + "/endless: ")


# --- the checks --------------------------------------------------------------------------


def _feed(check: GzipContentSha256Check | AnyOfCheck, data: bytes, step: int = 1000) -> None:
    for i in range(0, len(data), step):
        check.update(data[i : i + step])


def test_gzip_content_check() -> None:
    content = b"fixture content\n" * 4000
    digest = hashlib.sha256(content).hexdigest()
    packed = gzip.compress(content, mtime=0)

    ok = GzipContentSha256Check(digest, len(content))
    _feed(ok, packed)
    assert ok.problem() is None

    two_members = gzip.compress(content[:100], mtime=0) + gzip.compress(content[100:], mtime=0)
    multi = GzipContentSha256Check(digest, len(content))
    _feed(multi, two_members, step=7)
    assert multi.problem() is None

    cut = GzipContentSha256Check(digest, len(content))
    _feed(cut, packed[: len(packed) // 2])
    assert cut.problem() == "gzip data ends early"

    # a small gzip that inflates past the bound stops there (a gzip bomb costs nothing)
    bomb = GzipContentSha256Check(digest, 1000)
    _feed(bomb, gzip.compress(b"\0" * 50_000_000))
    assert bomb.problem() == "gzip content larger than 1,000 bytes"

    plain = GzipContentSha256Check(digest, len(content))
    _feed(plain, content)
    assert (plain.problem() or "").startswith("not valid gzip data")

    either = AnyOfCheck(Sha256Check(hashlib.sha256(b"other").hexdigest()), ok)
    assert either.problem() is None


# --- the corpus fetch and its cache ----------------------------------------------------------


def _mirror(data_root: Path) -> Route:
    """Serve files of the real data root by their relative path (the --base-url layout)."""

    def route(h: BaseHTTPRequestHandler) -> None:
        rel = h.path.lstrip("/")
        path = data_root / rel
        if ".." in rel or not path.is_file():
            h.send_error(404)
            return
        body(path.read_bytes())(h)

    return route


def test_fetch_removes_leftover_partials_but_not_live_ones(
    data_root: Path, tmp_path: Path, serve: Serve
) -> None:
    cache = tmp_path / "cache"
    staging = cache / STAGING
    staging.mkdir(parents=True)
    (staging / "NCBItrainset_corpus.txt.dead.part").write_bytes(b"left by a killed fetch")
    live = staging / "LICENSE.txt.live.part"
    live.write_bytes(b"being written")
    fd = os.open(live, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as a running fetch holds it
    try:
        url, _ = serve({"*": _mirror(data_root)})
        fetch(data_sources()["ncbi"], cache_dir=cache, base_url=url, retry=FAST)
        assert sorted(p.name for p in staging.iterdir()) == [live.name]
    finally:
        os.close(fd)
    fetch(data_sources()["ncbi"], cache_dir=cache, base_url=url, retry=FAST)
    assert not staging.exists()  # the leftover went, then the empty staging directory
    assert [p.relative_to(cache).as_posix() for p in cache_files(cache)] == sorted(NCBI_FILES)


def test_corrupt_cached_file_is_reported_then_replaced(
    data_root: Path,
    tmp_path: Path,
    serve: Serve,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, requests = serve({"*": _mirror(data_root)})
    cache = tmp_path / "cache"
    fetch_args = ["--quiet", "data", "fetch", "ncbi", "--cache-dir", str(cache), "--base-url", url]
    assert main(fetch_args) == 0
    assert main(["data", "verify", "--cache-dir", str(cache)]) == 0
    capsys.readouterr()

    bad = cache / "ner/ncbi_disease/NCBIdevelopset_corpus.txt"
    data = bytearray(bad.read_bytes())
    data[1000] ^= 0x20  # one flipped bit, same size
    bad.write_bytes(bytes(data))
    assert main(["data", "verify", "--cache-dir", str(cache)]) == 2
    out = "".join(capsys.readouterr().out.split())
    assert f"FAIL{bad}:{MISMATCH}".replace(" ", "") in out

    # With no option, `data verify` checks the data root and the default cache, where a
    # `data fetch` without --cache-dir puts its files.
    monkeypatch.setenv("CLINEVAL_CACHE_DIR", str(cache))
    monkeypatch.setenv("CLINEVAL_DATA_DIR", str(data_root))
    assert main(["data", "verify"]) == 2
    out = "".join(capsys.readouterr().out.split())
    assert f"fetchcache{cache.resolve()}" in out and f"FAIL{bad}:" in out

    seen = len(requests)
    assert main(["--quiet", "data", "fetch", "ncbi", "--base-url", url]) == 0
    assert [p for p, _ in requests[seen:]] == ["/ner/ncbi_disease/NCBIdevelopset_corpus.txt"]
    assert file_status(cache, "ner/ncbi_disease/NCBIdevelopset_corpus.txt") == OK
    assert main(["data", "verify"]) == 0
    assert main(["data", "verify", "--cache-dir", str(cache)]) == 0


def test_verify_cache_dir_must_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere"
    assert main(["data", "verify", "--cache-dir", str(missing)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {missing}: cache directory does not exist (--cache-dir)"
    )


def test_verify_without_any_directory_is_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import clineval.datapaths as datapaths

    monkeypatch.setattr(datapaths, "_default_candidates", lambda: [])  # no ../shared/data
    monkeypatch.delenv("CLINEVAL_DATA_DIR", raising=False)
    monkeypatch.setenv("CLINEVAL_CACHE_DIR", str(tmp_path / "empty-cache"))
    assert main(["data", "verify"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: no data directory: pass --data-dir")


@pytest.mark.parametrize(
    ("base_url", "problem"),
    [
        ("ftp://127.0.0.1/data", "must start with http:// or https://"),
        ("file:///etc", "must start with http:// or https://"),
        ("http://127.0.0.1:99999", "has an invalid port"),
        ("http://127.0.0.1:abc", "has an invalid port"),
        ("http:///nohost", "has no host"),
        ("http://[::1", "is not a valid URL"),
        ("http://[zz::1]/", "is not a valid URL"),
    ],
)
def test_bad_base_url_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], base_url: str, problem: str
) -> None:
    cache = tmp_path / "cache"
    args = ["data", "fetch", "ncbi", "--cache-dir", str(cache), "--base-url", base_url]
    assert main(args) == 2
    assert capsys.readouterr().err.strip() == f"error: --base-url {base_url} {problem}"
    assert not cache.exists()


def test_cache_dir_that_is_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    cache.write_text("not a directory\n")
    assert main(["data", "fetch", "ncbi", "--cache-dir", str(cache)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {cache}: the cache directory is not a directory (--cache-dir)"
    )


def test_every_fetched_file_has_a_size_bound_in_the_manifest() -> None:
    """Only files without a published checksum (never fetched) fall back to SIZE_CAP."""
    for entry in load_manifest():
        if entry.sha256 is None:
            continue
        assert isinstance(entry.size, int) and 0 < entry.size < SIZE_CAP
        if entry.sha256_uncompressed is not None:
            assert isinstance(entry.size_uncompressed, int)
            assert entry.size < entry.size_uncompressed < SIZE_CAP


# --- the whole command, in its own process -------------------------------------------------

# Address space the child may use: far above what the command needs, far below what reading
# an endless body into memory reaches; a regression fails fast instead of filling the machine.
_CHILD_ADDRESS_SPACE = 2 << 30


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_CHILD_ADDRESS_SPACE, _CHILD_ADDRESS_SPACE))


# `python -m clineval ARGS` that writes its own peak resident size (KiB) to PEAK_FILE at exit:
# the process's VmHWM, counted from its exec. (The rusage of a waited child is no measure
# here: it keeps the peak of the process it was forked from, and a pytest worker that ran many
# tests in process is itself past half a GiB.)
_NOTING_ITS_PEAK = """
import atexit, runpy, sys
peak_file = sys.argv.pop(1)
def note_peak():
    with open("/proc/self/status") as status:
        kib = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(peak_file, "w") as out:
        out.write(kib)
atexit.register(note_peak)
sys.argv[0] = "clineval"
runpy.run_module("clineval", run_name="__main__", alter_sys=True)
"""


def test_cli_endless_body_exits_2_and_memory_stays_flat(tmp_path: Path, serve: Serve) -> None:
    """`clineval data fetch` against a server that never stops sending: one error line naming
    the URL (credentials redacted) and the bound, exit 2, nothing in the cache, and a peak
    resident size that does not depend on the body (it is bounded by the manifest's size)."""
    url, requests = serve({"*": endless()})
    authed = url.replace("http://", "http://reader:hunter22@")
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLINEVAL_")}
    out_file, err_file = tmp_path / "stdout", tmp_path / "stderr"
    peak_file = tmp_path / "peak-kib"
    args = ["--quiet", "data", "fetch", "ncbi", "--cache-dir", str(cache), "--base-url", authed]
    with out_file.open("wb") as out_handle, err_file.open("wb") as err_handle:
        child = subprocess.Popen(
            [sys.executable, "-c", _NOTING_ITS_PEAK, str(peak_file), *args],
            stdout=out_handle,
            stderr=err_handle,
            env=env,
            preexec_fn=_limited,
        )
        child.wait(timeout=300)
    out, err = out_file.read_bytes(), err_file.read_bytes()
    peak_kib = int(peak_file.read_text())
    assert child.returncode == 2, err.decode()
    errors = [line for line in err.decode().splitlines() if "error" in line]  # not progress
    assert errors == [
        f"error: {url.replace('http://', 'http://***@')}/{NCBI_FIRST}: response body exceeds "
        f"{NCBI_FIRST_SIZE:,} bytes (the size of {NCBI_FIRST} in the package manifest); "
        "download stopped, nothing written to the cache"
    ]
    assert b"hunter22" not in out + err
    assert len(requests) == 1 and requests[0][1] is not None  # sent, with the credentials
    assert cache_files(cache) == []
    assert peak_kib < 512 * 1024


def test_cli_fetch_into_cache_then_verify(
    data_root: Path, tmp_path: Path, serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commands (in process; the process itself is the endless body's test): fetch from
    a mirror, verify the cache."""
    url, _ = serve({"*": _mirror(data_root)})
    cache = tmp_path / "cache"
    for name in [k for k in os.environ if k.startswith("CLINEVAL_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("CLINEVAL_CACHE_DIR", str(cache))
    monkeypatch.setattr(results_console, "width", 200)
    fetched = clineval_inprocess("data", "fetch", "ncbi", "--base-url", url)
    assert fetched.returncode == 0, fetched.stderr
    assert len(fetched.stdout.splitlines()) == len(NCBI_FILES)
    verified = clineval_inprocess("data", "verify", "--cache-dir", str(cache), quiet=False)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    shutil.rmtree(cache)


def test_ctrl_c_during_a_fetch_says_what_a_fetch_leaves(tmp_path: Path, serve: Serve) -> None:
    """Ctrl-C while a download trickles in: one line about the cache (not about model calls
    and a run store, which a fetch has none of), exit 130, no staging file left."""
    url, requests = serve({"*": trickle(NCBI_FIRST_SIZE, 0.05)})
    cache = tmp_path / "cache"
    command = [sys.executable, "-m", "clineval", "data", "fetch", "ncbi"]
    command += ["--cache-dir", str(cache), "--base-url", url]
    proc = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        # a test run from a background job inherits SIGINT ignored: the child needs the default
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    while not requests:  # the download has started
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err_bytes = proc.communicate(timeout=60)
    err = err_bytes.decode()
    assert proc.returncode == 130, err
    progress_line = re.compile(r"\d\d:\d\d:\d\d fetch ")
    assert [line for line in err.splitlines() if not progress_line.match(line)] == [
        "aborted (interrupted): every file in the cache passed its check (partial downloads "
        "are removed); run the same command again to fetch the rest"
    ]
    assert not list(cache.glob(f"{STAGING}/*"))
