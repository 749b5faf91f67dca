"""The offline vendors: ASGI apps that answer in each vendor's own wire format.

Served to httpx in-process (`transport(vendor)`) or on a loopback port (`app(vendor)`
under any ASGI server, its lifespan answered). A reply is scripted per block id (text,
tool calls, a structured `output`, an outcome such as a refusal or a prompt block, an HTTP
error, a delay; for a request that asks for a stream, its text's `pieces` and a `break_after`) or
made up deterministically: an echo, a call of the offered tool that best
matches the request, or, for a request with a response schema, an object that matches it
(`shapes`, seeded by the simulator's `seed` and the request), cut at the request's token limit as a vendor cuts
it (`limits`; a scripted reply is told as written). Requests are checked as the vendor
would check them (Gemini's in either JSON spelling, as Google's parser takes both); bodies
are rendered by `replies`, and told as the vendor streams them by `streams` when the request asks. A
prefix seen before is reported read from the vendor's prompt cache (`prompt_cache`), as each vendor reports it.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
import unicodedata
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from engine.providers.simulator.checks import Rejected, camel_gemini, check_anthropic, check_gemini, check_groq
from engine.providers.simulator.limits import within_limit
from engine.providers.simulator.prompt_cache import CacheUse, PromptCache, check_breakpoints
from engine.providers.simulator.replies import Outcome, render, vendor_error
from engine.providers.simulator.shapes import conforming
from engine.providers.simulator.streams import sse_events
from engine.providers.simulator.web import BLOCK_HEADER, HTTP, ScriptedWeb

__all__ = ["BLOCK_HEADER", "RecordedRequest", "Simulator", "neutral_messages"]

_CALLS = "x-diagrama-calls"  # carried beside a reply inside the simulator; never sent
_STREAM = "x-diagrama-stream"  # likewise: how a 200 to a streaming request is streamed
_SCRIPTED = ("output", "text", "pieces", "tool_calls", "finish", "blocked", "refusal")  # a reply that says what is said
_GEMINI_PATH = re.compile(r"^/(v1|v1beta)/models/([^/:]+):(generateContent|streamGenerateContent)$")
ASGIApp = Callable[[MutableMapping[str, Any], Callable[[], Awaitable[MutableMapping[str, Any]]],
                    Callable[[MutableMapping[str, Any]], Awaitable[None]]], Awaitable[None]]


@dataclass
class RecordedRequest:
    vendor: str
    block: str | None
    path: str
    body: Any
    status: int
    calls: list[dict[str, Any]] = field(default_factory=list)

    def messages(self) -> list[dict[str, Any]]:
        """The request's conversation in our terms: [{role, content, name}]."""
        return neutral_messages(self.vendor, self.body)


@dataclass
class _View:
    """What the made-up reply needs from a request, in neutral terms."""

    model: str
    last_user: str
    tools: list[tuple[str, str, dict[str, Any]]]
    results: list[tuple[str, str]]


