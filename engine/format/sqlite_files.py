"""How diagrama opens its SQLite files (the run store, the checkpoint store, a knowledge index): one set of settings.

WAL lets readers (the studio, `diagrama runs`, a run retrieving passages) go on while another process writes;
synchronous=NORMAL commits without an fsync (a commit survives the process being killed, not a power cut, and the
file is never corrupted); a busy timeout makes a writer that meets another's lock wait for it instead of failing
at once with "database is locked".
"""

from __future__ import annotations

from typing import Any

__all__ = ["BUSY_TIMEOUT_S", "SQLITE_PRAGMAS", "sqlite_pragmas"]

BUSY_TIMEOUT_S = 10.0
"""How long a writer waits for another's lock."""
SQLITE_PRAGMAS = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL",
                  f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")


def sqlite_pragmas(connection: Any, _record: Any = None) -> None:
    """Apply the settings to a DB-API connection (also SQLAlchemy's `connect` event listener)."""
    cursor = connection.cursor()
    for pragma in SQLITE_PRAGMAS:
        cursor.execute(pragma)
    cursor.close()
