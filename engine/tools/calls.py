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
from collections.abc import Callable, Generator, Mapping
from typing import Any

from engine.errors import ToolError, UserCodeRaised, described

__all__ = ["HandlerTimeout", "call_handler", "call_inline", "described", "ignored_close", "start_call"]

# Threads of abandoned handlers that may pile up before new calls are refused: each stuck
# one holds a thread until it returns, and a process should not collect them without end.
MAX_THREADS = 256
IDLE_THREAD_S = 30.0
"""How long a handler thread with nothing to do waits for another call before it ends."""

_lock = threading.Lock()
_running = 0  # handler calls under way now (stuck ones included), in every run of this process
_idle = 0  # handler threads waiting for a call; each call given to one takes one off
_calls: queue.SimpleQueue[Callable[[], Callable[[], None]]] = queue.SimpleQueue()


class HandlerTimeout(TimeoutError):
    """A handler did not finish in time; `left_running` when its thread was abandoned still running."""

    def __init__(self, timeout: float, *, left_running: bool) -> None:
        super().__init__(f"no result after {timeout:g} s")
        self.timeout = timeout
        self.left_running = left_running


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
                       name: str = "", is_async: bool | None = None) -> Any:
    """The handler's result, or its own exception; `HandlerTimeout` after `timeout` seconds (`start_call`)."""
    finished, value = start_call(handler, arguments, timeout=timeout, name=name, is_async=is_async)
    return value if finished else await value


