"""An async handler driven under its timeout, in the caller's task: its steps one by one (`Drive`), what it raised
carried up (`carried`), a step that keeps the event loop told (`on_held`) and, past the timeout, not taken; and
a handler that will not stop even when closed kept, never finalized (`ignored_close`).

engine.tools.calls starts every call (`start_call`) and hands an async one that waits to `Drive` here.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable, Generator
from typing import Any

from engine.errors import UserCodeRaised

__all__ = ["HELD_S", "Drive", "HandlerTimeout", "OnHeld", "carried", "drive_awaitable", "held_for", "ignored_close"]


class HandlerTimeout(TimeoutError):
    """A handler did not finish in time; `left_running` when its thread was abandoned still running; `held`: the
    seconds an async handler kept the event loop without awaiting, past its timeout (nothing could stop it then)."""

    def __init__(self, timeout: float, *, left_running: bool, held: float | None = None) -> None:
        super().__init__(f"no result after {timeout:g} s" if held is None else
                         f"it kept the event loop {held:.1f} s without awaiting, past its timeout of {timeout:g} s")
        self.timeout = timeout
        self.left_running = left_running
        self.held = held


HELD_S = 0.1
"""An async handler's step (its code between two awaits) that keeps the event loop longer than this is reported to
the caller (`on_held`: the trace's `blocking_call`): meanwhile nothing else runs, not a server's other runs, not the
timers that would stop it. An async def must await; a plain def runs where its timeout can stop it."""

OnHeld = Callable[[float], object]
"""Told the seconds an async handler's step kept the event loop, when that passed HELD_S."""


def held_for(began: float, timeout: float, on_held: OnHeld | None, *, finished: bool) -> float:
    """The seconds since `began` (a perf_counter reading) that a handler's step held the loop: reported past HELD_S,
    and for a handler that `finished` so, past its timeout, HandlerTimeout: its result came too late to be taken."""
    held = time.perf_counter() - began
    if held > HELD_S:
        if on_held is not None:
            on_held(held)
        if finished and held > timeout:
            raise HandlerTimeout(timeout, left_running=False, held=held)
    return held


def carried(exc: BaseException) -> BaseException:
    """What a handler raised, as its caller may carry it up to the block: an ordinary exception as it is; one that
    would stop more than the step (SystemExit, its own KeyboardInterrupt, GeneratorExit) or that no coroutine or future
    may carry (StopIteration) as UserCodeRaised. A cancellation stays one: it is how deadlines work."""
    if isinstance(exc, asyncio.CancelledError) or (isinstance(exc, Exception) and not isinstance(
            exc, (StopIteration, StopAsyncIteration))):
        return exc
    return UserCodeRaised(exc)


async def drive_awaitable(awaitable: Any, context: contextvars.Context, timeout: float,  # noqa: ASYNC109 -- by _Drive
                   on_held: OnHeld | None = None) -> Any:
    """An awaitable a handler returned, awaited as `Drive` awaits a handler (a coroutine's first step at once)."""
    steps = awaitable.__await__()
    began = time.perf_counter()
    try:
        waits_on = context.run(steps.send, None)
    except StopIteration as returned:
        held_for(began, timeout, on_held, finished=True)
        return returned.value
    except BaseException as exc:
        raise carried(exc) from exc
    held = held_for(began, timeout, on_held, finished=False)
    return await Drive(steps, context, waits_on, max(0.0, timeout - held), on_held, timeout)


class Drive:
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

    __slots__ = ("context", "limit", "on_held", "steps", "timeout", "waits_on")

    def __init__(self, steps: Any, context: contextvars.Context, waits_on: Any, timeout: float,
                 on_held: OnHeld | None = None, limit: float | None = None) -> None:
        self.steps, self.context, self.waits_on, self.timeout = steps, context, waits_on, timeout
        self.on_held = on_held
        self.limit = timeout if limit is None else limit
        """The call's whole timeout (`timeout` is what was left of it when its first step ended)."""

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
        clock = time.perf_counter
        past = clock() + self.timeout
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
                began = clock()
                try:
                    waits_on = run(step, given)
                except StopIteration as returned:
                    if clock() - began > HELD_S:  # its timer cannot fire while a step holds the loop: checked here
                        self._report(clock() - began, late=clock() > past)
                    return self._settle(task, base, expired, returned.value, None)
                except BaseException as raised:  # the handler's outcome, settled below
                    if clock() - began > HELD_S:
                        self._report(clock() - began, late=False)
                    return self._settle(task, base, expired, None, raised)
                if clock() - began > HELD_S:
                    self._report(clock() - began, late=False)
                if task.cancelling() > base:  # it goes on waiting through a stop it did not take back
                    _close(steps)
                    return self._settle(task, base, expired, None, asyncio.CancelledError())
        finally:
            timer.cancel()
            self.steps = self.waits_on = None  # nothing kept from the handler once it is done with

    def _report(self, held: float, *, late: bool) -> None:
        """A step that held the loop `held` seconds: told to `on_held`; `late`, it ended the call past its timeout."""
        if self.on_held is not None:
            self.on_held(held)
        if late:
            raise HandlerTimeout(self.limit, left_running=False, held=held)

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
