"""`GET /v1/runs`: a page of the robots' runs, newest first, from the run store and from what this process holds
that the store does not have yet (the local backend's runs going; Celery's queued and running ones, from their
Redis records).

Pages are keyset-paginated on (started, run_id): `next_cursor` carries the last run's pair, opaque to the client,
so a page never repeats or skips a run that came meanwhile (OFFSET would). A run the store records as `waiting` is
shown with its status now (`GET /v1/runs/{id}`'s: running again, interrupted, cancelled). Every bad parameter is
one 400 naming it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import math
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast, get_args

import orjson
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response

from engine.runs.published import robot_folder
from engine.web.http import answer
from engine.web.service.durable import Refused
from engine.web.service.models import SESSION_PATTERN, ErrorAnswer, RunAnswer, RunStatus
from engine.web.service.openapi import Answer, Operation

if TYPE_CHECKING:
    from engine.web.service.celery import CeleryBackend
    from engine.web.service.runs import LocalBackend

__all__ = ["LIST_OPERATION", "ListingScope", "LiveRun", "RunListing", "RunPage", "RunSummary", "TenantScope",
           "celery_live", "local_live"]

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
_PARAMETERS = ("robot", "status", "session", "since", "limit", "cursor")
_ROBOT = re.compile(r"^[A-Za-z0-9_-]{1,100}$")
_SESSION = re.compile(SESSION_PATTERN)
_STATUSES: tuple[str, ...] = get_args(RunStatus)
_LIVE_AGAIN = ("running", "waiting", "interrupted", "cancelled")
"""What a run recorded as `waiting` may be now; the store's rows of other statuses are final."""


class RunSummary(BaseModel):
    """One run of a listing: what it is and how it went (its result: `GET` its `run`)."""

    model_config = ConfigDict(extra="forbid")
    run_id: str
    robot: str
    status: RunStatus
    started: float | None = Field(default=None, description="when it started, seconds since the epoch")
    duration_ms: float | None = None
    steps: int | None = None
    session: str | None = Field(default=None, description="the conversation it was a turn of")
    trigger: str | None = Field(default=None, description="what started it besides a request (`schedule:0`: the "
                                                          "diagram's first schedule; `webhook`), once it is recorded")
    run: str = Field(description="the run's URL (GET)")


class RunPage(BaseModel):
    """`GET /v1/runs`: runs newest first; `next_cursor` asks for the next page (null: this is the last)."""

    model_config = ConfigDict(extra="forbid")
    runs: list[RunSummary]
    next_cursor: str | None = None


LIST_OPERATION = Operation(
    "GET", "/v1/runs", "listRuns", "The robots' runs, newest first, a page at a time",
    {200: Answer("a page of runs", RunPage),
     400: Answer("a parameter is wrong (each problem names it)", ErrorAnswer)},
    query={"robot": "only this robot's runs", "status": "only runs with this status now",
           "session": "only this conversation's runs", "since": "only runs started at or after this time: seconds "
           "since the epoch, or ISO 8601 (UTC without a zone)",
           "limit": f"runs on the page: 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT})",
           "cursor": "the `next_cursor` of the page before"})


@dataclass(frozen=True)
class LiveRun:
    """A run this process knows of that the store may not have yet."""

    run_id: str
    robot: str
    status: RunStatus
    started: float
    session: str | None


@dataclass(frozen=True)
class _Query:
    robot: str | None
    status: str | None
    session: str | None
    since: float | None
    limit: int
    before: tuple[float, str] | None

    def admits(self, run: LiveRun) -> bool:
        return ((self.robot is None or run.robot == self.robot) and (self.session is None or run.session == self.session)
                and (self.since is None or run.started >= self.since)
                and (self.before is None or (run.started, run.run_id) < self.before))


def _cursor(started: float, run_id: str) -> str:
    return base64.urlsafe_b64encode(orjson.dumps([started, run_id])).decode().rstrip("=")


def _read_cursor(text: str) -> tuple[float, str]:
    """The (started, run_id) a cursor carries; ValueError for anything else."""
    try:
        pair = orjson.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, orjson.JSONDecodeError, ValueError):
        raise ValueError("not a cursor of this listing") from None
    if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], int | float)
            and not isinstance(pair[0], bool) and math.isfinite(pair[0]) and isinstance(pair[1], str)):
        raise ValueError("not a cursor of this listing")
    return float(pair[0]), pair[1]


def _read_since(text: str) -> float:
    """Seconds since the epoch, or an ISO 8601 time (UTC when it names no zone)."""
    try:
        value = float(text)
    except ValueError:
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"{text!r} is neither seconds since the epoch nor an ISO 8601 time") from None
        return (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).timestamp()
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is no time")
    return value


