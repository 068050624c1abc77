"""`clineval data fetch tcm-sd` against a local HTTP mirror (http.server in a thread) that serves
a release made in the test: SYNTHETIC splits zipped like the upstream archive, and a code
archive holding the real label vocabulary and normalization table (so their pinned sha256s are
the real ones). Blob ids are computed here with `git hash-object`; the pinned ids are for the
real download only. A good fetch, a flipped byte, a truncated body, a corrupt or hostile
archive, an unzip interrupted by an exception and by SIGKILL: the cache never holds a partial
or unverified file."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from route_mirror import Route, Serve
from test_data_fetch_stream import FAST, body

from clineval.benchmarks.tcm_sd.fetch import (
    LICENSE_NOTICE,
    Release,
    UpstreamFile,
    fetch_tcm_sd,
    git_blob_id,
    official_release,
)
from clineval.benchmarks.tcm_sd.synthetic import write_synthetic
from clineval.cli import main
from clineval.data import unzip as unzip_module
from clineval.data.cache import STAGING
from clineval.data.cache_manifest import recorded_files
from clineval.data.digests import SpooledGitBlobSha1Check
from clineval.errors import InputError

TRAIN_DEV = "tcm-sd/upstream/TCM_SD_train_dev.zip"
CODE = "tcm-sd/upstream/TCM Code.zip"
TEST = "tcm-sd/test.json"
LOADER_FILES = ["train.json", "dev.json", "test.json", "syndrome_vocab.txt", "syndrome.txt"]


def git_hash(data: bytes) -> str:
    """The blob id as git itself computes it."""
    done = subprocess.run(
        ["git", "hash-object", "--stdin"], input=data, capture_output=True, check=True
    )
    return done.stdout.decode().strip()


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


class Mirror:
    """A release made in the test: its files by relative path, and the Release that pins
    them (blob ids from git; the vocabulary and table pinned as the package pins them)."""

    def __init__(self, splits: dict[str, bytes], vocab: bytes, table: bytes) -> None:
        self.splits = splits
        train_dev = {
            "TCM_SD_train_dev/train.json": splits["train"],
            "TCM_SD_train_dev/dev.json": splits["dev"],
            "__MACOSX/TCM_SD_train_dev/._train.json": b"\x00\x05\x16\x07resource fork",
        }
        code = {
            "TCM/data_preprocess/syndrome_vocab.txt": vocab,
            "TCM/data_preprocess/syndrome.txt": table,
            "TCM/data_preprocess/utils.py": b"# not unpacked\n",
        }
        self.files = {TRAIN_DEV: _zip(train_dev), TEST: splits["test"], CODE: _zip(code)}
        self.official = official_release()

    def release(self, **replace: bytes) -> Release:
        """The pins of this mirror's files (or of `replace`d bytes, to pin a corrupt copy)."""
        official = self.official
        files = tuple(
            UpstreamFile(
                u.path,
                u.relative,
                git_hash(replace.get(u.relative, self.files[u.relative])),
                None,
                u.cap,
            )
            for u in official.files
        )
        return Release(files=files, members=official.members)


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory, data_root_tcm: Path) -> Mirror:
    out = tmp_path_factory.mktemp("synthetic-tcm")
    write_synthetic(out, seed=3, data_dir=data_root_tcm, scale=0.02)
    splits = {
        s: (out / "tcm-sd" / f"{s}.synthetic.json").read_bytes() for s in ("train", "dev", "test")
    }
    zy = data_root_tcm / "tcm-sd" / "zy-bert"
    return Mirror(
        splits, (zy / "syndrome_vocab.txt").read_bytes(), (zy / "syndrome.txt").read_bytes()
    )


@pytest.fixture(scope="module")
def data_root_tcm() -> Path:
    from clineval.datapaths import resolve_data_root

    root = resolve_data_root(None)
    if root is None or not (root / "tcm-sd" / "zy-bert" / "syndrome_vocab.txt").is_file():
        pytest.skip("the shared data root with tcm-sd/zy-bert is not available")
    return root


def _routes(files: dict[str, bytes]) -> dict[str, Route]:
    from urllib.parse import quote

    return {"/" + quote(relative): body(data) for relative, data in files.items()}


