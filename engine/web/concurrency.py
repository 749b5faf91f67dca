"""What the studio does at once: compilations off the event loop, bounded in time, and one writer per file.

Opening, validating and listing diagrams compile them (the code `diagrama validate` runs). A
plugin's check or a file read can be slow, and the event loop must never wait on it: every
other request would wait too. Each compilation runs in a daemon thread (a few at a time); one
that has not finished within `timeout` is answered without its result, and its text (path and
content hash) is remembered, so later requests for the same text answer at once instead of
waiting again. An edited text is tried afresh.

A save checks the file's hash and then writes it; two saves from the same base must not both
pass the check. `PathLocks` makes check and write one critical section per file.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TypeVar

from engine.web.yaml_edit import content_hash

__all__ = ["Compilations", "PathLocks"]

_T = TypeVar("_T")
_REMEMBERED = 256


class Compilations:
    """Runs compilations in worker threads, at most `workers` at once, each awaited at most `timeout` seconds."""

    def __init__(self, timeout: float = 10.0, workers: int = 4) -> None:
        self.timeout = timeout
        self._slots = threading.BoundedSemaphore(workers)
        self._slow: OrderedDict[tuple[str, str], None] = OrderedDict()

    def known_slow(self, path: Path, text: str) -> bool:
        return (str(path), content_hash(text)) in self._slow

    async def run(self, path: Path, text: str, work: Callable[[], _T]) -> _T | None:
        """`work()` (the compilation of `text` as the file `path`) in a worker thread; None when it did not finish
        within the bound, now or on an earlier request for the same text."""
        key = (str(path), content_hash(text))
        if key in self._slow:
            return None
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[_T] = loop.create_future()
        started = threading.Event()

        def deliver(outcome: Callable[[], None]) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits for this answer
                loop.call_soon_threadsafe(outcome)

        def target() -> None:
            if not self._slots.acquire(timeout=self.timeout):  # every slot held by slow work: give up, not pile up
                return
            try:
                started.set()
                result = work()
            except BaseException as exc:  # handed to the awaiting request as it is
                deliver(lambda exc=exc: None if answer.done() else answer.set_exception(exc))  # type: ignore[misc]
            else:
                deliver(lambda: None if answer.done() else answer.set_result(result))
            finally:
                self._slots.release()

        threading.Thread(target=target, name="diagrama-compile", daemon=True).start()
        try:
            return await asyncio.wait_for(asyncio.shield(answer), self.timeout)
        except TimeoutError:
            if started.is_set():  # it ran and did not finish (not merely waited for a slot): remember the text
                self._slow[key] = None
                while len(self._slow) > _REMEMBERED:
                    self._slow.popitem(last=False)
            return None


class PathLocks:
    """One asyncio lock per file path, made when first wanted and dropped when nobody holds or awaits it."""

    def __init__(self) -> None:
        self._locks: dict[Path, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, *paths: Path) -> AsyncIterator[None]:
        """Hold the locks of `paths` (in a fixed order, so two holders of the same pair cannot deadlock)."""
        ordered = sorted({path.resolve() for path in paths})
        async with contextlib.AsyncExitStack() as stack:
            for path in ordered:
                await stack.enter_async_context(self._one(path))
            yield

    @contextlib.asynccontextmanager
    async def _one(self, path: Path) -> AsyncIterator[None]:
        lock, users = self._locks.get(path, (asyncio.Lock(), 0))
        self._locks[path] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[path]
            if users == 1:
                del self._locks[path]
            else:
                self._locks[path] = (lock, users - 1)
