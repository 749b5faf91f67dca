"""A run started on behalf of the key that asks for it, the one way each door that takes a caller's request starts
one (`POST /v1/robots/{name}/runs`, the chat door engine.web.service.chat, the MCP tools engine.web.service.mcp_robots):
its session scoped to the caller's key, the caller's key among the secrets its trace scrubs, a refusal naming the
session as the caller named it, and the run recorded as the caller's before its id is answered (engine.web.service
.tenants). Each door answers a Refused in its own shape.

Runs that no caller asks for (a schedule's tick, a signed webhook) are started by their own modules: they have no
key, no session and no owner.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.web.service.durable import Refused

if TYPE_CHECKING:
    from engine.compile.diagram import Diagram
    from engine.format.levels import MessageLevel
    from engine.format.spec import Budget
    from engine.web.service.app import RobotsApi
    from engine.web.service.tenants import Caller

__all__ = ["RunForCaller", "secrets_for"]


def secrets_for(api: RobotsApi, key: str | None) -> list[str]:
    """What a caller's run scrubs from its trace and events: the server's secrets and the caller's own key (a run it
    starts or resumes never shows the key that asked for it)."""
    return [*api.secrets, *([key] if key else [])]


class RunForCaller:
    """A run to start for one caller, in two steps because each door checks the session's name before the inputs:
    made with the session as the caller names it (None: none), it scopes it at once (Refused 400 for a name too
    long with the caller's key), and `start` starts the run."""

    def __init__(self, api: RobotsApi, caller: Caller, state: Mapping[str, Any], session: str | None) -> None:
        """`state`: the request's scope state, where the gate (engine.web.service.gate) put the caller's key and its
        id; empty for a caller without one (`--no-auth`, MCP over stdio)."""
        self.api = api
        self.caller = caller
        self.key_id: str | None = state.get("key_id")
        self.key: str | None = state.get("key")
        self.session = session
        """As the caller names it: what its refusals say."""
        self.kept = api.tenants.new_session(caller, session) if session is not None else None
        """As the store keeps it (the caller's key's): what the run takes its turn in."""

    async def start(self, robot: str, diagram: Diagram, inputs: dict[str, Any], level: MessageLevel | None, *,
                    budget: Budget | None = None, stream: bool = False) -> str:
        """The started run's id, recorded as the caller's; Refused (the backend's: a busy session, a draining
        server, a broker away) with the session named as the caller named it, never as the store keeps it."""
        api = self.api
        try:
            run_id = await api.backend.start(robot, diagram, inputs, level, self.key_id, secrets_for(api, self.key),
                                             self.kept, budget, stream=stream)
        except Refused as exc:
            kept, named = str(self.kept), str(self.session)
            raise Refused(exc.status, api.tenants.as_named(kept, named, exc.message),
                          [api.tenants.as_named(kept, named, problem) for problem in exc.problems]) from None
        await api.tenants.record(run_id, self.caller)
        return run_id