# Long: one check per parameter, each problem gathered for the one 400.
def _query(request: Request) -> _Query:
    params = request.query_params
    problems = [f"{name}: not a parameter of this listing ({', '.join(_PARAMETERS)})"
                for name in params if name not in _PARAMETERS]
    problems += [f"{name}: given {len(params.getlist(name))} times, once at most"
                 for name in _PARAMETERS if len(params.getlist(name)) > 1]
    robot, status, session = params.get("robot"), params.get("status"), params.get("session")
    if robot is not None and not _ROBOT.match(robot):
        problems.append("robot: a robot's name is letters, digits, _ and -")
    if status is not None and status not in _STATUSES:
        problems.append(f"status: one of {', '.join(_STATUSES)}, not {status[:40]!r}")
    if session is not None and not _SESSION.match(session):
        problems.append(f"session: 1 to 100 characters of {SESSION_PATTERN[2:-3]}")
    since = before = None
    limit = DEFAULT_LIMIT
    try:
        since = _read_since(params["since"]) if "since" in params else None
    except ValueError as exc:
        problems.append(f"since: {str(exc)[:120]}")
    written = params.get("limit")
    if written is not None:
        if not (written.isascii() and written.isdigit() and len(written) <= 3 and 1 <= int(written) <= MAX_LIMIT):
            problems.append(f"limit: a whole number from 1 to {MAX_LIMIT}, not {written[:40]!r}")
        else:
            limit = int(written)
    try:
        before = _read_cursor(params["cursor"]) if "cursor" in params else None
    except ValueError as exc:
        problems.append(f"cursor: {exc}; send the next_cursor of a page as it came")
    if problems:
        raise Refused(400, "the runs cannot be listed so", problems)
    return _Query(robot, status, session, since, limit, before)


def _store_filter(status: str | None) -> dict[str, Any]:
    """The run store's rows that may have `status` now (a `waiting` row may have gone on since it was recorded)."""
    if status is None:
        return {}
    if status == "succeeded":
        return {"statuses": ["succeeded"]}
    if status == "failed":
        return {"other_than": ["succeeded", "waiting"]}
    if status in _LIVE_AGAIN:
        return {"statuses": ["waiting"]}
    return {"statuses": []}  # queued: only a run no worker took yet, which the store has not


class ListingScope(Protocol):
    """Whose runs a caller is listed (tenants: a key sees its own), and its sessions' names as it gives them."""

    async def visible(self, request: Request, run_ids: list[str]) -> list[str]: ...

    def session(self, request: Request, name: str) -> str | None:
        """The name the store keeps the caller's session `name` under (None: the caller can have no such session)."""

    def shown_session(self, request: Request, kept: str) -> str:
        """A session's kept name as the caller gave it."""


