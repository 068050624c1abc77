"""`clineval data fetch clinconsensus`: the official judge prompt's script (sha256 pinned) and
the cases (Hugging Face hub, validated, sha256 recorded), from local HTTP servers: a mirror laid
out like the cache (--base-url) and a stand-in for the hub (HF_ENDPOINT, which huggingface_hub
reads). Then `clineval run clinconsensus` finds the cases without --cases, and
`--judge-prompt official` reads the fetched prompt.

The served files are synthetic: the fixture cases, and a script written here with a PROMPT of
the official script's shape (the authors' text is not in this repository). The pinned sha256 is
the authors' (the package manifest); a test that needs a good one pins the synthetic script's
(the `pin` fixture: a stub of the manifest, the one fault-injection seam here).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from clineval.benchmarks.clinconsensus.cases import OFFICIAL_RELATIVE_PATH, fixture_path
from clineval.benchmarks.clinconsensus.fetch import PROMPT_RELATIVE, fetch_cases
from clineval.cli import main
from clineval.data import checksums
from clineval.data.cache_manifest import CACHE_MANIFEST, recorded_files
from clineval.errors import InputError
from clineval.retry import RetryPolicy

FAST = RetryPolicy(max_retries=1, base_delay_s=0.001, max_delay_s=0.01, max_retry_after_s=0.01)
HUB_PATH = "/datasets/skylenage/ClinConsensus/resolve/{rev}/data/clinconsensus_low.jsonl"
COMMIT = "0123456789abcdef0123456789abcdef01234567"

SYNTHETIC_SCRIPT = '''"""A synthetic stand-in for a judge script (fixture, for clineval's tests)."""

PROMPT = """Fixture judge prompt.
QUERY: {user_message}
RESPONSE: {response}
RUBRIC: {rubric_item}
Answer in a fence:
```json
{{"explanation": "...", "criteria_met": true/false}}
```"""


def main() -> None:
    print(PROMPT)
'''


def cases_bytes(mutate: Callable[[list[dict[str, Any]]], None] | None = None) -> bytes:
    rows = [json.loads(x) for x in fixture_path().read_text("utf-8").splitlines()]
    if mutate is not None:
        mutate(rows)
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


# ---- local HTTP servers ---------------------------------------------------------------------
@dataclasses.dataclass
class Seen:
    method: str
    path: str
    authorization: str | None


class _Handler(BaseHTTPRequestHandler):
    files: dict[str, tuple[bytes, dict[str, str]]]  # path -> (body, extra headers)
    redirects: dict[str, str]  # path -> absolute URL
    seen: list[Seen]

    def _answer(self, with_body: bool) -> None:
        self.seen.append(Seen(self.command, self.path, self.headers.get("Authorization")))
        if self.path in self.redirects:
            self.send_response(302)
            self.send_header("Location", self.redirects[self.path])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path not in self.files:
            self.send_error(404)
            return
        data, headers = self.files[self.path]
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if with_body:
            self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer(True)

    def do_HEAD(self) -> None:
        self._answer(False)

    def log_message(self, format: str, *args: object) -> None:
        return


Serve = Callable[..., tuple[str, list[Seen]]]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """serve(files, redirects=None) -> (base URL, requests seen); stopped at teardown."""
    servers: list[ThreadingHTTPServer] = []

    def start(
        files: dict[str, tuple[bytes, dict[str, str]]], redirects: dict[str, str] | None = None
    ) -> tuple[str, list[Seen]]:
        seen: list[Seen] = []
        attrs = {"files": files, "redirects": redirects or {}, "seen": seen}
        server = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (_Handler,), attrs))
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        host, port = server.server_address[:2]
        return f"http://{host!s}:{port}", seen

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def mirror_files(script: bytes, cases: bytes) -> dict[str, tuple[bytes, dict[str, str]]]:
    return {"/" + PROMPT_RELATIVE: (script, {}), "/" + OFFICIAL_RELATIVE_PATH: (cases, {})}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The data cache of these tests (so the user's own is never read or written)."""
    root = tmp_path / "cache"
    monkeypatch.setenv("CLINEVAL_CACHE_DIR", str(root))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return root


@pytest.fixture
def pin(monkeypatch: pytest.MonkeyPatch) -> Callable[[bytes], None]:
    """pin(script): the package manifest pins this script's sha256 and size (a stub)."""

    def apply(script: bytes) -> None:
        real = checksums.load_manifest()
        entries = tuple(
            dataclasses.replace(e, sha256=hashlib.sha256(script).hexdigest(), size=len(script))
            if e.path == PROMPT_RELATIVE
            else e
            for e in real
        )
        monkeypatch.setattr(checksums, "load_manifest", lambda: entries)

    return apply


def no_partials(root: Path) -> bool:
    return not list((root / ".partial").glob("*")) if (root / ".partial").exists() else True


# ---- the mirror (--base-url), good and bad ---------------------------------------------------
def test_fetch_from_a_mirror_then_run_without_cases(
    tmp_path: Path, serve: Serve, cache: Path, pin, capsys
) -> None:
    script, cases = SYNTHETIC_SCRIPT.encode(), cases_bytes()
    pin(script)
    url, _ = serve(mirror_files(script, cases))
    argv = ["--quiet", "data", "fetch", "clinconsensus", "--cache-dir", str(cache)]
    argv += ["--base-url", url]
    assert main(argv) == 0, capsys.readouterr().err
    assert (cache / PROMPT_RELATIVE).read_bytes() == script
    assert (cache / OFFICIAL_RELATIVE_PATH).read_bytes() == cases
    record = recorded_files(cache)[OFFICIAL_RELATIVE_PATH]
    assert record["sha256"] == hashlib.sha256(cases).hexdigest()
    assert record["size"] == len(cases) and record["n_cases"] == 12
    assert record["source"] == f"{url}/{OFFICIAL_RELATIVE_PATH}"
    assert recorded_files(cache)[PROMPT_RELATIVE]["sha256"] == hashlib.sha256(script).hexdigest()
    assert main(["data", "verify", "--cache-dir", str(cache)]) == 0

    # the run finds the cases in the cache: no --cases
    verdicts = tmp_path / "verdicts.jsonl"
    first = json.loads(cases.decode().splitlines()[0])
    verdicts.write_text(
        "".join(
            json.dumps(
                {
                    "case_id": first["case_id"],
                    "criterion_id": r["criterion_id"],
                    "criteria_met": True,
                }
            )
            + "\n"
            for r in first["rubrics"]
        ),
        "utf-8",
    )
    out = tmp_path / "run"
    argv = ["run", "clinconsensus", "--verdicts", str(verdicts), "--limit", "1", "-o", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    res = json.loads((out / "results.json").read_text())["clinconsensus"]
    assert res["cases_file"] == str(cache / OFFICIAL_RELATIVE_PATH) and res["cacs@7"] == 100.0

    # a corrupted cached copy: `data verify` names it (its recorded sha256 no longer matches)
    target = cache / OFFICIAL_RELATIVE_PATH
    target.write_bytes(target.read_bytes().replace(b"fixture-001", b"fixture-00X"))
    assert main(["data", "verify", "--cache-dir", str(cache)]) == 2
    flat = "".join(capsys.readouterr().out.split())  # rich wraps long paths anywhere
    assert f"{target}:checksummismatch" in flat


def test_a_script_that_is_not_the_pinned_one_is_refused(serve: Serve, cache: Path, capsys) -> None:
    """No stub: the pin is the authors' sha256, which the synthetic script does not have."""
    url, _ = serve(mirror_files(SYNTHETIC_SCRIPT.encode(), cases_bytes()))
    argv = ["--quiet", "data", "fetch", "clinconsensus", "--cache-dir", str(cache)]
    argv += ["--base-url", url]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err
    assert f"checksum mismatch for {PROMPT_RELATIVE}" in err
    assert not (cache / PROMPT_RELATIVE).exists() and no_partials(cache)
    assert not (cache / OFFICIAL_RELATIVE_PATH).exists()  # nothing after the failed file


def _rubric_short(rows: list[dict[str, Any]]) -> None:
    rows[2]["rubrics"].pop()


def _duplicate_id(rows: list[dict[str, Any]]) -> None:
    rows[5]["case_id"] = rows[1]["case_id"]


def _not_json(rows: list[dict[str, Any]]) -> None:
    rows[3]["user_request"] = float("nan")  # json.dumps writes NaN: read as a bad field


@pytest.mark.parametrize(
    ("mutate", "line", "message"),
    [
        (_rubric_short, 3, "expected 30 rubrics, found 29"),
        (_duplicate_id, 6, "duplicate case_id 'fixture-002' (first on line 2)"),
        (_not_json, 4, "missing or invalid field 'user_request'"),
    ],
)
def test_every_case_is_validated_and_a_bad_one_keeps_nothing(
    serve: Serve, cache: Path, pin, capsys, mutate, line: int, message: str
) -> None:
    script = SYNTHETIC_SCRIPT.encode()
    pin(script)
    url, _ = serve(mirror_files(script, cases_bytes(mutate)))
    argv = ["--quiet", "data", "fetch", "clinconsensus", "--cache-dir", str(cache)]
    argv += ["--base-url", url]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {url}/{OFFICIAL_RELATIVE_PATH}:{line}: {message}"), err
    assert "nothing was written" in err and "\n" not in err
    assert not (cache / OFFICIAL_RELATIVE_PATH).exists() and no_partials(cache)
    assert OFFICIAL_RELATIVE_PATH not in recorded_files(cache)


# ---- the hub, through huggingface_hub (HF_ENDPOINT: a stand-in server) -------------------------
def hub_files(cases: bytes, etag: str, commit: str = COMMIT) -> dict[str, tuple[bytes, dict]]:
    headers = {"X-Repo-Commit": commit, "X-Linked-Etag": f'"{etag}"', "ETag": f'"{etag}"'}
    return {
        HUB_PATH.format(rev="main"): (cases, headers),
        HUB_PATH.format(rev=commit): (cases, headers),
    }


def test_fetch_from_the_hub_checks_its_sha256_and_records_the_revision(
    serve: Serve, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = cases_bytes()
    url, seen = serve(hub_files(cases, hashlib.sha256(cases).hexdigest()))
    monkeypatch.setenv("HF_ENDPOINT", url)
    path = fetch_cases(cache, retry=FAST)
    assert path.read_bytes() == cases
    record = recorded_files(cache)[OFFICIAL_RELATIVE_PATH]
    assert record["revision"] == COMMIT and record["n_cases"] == 12
    assert record["source"].startswith(f"hf://datasets/skylenage/ClinConsensus@{COMMIT}/")
    asked = [s for s in seen if s.path.startswith("/datasets/")]  # the library asks more
    assert [s.method for s in asked] == ["HEAD", "GET"]
    assert asked[1].path == HUB_PATH.format(rev=COMMIT)  # pinned to the commit just resolved
    # again: the cached copy is the hub's current file, so no download
    fetch_cases(cache, retry=FAST)
    assert [s.method for s in seen if s.path.startswith("/datasets/")] == ["HEAD", "GET", "HEAD"]


def test_a_hub_file_with_another_sha256_is_refused(
    serve: Serve, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = cases_bytes()
    url, _ = serve(hub_files(cases, hashlib.sha256(b"another file").hexdigest()))
    monkeypatch.setenv("HF_ENDPOINT", url)
    with pytest.raises(InputError, match=f"checksum mismatch for {OFFICIAL_RELATIVE_PATH}"):
        fetch_cases(cache, retry=FAST)
    assert not (cache / OFFICIAL_RELATIVE_PATH).exists() and no_partials(cache)
    assert not (cache / CACHE_MANIFEST).exists()


def test_a_hub_file_outside_lfs_is_checked_by_its_git_blob_id(
    serve: Serve, cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cases = cases_bytes()
    blob = tmp_path / "blob"
    blob.write_bytes(cases)
    oid = subprocess.run(
        ["git", "hash-object", str(blob)], capture_output=True, text=True, check=True
    ).stdout.strip()
    url, _ = serve(hub_files(cases, oid))
    monkeypatch.setenv("HF_ENDPOINT", url)
    assert fetch_cases(cache, retry=FAST).read_bytes() == cases
    (cache / OFFICIAL_RELATIVE_PATH).unlink()
    url, _ = serve(hub_files(cases, "f" * 40))  # another blob id
    monkeypatch.setenv("HF_ENDPOINT", url)
    with pytest.raises(InputError, match="git blob id"):
        fetch_cases(cache, retry=FAST)


def test_a_hub_token_goes_to_the_hub_only_never_to_its_redirect(
    serve: Serve, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = cases_bytes()
    cdn, cdn_seen = serve({"/blob": (cases, {})})
    files = hub_files(cases, hashlib.sha256(cases).hexdigest())
    del files[HUB_PATH.format(rev=COMMIT)]
    hub, hub_seen = serve(files, redirects={HUB_PATH.format(rev=COMMIT): f"{cdn}/blob"})
    monkeypatch.setenv("HF_ENDPOINT", hub)
    monkeypatch.setenv("HF_TOKEN", "hf_fixturetoken123")
    fetch_cases(cache, retry=FAST)
    asked = [s.authorization for s in hub_seen if s.path.startswith("/datasets/")]
    assert asked == ["Bearer hf_fixturetoken123"] * 2
    assert [s.authorization for s in cdn_seen] == [None]
    assert "hf_fixturetoken123" not in (cache / CACHE_MANIFEST).read_text()


def test_an_unreachable_hub_or_a_missing_file_is_one_line(
    serve: Serve, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # discard port: refused
    with pytest.raises(InputError, match="the Hugging Face hub did not give") as info:
        fetch_cases(cache, retry=FAST)
    assert "\n" not in info.value.one_line()
    url, seen = serve({})  # a hub without the file: 404, final (not asked again)
    monkeypatch.setenv("HF_ENDPOINT", url)
    with pytest.raises(InputError, match="the Hugging Face hub did not give"):
        fetch_cases(cache, retry=FAST)
    assert len([s for s in seen if s.path.startswith("/datasets/")]) == 1
    assert not (cache / OFFICIAL_RELATIVE_PATH).exists()