def start_call(handler: Callable[..., Any], arguments: Mapping[str, Any], *, timeout: float, name: str = "",
               is_async: bool | None = None, inline_for: float | None = None) -> tuple[bool, Any]:
    """Start calling `handler` with `arguments`: (True, its result) when it finished at once, else (False, an
    awaitable of its result). Raises the handler's own exception where its first step raised it.

    A sync handler runs on a thread of its own (`_start_thread`). An async one runs as an awaited call does, in the
    caller's task, its first step at once: one that returns without waiting (most do) costs no scheduling, no task
    and no timer, which keeps a Function step within microseconds of a Set step. Its steps run in a copy of the
    caller's context (as a task's would), and an `asyncio.timeout` or an anyio cancel scope it enters works as in
    any awaited call: its expiry raises in the handler, never in the run. Past `timeout`, or when the caller is
    cancelled (the run's deadline), the handler is cancelled once; one that does not stop at that is closed, never
    waited for (`_Drive`). `is_async`: whether the handler is a coroutine function, when the caller knows it already.
    `inline_for`: seconds a sync handler may run on the caller's own thread, stopped then by a timer signal
    (`call_inline`), where the caller's host allows it and that thread is the main one; None: on a handler thread.
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
    try:
        waits_on = context.run(coroutine.send, None)
    except StopIteration as returned:
        value = returned.value
        if type(value) in _NEVER_AWAITABLE or not inspect.isawaitable(value):
            return True, value
        return False, _awaited(value, context, timeout)  # it returned an awaitable: awaited in the time it has
    except BaseException as exc:
        raise carried(exc) from exc
    return False, _Drive(coroutine, context, waits_on, timeout)


_NEVER_AWAITABLE = frozenset({dict, list, str, int, float, bool, type(None)})


def carried(exc: BaseException) -> BaseException:
    """What a handler raised, as its caller may carry it up to the block: an ordinary exception as it is; one that
    would stop more than the step (SystemExit, its own KeyboardInterrupt, GeneratorExit) or that no coroutine or future
    may carry (StopIteration) as UserCodeRaised. A cancellation stays one: it is how deadlines work."""
    if isinstance(exc, asyncio.CancelledError) or (isinstance(exc, Exception) and not isinstance(
            exc, (StopIteration, StopAsyncIteration))):
        return exc
    return UserCodeRaised(exc)


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
    return False, _awaited(result, contextvars.copy_context(), timeout)


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
        return await _awaited(result, contextvars.copy_context(), max(0.0, began + timeout - loop.time()))
    return result


async def _awaited(awaitable: Any, context: contextvars.Context,
                   timeout: float) -> Any:  # noqa: ASYNC109 -- enforced by _Drive
    """An awaitable a handler returned, awaited as `_Drive` awaits a handler (a coroutine's first step at once)."""
    steps = awaitable.__await__()
    try:
        waits_on = context.run(steps.send, None)
    except StopIteration as returned:
        return returned.value
    except BaseException as exc:
        raise carried(exc) from exc
    return await _Drive(steps, context, waits_on, timeout)


class _Drive:
    """Awaiting an async handler that waits: its steps, driven one by one in the caller's task and in its own
    context, under its timeout.

    What it waits on is passed up to the caller's task and what that task sends or throws back is passed down, as
    an `await` does; so the handler's own `asyncio.timeout`s and cancel scopes work as in any awaited call (each
    cancellation it asks for reaches it, and those it takes back, `uncancel`, are its own). Past `timeout` the
    caller's task is cancelled (as `asyncio.timeout` does): the cancellation reaches the handler and becomes
    `HandlerTimeout` here. A cancellation that the handler neither took back nor ended on (it went on waiting)
    means it ignores being stopped: it is closed then (`GeneratorExit` where it waits: its `finally` clauses run, its
    waits after that are cut short) and the call ends without it, never waiting for it.
    """

    __slots__ = ("context", "steps", "timeout", "waits_on")

    def __init__(self, steps: Any, context: contextvars.Context, waits_on: Any, timeout: float) -> None:
        self.steps, self.context, self.waits_on, self.timeout = steps, context, waits_on, timeout

    def __await__(self) -> Generator[Any, Any, Any]:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task(loop)
        if task is None:
            raise RuntimeError("a handler is awaited inside a task")
        base = task.cancelling()
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            task.cancel()

        timer = loop.call_at(loop.time() + self.timeout, expire)
        steps, run = self.steps, self.context.run
        waits_on = self.waits_on
        try:
            while True:
                try:
                    sent = yield waits_on
                except GeneratorExit:  # the caller is closed: so is the handler
                    _close(steps)
                    raise
                except BaseException as thrown:  # a cancellation (the handler's own, the timeout's, the run's)
                    step, given = steps.throw, thrown
                else:
                    step, given = steps.send, sent
                try:
                    waits_on = run(step, given)
                except StopIteration as returned:
                    return self._settle(task, base, expired, returned.value, None)
                except BaseException as raised:  # the handler's outcome, settled below
                    return self._settle(task, base, expired, None, raised)
                if task.cancelling() > base:  # it goes on waiting through a stop it did not take back
                    _close(steps)
                    return self._settle(task, base, expired, None, asyncio.CancelledError())
        finally:
            timer.cancel()
            self.steps = self.waits_on = None  # nothing kept from the handler once it is done with

    def _settle(self, task: asyncio.Task[Any], base: int, expired: bool, value: Any,
                raised: BaseException | None) -> Any:
        """The call's outcome: past its timeout `HandlerTimeout` (its own cancellation taken back); with an outside
        cancellation still standing, that cancellation; else what the handler returned or raised."""
        if expired and task.cancelling() > base:
            task.uncancel()
            if task.cancelling() <= base:
                raise HandlerTimeout(self.timeout, left_running=False) from None
        if task.cancelling() > base and not isinstance(raised, asyncio.CancelledError):
            raise asyncio.CancelledError()  # the run's deadline goes on, whatever the handler made of it
        if raised is not None:
            raise carried(raised)
        return value


_IGNORED_CLOSE: list[Any] = []
"""The coroutines of abandoned handlers that went on when closed (a bare `except:` around an await): kept here for the
life of the process, never finalized. Finalizing one again, where no event loop runs (a garbage collection after the
run, the interpreter's exit), would loop for ever: each of its awaits fails at once and its `except:` takes each
failure. A command whose process holds any ends without that (engine.cli.main: `ignored_close`)."""


def _close(steps: Any) -> None:
    """Close an abandoned handler's coroutine; one that goes on waiting even then is kept, suspended, never run."""
    try:
        steps.close()
    except RuntimeError:  # "coroutine ignored GeneratorExit"
        _IGNORED_CLOSE.append(steps)


def ignored_close() -> int:
    """How many abandoned handlers of this process went on when closed (see `_IGNORED_CLOSE`)."""
    return len(_IGNORED_CLOSE)
