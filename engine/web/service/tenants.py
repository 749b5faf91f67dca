"""Tenants: a key sees, resumes and forgets only the runs and sessions it created; an admin key (and the one caller of
`--no-auth`) sees every one. Another key's run is answered 404, as one that does not exist: a key never learns that a
run it does not own exists.

Runs: the id of the key each run came with is kept in the checkpoint store's database (engine.runs.owners), written
when the API accepts the run and read when a key asks for it (then remembered by this process: an owner never
changes), so API processes sharing the store, and one restarted, agree. A run without an owner (started by
`--no-auth`, or before keys were scoped) is an admin's alone.

Sessions: key ci's session `s1` is kept as `ci:s1` (a key id has no `:`, so the name splits one way), so two keys'
`s1` are two conversations; each key names its sessions by its own names and is answered with them. An admin key and
`--no-auth` name sessions as the store keeps them: `ci:s1` is key ci's, `s1` one of `--no-auth` or `diagrama run
--session`. A kept name is still a SESSION_PATTERN name, at most 100 characters with its key id.
"""

from __future__ import annotations

import asyncio
import re
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.requests import Request

from engine.runs.owners import RunOwners
from engine.web.service.durable import Refused
from engine.web.service.models import SESSION_PATTERN

__all__ = ["Caller", "Tenants"]

_SESSION = re.compile(SESSION_PATTERN)
_KEPT_OWNERS = 10_000
"""Owners remembered by this process (a run polled or followed asks once)."""


@dataclass(frozen=True)
class Caller:
    """Who asks: a key's id (None: `--no-auth`'s one caller), and whether it sees every caller's runs."""

    key_id: str | None
    sees_all: bool


class Tenants:
    """The owners of the API's runs, and each key's names of its sessions."""

    def __init__(self, owners: RunOwners | None, *, secured: bool) -> None:
        self.owners = owners
        """None: nobody's runs are told apart (`--no-auth`)."""
        self.secured = secured
        self._known: OrderedDict[str, str] = OrderedDict()

    def caller(self, request: Request) -> Caller:
        if not self.secured:
            return Caller(None, sees_all=True)
        state = request.scope.get("state", {})
        return Caller(state.get("key_id"), sees_all=bool(state.get("admin")))

    async def record(self, run_id: str, caller: Caller) -> None:
        """The run is `caller`'s: written before its id is answered, so that no one asks for it sooner."""
        if caller.key_id is None or self.owners is None:
            return
        await self.owners.record_soon(run_id, caller.key_id)
        self._remember(run_id, caller.key_id)

    async def sees(self, run_id: str, caller: Caller) -> bool:
        """Whether `caller` may see (read, follow, resume) the run."""
        if caller.sees_all:
            return True
        if caller.key_id is None or self.owners is None:
            return False
        owner = self._known.get(run_id)
        if owner is None:
            owner = await asyncio.to_thread(self.owners.owner, run_id)
            if owner is not None:
                self._remember(run_id, owner)
        return owner == caller.key_id

    async def visible(self, run_ids: Iterable[str], caller: Caller) -> list[str]:
        """Those of `run_ids` that `caller` sees, in their order (a listing's page: one query for all)."""
        wanted = list(run_ids)
        if caller.sees_all:
            return wanted
        if caller.key_id is None or self.owners is None:
            return []
        owners = await asyncio.to_thread(self.owners.owners, wanted)
        return [run_id for run_id in wanted if owners.get(run_id) == caller.key_id]

    def _remember(self, run_id: str, key_id: str) -> None:
        self._known[run_id] = key_id
        if len(self._known) > _KEPT_OWNERS:
            self._known.popitem(last=False)

    def session(self, caller: Caller, name: str) -> str | None:
        """The name the store keeps `caller`'s session `name` under; None when it would be too long (no such session)."""
        if caller.sees_all or caller.key_id is None:
            return name
        kept = f"{caller.key_id}:{name}"
        return kept if _SESSION.match(kept) else None

    def new_session(self, caller: Caller, name: str) -> str:
        """`session`, for a run that starts one: Refused 400 naming the longest name the key may give."""
        kept = self.session(caller, name)
        if kept is None:
            room = 100 - len(str(caller.key_id)) - 1
            raise Refused(400, f"session '{name}' is too long for key '{caller.key_id}'",
                          [f"session: at most {room} characters with key '{caller.key_id}' (its sessions are kept "
                           f"as {caller.key_id}:NAME, at most 100 characters)"])
        return kept

    @staticmethod
    def as_named(kept: str, name: str, text: str) -> str:
        """`text` (a refusal's message) with the kept name of a session as its caller names it."""
        return text if kept == name else text.replace(kept, name)

    def close(self) -> None:
        if self.owners is not None:
            self.owners.close()
