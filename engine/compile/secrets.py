"""`secret('NAME')` in a template: the value of an environment variable the diagram lists in `secrets:`.

At load, a literal name the diagram does not list is a problem; so is one unset in the environment the caller is
about to run with online (`load_diagram(environ=...)`: `diagrama run`, `diagrama batch`), while `validate` and the
studio, which run nothing and may not hold the values, check the listing only. Each run's scope gets the function
bound to that run's environment (`TemplateEnv.new_scope`, `run_environ`); there an unlisted or unset name, or a
value shorter than MIN_SECRET_LENGTH (which the redactor could not scrub: it is refused rather than leaked), is a
RunError, except offline, where a listed secret that is unset reads as a stand-in (`offline-secret-NAME`), as a
request block sends a stand-in key: nothing offline reaches a server that would need the real one. The function
is a closure, not an object: a template can read an object's public attributes, and the environment must stay
out of its reach. Values are redacted by the run (`Services.secrets` takes the listed names).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from engine.errors import RunError
from engine.format.names import suggest
from engine.format.redact import MIN_SECRET_LENGTH

__all__ = ["SECRET_FUNCTION", "run_environ", "secret_function"]

SECRET_FUNCTION = "secret"
"""The template function's name."""

Refusal = tuple[str, str | None, str]


def _listing_hint(name: str, names: frozenset[str]) -> str:
    if not names:
        return f"list it at the top of the diagram: secrets: [{name}]"
    return suggest(name, names) or f"add it to the diagram's secrets: [{', '.join(sorted(names))}, {name}]"


def secret_function(names: Iterable[str], environ: Mapping[str, str] | None = None) -> Callable[[str], str]:
    """`secret(name)` over `environ` for the listed `names` (None: no environment yet, at load; every call fails)."""
    listed = frozenset(names)

    def secret(name: Any) -> str:
        """secret('NAME'): the environment variable NAME, which the diagram lists in `secrets:`."""
        if not isinstance(name, str) or name not in listed:
            shown = name if isinstance(name, str) else type(name).__name__
            raise RunError(f"secret('{shown}'): not one of the diagram's secrets ({_listing_hint(str(shown), listed)})",
                           type="secret_not_listed")
        value = environ.get(name) if environ is not None else None
        if not value:
            raise RunError(f"secret('{name}'): the environment variable {name} is not set", type="secret_unset")
        if len(value) < MIN_SECRET_LENGTH:
            raise RunError(_too_short(name, value), type="secret_too_short")
        return value

    def check_literal_call(args: list[Any], kwargs: dict[str, Any]) -> Refusal | None:
        """Load time: a literal name that is not listed, or (when the caller runs it next) not set."""
        name = args[0] if args else kwargs.get("name")
        if not isinstance(name, str):
            return None
        if name not in listed:
            return (f"secret('{name}'): the diagram does not list '{name}' in its secrets", _listing_hint(name, listed),
                    "secret_not_listed")
        if environ is not None and not environ.get(name):
            return (f"secret('{name}'): the environment variable {name} is not set",
                    f"export {name}=... before running, or run it --offline", "secret_unset")
        if environ is not None and len(environ[name]) < MIN_SECRET_LENGTH:
            return _too_short(name, environ[name]), None, "secret_too_short"
        return None

    def for_run(run_environ: Mapping[str, str]) -> Callable[[str], str]:
        """The same function over one run's environment."""
        return secret_function(listed, run_environ)

    secret.check_literal_call = check_literal_call  # type: ignore[attr-defined]  # read by TemplateEnv at compile
    secret.for_run = for_run  # type: ignore[attr-defined]  # read by TemplateEnv.new_scope
    return secret


def _too_short(name: str, value: str) -> str:
    """A refusal that names the secret, never its value (only how long it is)."""
    return (f"secret('{name}'): {name} is {len(value)} character{'s' if len(value) != 1 else ''} long; secrets must "
            f"be at least {MIN_SECRET_LENGTH} characters (a shorter one could not be told apart from ordinary text, "
            "so it could not be redacted)")


class _Offline(Mapping[str, str]):
    """An environment in which every unset name reads as a stand-in (an offline run's)."""

    __slots__ = ("_environ",)

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ

    def __getitem__(self, name: str) -> str:
        return self._environ.get(name) or f"offline-secret-{name}"

    def __iter__(self) -> Iterator[str]:
        return iter(self._environ)

    def __len__(self) -> int:
        return len(self._environ)


def run_environ(environ: Mapping[str, str], *, offline: bool) -> Mapping[str, str]:
    """The environment `secret()` reads in a run: its own, where offline an unset secret reads as a stand-in."""
    return _Offline(environ) if offline else environ
