"""Records what the official SDKs read from each hand-written stream here: `python -m tests.vendors.streams.record`.

Each `<vendor>_<name>.sse` is a stream written in the vendor's format; this serves it to the vendor's own SDK (an
httpx MockTransport, nothing leaves the process) and writes `<vendor>_<name>.sdk.json`: Anthropic's message as its
stream accumulator (`MessageStream.get_final_message`) builds it, with the SDK's `text` events; Groq's and Gemini's
chunks as their SDKs type them, reduced the way those SDKs' users do (the text pieces joined, Groq's tool calls
merged by index, Gemini's `chunk.text` and `chunk.function_calls`, the last finish reason and usage). The tests
compare our assembly against these files; rerun this when a stream here changes, and review the diff.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson

HERE = Path(__file__).parent


def _client(module: Any, raw: bytes) -> Any:
    """A client of the SDK's own httpx flavour (anthropic's newer releases use httpx2) that answers with `raw`."""
    base_client = __import__(f"{module.__name__}._base_client", fromlist=["x"])
    http = getattr(base_client, "httpx2", None) or getattr(base_client, "httpx", httpx)
    return http.Client(transport=http.MockTransport(
        lambda request: http.Response(200, content=raw, headers={"content-type": "text/event-stream"})))


def anthropic_view(raw: bytes) -> dict[str, Any]:
    import anthropic

    client = anthropic.Anthropic(api_key="sk-ant-record", http_client=_client(anthropic, raw))
    texts: list[str] = []
    with client.messages.stream(model="claude-sonnet-5-5", max_tokens=1024,
                                messages=[{"role": "user", "content": "Where is order 42?"}]) as stream:
        for event in stream:
            if event.type == "text":
                texts.append(event.text)
        message = stream.get_final_message()
    return {"message": message.model_dump(mode="json", exclude_none=True), "text_events": texts}


def groq_view(raw: bytes) -> dict[str, Any]:
    import groq

    client = groq.Groq(api_key="gsk_record", http_client=_client(groq, raw))
    chunks = list(client.chat.completions.create(model="any", messages=[{"role": "user", "content": "x"}],
                                                 stream=True))
    pieces: list[str] = []
    reasoning = ""
    calls: dict[int, dict[str, str]] = {}
    finish = None
    usage = None
    for chunk in chunks:
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                pieces.append(delta.content)
            reasoning += delta.reasoning or ""
            for call in delta.tool_calls or []:
                entry = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                entry["id"] += call.id or ""
                if call.function is not None:
                    entry["name"] += call.function.name or ""
                    entry["arguments"] += call.function.arguments or ""
            finish = choice.finish_reason or finish
        if chunk.x_groq is not None and chunk.x_groq.usage is not None:
            usage = chunk.x_groq.usage.model_dump(mode="json", exclude_none=True)
    return {"text_pieces": pieces, "reasoning": reasoning or None, "tool_calls": [calls[i] for i in sorted(calls)],
            "finish_reason": finish, "usage": usage}


def gemini_view(raw: bytes) -> dict[str, Any]:
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="AIzaRecord", http_options=types.HttpOptions(
        base_url="https://generativelanguage.googleapis.com", httpx_client=httpx.Client(transport=httpx.MockTransport(
            lambda request: httpx.Response(200, content=raw, headers={"content-type": "text/event-stream"})))))
    pieces: list[str] = []
    calls: list[dict[str, Any]] = []
    signatures: list[str] = []
    finish = None
    usage = None
    for chunk in client.models.generate_content_stream(model="gemini-3.5-flash", contents="Where is order 42?"):
        candidate = (chunk.candidates or [None])[0]
        for part in (candidate.content.parts or []) if candidate and candidate.content else []:
            if part.text and not part.thought:
                pieces.append(part.text)
            if part.thought_signature:
                signatures.append(part.thought_signature.decode("latin-1"))
        calls += [{"name": call.name, "args": call.args} for call in chunk.function_calls or []]
        if candidate is not None and candidate.finish_reason is not None:
            finish = candidate.finish_reason.value
        if chunk.usage_metadata is not None:
            usage = chunk.usage_metadata.model_dump(mode="json", exclude_none=True)
    return {"text_pieces": pieces, "function_calls": calls, "finish_reason": finish, "usage": usage,
            "has_thought_signature": bool(signatures)}


VIEWS = {"anthropic": anthropic_view, "groq": groq_view, "gemini": gemini_view}


def main() -> None:
    for path in sorted(HERE.glob("*.sse")):
        vendor = path.stem.split("_")[0]
        view = VIEWS[vendor](path.read_bytes())
        path.with_suffix(".sdk.json").write_bytes(orjson.dumps(view, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
                                                  + b"\n")
        print(f"recorded {path.with_suffix('.sdk.json').name}")


if __name__ == "__main__":
    main()
