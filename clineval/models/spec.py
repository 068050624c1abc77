"""Model specs as the CLI writes them: ``backend:name[@base_url]``, and a run's specs typed.

A spec is parsed where its text enters (the run's config is validated, a manifest is read):
`RunModels` is what the rest of a run reads, never the text again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clineval.errors import InputError
from clineval.models.registry import BACKENDS, backend_named

__all__ = ["BACKENDS", "ModelSpec", "RunModels", "check_base_url"]


@dataclass(frozen=True)
class ModelSpec:
    backend: str
    name: str
    base_urls: tuple[str, ...] = field(default_factory=tuple)
    # As the user wrote it (--model, --judge): what --batch-model and JUDGE=URL name, and how
    # the run's settings refer to it. Not part of equality: the parts above are the model.
    # A spec built from its parts is written as its label. May hold a URL's credentials.
    text: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.text:
            object.__setattr__(self, "text", self.label)

    @property
    def label(self) -> str:
        """A display name without URLs (they may hold credentials or private hosts)."""
        return f"{self.backend}:{self.name}"

    @classmethod
    def parse(cls, text: str, extra_base_urls: tuple[str, ...] = ()) -> ModelSpec:
        backend, sep, rest = text.partition(":")
        if not sep or not rest:
            raise InputError(f"model spec {text!r} is not backend:name (backends: {BACKENDS})")
        if backend not in BACKENDS:
            raise InputError(f"unknown model backend {backend!r} in {text!r} (known: {BACKENDS})")
        name, urls = rest, tuple(extra_base_urls)
        if backend_named(backend).takes_base_url:
            at = rest.lower().rfind("@http")  # HTTP:// too: else the URL would become the name
            if at > 0:
                name, urls = rest[:at], (rest[at + 1 :], *extra_base_urls)
        return cls(backend=backend, name=name, base_urls=urls, text=text)


@dataclass(frozen=True)
class RunModels:
    """A run's models, parsed once from its settings (`RunConfig.models`), each spec with the
    base URLs its flags give it."""

    candidate: ModelSpec  # --model, with --base-url
    judges: tuple[ModelSpec, ...]  # --judge in order, each with its replicas
    # Who judges a judged task: the --judge specs, else the candidate judging its own answers
    # (as a judge it takes its --judge-base-url replicas where it has any).
    panel: tuple[ModelSpec, ...]

    @property
    def all(self) -> tuple[ModelSpec, ...]:
        """The candidate, then each --judge: the models the run's flags name."""
        return (self.candidate, *self.judges)

    @property
    def judge_is_candidate(self) -> bool:
        """Whether the candidate judges (no --judge, or --judge names it as --model does)."""
        return not self.judges or any(j.text == self.candidate.text for j in self.judges)


def check_base_url(url: str, flag: str = "--base-url") -> str:
    """`url` if it is http(s)://HOST[:PORT][/PATH] with a port in 1..65535, else InputError.

    Checked when the run is configured, so that a typo fails before anything is loaded or
    written (and at --dry-run), not at the first call.
    """
    from urllib.parse import urlsplit

    from clineval.secrets import redact, register_url

    # Known from here on, in every form, to everything that stores or prints (secrets.py).
    register_url(url)
    shown = redact(url)[:120]
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # an unclosed or invalid IPv6 bracket: "http://[::1", "[zz::1]"
        raise InputError(f"{flag} {shown!r} is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"{flag} {shown!r} is not http(s)://HOST[:PORT]/PATH")
    try:
        port = parts.port
    except ValueError:
        raise InputError(f"{flag} {shown!r}: the port is not a number in 1..65535") from None
    if port is not None and not 1 <= port <= 65535:
        raise InputError(f"{flag} {shown!r}: the port is not a number in 1..65535")
    if "?" in url or "#" in url:
        # Paths are appended to a base URL (".../chat/completions"): a query would end up in
        # front of them, and every call would go to a page that does not exist. Only what
        # comes before the "?" is shown: a query often carries a key.
        before = url.split("?", 1)[0].split("#", 1)[0]
        raise InputError(
            f"{flag} {redact(before)[:120]!r}?...: a base URL cannot carry a query string or "
            "a fragment (give an API key with the OPENAI_API_KEY environment variable)"
        )
    return url