class RunListing:
    """The listing over `folder`'s robots: the run store (None: only what this process holds), the backend's own
    runs (`live`), each waiting row's status now (`now`: the backend's `get`); `scope`: what each caller is shown
    (None: every run, sessions as kept)."""

    def __init__(self, folder: Path, store: Any, live: Callable[[], Awaitable[list[LiveRun]]],
                 now: Callable[[str], Awaitable[RunAnswer | None]], scope: ListingScope | None = None) -> None:
        self.folder = folder.resolve()
        self.store = store
        self.live = live
        self.now = now
        self.scope = scope

    async def answer(self, request: Request) -> Response:
        query = _query(request)
        if query.session is not None and self.scope is not None:
            kept_name = self.scope.session(request, query.session)
            if kept_name is None:
                return answer(RunPage(runs=[]))
            query = dataclasses.replace(query, session=kept_name)
        url = str(request.url_for("listRuns").path)
        kept = await self._recorded(request, query, url)
        candidates = sorted((run for run in await self.live() if query.admits(run)),
                            key=lambda run: (run.started, run.run_id), reverse=True)[: query.limit + 1]
        shown = set(await self._visible(request, [run.run_id for run in candidates]))
        recorded = await self._stored_ids([run.run_id for run in candidates])
        kept += [RunSummary(run_id=run.run_id, robot=run.robot, status=run.status, started=run.started,
                            session=self._session(request, run.session), run=f"{url}/{run.run_id}")
                 for run in candidates if run.run_id in shown and run.run_id not in recorded
                 and (query.status is None or run.status == query.status)]
        kept.sort(key=lambda run: (run.started or 0.0, run.run_id), reverse=True)
        page = kept[: query.limit]
        more = len(kept) > query.limit
        return answer(RunPage(runs=page, next_cursor=_cursor(page[-1].started or 0.0, page[-1].run_id)
                              if more and page else None))

    async def _visible(self, request: Request, run_ids: list[str]) -> list[str]:
        return run_ids if self.scope is None or not run_ids else await self.scope.visible(request, run_ids)

    def _session(self, request: Request, kept: str | None) -> str | None:
        return kept if kept is None or self.scope is None else self.scope.shown_session(request, kept)

    async def _recorded(self, request: Request, query: _Query, url: str) -> list[RunSummary]:
        """Up to limit + 1 of the store's runs that pass the query and the caller sees, their statuses as they are
        now: the store's pages read until so many passed (or none are left)."""
        if self.store is None:
            return []
        filters = {**_store_filter(query.status), "session": query.session, "since": query.since,
                   "diagram": self.folder / f"{query.robot}.yaml" if query.robot else None}
        kept: list[RunSummary] = []
        before = query.before
        while len(kept) <= query.limit:
            rows = await asyncio.to_thread(self.store.page, folder=self.folder, before=before, limit=query.limit + 1,
                                           **filters)
            shown = set(await self._visible(request, [row["run_id"] for row in rows]))
            for row in rows:
                summary = await self._summary(request, row, url) if row["run_id"] in shown else None
                if summary is not None and (query.status is None or summary.status == query.status):
                    kept.append(summary)
            if len(rows) <= query.limit:
                break
            before = (rows[-1]["started"], rows[-1]["run_id"])
        return kept

    async def _summary(self, request: Request, row: dict[str, Any], url: str) -> RunSummary | None:
        diagram = Path(str(row["diagram"]))
        if robot_folder(diagram) != self.folder:
            return None  # a diagram in a subfolder (not a robot), recorded in the same store
        status = cast("RunStatus", row["status"] if row["status"] in ("succeeded", "failed", "waiting") else "failed")
        if status == "waiting":
            found = await self.now(row["run_id"])
            status = found.status if found is not None else status
        return RunSummary(run_id=row["run_id"], robot=diagram.stem, status=status, started=row["started"],
                          duration_ms=row["duration_ms"], steps=row["steps"],
                          session=self._session(request, row["session"]), trigger=row.get("trigger"),
                          run=f"{url}/{row['run_id']}")

    async def _stored_ids(self, run_ids: list[str]) -> set[str]:
        if self.store is None or not run_ids:
            return set()
        rows = await asyncio.to_thread(self.store.page, folder=self.folder, run_ids=run_ids, limit=len(run_ids))
        return {row["run_id"] for row in rows}


class TenantScope:
    """A ListingScope over the API's tenants (engine.web.service.tenants: `caller`, `visible`, `session`): a key
    is listed its own runs, and its sessions by the names it gave them (kept as `KEY_ID:NAME`)."""

    def __init__(self, tenants: Any) -> None:
        self.tenants = tenants

    async def visible(self, request: Request, run_ids: list[str]) -> list[str]:
        return list(await self.tenants.visible(run_ids, self.tenants.caller(request)))

    def session(self, request: Request, name: str) -> str | None:
        kept: str | None = self.tenants.session(self.tenants.caller(request), name)
        return kept

    def shown_session(self, request: Request, kept: str) -> str:
        caller = self.tenants.caller(request)
        return kept if caller.sees_all or caller.key_id is None else kept.removeprefix(f"{caller.key_id}:")


def local_live(backend: LocalBackend) -> Callable[[], Awaitable[list[LiveRun]]]:
    """The local backend's runs in memory (a resumed run's record is its store row's, shown with its status now)."""

    async def live() -> list[LiveRun]:
        return [LiveRun(record.run_id, record.robot, record.status, record.started, record.session)
                for record in list(backend.runs.values()) if record.first == 1]

    return live


def celery_live(backend: CeleryBackend) -> Callable[[], Awaitable[list[LiveRun]]]:
    """The Celery runs every API process enqueued that Redis still knows (its hash: a day queued, an hour ended):
    `running` once its stream has an event, else `queued`."""
    from engine.runs.event_relay import run_key, stream_key

    prefix = run_key("")

    async def live() -> list[LiveRun]:
        client = backend.reader.client
        run_ids = [key.decode().removeprefix(prefix) async for key in client.scan_iter(match=f"{prefix}*", count=1000)]
        pipe = client.pipeline(transaction=False)
        for run_id in run_ids:
            pipe.hmget(run_key(run_id), "robot", "created", "session")
            pipe.exists(stream_key(run_id))
        found = await pipe.execute() if run_ids else []
        runs = []
        for run_id, (robot, created, session), going in zip(run_ids, found[::2], found[1::2], strict=True):
            if robot is None or created is None:
                continue  # expired between the scan and the read
            runs.append(LiveRun(run_id, robot.decode(), "running" if going else "queued", float(created),
                                session.decode() or None if session else None))
        return runs

    return live
