"""Keep API keys and URL credentials out of logs, stores, reports and error messages.

Two kinds of masking:

- `redact(text)`, for messages: every credential the run knows (below), the values of
  environment variables whose names look secret, and the shapes of a credential (a Bearer or
  Basic header value, an sk- key, user:password in a URL, a key in a query string).
- `mask_known_value(obj)` (inside the strings of JSON-like data: the run store, the JSON files
  of a run) and `mask_known(text)` (any text: the one file writer, the console streams of the
  command line), for everything stored, written or printed: only the credentials the run
  knows, by value, so that model outputs are never altered by a shape that merely looks like
  a key.

A credential the run knows is the API key it sends (OPENAI_API_KEY, read through
`env_credential`; the Hugging Face token HF_TOKEN; both registered when a command starts,
`register_environment`) and the user:password of every base URL it was given (`register_url`,
called where a URL is checked). Each is known in every form it can take on the wire or in a
reply: as written, percent-decoded, the user:pass pair, the base64 of that pair (the
`Authorization: Basic` value, padded or not, standard or URL-safe alphabet, in UTF-8 and
Latin-1), and each of those as it reads inside a JSON string.
A bare password, token or key shorter than 6 characters is masked only in its pair and base64
forms (masking "abc" in every model output would change results). A form made only of
characters that JSON also writes outside strings (digits, "true", ",", ...) is masked inside
strings and in messages, never in raw text: there it could be part of a number and masking it
would break a JSON file or a printed JSON document.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)
# Environment variables whose values a run sends as credentials (or whose URL may carry them):
# the OpenAI-compatible key, and the Hugging Face token its libraries send for hf: models.
_CREDENTIAL_ENV = ("OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
_URL_ENV = ("OPENAI_BASE_URL",)
_MIN_BARE = 6  # shortest bare secret masked on its own
_MASK = "***"
# Bearer tokens and sk-style keys that may sit in a message even without an env var.
_SECRET_PATTERNS = [
    re.compile(r"(Bearer\s+)[A-Za-z0-9._\-+/=~]{8,}"),
    # the value of a Basic Authorization header (base64 of user:password) quoted back
    re.compile(r"(Basic\s+)[A-Za-z0-9+/_\-]{4,}=*"),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),
    # user:password in a URL (http://user:KEY@host/v1): the whole userinfo goes.
    re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.\-]*://)[^/?#@\s]+@"),
    # a key in a query string (Azure-style ?api-key=..., ?token=...).
    re.compile(r"([?&][^=&#\s]*(?:key|token|secret|password|sig)[^=&#\s]*=)[^&#\s]+", re.I),
]
# What JSON also writes outside its strings (numbers, literals, punctuation, spaces): a form
# made only of these could sit across a number or a literal of a JSON text.
_JSON_OUTSIDE_STRINGS = re.compile(r"[0-9.eE+\-,:\[\]{}\s truefalsn]+")

_lock = threading.Lock()
_registered: set[str] = set()  # bare credentials and pairs registered by this process


def secret_values() -> list[str]:
    """Values of environment variables whose names look secret (at least 6 chars long)."""
    return [v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= _MIN_BARE]


def _userinfo_secrets(url: str) -> list[str]:
    """The credentials in a URL's userinfo: the pair as written and decoded, the password or
    token alone as written and decoded."""
    try:
        netloc = urlsplit(url.strip()).netloc
    except ValueError:
        netloc = ""
    userinfo, at, _ = netloc.rpartition("@")
    if not at or not userinfo or userinfo == _MASK:
        return []
    user, colon, password = userinfo.partition(":")
    found = [userinfo, unquote(userinfo)]
    if colon:
        found += [f"{unquote(user)}:{unquote(password)}", password, unquote(password)]
    else:  # a token as the whole userinfo (https://TOKEN@host): sent as Basic TOKEN:
        found += [f"{user}:", f"{unquote(user)}:", user, unquote(user)]
    return [s for s in found if s and s != _MASK]


def register_url(url: str) -> None:
    """Know the credentials in `url`'s userinfo (if any) from now on: called where a base URL
    enters (clineval.models.spec.check_base_url)."""
    found = _userinfo_secrets(url)
    if found:
        with _lock:
            _registered.update(found)


def register_secret(value: str) -> None:
    """Know `value` (an API key, a token) as a credential from now on."""
    if value:
        with _lock:
            _registered.add(value)


def register_environment() -> None:
    """Know the credentials the environment gives a run (the keys of _CREDENTIAL_ENV, the
    userinfo of the URLs of _URL_ENV) as they are now: called when a command starts and
    where the model layer reads them (`env_credential`)."""
    for name in _CREDENTIAL_ENV:
        register_secret(os.environ.get(name, ""))
    for name in _URL_ENV:
        register_url(os.environ.get(name, ""))


def env_credential(name: str) -> str | None:
    """The credential in environment variable `name` (None when unset or empty), known
    from now on in every form (what a model reads its API key with)."""
    value = os.environ.get(name) or None
    if value is not None:
        register_secret(value)
    return value


def _encodings(secret: str) -> list[str]:
    """`secret` and the base64 forms it takes in an Authorization: Basic header."""
    forms = [secret]
    if ":" in secret:  # a user:password pair: what Basic auth sends
        for charset in ("utf-8", "latin-1"):
            try:
                raw = secret.encode(charset)
            except UnicodeEncodeError:
                continue
            for coded in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
                text = coded.decode("ascii")
                forms += [text, text.rstrip("=")]
    return forms


def _bare(secret: str) -> bool:
    """Whether `secret` is one part alone (a password, a key), not a pair."""
    return ":" not in secret


def _forms(secrets: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(forms masked in any text, forms masked only inside strings and in in_strings),
    longest first."""
    everywhere: set[str] = set()
    in_strings: set[str] = set()
    for secret in secrets:
        if _bare(secret) and len(secret) < _MIN_BARE:
            continue
        for form in _encodings(secret):
            if len(form) < 4:
                continue
            escaped = json.dumps(form, ensure_ascii=False)[1:-1]
            ascii_escaped = json.dumps(form)[1:-1]
            variants = {form, escaped, ascii_escaped}
            if _JSON_OUTSIDE_STRINGS.fullmatch(form):
                in_strings |= variants
            else:
                everywhere |= variants
    in_strings -= everywhere
    order = lambda s: (-len(s), s)  # noqa: E731 - longest first: no form leaves part of one
    return tuple(sorted(everywhere, key=order)), tuple(sorted(in_strings, key=order))


