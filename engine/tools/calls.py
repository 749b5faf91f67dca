"""Calling a tool's handler under its timeout, without ever waiting on a stuck one.

A sync handler runs on a daemon thread of its own, an async one as a task on the loop.
The caller waits for the result, the timeout or its own cancellation (the run's deadline),
whichever comes first; a handler still running then is abandoned, never joined. A thread
stuck in C code cannot be killed, but neither the run nor the process's exit waits for it.
Bounding what a handler computes is the handler's own job (the calculator's size limit).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import threading
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from engine.errors import ToolError

__all__ = ["HandlerTimeout", "call_handler"]

# Threads of abandoned handlers that may pile up before new calls are refused: each stuck
# one holds a thread until it returns, and a process should not collect them without end.
MAX_THREADS = 256

_lock = threading.Lock()
_running = 0  # handler threads alive now, in every run of this process


class HandlerTimeout(TimeoutError):
    """A handler did not finish in time; `left_running` when its thread was abandoned still running."""

    def __init__(self, timeout: float, *, left_running: bool) -> None:
        super().__init__(f"no result after {timeout:g} s")
        self.left_running = left_running


def _handler_exited() -> None:
    global _running
    with _lock:
        _running -= 1


def _start_thread(handler: Callable[..., Any], arguments: Mapping[str, Any], name: str) -> asyncio.Future[Any]:
    """Run a sync handler on a fresh daemon thread; a future on this loop gets its outcome.

    A thread per call, not a shared pool: a stuck handler holds only its own thread, so it
    never starves other calls, and daemon threads are not joined when the process exits
    (a `ThreadPoolExecutor`'s are, so one stuck call would hold the CLI open).
    """
    global _running
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()  # as asyncio.to_thread does

    def deliver(value: Any, error: BaseException | None) -> None:
        if future.done():  # abandoned: nobody waits for this outcome any more
            return
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)

    def work() -> None:
        try:
            try:
                value, error = context.run(handler, **arguments), None
            except BaseException as exc:  # the handler's failure goes to the caller, as to_thread's would
                value, error = None, exc
            with contextlib.suppress(RuntimeError):  # the loop has closed: the run ended without this result
                loop.call_soon_threadsafe(deliver, value, error)
        finally:
            _handler_exited()

    with _lock:
        if _running >= MAX_THREADS:
            raise ToolError(f"{_running} tool handlers are still running (a handler may be stuck); "
                            f"'{name}' was not started", type="tool_busy")
        _running += 1
    try:
        threading.Thread(target=work, name=f"diagrama-tool:{name}", daemon=True).start()
    except BaseException:
        _handler_exited()
        raise
    return future


def _retrieve(work: asyncio.Future[Any]) -> None:
    if not work.cancelled():
        work.exception()  # an abandoned task's late failure is nobody's to log


def _abandon(work: asyncio.Future[Any]) -> None:
    """Stop waiting: a task is cancelled at its next await; a thread's outcome is dropped."""
    work.cancel()
    work.add_done_callback(_retrieve)


async def _wait(work: asyncio.Future[Any], deadline: float) -> bool:
    """Whether `work` finished before `deadline` (loop time); abandoned if not, or if the caller is cancelled."""
    # asyncio.wait, not asyncio.timeout: it stops waiting on time even when the handler's
    # task ignores its cancellation, and never waits for the cancelled work to unwind.
    try:
        done, _ = await asyncio.wait({work}, timeout=max(0.0, deadline - asyncio.get_running_loop().time()))
    except asyncio.CancelledError:
        _abandon(work)
        raise
    if not done:
        _abandon(work)
    return bool(done)


_EAGER: Callable[..., asyncio.Future[Any]] | None = getattr(asyncio, "eager_task_factory", None)
"""Python 3.12's factory of tasks whose first step runs at once; None before 3.12."""


def _start_task(coroutine: Coroutine[Any, Any, Any]) -> asyncio.Future[Any]:
    """The handler's coroutine as a task of its own: started eagerly where Python can (3.12's eager tasks, whose
    first step runs at once as that task: one that returns without waiting is done before any scheduling), else
    scheduled. Its steps always run as its own task, never the caller's: an `asyncio.timeout` or an anyio cancel
    scope it enters belongs to it, so its expiry cancels the handler, never the run."""
    return _EAGER(asyncio.get_running_loop(), coroutine) if _EAGER is not None else asyncio.ensure_future(coroutine)


async def call_handler(handler: Callable[..., Any], arguments: Mapping[str, Any], *,
                       timeout: float,  # noqa: ASYNC109 -- enforced here, without cancelling-and-waiting
                       name: str = "", is_async: bool | None = None) -> Any:
    """The handler's result, or its own exception; `HandlerTimeout` after `timeout` seconds.

    Cancelling the caller (the run's deadline) stops the wait at once and abandons the call. An async
    handler runs as a task of its own (`_start_task`: eagerly on Python 3.12+, so one that returns without
    waiting costs no scheduling and no timer). `is_async`: whether the handler is a coroutine function, when
    the caller knows it already.
    """
    thread = not (inspect.iscoroutinefunction(handler) if is_async is None else is_async)
    work = _start_thread(handler, arguments, name) if thread else _start_task(handler(**arguments))
    if not thread and work.done() and not inspect.isawaitable(work.result()):
        return work.result()  # finished in its eager first step: no timer to set
    deadline = asyncio.get_running_loop().time() + timeout
    if not await _wait(work, deadline):
        raise HandlerTimeout(timeout, left_running=thread)
    result = work.result()
    if inspect.isawaitable(result):  # a sync callable that returned a coroutine: awaited in what time is left
        work = asyncio.ensure_future(result)
        if not await _wait(work, deadline):
            raise HandlerTimeout(timeout, left_running=False)
        result = work.result()
    return result
