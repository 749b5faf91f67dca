"""Whether an error says a service (the broker, a database) is away for a while — so trying again later may work —
rather than that the request is wrong. One test for every place that waits out a restart: a worker's statements
(engine.runs.api_durable), the event streams' reads and writes (engine.runs.event_relay), the API's requests on
Celery (engine.web.service.celery). By class name, so that neither redis-py nor a database driver is imported to ask.
"""

from __future__ import annotations

__all__ = ["outage"]

_AWAY = frozenset({"ConnectionError", "TimeoutError", "OperationalError", "InterfaceError", "BusyLoadingError"})


def outage(exc: BaseException) -> bool:
    """Whether `exc` says a service is away (so trying again later may work), not that the request is wrong."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & _AWAY) or (isinstance(exc, OSError) and "store" in str(exc))