_Known = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]
# the forms of the last state seen: the registry object itself (held, so that a replaced set's
# id cannot be reused by a new one and look unchanged) and its size
_last: tuple[set[str], int, _Known] | None = None


def _known() -> _Known:
    """(forms for any text, forms for inside strings only, both), each longest first, of the
    registered credentials. On the hot path of every stored call: recomputed only when the
    registry changed (it is only ever added to, or replaced whole by a test)."""
    global _last
    registry = _registered
    last = _last
    if last is not None and last[0] is registry and last[1] == len(registry):
        return last[2]
    with _lock:
        size = len(registry)
        everywhere, in_strings = _forms(tuple(sorted(registry)))
    both = tuple(sorted({*everywhere, *in_strings}, key=lambda f: (-len(f), f)))
    found = (everywhere, in_strings, both)
    _last = (registry, size, found)
    return found


def known_forms() -> tuple[str, ...]:
    """Every form of every credential the run knows."""
    return _known()[2]


def _replace_all(text: str, forms: Iterable[str]) -> str:
    for form in forms:
        if form in text:
            text = text.replace(form, _MASK)
    return text


def mask_known(text: str) -> str:
    """`text` (any text: a file, a console line) without any known credential form that can
    be masked in raw text (each replaced by ***)."""
    return _replace_all(text, _known()[0])


def holds_known(text: str) -> bool:
    """Whether `text` holds a known credential form (a cheap test before mask_known_value;
    a form of digits may also be a number, which that leaves alone)."""
    return any(form in text for form in _known()[2])


def mask_known_value(value: Any) -> Any:
    """A JSON-like value with every known credential form masked inside its strings (and
    mapping keys), numbers and literals untouched."""
    forms = _known()[2]
    return _mask_strings(value, forms) if forms else value


def _mask_strings(value: Any, forms: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return _replace_all(value, forms)
    if isinstance(value, dict):
        return {_mask_strings(k, forms): _mask_strings(v, forms) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mask_strings(v, forms) for v in value]
    return value


def _masked(match: re.Match[str]) -> str:
    """The match with its secret part replaced: group 1 (a prefix) is kept, "@" too."""
    prefix = match.group(1) if match.groups() else ""
    return prefix + _MASK + ("@" if match.group(0).endswith("@") else "")


# The credential shapes a URL carries: its userinfo, and a key in its query string.
_URL_CREDENTIALS = (_SECRET_PATTERNS[3], _SECRET_PATTERNS[4])


def mask_settings_text(text: str) -> str:
    """A setting's text written into a file meant to be run again (`clineval config`): the
    credentials the process knows masked by value, and those a URL carries (its userinfo, a
    key in its query), but no other text shaped like a key: a path `runs/sk-proj-abc` is a
    path, and a masked one would not run."""
    text = _replace_all(text, _known()[2])
    for pattern in _URL_CREDENTIALS:
        text = pattern.sub(_masked, text)
    return text


def masked_url_credentials(url: str) -> bool:
    """Whether `url`'s userinfo or query holds the mask `***` (as written or percent-encoded)
    where a credential was: a URL written back by `clineval config` or read from a manifest,
    which must not be sent as it is."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return False
    userinfo = parts.netloc.rpartition("@")[0]
    return _MASK in unquote(userinfo) or _MASK in unquote(parts.query)


def redact(text: str) -> str:
    """A message without any credential: known ones by value, the environment's secret-looking
    values, and anything shaped like a credential."""
    text = _replace_all(text, _known()[2])
    for value in secret_values():
        text = text.replace(value, _MASK)
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(_masked, text)
    return text


class MaskedStream:
    """A text stream that writes through `mask_known`: the command line's stdout and stderr,
    so that no line it prints (a result table, a progress line, a warning, an error) carries
    a credential the run knows. Everything else is the wrapped stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(mask_known(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
