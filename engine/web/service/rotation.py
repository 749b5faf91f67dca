"""Keys rotated without a restart: the keys file is read again when it changes (its mtime, size and inode, looked at
on a request at most once a second) and on SIGHUP. A file that no longer reads (a typo, a half-written copy, gone)
keeps the keys from before it and logs why, naming the file and line; a removed key is refused from the next request,
an added one works at once. DIAGRAMA_API_KEYS' keys, read once at the start, stay.

The keys are swapped as one tuple, so a request sees the old keys or the new ones, never a mix. Reading happens on
the event loop: a keys file is a few lines, and a stat a second costs microseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from engine.errors import UsageError
from engine.runs.service_logs import log
from engine.web.service.keys import ApiKey, KeyRing, as_admins, keys_from_file

__all__ = ["LOOK_EVERY_S", "LiveKeys", "reload_on_hangup"]

LOOK_EVERY_S = 1.0
"""How often, at most, a request looks whether the keys file changed."""

_Stamp = tuple[int, int, int]


def _stamp(path: Path) -> _Stamp | None:
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size, found.st_ino


class LiveKeys(KeyRing):
    """The server's keys as they are now: `fixed` (the environment's) and the keys file's, as last read well."""

    def __init__(self, fixed: list[ApiKey], keys_file: Path | None, admins: frozenset[str] = frozenset(), *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.fixed = fixed
        self.keys_file = keys_file
        self.admins = admins
        self._clock = clock
        self._log = log("diagrama.api")
        self._stamp = _stamp(keys_file) if keys_file is not None else None
        self._looked = clock()
        super().__init__(self._read())  # a bad file at the start stops the server (UsageError), as before
        known = {key.key_id for key in self.keys}
        unknown = sorted(admins - known)
        if unknown:
            raise UsageError(f"--admin-key names no key of this server: {', '.join(unknown)} (the keys are "
                             f"{', '.join(sorted(known)) or 'none'})")

    def _read(self) -> list[ApiKey]:
        read = keys_from_file(self.keys_file) if self.keys_file is not None else []
        return as_admins([*self.fixed, *read], self.admins)

    def identify(self, presented: str) -> ApiKey | None:
        self.look()
        return super().identify(presented)

    def look(self) -> None:
        """Read the keys file again if it changed, looking at most once every LOOK_EVERY_S."""
        if self.keys_file is None:
            return
        now = self._clock()
        if now - self._looked < LOOK_EVERY_S:
            return
        self._looked = now
        if _stamp(self.keys_file) != self._stamp:
            self.reload()

    def reload(self) -> bool:
        """Read the keys file now (SIGHUP, or it changed): whether its keys are taken. A file that does not read
        keeps the keys from before, and the error (file, line, what is wrong; never a key) is logged."""
        if self.keys_file is None:
            return False
        self._stamp = _stamp(self.keys_file)  # taken before the read: a change while reading is seen next time
        try:
            ring = KeyRing(self._read())
        except UsageError as exc:
            self._log.error("keys_not_reloaded", keys_file=str(self.keys_file), error=str(exc),
                            kept=len(self.keys))
            return False
        before = {key.key_id for key in self.keys}
        self.keys = ring.keys
        after = {key.key_id for key in self.keys}
        self._log.info("keys_reloaded", keys_file=str(self.keys_file), keys=len(self.keys),
                       added=sorted(after - before), removed=sorted(before - after))
        missing = sorted(self.admins - after)
        if missing:
            self._log.warning("admin_keys_missing", key_ids=missing)
        return True


@contextlib.contextmanager
def reload_on_hangup(keys: KeyRing | None) -> Iterator[None]:
    """While the server runs, SIGHUP reads the keys file again (on the event loop). Only where signals can be heard:
    the main thread of a process on a POSIX system; elsewhere (a server in a test's thread) the file's change is seen
    on a request all the same."""
    hangup = getattr(signal, "SIGHUP", None)
    if not isinstance(keys, LiveKeys) or keys.keys_file is None or hangup is None:
        yield
        return
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(hangup, keys.reload)
    except (RuntimeError, ValueError, NotImplementedError):  # not the main thread, or no signals here
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(hangup)  # SIGHUP's default again: it ends the process
