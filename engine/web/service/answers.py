"""`/v1/answers/{token}`: a Wait's signed answer link (a Wait's `notify:`, blocks/_wait_notify.py), answered without
an API key: the token is the capability (engine.providers.answer_links), for one Wait of one run until it expires.

GET shows a small HTML form built from the Wait's JSON Schema (every text escaped); POST (that form, or JSON
`{answer}`) answers through the API's resume path, exactly as `POST /v1/runs/{id}/resume` does. A token not signed by
this server (DIAGRAMA_ANSWER_SECRET) is refused 403, an expired one 410; a Wait already answered is 409.
"""

from __future__ import annotations

import asyncio
import html
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import orjson
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from engine.providers.answer_links import ANSWER_SECRET_ENV, AnswerLinkRefused, read_answer_token
from engine.web.http import read_body
from engine.web.service.durable import Refused
from engine.web.service.models import ErrorAnswer
from engine.web.service.openapi import Answer, Operation

if TYPE_CHECKING:
    from engine.web.service.app import RobotsApi

__all__ = ["ANSWER_OPERATIONS", "AnswerDoor"]

_PATH = "/v1/answers/{token}"
_REFUSED = {403: Answer("the link is not one this server signed", ErrorAnswer),
            410: Answer("the link has expired", ErrorAnswer),
            404: Answer("no such waiting run", ErrorAnswer),
            409: Answer("the Wait was answered already (the run is not waiting there)", ErrorAnswer)}
ANSWER_OPERATIONS: tuple[Operation, ...] = (
    Operation("GET", _PATH, "answerForm", "A Wait's answer form (HTML), from the signed link its notification carried",
              {200: Answer("the form", media="text/html"), **_REFUSED}, public=True),
    Operation("POST", _PATH, "answerWait", "Answer the Wait a signed link names (the form's fields, or JSON {answer}): "
              "the run goes on as after resumeRun",
              {200: Answer("answered: the run goes on", media="text/html"),
               400: Answer("the answer does not fit the Wait's form", ErrorAnswer), **_REFUSED}, public=True),
)
"""The answer link's routes: in the API's OPERATIONS table, public (the token authenticates)."""

_TAKEN_WAIT_S = 2.0
"""How long a POST waits for a run that is still writing its stop at the Wait (its notification goes out first)."""


class AnswerDoor:
    """The answer link's routes over the API's backend and robots."""

    def __init__(self, api: RobotsApi, environ: Mapping[str, str] | None = None) -> None:
        """`environ`: where the signing key is read, once (default: the local backend's services', as its runs sign
        with; else the process's)."""
        self.api = api
        if environ is None:
            environ = getattr(getattr(api.backend, "services", None), "environ", None) or os.environ
        self._secret = environ.get(ANSWER_SECRET_ENV) or ""

    def _read(self, request: Request) -> tuple[str, str]:
        from engine.web.service.app import ApiError

        if not self._secret:
            raise ApiError(403, f"this server signs no answer links (set {ANSWER_SECRET_ENV})")
        try:
            return read_answer_token(self._secret, request.path_params["token"])
        except AnswerLinkRefused as exc:
            raise ApiError(exc.status, exc.message) from None

    async def _waiting(self, run_id: str, block: str) -> dict[str, Any]:
        """What the run waits for at `block`; ApiError 404 (no such run of ours) or 409 (not waiting there)."""
        from engine.web.service.app import ApiError

        row = await self.api.backend.durable.row(run_id)
        if row is None:
            raise ApiError(404, f"no durable run '{run_id}'")
        waiting = row.get("waiting") or {}
        if row.get("status") != "waiting" or waiting.get("block") != block:
            raise ApiError(409, "this Wait was answered already")
        return dict(waiting)

    async def form(self, request: Request) -> Response:
        run_id, block = self._read(request)
        waiting = await self._waiting(run_id, block)
        return HTMLResponse(answer_page(str(waiting.get("prompt") or ""), waiting.get("form")))

    async def answer(self, request: Request) -> Response:
        from engine.web.service.app import ApiError

        run_id, block = self._read(request)
        raw = await read_body(request)
        is_json = request.headers.get("content-type", "").startswith("application/json")
        durable, backend = self.api.backend.durable, self.api.backend
        waited = 0.0
        while True:
            try:
                waiting = await self._waiting(run_id, block)
                value = _json_answer(raw) if is_json else form_answer(raw, waiting.get("form"))
                turn = await durable.resume(run_id, value, self.api.robots.registry, take=backend.takes_over)
                break
            except (ApiError, Refused) as exc:
                # A run still writing its stop at the Wait (its notification goes out first) is `running` a moment.
                row = await durable.row(run_id) if exc.status == 409 else None
                if row is None or row.get("status") != "running" or waited >= _TAKEN_WAIT_S:
                    raise
            await asyncio.sleep(0.1)
            waited += 0.1
        await backend.resume(turn.diagram.path.stem, turn, None, list(self.api.secrets))
        if is_json:
            return Response(orjson.dumps({"run_id": run_id, "answered": block}), media_type="application/json")
        return HTMLResponse("<!doctype html><meta charset=utf-8><title>Answered</title><p>Thank you: your answer "
                            "was taken, and the run goes on.</p>")


