"""`clineval data fetch clinconsensus`: the official cases and the official judge prompt.

Two files, each from where its authors publish it:
  * the judge prompt's source, `scripts/run_local_judge.py` of the authors' repository at the
    pinned commit (OFFICIAL_COMMIT), into `<cache>/clinconsensus/official/run_local_judge.py`.
    Its sha256 is pinned in the package manifest (the value the repository's own
    MANIFEST_SHA256.txt publishes at that commit), so it goes through the generic pinned path of
    clineval.data.fetch. clineval never ships its text: `--judge-prompt official` reads it from
    the cache (clineval.benchmarks.clinconsensus.official_prompt).
  * the cases, `data/clinconsensus_low.jsonl` of the Hugging Face dataset HUB_DATASET, into
    `<cache>/clinconsensus/clinconsensus_low.jsonl` (where `clineval run clinconsensus` looks
    when no --cases is given). huggingface_hub resolves the file (the hub's address, or
    $HF_ENDPOINT for a hub mirror; a token from $HF_TOKEN or `hf auth login` for a gated
    dataset) to a commit, a size and a content hash (the sha256 of an LFS/Xet file, else its git
    blob id); clineval.data.download then streams it, bounded by that size and checked against
    that hash. No hash is published to pin, so the copy's sha256, size, revision and source are
    recorded in the cache manifest (clineval.data.cache_manifest).

Every case is validated while it streams (CasesCheck: the release schema of
benchmarks/clinconsensus/cases.py, 30 rubrics with unique ids, unique case ids): the first bad line
stops the download, names the address and the line, and nothing enters the cache.

`--base-url URL` takes both files from a mirror laid out like the cache, as for the NER corpora
(`URL/clinconsensus/clinconsensus_low.jsonl`, `URL/clinconsensus/official/run_local_judge.py`):
the prompt is checked against its pinned sha256, the cases are validated (and bounded by
CASES_SIZE_CAP, as a mirror gives no size).
"""

from __future__ import annotations

import os
import random
import re
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clineval.benchmarks.clinconsensus.cases import OFFICIAL_RELATIVE_PATH, parse_case
from clineval.data.cache_manifest import record_files
from clineval.data.checksums import sha256_file
from clineval.data.digests import AllOfCheck, GitBlobSha1Check, Sha256Check, StreamCheck
from clineval.data.download import DOWNLOAD_RETRY, SizeBound, download_verified, safe_url
from clineval.errors import InputError
from clineval.jsonio import JsonProblem, parse_json
from clineval.retry import RetryPolicy, parse_retry_after
from clineval.secrets import redact

OFFICIAL_REPOSITORY = "crzzx1/ClinConsensus"
OFFICIAL_COMMIT = "52be41d98535cdcf48461bf59264f1ee9f16c47a"
PROMPT_SCRIPT = "scripts/run_local_judge.py"
PROMPT_RELATIVE = "clinconsensus/official/run_local_judge.py"
PROMPT_URL = (
    f"https://raw.githubusercontent.com/{OFFICIAL_REPOSITORY}/{OFFICIAL_COMMIT}/{PROMPT_SCRIPT}"
)
HUB_DATASET = "skylenage/ClinConsensus"
HUB_FILE = "data/clinconsensus_low.jsonl"
HUB_REVISION = "main"
# A mirror gives no size: far above the release (900 cases) yet a bound on an endless body.
CASES_SIZE_CAP = 256 << 20
MAX_LINE = 4 << 20  # one case is a few kB: a longer line is not a case
_SHA256 = re.compile(r"[0-9a-f]{64}")
_SHA1 = re.compile(r"[0-9a-f]{40}")
_JITTER = random.Random()


