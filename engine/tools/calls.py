"""Calling a tool's handler under its timeout, without ever waiting on a stuck one.

A sync handler runs on a daemon thread of its own, its result taken at once when it comes within
half a millisecond (most do: no turn of the event loop for it); an async one is awaited in the
caller's task, its first step at once (`start_call`). The caller waits for the result, the timeout or its own
cancellation (the run's deadline), whichever comes first; a handler still running then is
abandoned (a thread) or closed (a coroutine), never joined. A thread
stuck in C code cannot be killed, but neither the run nor the process's exit waits for it.
Bounding what a handler computes is the handler's own job (the calculator's size limit).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import queue
import signal
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from engine.errors import ToolError, UserCodeRaised, described
from engine.tools.coroutines import (
    HELD_S,
    Drive,
    HandlerTimeout,
    OnHeld,
    carried,
    drive_awaitable,
    held_for,
    ignored_close,
)

__all__ = ["HELD_S", "HandlerTimeout", "OnHeld", "call_handler", "call_inline", "described", "ignored_close",
           "start_call"]

# Threads of abandoned handlers that may pile up before new calls are refused: each stuck
# one holds a thread until it returns, and a process should not collect them without end.
MAX_THREADS = 256
IDLE_THREAD_S = 30.0
"""How long a handler thread with nothing to do waits for another call before it ends."""

_lock = threading.Lock()
_running = 0  # handler calls under way now (stuck ones included), in every run of this process
_idle = 0  # handler threads waiting for a call; each call given to one takes one off
_calls: queue.SimpleQueue[Callable[[], Callable[[], None]]] = queue.SimpleQueue()


def _handler_exited() -> None:
    global _running
    with _lock:
        _running -= 1


QUICK_WAIT_S = 0.0005
"""How long a sync handler's caller waits on its thread's result at once, holding the event loop: most functions
return in microseconds, and a result taken so costs no turn of the loop (a wake-up through its self-pipe, a timer, a
future), which was most of a Function step. One that takes longer is awaited as before; `_slow` remembers it."""
_slow: dict[Callable[..., Any], bool] = {}
"""Sync handlers whose last call took longer than QUICK_WAIT_S: their next call is awaited at once."""


class _ThreadCall:
    """One sync handler call on a handler thread: its outcome, and whether its caller still waits for it at once
    (`done`) or awaits it (`future`, set under `guard` once the quick wait is over)."""

    __slots__ = ("arguments", "context", "done", "error", "finished", "future", "guard", "handler", "loop", "value")

    def __init__(self, handler: Callable[..., Any], arguments: Mapping[str, Any],
                 loop: asyncio.AbstractEventLoop) -> None:
        self.handler, self.arguments, self.loop = handler, arguments, loop
        self.context = contextvars.copy_context()  # as asyncio.to_thread does
        self.value: Any = None
        self.error: BaseException | None = None
        self.finished = False
        self.future: asyncio.Future[Any] | None = None
        self.done = threading.Lock()
        self.done.acquire()  # released by the thread when the outcome is in
        self.guard = threading.Lock()

    def run(self, thread_name: str) -> Callable[[], None]:
        """The handler's call, on the thread; what then announces its outcome (`_serve` counts the thread idle
        first, so that the caller's next call finds it waiting)."""
        threading.current_thread().name = thread_name  # what a stack dump of a stuck handler shows
        try:
            self.value = self.context.run(self.handler, **self.arguments)
        except BaseException as exc:  # the handler's failure goes to the caller, as to_thread's would
            self.error = carried(exc)  # no signal reaches this thread: whatever it raised, the handler raised it
        return self._announce

    def _announce(self) -> None:
        """The outcome is in: for a caller waiting at once, or handed to the loop for one that awaits it."""
        with self.guard:
            self.finished = True
            future = self.future
        self.done.release()
        if future is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: the run ended without this result
                self.loop.call_soon_threadsafe(_deliver, future, self.value, self.error)

    def awaited(self) -> asyncio.Future[Any] | None:
        """A future of the outcome, for a caller that stops waiting at once; None when the outcome is in already."""
        with self.guard:
            if self.finished:
                return None
            self.future = self.loop.create_future()
            return self.future

    def outcome(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


def _deliver(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():  # abandoned: nobody waits for this outcome any more
        return
    if error is None:
        future.set_result(value)
    else:
        future.set_exception(error)


def _start_thread(handler: Callable[..., Any], arguments: Mapping[str, Any], name: str) -> _ThreadCall:
    """Run a sync handler on a daemon thread; the call, whose outcome its caller takes (`_thread_outcome`).

    A thread that finished a call waits a while for the next one (`_serve`), which saves starting one per
    call (about 0.1 ms); a call that finds no thread waiting gets a new one. So a stuck handler holds only its
    own thread and never starves other calls, and daemon threads are not joined when the process exits (a
    `ThreadPoolExecutor`'s are, and its fixed size lets stuck calls queue the others).
    """
    global _running, _idle
    call = _ThreadCall(handler, arguments, asyncio.get_running_loop())
    thread_name = f"diagrama-tool:{name}"

    def work() -> Callable[[], None]:
        return call.run(thread_name)

    with _lock:
        if _running >= MAX_THREADS:
            raise ToolError(f"{_running} tool handlers are still running (a handler may be stuck); "
                            f"'{name}' was not started", type="tool_busy")
        _running += 1
        if _idle:  # a waiting thread takes it (given under the lock: `_serve` counts on it)
            _idle -= 1
            _calls.put(work)
            return call
    try:
        threading.Thread(target=_serve, args=(work,), name=thread_name, daemon=True).start()
    except BaseException:
        _handler_exited()
        raise
    return call


def _serve(call: Callable[[], Callable[[], None]]) -> None:
    """A handler thread: its first call, then the calls given to it while it waits, until none comes for
    IDLE_THREAD_S."""
    global _running, _idle
    while True:
        hand_over = call()
        with _lock:  # waiting from now on, before the outcome is handed over: the run's next call may take it
            _running -= 1
            _idle += 1
        hand_over()
        while True:
            try:
                call = _calls.get(timeout=IDLE_THREAD_S)
                break
            except queue.Empty:
                with _lock:
                    # Calls are given under the lock with `_idle` taken off: an empty queue now means that
                    # none is on its way to this thread, and it may end.
                    if _calls.empty():
                        _idle -= 1
                        return


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


async def call_handler(handler: Callable[..., Any], arguments: Mapping[str, Any], *,
                       timeout: float,  # noqa: ASYNC109 -- enforced here, without cancelling-and-waiting
                       name: str = "", is_async: bool | None = None, on_held: OnHeld | None = None) -> Any:
    """The handler's result, or its own exception; `HandlerTimeout` after `timeout` seconds (`start_call`)."""
    finished, value = start_call(handler, arguments, timeout=timeout, name=name, is_async=is_async, on_held=on_held)
    return value if finished else await value


def start_call(handler: Callable[..., Any], arguments: Mapping[str, Any], *, timeout: float, name: str = "",
               is_async: bool | None = None, inline_for: float | None = None,
               on_held: OnHeld | None = None) -> tuple[bool, Any]:
    """Start calling `handler` with `arguments`: (True, its result) when it finished at once, else (False, an
    awaitable of its result). Raises the handler's own exception where its first step raised it.

    A sync handler runs on a thread of its own (`_start_thread`). An async one runs as an awaited call does, in the
    caller's task, its first step at once: one that returns without waiting (most do) costs no scheduling, no task
    and no timer, which keeps a Function step within microseconds of a Set step. Its steps run in a copy of the
    caller's context (as a task's would), and an `asyncio.timeout` or an anyio cancel scope it enters works as in
    any awaited call: its expiry raises in the handler, never in the run. Past `timeout`, or when the caller is
    cancelled (the run's deadline), the handler is cancelled once; one that does not stop at that is closed, never
    waited for (coroutines.Drive). `is_async`: whether the handler is a coroutine function, when the caller knows it already.
    `inline_for`: seconds a sync handler may run on the caller's own thread, stopped then by a timer signal
    (`call_inline`), where the caller's host allows it and that thread is the main one; None: on a handler thread.
    `on_held`: told when an async handler's step keeps the event loop past HELD_S; one that returns so past its
    timeout is a HandlerTimeout (`held`), its result not taken.
    """
    if not (inspect.iscoroutinefunction(handler) if is_async is None else is_async):
        if inline_for is not None and threading.current_thread() is threading.main_thread():
            return _returned(call_inline(handler, arguments, inline_for), timeout)
        call = _start_thread(handler, arguments, name)
        if not _slow.get(handler) and call.done.acquire(timeout=QUICK_WAIT_S):
            return _returned(call.outcome(), timeout)
        _slow[handler] = True
        future = call.awaited()
        if future is None:  # it finished as the quick wait ended
            _slow[handler] = False
            return _returned(call.outcome(), timeout)
        return False, _outcome_of_thread(future, handler, timeout)
    coroutine = handler(**arguments)
    context = contextvars.copy_context()
    began = time.perf_counter()
    try:
        waits_on = context.run(coroutine.send, None)
    except StopIteration as returned:
        held = held_for(began, timeout, on_held, finished=True)
        value = returned.value
        if type(value) in _NEVER_AWAITABLE or not inspect.isawaitable(value):
            return True, value
        # It returned an awaitable: awaited in the time it has.
        return False, drive_awaitable(value, context, max(0.0, timeout - held), on_held)
    except BaseException as exc:
        held_for(began, timeout, on_held, finished=False)
        raise carried(exc) from exc
    held = held_for(began, timeout, on_held, finished=False)
    return False, Drive(coroutine, context, waits_on, max(0.0, timeout - held), on_held, timeout)


_NEVER_AWAITABLE = frozenset({dict, list, str, int, float, bool, type(None)})


class _Expired(BaseException):
    """A call on the run's own thread passed its time: raised in it by the timer signal (BaseException: a handler's
    `except Exception` does not swallow it)."""


def call_inline(handler: Callable[..., Any], arguments: Mapping[str, Any], timeout: float) -> Any:
    """Call a sync handler on this thread, the main one, in a copy of its context: its result, or its own exception;
    `HandlerTimeout` once it has run `timeout` seconds. A timer signal (SIGALRM) raises in the handler then, which
    stops a wait in a system call too (a sleep, a socket read), and again every quarter second after, for one that
    swallows the first (a bare `except:`); a result that comes after the timeout is not taken. What the signal cannot
    reach (C code that never returns to Python) is the handler's to bound. The timer is off again when this returns."""
    global _calling, _expired
    if signal.getsignal(signal.SIGALRM) is not _on_alarm:  # once a process (or again, if the handler replaced it)
        _chained.append(signal.signal(signal.SIGALRM, _on_alarm))
    _calling, _expired = True, False
    signal.setitimer(signal.ITIMER_REAL, max(timeout, 1e-6), 0.25)
    try:
        value = contextvars.copy_context().run(handler, **arguments)
    except _Expired:
        raise HandlerTimeout(timeout, left_running=False) from None
    except KeyboardInterrupt as exc:
        # Ctrl-C: asyncio's runner cancels the run's task at the first and raises at the second; one the handler
        # raised itself, with no cancellation pending, is its own failure.
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        raise UserCodeRaised(exc) from exc
    except BaseException as exc:
        raise carried(exc) from exc
    finally:
        _calling = False
        signal.setitimer(signal.ITIMER_REAL, 0)
    if _expired:
        raise HandlerTimeout(timeout, left_running=False)
    return value


_calling = False
"""Whether an inline call is under way (`call_inline`): only then does the timer signal raise."""
_expired = False
_chained: list[Any] = []
"""The SIGALRM handlers there were before ours (the last is the one ours replaced): an alarm that comes outside an
inline call is theirs."""


def _on_alarm(signum: int, frame: Any) -> None:
    global _expired
    if _calling:
        _expired = True
        raise _Expired
    previous = _chained[-1] if _chained else None
    if callable(previous):
        previous(signum, frame)


def _returned(result: Any, timeout: float) -> tuple[bool, Any]:
    """What a sync handler returned at once: the result, or an awaitable it returned, awaited in the time it has."""
    if type(result) in _NEVER_AWAITABLE or not inspect.isawaitable(result):
        return True, result
    return False, drive_awaitable(result, contextvars.copy_context(), timeout)


async def _outcome_of_thread(work: asyncio.Future[Any], handler: Callable[..., Any],
                             timeout: float) -> Any:  # noqa: ASYNC109 -- enforced here
    """A sync handler's result from its thread, within `timeout`; one that returned an awaitable has it awaited."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    if not await _wait(work, began + timeout):
        raise HandlerTimeout(timeout, left_running=True)
    _slow[handler] = loop.time() - began > QUICK_WAIT_S  # a quick one again: its next call is waited for at once
    result = work.result()
    if inspect.isawaitable(result):  # a sync callable that returned a coroutine: awaited in what time is left
        return await drive_awaitable(result, contextvars.copy_context(), max(0.0, began + timeout - loop.time()))
    return result
