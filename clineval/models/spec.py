"""Model specs as the CLI writes them: ``backend:name[@base_url][#key=VARIABLE]``, and a run's
specs typed.

`#key=VARIABLE` at the end of a spec of a model with a server (`openai:`) names the
environment variable holding that model's API key: each model (the candidate, every judge)
sends its own key to its own servers, e.g. a local candidate with none (`#key=`, empty: no key
at all) beside a hosted judge with `#key=HOSTED_API_KEY`. Without it a model sends
$OPENAI_API_KEY. The name of a variable is no secret: it stays in the spec's text (and so in
the manifest and `clineval config`), its value never does (secrets.env_credential).

A spec is parsed where its text enters (the run's config is validated, a manifest is read):
`RunModels` is what the rest of a run reads, never the text again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from clineval.errors import InputError
from clineval.messages import did_you_mean
from clineval.models.registry import BACKENDS, backend_named

__all__ = [
    "BACKENDS",
    "DEFAULT_KEY_VARIABLE",
    "KEY_SUFFIX",
    "ModelSpec",
    "RunModels",
    "check_base_url",
]

DEFAULT_KEY_VARIABLE = "OPENAI_API_KEY"
KEY_SUFFIX = "#key="
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class ModelSpec:
    backend: str
    name: str
    base_urls: tuple[str, ...] = field(default_factory=tuple)
    # As the user wrote it (--model, --judge): what --batch-model and JUDGE=URL name, and how
    # the run's settings refer to it. Not part of equality: the parts above are the model.
    # A spec built from its parts is written as its label. May hold a URL's credentials.
    text: str = field(default="", compare=False, repr=False)
    # The environment variable of this model's API key (`#key=NAME`); None: the default
    # ($OPENAI_API_KEY), "": no key. Not part of equality: a key does not change the answers.
    key_variable: str | None = field(default=None, compare=False)

    @property
    def api_key_variable(self) -> str | None:
        """The environment variable whose value this model sends as its key (None: none)."""
        if self.key_variable is None:
            return DEFAULT_KEY_VARIABLE
        return self.key_variable or None

    def __post_init__(self) -> None:
        if not self.text:
            object.__setattr__(self, "text", self.label)

    @property
    def label(self) -> str:
        """A display name without URLs (they may hold credentials or private hosts)."""
        return f"{self.backend}:{self.name}"

    @classmethod
    def parse(cls, text: str, extra_base_urls: tuple[str, ...] = ()) -> ModelSpec:
        backend = text.partition(":")[0]
        body, variable = text, None
        if backend in BACKENDS and backend_named(backend).takes_base_url:
            # only a model with a server sends a key (a file path may hold "#key=")
            before, suffix, after = text.rpartition(KEY_SUFFIX)
            if suffix:
                body, variable = before, after
        backend, sep, rest = body.partition(":")
        if not sep or not rest:
            raise InputError(f"model spec {text!r} is not backend:name (backends: {BACKENDS})")
        if backend not in BACKENDS:
            raise InputError(
                f"unknown model backend {backend!r} in {text!r}"
                f"{did_you_mean(backend, BACKENDS)} (known: {BACKENDS})"
            )
        name, urls = rest, tuple(extra_base_urls)
        if backend_named(backend).takes_base_url:
            at = rest.lower().rfind("@http")  # HTTP:// too: else the URL would become the name
            if at > 0:
                name, urls = rest[:at], (rest[at + 1 :], *extra_base_urls)
        if variable is not None:
            _check_key_variable(body, variable)
        return cls(backend=backend, name=name, base_urls=urls, text=text, key_variable=variable)


def _check_key_variable(body: str, variable: str) -> None:
    # The text after #key= is never shown: a user may have put the key itself there.
    if variable and not _VARIABLE.fullmatch(variable):
        raise InputError(
            f"model spec {body!r}{KEY_SUFFIX}...: not the name of an environment variable "
            "(letters, digits and _): give the name of the variable holding the key, never "
            "the key itself"
        )


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
