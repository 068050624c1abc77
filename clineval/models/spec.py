"""Model specs as the CLI writes them: ``backend:name[@base_url]``."""

from __future__ import annotations

from dataclasses import dataclass, field

from clineval.errors import InputError

BACKENDS = ("openai", "llamacpp", "hf", "baseline", "predictions")


@dataclass(frozen=True)
class ModelSpec:
    backend: str
    name: str
    base_urls: tuple[str, ...] = field(default_factory=tuple)

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
        if backend == "openai":
            at = rest.lower().rfind("@http")  # HTTP:// too: else the URL would become the name
            if at > 0:
                name, urls = rest[:at], (rest[at + 1 :], *extra_base_urls)
        return cls(backend=backend, name=name, base_urls=urls)
