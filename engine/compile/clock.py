"""`now(tz)` and `today(tz)` in a template: the run's clock, fixed at its start, in a time zone.

Every call in one run answers the same instant, the run's start (`TemplateEnv.new_scope(clock=...)`): a run is
reproducible, and a resumed one reads the time its checkpoint kept. Outside a run (an eval's scorer, a template
evaluated on its own) they read the real time. No argument is UTC; a zone is an IANA name (`Europe/Lisbon`), and
an unknown one is a TemplateError naming it (a load problem when written as a literal). The instant's tzinfo is a
fixed offset (the zone's at that instant, with its abbreviation): nothing of the zone database is in a template's
reach. A `now()` renders as ISO 8601 text (`2026-03-01T09:00:00+00:00`); `today()` as `2026-03-01`.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable
from typing import Any

from engine.errors import TemplateError
from engine.format.instant import Instant

__all__ = ["CLOCK_FUNCTIONS", "Instant", "parse_clock"]

Refusal = tuple[str, str | None, str]


@functools.lru_cache(maxsize=64)
def _zone(name: str) -> datetime.tzinfo | None:
    """The zone named `name`, or None when there is none (a name no zone has, or not a name at all)."""
    if name.upper() == "UTC":
        return datetime.UTC
    import zoneinfo  # loaded by the first run that names a zone: `import engine` stays cheap

    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return None


def _unknown(function: str, name: Any) -> str:
    return (f"{function}({name!r}): no time zone named {name!r} (an IANA name such as 'Europe/Lisbon' or "
            "'America/New_York'; none is UTC)")


def _at(instant: datetime.datetime, tz: Any, function: str) -> Instant:
    if tz is None:
        zone: datetime.tzinfo | None = datetime.UTC
    else:
        zone = _zone(tz) if isinstance(tz, str) else None
        if zone is None:
            raise TemplateError(_unknown(function, tz), type="template_unknown_timezone")
    local = instant.astimezone(zone)
    fixed = datetime.timezone(local.utcoffset() or datetime.timedelta(0), local.tzname() or "UTC")
    return Instant(local.year, local.month, local.day, local.hour, local.minute, local.second, local.microsecond,
                   tzinfo=fixed)


def _check_literal_call(function: str, args: list[Any], kwargs: dict[str, Any]) -> Refusal | None:
    """Load time: a zone written as a literal that no zone has fails every run."""
    tz = args[0] if args else kwargs.get("tz")
    if tz is None or (isinstance(tz, str) and _zone(tz) is not None):
        return None
    return _unknown(function, tz), "time zones are IANA names: Europe/Lisbon, America/New_York, UTC", \
        "template_unknown_timezone"


def _clock_functions(instant: datetime.datetime | None) -> dict[str, Callable[..., Any]]:
    """`now` and `today` at `instant` (None: the real time at each call)."""

    def now(tz: Any = None) -> Instant:
        """now(tz): the run's clock (its start) in time zone `tz` (an IANA name; none: UTC)."""
        return _at(instant or datetime.datetime.now(datetime.UTC), tz, "now")

    def today(tz: Any = None) -> datetime.date:
        """today(tz): the date of the run's clock in time zone `tz` (an IANA name; none: UTC)."""
        return _at(instant or datetime.datetime.now(datetime.UTC), tz, "today").date()

    functions: dict[str, Callable[..., Any]] = {"now": now, "today": today}
    for name, function in functions.items():
        function.check_literal_call = functools.partial(_check_literal_call, name)  # type: ignore[attr-defined]  # read by TemplateEnv
        function.for_clock = functools.partial(_bound, name)  # type: ignore[attr-defined]  # read by new_scope
    return functions


def _bound(name: str, instant: datetime.datetime) -> Callable[..., Any]:
    """The function `name` at one run's clock."""
    return _clock_functions(instant)[name]


CLOCK_FUNCTIONS = _clock_functions(None)
"""The template functions `now` and `today`, on the real time until a run binds them to its clock."""


def parse_clock(text: str) -> datetime.datetime:
    """A clock as written (`2026-03-01T09:00:00+00:00`; no offset is UTC); ValueError when it is no ISO instant."""
    instant = datetime.datetime.fromisoformat(text)
    return instant if instant.tzinfo is not None else instant.replace(tzinfo=datetime.UTC)
