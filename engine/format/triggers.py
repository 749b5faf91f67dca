"""What starts a robot besides a request, as a diagram's top-level keys declare it: `schedules:` (a cron expression in
a timezone, with inputs) and `webhook:` (a signed POST whose JSON body templates map to inputs).

Models and the clock arithmetic only (croniter over zoneinfo): a bad expression or an unknown timezone is a problem
on its line when the file loads. Whether the inputs fit Start's is the compiler's check (engine.compile.validate);
`diagrama api` runs the triggers (engine.web.service.schedules, engine.web.service.webhooks).
"""

from __future__ import annotations

import datetime as dt
import math
import zoneinfo
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

__all__ = ["HOOK_SCHEMES", "ScheduleSpec", "WebhookSpec", "last_tick", "next_tick"]

HOOK_SCHEMES = ("github", "stripe", "hmac")
"""How a webhook's signature is checked: GitHub's and Stripe's formats, or diagrama's own HMAC headers."""


def _cron(value: str) -> str:
    from croniter import croniter  # imported by a diagram that has a schedule, not by every load

    fields = value.split()
    if not (value.startswith("@") or 5 <= len(fields) <= 6) or not croniter.is_valid(value):
        raise ValueError(f"{value!r} is no cron expression: five fields (minute hour day month weekday), a sixth for "
                         "seconds, or @hourly, @daily, @weekly, @monthly, @yearly")
    return value


def _timezone(value: str) -> str:
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"no timezone named {value!r}: an IANA name such as Europe/Lisbon, America/New_York or UTC") \
            from None
    return value


def _inputs() -> dict[str, Any]:
    return {}


class ScheduleSpec(BaseModel):
    """One schedule: the robot runs at each tick of `cron` in `timezone`, with `inputs`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cron: Annotated[str, AfterValidator(_cron)] = Field(
        description="a cron expression: minute hour day month weekday (`0 8 * * 1-5`), an optional sixth field for "
                    "seconds, or @hourly/@daily/@weekly/@monthly/@yearly")
    inputs: dict[str, Any] = Field(default_factory=_inputs, description="the run's inputs (Start's, typed as the API "
                                                                        "types a request's)")
    timezone: Annotated[str, AfterValidator(_timezone)] = Field(
        default="UTC", description="the IANA timezone the expression is read in (Europe/Lisbon); daylight saving "
                                   "time followed")


class WebhookSpec(BaseModel):
    """`POST /v1/hooks/{robot}`: a request signed with the secret in `secret_env` starts a run, its inputs made from
    the JSON body by templates (`body`, and `headers` with lower-cased names, in scope)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    secret_env: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] = Field(
        description="the environment variable that holds the signing secret (never written anywhere)")
    scheme: Literal["github", "stripe", "hmac"] = Field(
        default="hmac", description="github: X-Hub-Signature-256 (deliveries deduplicated by X-GitHub-Delivery); "
                                    "stripe: Stripe-Signature t=…,v1=…; hmac: X-Diagrama-Signature: sha256=… over "
                                    "`{timestamp}.{body}`, with X-Diagrama-Timestamp")
    inputs: dict[str, Any] = Field(default_factory=_inputs, description="Start input → a template over `body` and "
                                                                        "`headers`: `{{ body.issue.title }}`")
    tolerance: int = Field(default=300, gt=0, le=86400,
                           description="seconds a signed timestamp stays good (a GitHub delivery id is remembered "
                                       "this long)")


def _zone(schedule: ScheduleSpec) -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(schedule.timezone)


def next_tick(schedule: ScheduleSpec, after: float) -> float:
    """The first tick strictly after `after` (seconds since the epoch)."""
    from croniter import croniter

    start = dt.datetime.fromtimestamp(after, _zone(schedule))
    return float(croniter(schedule.cron, start).get_next(float))


def last_tick(schedule: ScheduleSpec, at: float) -> float:
    """The latest tick at or before `at`: ticks fall on whole seconds, so the last one before the next second."""
    from croniter import croniter

    after = dt.datetime.fromtimestamp(math.floor(at) + 1, _zone(schedule))
    return float(croniter(schedule.cron, after).get_prev(float))