@dataclass
class Simulator:
    """Offline vendors with optional scripted replies, per request block id, used in order."""

    scripts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    requests: list[RecordedRequest] = field(default_factory=list)
    exhausted: list[str] = field(default_factory=list)
    seed: int = 0
    """Seeds the made-up structured answers (with the request itself): the same seed and request, the same object."""
    _count: int = 0
    _transports: dict[str, httpx.AsyncBaseTransport] = field(default_factory=dict, init=False, repr=False)
    prompt_cache: PromptCache = field(default_factory=PromptCache, init=False, repr=False)
    """The prefixes the vendors hold: a repeated one is reported read from the cache, as the vendors report it."""
    web: ScriptedWeb = field(init=False, repr=False)
    """HttpRequest blocks' scripted far side (`transport("http")`), over the same scripts."""

    def __post_init__(self) -> None:
        self.web = ScriptedWeb(self.scripts, self.exhausted)

    def transport(self, vendor: str) -> httpx.AsyncBaseTransport:
        """The vendor's in-process transport (HTTP's: the scripted replies), made once per simulator (the client pool
        is keyed by it)."""
        transport = self._transports.get(vendor)
        if transport is None:
            transport = self._transports[vendor] = (self.web.transport() if vendor == HTTP
                                                    else httpx.ASGITransport(app=self.app(vendor)))
        return transport

    def app(self, vendor: str) -> ASGIApp:
        async def application(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] == "lifespan":  # nothing to start or stop, but an ASGI server waits for the answers
                while True:
                    message = await receive()
                    if message["type"] == "lifespan.startup":
                        await send({"type": "lifespan.startup.complete"})
                    elif message["type"] == "lifespan.shutdown":
                        await send({"type": "lifespan.shutdown.complete"})
                        return
            chunks = []
            while True:
                message = await receive()
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    break
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            status, body, extra = await self.answer(vendor, scope["path"], headers, b"".join(chunks))
            streamed = extra.pop(_STREAM, None)
            if streamed is not None:
                await send({"type": "http.response.start", "status": status,
                            "headers": [(b"content-type", b"text/event-stream; charset=utf-8")]})
                for event in sse_events(vendor, body, streamed.get("pieces"), streamed.get("break_after")):
                    await send({"type": "http.response.body", "body": event, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
                return
            raw = orjson.dumps(body) if not isinstance(body, bytes) else body
            response_headers = [(b"content-type", b"application/json"), *((k.encode(), v.encode()) for k, v in extra.items())]
            await send({"type": "http.response.start", "status": status, "headers": response_headers})
            await send({"type": "http.response.body", "body": raw})

        return application

    async def answer(self, vendor: str, path: str, headers: Mapping[str, str], raw: bytes) -> tuple[int, Any, dict[str, Any]]:
        block = headers.get(BLOCK_HEADER)
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        read = camel_gemini(body) if vendor == "gemini" else body
        if isinstance(read, dict) and read.get("stream") is True:  # the same request streamed: the same reply
            read = {key: value for key, value in read.items() if key != "stream"}
            headers = {**headers, _STREAM: "1"}
        status, reply, extra = self._answer(vendor, path, dict(headers), read, block)
        if isinstance(reply, _Delayed):
            await asyncio.sleep(reply.seconds)
            status, reply, extra = reply.then
        calls: list[dict[str, Any]] = extra.pop(_CALLS, [])
        self.requests.append(RecordedRequest(vendor, block, path, body, status, calls))
        return status, reply, extra

    def _answer(self, vendor: str, path: str, headers: dict[str, str], body: Any,
                block: str | None) -> tuple[int, Any, dict[str, Any]]:
        try:
            model = self._check(vendor, path, headers, body)
        except Rejected as rejected:
            return rejected.status, rejected.body, {}
        script = self.scripts.get(block or "") if block else None
        reply: dict[str, Any] = {}
        if script is not None:
            text = _view(vendor, body, model).last_user
            chosen = next((i for i, r in enumerate(script) if r.get("match") and str(r["match"]) in text), None)
            if chosen is None:
                chosen = next((i for i, r in enumerate(script) if not r.get("match")), None)
            if chosen is not None:
                reply = script.pop(chosen)
            elif not script or not any(r.get("match") for r in script):
                self.exhausted.append(block or "")
                return vendor_error(vendor, 400, f"simulator: no scripted reply left for block '{block}'", "scenario_error")
            # else: only replies for other requests remain; this one gets a made-up answer
        delay = float(reply.get("delay", 0) or 0)
        if "error" in reply:
            error = reply["error"]
            status = int(error.get("status", 500))
            result = vendor_error(vendor, status, str(error.get("message", f"simulated {status}")), error.get("type"),
                                  error.get("code"))
            if "retry_after" in error:
                result[2]["retry-after"] = str(error["retry_after"])
        else:
            text, calls = self._content(vendor, body, model, reply)
            status, answer, headers_out = self._render(vendor, body, model, text, calls, reply)
            made = [{"name": c["name"], "arguments": c["arguments"]} for c in calls] if status == 200 else []
            headers_out = {**headers_out, _CALLS: made}
            if status == 200 and _streaming(vendor, path, headers):
                headers_out[_STREAM] = {"pieces": reply.get("pieces"), "break_after": reply.get("break_after")}
            result = status, answer, headers_out
        if delay > 0:
            return 200, _Delayed(delay, result), {}
        return result

    def _check(self, vendor: str, path: str, headers: dict[str, str], body: Any) -> str:
        if vendor == "anthropic":
            if path != "/v1/messages":
                raise Rejected(404, {"type": "error", "error": {"type": "not_found_error", "message": f"Not Found: {path}"}})
            check_anthropic(headers, body)
            check_breakpoints(body)
            return str(body["model"])
        if vendor == "groq":
            if path != "/openai/v1/chat/completions":
                raise Rejected(404, {"error": {"message": f"Unknown request URL: POST {path}", "type": "invalid_request_error",
                                               "code": "unknown_url"}})
            check_groq(headers, body)
            return str(body["model"])
        match = _GEMINI_PATH.match(path)
        if not match:
            raise Rejected(404, {"error": {"code": 404, "message": f"Not found: {path}", "status": "NOT_FOUND"}})
        check_gemini(headers, body, match.group(2))
        return match.group(2)

    def _content(self, vendor: str, body: Any, model: str, reply: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        if "output" in reply:  # a scripted structured answer: its JSON text, as each vendor sends one
            return orjson.dumps(reply["output"]).decode(), []
        if any(key in reply for key in _SCRIPTED):
            calls = [{"name": c["name"], "arguments": c.get("arguments") or {}, "id": c.get("id")}
                     for c in reply.get("tool_calls") or []]
            return str(reply.get("text") or "".join(reply.get("pieces") or [])), calls
        view = _view(vendor, body, model)
        wanted = _response_schema(vendor, body)
        tool = _best_tool(view) if not view.results else None
        if tool is not None:
            name, _description, schema = tool
            return "", [{"name": name, "arguments": _arguments_for(schema, view.last_user), "id": None}]
        if wanted is not None:
            seed = hashlib.sha256(f"{self.seed}:".encode() + orjson.dumps(body)).digest()
            return orjson.dumps(conforming(wanted, random.Random(seed))).decode(), []
        if view.results:
            summary = "; ".join(f"{name}: {content}" for name, content in view.results)
            return f"(simulated {view.model}) Here is what the tools returned — {summary}", []
        echo = view.last_user if len(view.last_user) <= 200 else view.last_user[:199] + "…"
        return f"(simulated {view.model}) You said: {echo}", []

    def _render(self, vendor: str, body: Any, model: str, text: str, calls: list[dict[str, Any]],
                reply: dict[str, Any]) -> tuple[int, Any, dict[str, Any]]:
        self._count += 1
        digest = hashlib.sha256(orjson.dumps(body) + str(self._count).encode()).hexdigest()[:16]
        usage = reply.get("usage") or {}
        input_tokens = int(usage.get("input_tokens", max(1, len(orjson.dumps(body)) // 4)))
        output_tokens = int(usage.get("output_tokens", max(1, (len(text) + 40 * len(calls)) // 4)))
        thinking_on = vendor == "anthropic" and isinstance(body.get("thinking"), dict) and \
            body["thinking"].get("type") in ("enabled", "adaptive")
        cache = CacheUse()
        if "input_tokens" not in usage:  # scripted figures are told as they are
            cache = self.prompt_cache.anthropic(body, input_tokens) if vendor == "anthropic" else \
                CacheUse(read=self.prompt_cache.implicit(vendor, model, body, input_tokens))
        outcome = Outcome(model, digest, text, calls, input_tokens, output_tokens, reply, thinking_on, cache)
        if not any(key in reply for key in _SCRIPTED) and "output_tokens" not in usage:  # made up: held to the limit
            outcome = within_limit(vendor, body, outcome)
        return render(vendor, outcome)


def _streaming(vendor: str, path: str, headers: Mapping[str, str]) -> bool:
    """Whether the request asks for a stream: `stream: true` (Anthropic, Groq: `answer` noted it and took it out of
    the body the reply is made from), the streaming method (Gemini)."""
    if vendor == "gemini":
        return path.endswith(":streamGenerateContent")
    return _STREAM in headers


@dataclass
class _Delayed:
    seconds: float
    then: tuple[int, Any, dict[str, Any]]


def _response_schema(vendor: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON Schema the request asks the answer to match, in any vendor's form; None without one."""
    if vendor == "anthropic":
        form = (body.get("output_config") or {}).get("format") or {}
        schema = form.get("schema") if form.get("type") == "json_schema" else None
    elif vendor == "groq":
        form = body.get("response_format") or {}
        schema = (form.get("json_schema") or {}).get("schema") if form.get("type") == "json_schema" else None
    else:
        schema = (body.get("generationConfig") or {}).get("responseJsonSchema")
    return schema if isinstance(schema, dict) else None


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _view(vendor: str, body: dict[str, Any], model: str) -> _View:
    last_user = ""
    results: list[tuple[str, str]] = []
    tools: list[tuple[str, str, dict[str, Any]]] = []
    if vendor == "anthropic":
        names: dict[str, str] = {}
        for message in body["messages"]:
            content = message["content"]
            if message["role"] == "assistant" and isinstance(content, list):
                names.update({b["id"]: b["name"] for b in content if b.get("type") == "tool_use"})
            if message["role"] == "user":
                blocks = content if isinstance(content, list) else []
                found = [(names.get(b["tool_use_id"], "tool"), _text_of(b.get("content")) if not isinstance(
                    b.get("content"), str) else b["content"]) for b in blocks if b.get("type") == "tool_result"]
                text = _text_of(content)
                if text:
                    last_user, results = text, []
                results += found
        tools = [(t["name"], t.get("description", ""), t.get("input_schema") or {}) for t in body.get("tools") or []]
    elif vendor == "groq":
        for message in body["messages"]:
            if message["role"] == "user":
                last_user, results = _text_of(message.get("content")), []
            elif message["role"] == "tool":
                results.append((str(message.get("name", "tool")), str(message.get("content"))))
        tools = [(t["function"]["name"], t["function"].get("description", ""), t["function"].get("parameters") or {})
                 for t in body.get("tools") or []]
    else:
        for content in body["contents"]:
            if content["role"] != "user":
                continue
            text = " ".join(str(p["text"]) for p in content["parts"] if "text" in p)
            if text:
                last_user, results = text, []
            results += [(str(p["functionResponse"]["name"]), orjson.dumps(p["functionResponse"]["response"]).decode())
                        for p in content["parts"] if "functionResponse" in p]
        for group in body.get("tools") or []:
            tools += [(d["name"], d.get("description", ""), d.get("parameters") or d.get("parametersJsonSchema") or {})
                      for d in group.get("functionDeclarations") or []]
    return _View(model, last_user, tools, results)


def neutral_messages(vendor: str, body: Any) -> list[dict[str, Any]]:
    """A vendor request body's messages as [{role, content, name}] (for scenario checks)."""
    if not isinstance(body, dict):
        return []
    found: list[dict[str, Any]] = []
    if vendor == "anthropic":
        if body.get("system"):
            found.append({"role": "system", "content": _text_of(body["system"]), "name": None})
        names: dict[str, str] = {}
        for message in body.get("messages") or []:
            content = message.get("content")
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            for block in blocks:
                kind = block.get("type")
                if kind == "text":
                    found.append({"role": message["role"], "content": block.get("text"), "name": None})
                elif kind == "tool_use":
                    names[block["id"]] = block["name"]
                    found.append({"role": "assistant", "content": orjson.dumps(block.get("input")).decode(),
                                  "name": block["name"]})
                elif kind == "tool_result":
                    found.append({"role": "tool", "content": block.get("content"),
                                  "name": names.get(str(block.get("tool_use_id")))})
    elif vendor == "groq":
        for message in body.get("messages") or []:
            for call in message.get("tool_calls") or []:
                found.append({"role": "assistant", "content": call["function"]["arguments"],
                              "name": call["function"]["name"]})
            content = message.get("content")
            if isinstance(content, list):  # content parts: each text part (images carry no text to match)
                found += [{"role": message["role"], "content": part.get("text"), "name": None} for part in content
                          if isinstance(part, dict) and part.get("type") == "text"]
            elif content is not None:
                found.append({"role": message["role"], "content": content, "name": message.get("name")})
    else:
        body = camel_gemini(body)
        instruction = body.get("systemInstruction")
        if instruction:
            found.append({"role": "system", "content": " ".join(p.get("text", "") for p in instruction["parts"]),
                          "name": None})
        for content in body.get("contents") or []:
            for part in content.get("parts") or []:
                role = "user" if content["role"] == "user" else "assistant"
                if "text" in part:
                    found.append({"role": role, "content": part["text"], "name": None})
                elif "functionCall" in part:
                    found.append({"role": "assistant", "content": orjson.dumps(part["functionCall"].get("args")).decode(),
                                  "name": part["functionCall"]["name"]})
                elif "functionResponse" in part:
                    found.append({"role": "tool", "content": orjson.dumps(part["functionResponse"]["response"]).decode(),
                                  "name": part["functionResponse"]["name"]})
    return found


def _grams(text: str) -> set[str]:
    plain = unicodedata.normalize("NFKD", text.lower())
    plain = "".join(c for c in plain if not unicodedata.combining(c))
    words = re.findall(r"[a-z0-9]+", plain)
    return {word[i:i + 4] for word in words if len(word) > 2 for i in range(max(1, len(word) - 3))}


def _best_tool(view: _View) -> tuple[str, str, dict[str, Any]] | None:
    if not view.tools or not view.last_user:
        return None
    wanted = _grams(view.last_user)
    scored = []
    for position, tool in enumerate(view.tools):
        offered = _grams(f"{tool[0].replace('_', ' ')} {tool[1]}")
        # How much of the request the tool covers; tools usually come most relevant first.
        score = len(wanted & offered) / (len(wanted) or 1) - 0.02 * position
        scored.append((score, tool))
    score, tool = max(scored, key=lambda pair: pair[0])
    return tool if score >= 0.1 else None


def _arguments_for(schema: dict[str, Any], text: str) -> dict[str, Any]:
    numbers = re.findall(r"-?\d+(?:\.\d+)?", text)
    arguments: dict[str, Any] = {}
    properties = schema.get("properties") or {}
    for name in schema.get("required") or list(properties)[:1]:
        spec = properties.get(name) or {}
        kind = str(spec.get("type", "string")).lower()
        if spec.get("enum"):
            mentioned = [value for value in spec["enum"] if str(value).lower() in text.lower()]
            arguments[name] = (mentioned or spec["enum"])[0]
        elif kind == "integer":
            arguments[name] = int(float(numbers.pop(0))) if numbers else 1
        elif kind == "number":
            arguments[name] = float(numbers.pop(0)) if numbers else 1.0
        elif kind == "boolean":
            arguments[name] = True
        elif kind == "array":
            arguments[name] = []
        elif kind == "object":
            arguments[name] = {}
        else:
            arguments[name] = text
    return arguments