class CasesCheck:
    """A StreamCheck that parses and validates every case as its line arrives. It raises
    InputError (address, line, reason) at the first bad line; the download then stops and
    keeps nothing."""

    def __init__(self, shown: str) -> None:
        self._shown = shown
        self._pending = b""
        self._line = 0
        self._first: dict[str, int] = {}
        self.difficulty: Counter[str] = Counter()

    @property
    def n_cases(self) -> int:
        return len(self._first)

    def _fail(self, message: str) -> InputError:
        return InputError(
            f"{message}; not the ClinConsensus release schema, nothing was written to the cache",
            path=self._shown,
            line=self._line,
        )

    def _case(self, raw: bytes) -> None:
        self._line += 1
        try:
            text = raw.decode("utf-8-sig" if self._line == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise self._fail(f"not UTF-8 text ({exc.reason})") from None
        if not text.strip():
            return
        try:
            row = parse_json(text, self._shown)
        except JsonProblem as exc:
            raise self._fail(f"invalid JSON: {exc.reason}") from None
        if not isinstance(row, dict):
            raise self._fail("expected a JSON object")
        try:
            case = parse_case(row, Path(self._shown), self._line)
        except InputError as exc:
            raise self._fail(exc.message) from None
        if case.case_id in self._first:
            raise self._fail(
                f"duplicate case_id {case.case_id!r} (first on line {self._first[case.case_id]})"
            )
        self._first[case.case_id] = self._line
        self.difficulty[case.difficulty] += 1

    def update(self, chunk: bytes) -> None:
        lines = (self._pending + chunk).split(b"\n")
        self._pending = lines.pop()
        for raw in lines:
            self._case(raw)
        if len(self._pending) > MAX_LINE:
            self._line += 1
            raise self._fail(f"a line longer than {MAX_LINE:,} bytes")

    def problem(self) -> str | None:
        if self._pending:
            self._case(self._pending)
            self._pending = b""
        if not self._first:
            raise self._fail("no cases in file")
        return None


@dataclass(frozen=True)
class _Origin:
    """Where the cases come from, how large they may be and what they must hash to."""

    url: str
    source: str  # for the cache manifest (no credentials)
    revision: str | None
    bound: SizeBound
    expected: Callable[[], StreamCheck] | None
    headers: dict[str, str]


def _hub_error(exc: Exception) -> InputError:
    said = " ".join(redact(str(exc)).split())[:300]
    return InputError(
        f"the Hugging Face hub did not give {HUB_DATASET} {HUB_FILE}: {type(exc).__name__}: "
        f"{said} (a hub mirror: set HF_ENDPOINT; a gated dataset: set HF_TOKEN)"
    )


def _hub_failure(exc: Exception) -> bool:
    """Whether `exc` is the hub (or the way to it) failing, not a bug: HfHubHTTPError is an
    OSError, and the HTTP client's own errors (connect, protocol) come from httpx."""
    if isinstance(exc, OSError | ValueError):
        return True
    return type(exc).__module__.split(".")[0] in ("httpx", "huggingface_hub")


def _final(exc: Exception) -> tuple[bool, float | None]:
    """(whether asking again cannot help, the server's Retry-After) of a failed hub request."""
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if response is None or not isinstance(status, int):
        return False, None  # no answer at all (refused, reset, timed out): worth another try
    after = parse_retry_after(response.headers.get("Retry-After"))
    return 400 <= status < 500 and status not in (408, 429), after


def _hub_metadata(url: str, endpoint: str | None, retry: RetryPolicy) -> Any:
    """The hub's metadata of `url`, with clineval's one retry policy (not the library's)."""
    from huggingface_hub import get_hf_file_metadata

    attempt = 0
    while True:
        try:
            return get_hf_file_metadata(url, endpoint=endpoint)  # retried here, not there
        except Exception as exc:
            if not _hub_failure(exc):
                raise
            final, after = _final(exc)
            if final or attempt >= retry.max_retries:
                raise _hub_error(exc) from None
            time.sleep(retry.delay(attempt, after, _JITTER))
            attempt += 1


def _hub_origin(retry: RetryPolicy) -> _Origin:
    from huggingface_hub import hf_hub_url

    # public in huggingface_hub.utils, which re-exports it without __all__ (mypy --strict)
    from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined]

    endpoint = os.environ.get("HF_ENDPOINT") or None  # read now, not at import

    def url_at(revision: str) -> str:
        return hf_hub_url(
            HUB_DATASET, HUB_FILE, repo_type="dataset", revision=revision, endpoint=endpoint
        )

    meta = _hub_metadata(url_at(HUB_REVISION), endpoint, retry)
    # a token (HF_TOKEN, `hf auth login`) for a gated dataset: sent to the hub only
    headers = {k: v for k, v in build_hf_headers().items() if k.lower() == "authorization"}
    revision = meta.commit_hash or HUB_REVISION
    etag = (meta.etag or "").lower()
    size = meta.size
    what = f"{HUB_DATASET} {HUB_FILE}"
    expected: Callable[[], StreamCheck] | None = None
    if _SHA256.fullmatch(etag):
        expected = lambda: Sha256Check(etag)  # noqa: E731
    elif _SHA1.fullmatch(etag) and size is not None:
        expected = lambda: GitBlobSha1Check(etag, size)  # noqa: E731
    bound = (
        SizeBound(size, f"the size the hub gives for {what}")
        if size is not None
        else SizeBound(CASES_SIZE_CAP, f"the fixed cap: the hub gives no size for {what}")
    )
    return _Origin(
        url=url_at(revision),
        source=f"hf://datasets/{HUB_DATASET}@{revision}/{HUB_FILE}"
        + (f" via {safe_url(endpoint)}" if endpoint else ""),
        revision=revision,
        bound=bound,
        expected=expected,
        headers=headers,
    )