def _cache_files(cache: Path) -> list[str]:
    return sorted(
        str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file() and "lock" not in p.name
    )


def _no_partials(cache: Path) -> bool:
    staging = cache / STAGING
    return not staging.exists() or not any(staging.iterdir())


# ---- the git blob check ----------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 65535, 65536, 200_001])
def test_blob_ids_are_gits_own(tmp_path: Path, size: int) -> None:
    data = bytes((i * 7 + 3) % 256 for i in range(size))
    expected = git_hash(data)
    path = tmp_path / "f"
    path.write_bytes(data)
    assert git_blob_id(path) == expected
    check = SpooledGitBlobSha1Check(expected, tmp_path / "spool")
    for start in range(0, size, 4096):
        check.update(data[start : start + 4096])
    assert check.problem() is None
    wrong = SpooledGitBlobSha1Check(expected, tmp_path / "spool")
    wrong.update(data + b"!")
    assert "git blob id" in (wrong.problem() or "")
    assert list((tmp_path / "spool").iterdir()) == []  # the spool has no name on disk


# ---- good fetch -----------------------------------------------------------------------------


def test_good_fetch_lays_out_a_data_root_that_tcm_sd_runs_on(
    tmp_path: Path, mirror: Mirror, serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, requests = serve(_routes(mirror.files))
    cache = tmp_path / "cache"
    paths = fetch_tcm_sd(cache, base, FAST, mirror.release())
    for name in LOADER_FILES:
        assert cache / "tcm-sd" / name in paths
    assert (cache / "tcm-sd" / "train.json").read_bytes() == mirror.splits["train"]
    assert (cache / "tcm-sd" / "dev.json").read_bytes() == mirror.splits["dev"]
    assert (cache / "tcm-sd" / "test.json").read_bytes() == mirror.splits["test"]
    assert not (cache / "tcm-sd" / "utils.py").exists()  # only what the loader reads
    assert not (cache / "tcm-sd" / "syndrome_knowledge.json").exists()  # optional, absent here
    assert _no_partials(cache)
    records = recorded_files(cache)
    for relative in ("tcm-sd/train.json", "tcm-sd/syndrome_vocab.txt", TEST, TRAIN_DEV):
        data = (cache / relative).read_bytes()
        assert records[relative]["sha256"] == hashlib.sha256(data).hexdigest()
        assert records[relative]["size"] == len(data)
    assert records["tcm-sd/train.json"]["source"].endswith(
        "TCM_SD_train_dev.zip!TCM_SD_train_dev/train.json"
    )

    # A second fetch downloads and unpacks nothing.
    seen = len(requests)
    stamps = {p: p.stat().st_mtime_ns for p in (cache / "tcm-sd").glob("*.*")}
    fetch_tcm_sd(cache, base, FAST, mirror.release())
    assert len(requests) == seen
    assert stamps == {p: p.stat().st_mtime_ns for p in (cache / "tcm-sd").glob("*.*")}

    # The cache is a data root for tcm-sd, and the default cache is found without --data-dir
    # when the data root has no splits.
    empty_root = tmp_path / "empty-root"
    empty_root.mkdir()
    monkeypatch.setenv("CLINEVAL_DATA_DIR", str(empty_root))
    monkeypatch.setenv("CLINEVAL_CACHE_DIR", str(cache))
    from clineval.benchmarks.tcm_sd.task import TcmSdTask

    statuses = {s.relative_path: s.status for s in TcmSdTask().data_status(empty_root)}
    assert statuses == {
        "tcm-sd/train.json": "ok (fetch cache)",
        "tcm-sd/dev.json": "ok (fetch cache)",
        "tcm-sd/test.json": "ok (fetch cache)",
        "tcm-sd/zy-bert/syndrome_vocab.txt": "ok",
    }
    out = tmp_path / "run"
    assert main(["run", "tcm-sd", "--model", "baseline:tfidf", "--output-dir", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    files = manifest["tasks"]["tcm-sd"]["files"]
    assert files["test.json"]["path"] == str(cache / "tcm-sd" / "test.json")
    assert files["syndrome_vocab.txt"]["path"] == str(cache / "tcm-sd" / "syndrome_vocab.txt")
    results = json.loads((out / "results.json").read_text())["tcm-sd"]
    assert results["n"] == len(mirror.splits["test"].splitlines())


def test_a_second_fetch_repairs_a_damaged_file_and_only_that(
    tmp_path: Path, mirror: Mirror, serve: Serve
) -> None:
    base, requests = serve(_routes(mirror.files))
    cache = tmp_path / "cache"
    fetch_tcm_sd(cache, base, FAST, mirror.release())
    train = cache / "tcm-sd" / "train.json"
    train.write_bytes(train.read_bytes()[:-10])  # damaged in the cache
    seen = len(requests)
    fetch_tcm_sd(cache, base, FAST, mirror.release())
    assert len(requests) == seen  # unpacked again from the verified archive, not downloaded
    assert train.read_bytes() == mirror.splits["train"]


# ---- faults: nothing partial or unverified ever enters the cache ---------------------------


def test_a_flipped_byte_is_refused_and_nothing_enters_the_cache(
    tmp_path: Path, mirror: Mirror, serve: Serve
) -> None:
    files = dict(mirror.files)
    data = bytearray(files[TEST])
    data[len(data) // 2] ^= 0x01
    files[TEST] = bytes(data)
    base, _ = serve(_routes(files))
    cache = tmp_path / "cache"
    with pytest.raises(InputError, match=r"checksum mismatch for tcm-sd/test.json.*git blob id"):
        fetch_tcm_sd(cache, base, FAST, mirror.release())
    assert not (cache / TEST).exists()
    assert not (cache / "tcm-sd" / "train.json").exists()  # nothing unpacked either
    assert _no_partials(cache)


def test_a_truncated_download_is_retried_then_refused(
    tmp_path: Path, mirror: Mirror, serve: Serve
) -> None:
    archive = mirror.files[TRAIN_DEV]
    routes = _routes(mirror.files)
    from urllib.parse import quote

    routes["/" + quote(TRAIN_DEV)] = body(archive[: len(archive) // 2], declared=len(archive))
    base, requests = serve(routes)
    cache = tmp_path / "cache"
    with pytest.raises(InputError, match="download failed after 3 attempts: connection closed"):
        fetch_tcm_sd(cache, base, FAST, mirror.release())
    assert sum(path == "/" + quote(TRAIN_DEV) for path, _ in requests) == 3
    assert not (cache / TRAIN_DEV).exists()
    assert _no_partials(cache)


def test_a_corrupt_member_in_a_verified_archive_unpacks_nothing(
    tmp_path: Path, mirror: Mirror, serve: Serve
) -> None:
    """An archive with the pinned blob id whose member data is damaged (a CRC-32 mismatch):
    neither train.json nor dev.json appears."""
    archive = bytearray(mirror.files[TRAIN_DEV])
    with zipfile.ZipFile(io.BytesIO(bytes(archive))) as z:
        info = z.getinfo("TCM_SD_train_dev/dev.json")
    data_start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    archive[data_start + info.compress_size // 2] ^= 0xFF
    files = {**mirror.files, TRAIN_DEV: bytes(archive)}
    base, _ = serve(_routes(files))
    cache = tmp_path / "cache"
    with pytest.raises(
        InputError,
        match=r"dev\.json' of tcm-sd/upstream/TCM_SD_train_dev\.zip cannot be read "
        r"\(BadZipFile: Bad CRC-32",
    ):
        fetch_tcm_sd(cache, base, FAST, mirror.release(**{TRAIN_DEV: bytes(archive)}))
    assert not (cache / "tcm-sd" / "train.json").exists()
    assert not (cache / "tcm-sd" / "dev.json").exists()
    assert _no_partials(cache)


def test_an_unsupported_compression_method_is_a_one_line_error(
    tmp_path: Path, mirror: Mirror, serve: Serve
) -> None:
    """A member stored with a method zipfile cannot inflate (97 in its headers)."""
    archive = bytearray(mirror.files[TRAIN_DEV])
    with zipfile.ZipFile(io.BytesIO(bytes(archive))) as z:
        info = z.getinfo("TCM_SD_train_dev/train.json")
    archive[info.header_offset + 8 : info.header_offset + 10] = (97).to_bytes(2, "little")
    central = bytes(archive).index(b"PK\x01\x02")  # train.json's entry comes first
    archive[central + 10 : central + 12] = (97).to_bytes(2, "little")
    files = {**mirror.files, TRAIN_DEV: bytes(archive)}
    base, _ = serve(_routes(files))
    cache = tmp_path / "cache"
    with pytest.raises(
        InputError, match=r"train\.json' of .* cannot be read \(NotImplementedError"
    ):
        fetch_tcm_sd(cache, base, FAST, mirror.release(**{TRAIN_DEV: bytes(archive)}))
    assert not (cache / "tcm-sd" / "train.json").exists()
    assert _no_partials(cache)


def test_an_archive_of_too_many_members_is_refused_before_it_is_parsed(
    tmp_path: Path, mirror: Mirror, serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    """zipfile holds every member's entry in memory once it opens an archive: the count and
    the directory size the end record declares are bounded first (the bounds lowered here so
    that a small archive is over them). One line naming the archive, nothing in the cache."""
    import clineval.data.unzip as unzip

    many = _zip(
        {
            "TCM_SD_train_dev/train.json": mirror.splits["train"],
            "TCM_SD_train_dev/dev.json": mirror.splits["dev"],
            **{f"padding/{i}.txt": b"" for i in range(50)},
        }
    )
    files = {**mirror.files, TRAIN_DEV: many}
    base, _ = serve(_routes(files))
    cache = tmp_path / "cache"
    monkeypatch.setattr(unzip, "MAX_MEMBERS", 20)
    with pytest.raises(InputError, match=r"declares 52 members in .* more than clineval reads"):
        fetch_tcm_sd(cache, base, FAST, mirror.release(**{TRAIN_DEV: many}))
    assert not (cache / "tcm-sd" / "train.json").exists()
    assert _no_partials(cache)
    # the directory's size alone: few members, but more bytes of directory than allowed
    path = tmp_path / "few.zip"
    path.write_bytes(_zip({"a" * 200: b"", "b" * 200: b""}))
    monkeypatch.setattr(unzip, "MAX_DIRECTORY_BYTES", 300)
    with pytest.raises(InputError, match="declares 2 members"):
        unzip.open_archive(path)
    monkeypatch.undo()
    with unzip.open_archive(path) as archive:  # within the real bounds it opens
        assert len(archive.infolist()) == 2


def test_a_hostile_archive_writes_nowhere_else(
    tmp_path: Path, mirror: Mirror, serve: Serve
) -> None:
    """Member names with ../ and an absolute path never become paths: the member found by its
    name lands where the fetch puts train.json, and nothing is written outside the cache."""
    hostile = _zip(
        {
            "../../escaped/train.json": mirror.splits["train"],
            "/abs/dev.json": mirror.splits["dev"],
        }
    )
    files = {**mirror.files, TRAIN_DEV: hostile}
    base, _ = serve(_routes(files))
    cache = tmp_path / "deep" / "cache"
    fetch_tcm_sd(cache, base, FAST, mirror.release(**{TRAIN_DEV: hostile}))
    assert (cache / "tcm-sd" / "train.json").read_bytes() == mirror.splits["train"]
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "deep" / "escaped").exists()
    assert not Path("/abs").exists()


def test_members_over_their_bound_and_wrong_pinned_content_are_refused(
    tmp_path: Path, mirror: Mirror, serve: Serve
) -> None:
    vocab = zipfile.ZipFile(io.BytesIO(mirror.files[CODE])).read(
        "TCM/data_preprocess/syndrome_vocab.txt"
    )
    table = zipfile.ZipFile(io.BytesIO(mirror.files[CODE])).read("TCM/data_preprocess/syndrome.txt")
    cases = [
        (vocab + b"\r\n", "declares 2,464 bytes, above its bound of 2,462"),  # size pinned
        (vocab.replace("证".encode(), "症".encode(), 1), "checksum mismatch for"),  # same size
    ]
    for bad_vocab, message in cases:
        code = _zip(
            {
                "TCM/data_preprocess/syndrome_vocab.txt": bad_vocab,
                "TCM/data_preprocess/syndrome.txt": table,
            }
        )
        base, _ = serve(_routes({**mirror.files, CODE: code}))
        cache = tmp_path / f"cache-{len(bad_vocab)}"
        with pytest.raises(InputError, match=message):
            fetch_tcm_sd(cache, base, FAST, mirror.release(**{CODE: code}))
        assert not (cache / "tcm-sd" / "syndrome_vocab.txt").exists()
        assert not (cache / "tcm-sd" / "syndrome.txt").exists()  # unpacked together or not at all
        assert _no_partials(cache)


def test_an_unzip_interrupted_by_ctrl_c_leaves_no_member(
    tmp_path: Path, mirror: Mirror, serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, _ = serve(_routes(mirror.files))
    cache = tmp_path / "cache"
    real = unzip_module._inflate
    seen: list[str] = []

    def interrupted(archive, item, fd, path, what):  # type: ignore[no-untyped-def]
        seen.append(item.member)
        if len(seen) == 2:  # train.json is inflated, dev.json is under way
            raise KeyboardInterrupt
        return real(archive, item, fd, path, what)

    monkeypatch.setattr(unzip_module, "_inflate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        fetch_tcm_sd(cache, base, FAST, mirror.release())
    assert not (cache / "tcm-sd" / "train.json").exists()
    assert not (cache / "tcm-sd" / "dev.json").exists()
    assert _no_partials(cache)
    monkeypatch.setattr(unzip_module, "_inflate", real)
    fetch_tcm_sd(cache, base, FAST, mirror.release())
    assert (cache / "tcm-sd" / "dev.json").read_bytes() == mirror.splits["dev"]


_KILLED_UNZIP = """
import os, signal, sys
from pathlib import Path
import test_tcm_sd_fetch as t
from clineval.data import unzip

real = unzip._inflate
def killed(archive, item, fd, path, what):
    if item.member.endswith("dev.json"):
        os.write(fd, b"half a file")  # staged bytes, then the process dies
        os.kill(os.getpid(), signal.SIGKILL)
    return real(archive, item, fd, path, what)
unzip._inflate = killed
release = __import__("pickle").loads(bytes.fromhex(sys.argv[3]))
t.fetch_tcm_sd(Path(sys.argv[1]), sys.argv[2], t.FAST, release)
"""


def test_an_unzip_killed_by_sigkill_leaves_no_member_and_the_next_fetch_completes(
    tmp_path: Path, mirror: Mirror, serve: Serve
) -> None:
    import pickle

    base, _ = serve(_routes(mirror.files))
    cache = tmp_path / "cache"
    release = mirror.release()
    payload = pickle.dumps(release).hex()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_UNZIP, str(cache), base, payload],
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]
    assert (cache / TRAIN_DEV).is_file()  # downloaded and verified before the unzip
    assert not (cache / "tcm-sd" / "train.json").exists()
    assert not (cache / "tcm-sd" / "dev.json").exists()
    leftovers = list((cache / STAGING).glob("*.part"))
    assert leftovers  # the dead process's staging files, held by no one
    fetch_tcm_sd(cache, base, FAST, release)
    assert (cache / "tcm-sd" / "dev.json").read_bytes() == mirror.splits["dev"]
    assert _no_partials(cache)


# ---- the command line ------------------------------------------------------------------------


def test_cli_uses_the_pinned_ids_and_states_the_license(
    tmp_path: Path,
    mirror: Mirror,
    serve: Serve,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base, _ = serve(_routes(mirror.files))
    cache = tmp_path / "cache"
    argv = ["data", "fetch", "tcm-sd", "--base-url", base, "--cache-dir", str(cache)]
    # The mirror's files are not the release: the pinned blob ids refuse them.
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after the progress bar
    assert err.startswith("error: ") and "checksum mismatch for tcm-sd/upstream/" in err
    assert "git blob id" in err and "4ad8f687eaf9" in err
    assert _cache_files(cache) == []
    # With this mirror's ids pinned instead, the same command succeeds and states the license.
    from clineval.benchmarks.tcm_sd import fetch as tcm_sd_fetch

    monkeypatch.setattr(tcm_sd_fetch, "official_release", mirror.release)
    assert main(argv) == 0
    out = "".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert f"ok{cache / 'tcm-sd' / 'train.json'}" in out
    assert "".join(LICENSE_NOTICE.split()) in out
    assert "CCBY-NC-SA4.0" in out and "non-commercial" in out


def test_data_verify_checks_the_fetched_files_against_their_records(
    tmp_path: Path, mirror: Mirror, serve: Serve, capsys: pytest.CaptureFixture[str]
) -> None:
    """The splits have no hash in the package manifest: `data verify` checks them against the
    sha256 the fetch recorded, and a file changed since is a failure."""
    base, _ = serve(_routes(mirror.files))
    cache = tmp_path / "cache"
    fetch_tcm_sd(cache, base, FAST, mirror.release())
    capsys.readouterr()
    assert main(["data", "verify", "--cache-dir", str(cache)]) == 0
    table = capsys.readouterr().out
    for relative in ("tcm-sd/train.json", "tcm-sd/test.json", "tcm-sd/syndrome_vocab.txt"):
        row = next(line for line in table.splitlines() if relative in line)
        assert " ok " in f" {row} ", row
    dev = cache / "tcm-sd" / "dev.json"
    dev.write_bytes(dev.read_bytes().replace(b"{", b"[", 1))
    assert main(["data", "verify", "--cache-dir", str(cache)]) == 2
    out = "".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert f"FAIL{dev}:checksummismatch" in out


def test_damaged_archives_are_input_errors_or_whole_members(tmp_path: Path) -> None:
    """Seeded byte damage anywhere in an archive (headers, names, data, directory): unpacking
    either gives the exact members or stops with an InputError, and never leaves a partial
    file. (Before, a few of these escaped as NotImplementedError, UnicodeDecodeError or an
    IndexError from zipfile.)"""
    import random

    from clineval.data.unzip import Extraction, extract, find_member, member_matches, open_archive

    members = {"a/train.json": b"x" * 5000 + bytes(range(256)) * 20, "a/dev.json": b"y" * 3000}
    good = _zip(members)
    rng = random.Random(0)
    outcomes = {"ok": 0, "refused": 0}
    for trial in range(4000):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        path = tmp_path / "damaged.zip"
        path.write_bytes(bytes(data))
        out = tmp_path / f"out{trial}"
        try:
            with open_archive(path) as archive:
                names = [find_member(archive, n, path) for n in ("train.json", "dev.json")]
                items = [Extraction(n, out / n.rsplit("/", 1)[-1], 1 << 20) for n in names]
                for item in items:
                    member_matches(archive, item, path)
            extract(path, items, tmp_path, "damaged.zip")
        except InputError:
            outcomes["refused"] += 1
            assert not out.exists()
        else:
            outcomes["ok"] += 1
            assert (out / "train.json").read_bytes() == members["a/train.json"]
            assert (out / "dev.json").read_bytes() == members["a/dev.json"]
            shutil.rmtree(out)
    assert outcomes["ok"] > 0 and outcomes["refused"] > 0
    assert _no_partials(tmp_path)


def test_no_network_says_what_to_do_next(tmp_path: Path) -> None:
    """A host that does not resolve (a machine without network gets a DNS error for the
    official address): the one line names the three ways on, not only the DNS error."""
    from clineval.benchmarks.registry import data_sources
    from clineval.data.fetch import fetch

    cache = tmp_path / "cache"
    with pytest.raises(InputError) as info:
        fetch(
            data_sources()["tcm-sd"],
            cache_dir=cache,
            base_url="http://clineval-mirror.invalid/",
            retry=FAST,
        )
    message = info.value.message
    assert message.startswith("download failed after 3 attempts: ")
    assert "clineval data fetch tcm-sd --base-url URL" in message  # a mirror
    assert f"--cache-dir DIR' where there is network and copy DIR to {cache}" in message
    assert "train.json, dev.json, test.json and syndrome_vocab.txt in DATA_DIR/tcm-sd/" in message
    assert _cache_files(cache) == []