def _json_answer(raw: bytes) -> dict[str, Any] | None:
    from engine.web.service.app import ApiError

    try:
        body = orjson.loads(raw or b"{}")
    except orjson.JSONDecodeError:
        raise ApiError(400, "the body is not JSON: {answer}") from None
    found = body.get("answer") if isinstance(body, dict) else None
    if found is not None and not isinstance(found, dict):
        raise ApiError(400, "answer: the Wait's form filled in, an object")
    return found


def form_answer(raw: bytes, form: Any) -> dict[str, Any]:
    """An HTML form's fields as the Wait's answer, each as its JSON Schema types it (a checkbox not sent: false)."""
    fields = {name: values[-1] for name, values in parse_qs(raw.decode("utf-8", "replace"),
                                                             keep_blank_values=True).items()}
    properties = form.get("properties") if isinstance(form, dict) else None
    if not isinstance(properties, dict):
        return {"answer": fields.get("answer", "")}
    answer: dict[str, Any] = {}
    for name, schema in properties.items():
        kind = schema.get("type") if isinstance(schema, dict) else None
        text = fields.get(name)
        if kind == "boolean":
            answer[name] = text is not None and text.lower() in ("true", "on", "1", "yes")
        elif text is None or text == "":
            continue  # absent: the form's `required` says whether that will do
        elif kind in ("integer", "number"):
            try:
                answer[name] = int(text) if kind == "integer" else float(text)
            except ValueError:
                answer[name] = text  # the form's check names it
        else:
            answer[name] = text
    return answer


def answer_page(prompt: str, form: Any) -> str:
    """The Wait's question and a form from its JSON Schema; every text from the run escaped."""
    esc = html.escape
    rows: list[str] = []
    properties = form.get("properties") if isinstance(form, dict) else None
    if isinstance(properties, dict):
        required = set(form.get("required") or [])
        for name, schema in properties.items():
            schema = schema if isinstance(schema, dict) else {}
            label = esc(str(schema.get("title") or schema.get("description") or name))
            field = esc(str(name))
            kind = schema.get("type")
            need = " required" if name in required and kind != "boolean" else ""
            if kind == "boolean":
                control = f'<input type="checkbox" name="{field}" value="true">'
            elif isinstance(schema.get("enum"), list):
                options = "".join(f'<option value="{esc(str(v))}">{esc(str(v))}</option>' for v in schema["enum"])
                control = f'<select name="{field}"{need}>{options}</select>'
            elif kind in ("integer", "number"):
                step = "1" if kind == "integer" else "any"
                control = f'<input type="number" step="{step}" name="{field}"{need}>'
            else:
                control = f'<textarea name="{field}"{need}></textarea>'
            rows.append(f"<p><label>{label}<br>{control}</label></p>")
    else:
        rows.append('<p><textarea name="answer"></textarea></p>')
    return ("<!doctype html><meta charset=utf-8><title>An answer is needed</title>"
            f"<p>{esc(prompt)}</p><form method=post>{''.join(rows)}<p><button>Answer</button></p></form>")