def _mirror_origin(base_url: str) -> _Origin:
    url = base_url.rstrip("/") + "/" + urllib.parse.quote(OFFICIAL_RELATIVE_PATH)
    return _Origin(
        url=url,
        source=safe_url(url),
        revision=None,
        bound=SizeBound(CASES_SIZE_CAP, "the fixed cap for the ClinConsensus cases from a mirror"),
        expected=None,
        headers={},
    )


def _cached_copy_is_current(target: Path, origin: _Origin) -> bool:
    """The cached cases are the hub's current file (its hash says so): no download."""
    if origin.expected is None or not target.is_file():
        return False
    check = origin.expected()
    with open(target, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            check.update(block)
    return check.problem() is None


def fetch_cases(
    root: Path, base_url: str | None = None, retry: RetryPolicy = DOWNLOAD_RETRY
) -> Path:
    """The validated cases in the cache (see the module doc); their record in the cache
    manifest."""
    origin = _mirror_origin(base_url) if base_url is not None else _hub_origin(retry)
    target = root / OFFICIAL_RELATIVE_PATH
    validated: list[CasesCheck] = []

    def check() -> StreamCheck:
        cases = CasesCheck(safe_url(origin.url))
        validated.append(cases)
        return cases if origin.expected is None else AllOfCheck(origin.expected(), cases)

    if not _cached_copy_is_current(target, origin):
        download_verified(
            origin.url,
            target,
            staging_root=root,
            bound=origin.bound,
            check=check,
            what=OFFICIAL_RELATIVE_PATH,
            retry=retry,
            headers=origin.headers,
        )
    else:  # validated again all the same: the record below says what the cache holds
        cases = CasesCheck(str(target))
        with open(target, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                cases.update(block)
        cases.problem()
        validated.append(cases)
    summary = validated[-1]
    record: dict[str, Any] = {
        "sha256": sha256_file(target),
        "size": target.stat().st_size,
        "source": origin.source,
        "revision": origin.revision,
        "n_cases": summary.n_cases,
        "difficulty": dict(sorted(summary.difficulty.items())),
        "fetched": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    record_files(root, {OFFICIAL_RELATIVE_PATH: record})
    return target


def record_prompt_source(root: Path, base_url: str | None) -> None:
    """The provenance of the (pinned) prompt script, beside the cases' record."""
    path = root / PROMPT_RELATIVE
    source = (
        safe_url(base_url.rstrip("/") + "/" + urllib.parse.quote(PROMPT_RELATIVE))
        if base_url is not None
        else PROMPT_URL
    )
    record = {
        "sha256": sha256_file(path),
        "size": path.stat().st_size,
        "source": source,
        "revision": f"{OFFICIAL_REPOSITORY}@{OFFICIAL_COMMIT}",
        "fetched": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    record_files(root, {PROMPT_RELATIVE: record})


def fetch_unpinned(root: Path, base_url: str | None, retry: RetryPolicy) -> list[Path]:
    """The step of `fetch("clinconsensus")` after its pinned file (the prompt script)."""
    record_prompt_source(root, base_url)
    return [fetch_cases(root, base_url, retry)]
