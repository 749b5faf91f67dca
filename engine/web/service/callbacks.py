"""A run request's `callback_url`: when the run ends (succeeded, failed, waiting, cancelled) its answer — the JSON of
`GET /v1/runs/{id}` — is POSTed there, signed, from a task of this process that never holds the run up.

Signature: `X-Diagrama-Timestamp: T` (whole seconds since the epoch, when the attempt is sent) and
`X-Diagrama-Signature: sha256=HEX`, HEX = HMAC-SHA256 with the server's callback secret over the bytes
`T` + `.` + the body, exactly as sent. A receiver recomputes it, compares in constant time and refuses a timestamp
older than it tolerates (a replay). Each attempt is signed anew (its own timestamp).

Only hosts of the allow-list (`--callback-host`, DIAGRAMA_CALLBACK_HOSTS; entries as a diagram's `allowed_hosts`
has them: engine.format.hosts) are called, checked on the URL as httpx parses and sends it, so an address written
another way (`2130706433`, `127.1`, `user@host`) is not the entry it resembles. Redirects are not followed; no proxy
from the environment is used. Connection failures and 5xx answers are tried again (TRIES in all, waiting
FIRST_DELAY_S, then twice as long each time); any other answer ends the delivery.

Not persisted: the callback is this process's task (on Celery, the API process that accepted the run follows the
run's stream to its end). If the process stops first, or the run is interrupted, no callback is sent: a client
that must know polls `GET /v1/runs/{id}`.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence

import httpx

from engine.errors import UsageError
from engine.format.hosts import read_host_entry, url_refusal
from engine.runs.service_logs import log
from engine.web.service.durable import Refused
from engine.web.service.signatures import sign

__all__ = ["CALLBACK_HOSTS_VARIABLE", "CALLBACK_SECRET_VARIABLE", "CALLED_BACK", "FIRST_DELAY_S", "TRIES", "Callbacks",
           "signature"]

CALLBACK_SECRET_VARIABLE = "DIAGRAMA_CALLBACK_SECRET"
CALLBACK_HOSTS_VARIABLE = "DIAGRAMA_CALLBACK_HOSTS"
TRIES = 5
FIRST_DELAY_S = 0.5
"""Waits between tries: 0.5, 1, 2, 4 s (7.5 s from the first try to the last)."""
CALLED_BACK = ("succeeded", "failed", "waiting", "cancelled")
"""The ends a callback tells; an interrupted run goes on later (resumed), and is told when that part ends."""
_MIN_SECRET = 16
_SEND_S = 10.0
"""How long one attempt may take, connection to answer."""

AnswerAtEnd = Callable[[], Awaitable[tuple[str, bytes] | None]]
"""Waits for the run's end: its status and its answer's JSON (None: the run is not known any more)."""


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """`X-Diagrama-Signature`'s value for a body sent at `timestamp`: the `hmac` scheme a robot's webhook checks
    (engine.web.service.signatures), so that one diagrama's callbacks can start another's robots."""
    return f"sha256={sign(secret.encode('utf-8'), timestamp.encode('ascii') + b'.' + body)}"


class Callbacks:
    """The server's callbacks: its secret and allowed hosts, and the deliveries under way."""

    def __init__(self, secret: str | None, hosts: Sequence[str], *, first_delay_s: float = FIRST_DELAY_S) -> None:
        self._secret = secret
        self.hosts = tuple(hosts)
        self._first_delay_s = first_delay_s
        self._tasks: set[asyncio.Task[None]] = set()
        self._client: httpx.AsyncClient | None = None
        self._log = log("diagrama.api")

    @classmethod
    def configured(cls, secret: str | None, hosts: Sequence[str] | None, environ: Mapping[str, str]) -> Callbacks:
        """From the options, else the environment; UsageError naming a short secret or an entry that is no host."""
        given = secret if secret is not None else environ.get(CALLBACK_SECRET_VARIABLE) or None
        source = "--callback-secret" if secret is not None else CALLBACK_SECRET_VARIABLE
        if given is not None and len(given) < _MIN_SECRET:
            raise UsageError(f"{source} is shorter than {_MIN_SECRET} characters: receivers could guess it; make one "
                             "with `python -c 'import secrets; print(secrets.token_hex(32))'`")
        if hosts is None:
            hosts = [entry for entry in re.split(r"[\s,]+", environ.get(CALLBACK_HOSTS_VARIABLE, "")) if entry]
            where = CALLBACK_HOSTS_VARIABLE
        else:
            where = "--callback-host"
        for entry in hosts:
            try:
                read_host_entry(entry)
            except ValueError as exc:
                raise UsageError(f"{where}: {exc}") from None
        return cls(given, hosts)

    def check(self, written: str) -> httpx.URL:
        """The URL to call back, or Refused 400 naming `callback_url`."""
        def refuse(problem: str) -> Refused:
            return Refused(400, "callback_url cannot be called back", [f"callback_url: {problem}"])

        if self._secret is None:
            raise refuse(f"this server has no callback secret to sign with (--callback-secret or "
                         f"{CALLBACK_SECRET_VARIABLE}), so it sends no callbacks")
        try:
            url = httpx.URL(written.strip())
            host = url.raw_host.decode("ascii")
        except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
            raise refuse(f"not a URL ({exc})") from None
        if url.userinfo:
            raise refuse("a user or password in the URL is not sent; give the receiver's URL alone")
        refusal = url_refusal(url.scheme, host, url.port, self.hosts)
        if refusal is not None:
            message, _hint, kind = refusal
            if kind == "host_not_allowed":
                shown = f"[{host}]" if ":" in host else host
                message = f"the host {shown} is not one this server calls back (--callback-host, " \
                          f"{CALLBACK_HOSTS_VARIABLE})"
            raise refuse(message)
        return url

    def send_when_ended(self, run_id: str, url: httpx.URL, answer_at_end: AnswerAtEnd) -> None:
        """Deliver the run's answer to `url` once it ends, in a task of its own."""
        task = asyncio.get_running_loop().create_task(self._deliver(run_id, url, answer_at_end),
                                                      name=f"callback-{run_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _deliver(self, run_id: str, url: httpx.URL, answer_at_end: AnswerAtEnd) -> None:
        try:
            ended = await answer_at_end()
        except Exception as exc:  # the run's end could not be read (a broker gone): nothing to send
            self._log.warning("callback_not_sent", run_id=run_id, host=url.host, error=type(exc).__name__)
            return
        if ended is None or ended[0] not in CALLED_BACK:
            self._log.info("callback_not_sent", run_id=run_id, host=url.host,
                           status=ended[0] if ended is not None else None)
            return
        await self._post(run_id, url, ended[1])

    async def _post(self, run_id: str, url: httpx.URL, body: bytes) -> None:
        assert self._secret is not None  # check() refuses a callback_url without one
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=_SEND_S, follow_redirects=False, trust_env=False)
        why = ""
        for attempt in range(1, TRIES + 1):
            timestamp = str(int(time.time()))
            headers = {"content-type": "application/json", "user-agent": "diagrama-callback",
                       "x-diagrama-run-id": run_id, "x-diagrama-timestamp": timestamp,
                       "x-diagrama-signature": signature(self._secret, timestamp, body)}
            try:
                response = await self._client.post(url, content=body, headers=headers)
            except httpx.TransportError as exc:
                why = type(exc).__name__
            else:
                if response.status_code < 500:
                    self._log.info("callback_sent", run_id=run_id, host=url.host, status=response.status_code,
                                   attempt=attempt)
                    return
                why = f"HTTP {response.status_code}"
            if attempt < TRIES:
                await asyncio.sleep(self._first_delay_s * 2 ** (attempt - 1))
        self._log.warning("callback_failed", run_id=run_id, host=url.host, attempts=TRIES, error=why)

    async def close(self) -> None:
        """Stop the deliveries under way (the server stops) and the client."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._client is not None:
            await self._client.aclose()
