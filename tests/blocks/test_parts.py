"""Image and document parts in `request` and in history rows: each vendor's form, load checks, traces without base64."""

from __future__ import annotations

import asyncio
import json

import pytest

from engine import DiagramInvalid, Services, execute
from engine.compile.loader import load_diagram
from engine.providers import Simulator
from tests.blocks.files import GIF, JPEG, PDF, PNG
from tests.blocks.test_request_blocks import ANTHROPIC_REPLY, GEMINI_REPLY, GROQ_REPLY, run
from tests.blocks.vendors import FakeVendor

BLOCKS = {"anthropic": "ClaudeRequest", "groq": "GroqChatRequest", "gemini": "GeminiRequest"}
MODELS = {"anthropic": "claude-sonnet-5-5", "groq": "meta-llama/llama-4-scout-17b-16e-instruct",
          "gemini": "gemini-3.5-flash"}
REPLIES = {"anthropic": ANTHROPIC_REPLY, "groq": GROQ_REPLY, "gemini": GEMINI_REPLY}
PHOTO = {"type": "image", "media_type": "image/png", "data": PNG}
LINKED = {"type": "image", "media_type": "image/jpeg", "url": "https://example.com/receipt.jpg"}


def diagram(vendor: str, request: object, *, model: str | None = None, history: object = None,
            level: str = "Debug") -> str:
    history_line = f"history: {json.dumps(history)}" if history is not None else ""
    return f"""
        diagram: d
        blocks:
          - id: start
            type: Start
            message_level: {level}
            next: ask
          - id: ask
            type: {BLOCKS[vendor]}
            with:
              model: {model or MODELS[vendor]}
              request: {json.dumps(request)}
              {history_line}
            set: {{rows: "{{{{ history }}}}"}}
    """


def offline(runner, write, text: str):
    services = Services(environ={}, offline=True, simulator=Simulator())
    return asyncio.run(execute(load_diagram(write(text), runner.registry), runs_dir=runner.runs_dir, services=services))


SENT = {
    "anthropic": [{"role": "user", "content": [
        {"type": "text", "text": "What is on this receipt?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/receipt.jpg"}},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF}}]}],
    "groq": [{"role": "user", "content": [
        {"type": "text", "text": "What is on this receipt?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/receipt.jpg"}}]}],
    "gemini": [{"role": "user", "parts": [
        {"text": "What is on this receipt?"},
        {"inlineData": {"mimeType": "image/png", "data": PNG}},
        {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://example.com/receipt.jpg"}},
        {"inlineData": {"mimeType": "application/pdf", "data": PDF}}]}],
}


@pytest.mark.parametrize("vendor", list(BLOCKS))
def test_parts_reach_each_vendor_in_its_own_form(runner, write, vendor) -> None:
    parts = [{"type": "text", "text": "What is on this receipt?"}, PHOTO, LINKED]
    if vendor != "groq":  # Groq takes no documents
        parts.append({"type": "document", "media_type": "application/pdf", "data": PDF})
    fake = FakeVendor().reply(200, REPLIES[vendor])
    result = run(runner, write, diagram(vendor, parts), fake.services(vendor))
    assert result.status == "succeeded", result.errors
    body = fake.bodies()[0]
    assert (body["contents"] if vendor == "gemini" else body["messages"]) == SENT[vendor]


@pytest.mark.parametrize("vendor", list(BLOCKS))
def test_a_history_row_of_parts_stays_a_list_and_is_sent_again_on_the_next_turn(runner, write, vendor) -> None:
    text = diagram(vendor, [{"type": "text", "text": "Describe it."}, PHOTO]).replace(
        'set: {rows: "{{ history }}"}', 'set: {rows: "{{ history }}"}\n            next: again') + f"""
          - id: again
            type: {BLOCKS[vendor]}
            with: {{model: {MODELS[vendor]}, request: And the colour?, history: "{{{{ rows }}}}"}}
    """
    result = offline(runner, write, text)
    assert result.status == "succeeded", result.errors
    first = result.variables["rows"][0]
    assert first["role"] == "user" and first["content"] == [{"type": "text", "text": "Describe it."}, PHOTO]
    bodies = [r.body for r in offline_requests(runner, write, text)]
    assert json.dumps(bodies[1]).count(PNG) == 1  # the image went again with the history, once


def offline_requests(runner, write, text: str):
    simulator = Simulator()
    services = Services(environ={}, offline=True, simulator=simulator)
    asyncio.run(execute(load_diagram(write(text), runner.registry), runs_dir=runner.runs_dir, services=services))
    return simulator.requests


def test_a_history_table_with_parts_is_checked_at_load_at_its_row(write, registry) -> None:
    history = [{"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image", "media_type": "image/png",
                                                                           "data": "not base64!"}]}]
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(write(diagram("anthropic", "And now?", history=history)), registry)
    problem = caught.value.problems[0]
    assert problem.field == "with.history" and "history row 1: part 2: data is not base64 text" in problem.message
    history = [{"role": "assistant", "content": [{"type": "text", "text": "hi"}]}]
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(write(diagram("anthropic", "And now?", history=history)), registry)
    assert "only user rows hold parts" in caught.value.problems[0].message


LOAD_ERRORS = [
    ("groq", "llama-3.3-70b-versatile", [PHOTO], "takes no images; Groq's vision models"),
    ("groq", None, [{"type": "document", "data": PDF}], "Groq takes no documents"),
    ("groq", None, [PHOTO] * 6, "Groq takes at most 5"),
    ("gemini", None, [{"type": "image", "media_type": "image/gif", "data": GIF}], "not image/gif"),
    ("anthropic", None, [{"type": "image", "media_type": "image/heic", "url": "https://example.com/a.heic"}],
     "not image/heic"),
    ("anthropic", "claude-3-haiku-20240307", [{"type": "document", "url": "https://example.com/a.pdf"}],
     "reads no PDF documents"),
    ("anthropic", None, [{"type": "image", "media_type": "image/jpeg", "data": PNG}],
     "part 1: data is not a JPEG image (image/jpeg): its bytes are a PNG image"),
    ("anthropic", None, [{"type": "image", "media_type": "image/png", "data": PNG, "url": "https://x.y/z.png"}],
     "part 1: give the file as data (base64) or as a url, one of them"),
    ("anthropic", None, [{"type": "document", "media_type": "text/plain", "data": PDF}],
     "a document part is a PDF"),
    ("gemini", None, [{"type": "video", "url": "https://x.y/z.mp4"}], "part 1"),
    ("gemini", None, [], "the list of parts is empty"),
]


@pytest.mark.parametrize(("vendor", "model", "parts", "said"), LOAD_ERRORS)
def test_a_part_the_vendor_or_model_cannot_take_is_a_load_error(write, registry, vendor, model, parts, said) -> None:
    path = write(diagram(vendor, parts, model=model))
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    problem = next(p for p in caught.value.problems if p.field == "with.request")
    assert said in problem.message, problem.message
    assert problem.block == "ask" and problem.line == 11


def test_a_templated_part_is_checked_when_the_block_runs(runner, write) -> None:
    text = diagram("groq", [{"type": "text", "text": "Read it."}, {"type": "document", "data": "{{ pdf }}"}])
    text = text.replace("next: ask", f"variables: {{pdf: {PDF}}}\n            next: ask")
    result = offline(runner, write, text)
    assert result.status == "failed"
    assert result.errors[0]["type"] == "invalid_input" and "Groq takes no documents" in result.errors[0]["message"]


def test_a_trace_shows_parts_by_size_never_their_base64(runner, write) -> None:
    big = PNG  # the same image at both levels
    for level in ("Debug", "Detailed"):
        result = offline(runner, write, diagram("anthropic", [{"type": "text", "text": "Describe."}, PHOTO], level=level))
        assert result.status == "succeeded", result.errors
        trace = result.trace.read_text()
        assert big not in trace, level
        called = next(e for e in runner.events(result) if e["event"] == "provider_called")
        assert called["parts"] == [{"type": "image", "media_type": "image/png", "size": 69}]
        finished = next(e for e in runner.events(result) if e["event"] == "block_finished" and e["block"] == "ask")
        assert finished["inputs"]["request"][1] == {"type": "image", "media_type": "image/png", "size": 69}
    sent = next(e for e in runner.events(result) if e["event"] == "http_request")
    assert sent["body"]["messages"][0]["content"][1]["source"]["data"] == "<69 bytes of image/png>"
    assert result.variables["rows"][0]["content"][1]["data"] == PNG  # the run's own values keep the image


def test_yaml_block_scalar_base64_is_taken_in_one_piece(runner, write) -> None:
    wrapped = "\n".join(PNG[i:i + 20] for i in range(0, len(PNG), 20))
    indented = "\n".join("                   " + line for line in wrapped.splitlines())
    text = diagram("gemini", "x").replace('request: "x"', f"""request:
                - {{type: text, text: Describe.}}
                - type: image
                  media_type: image/png
                  data: |
{indented}""")
    requests = offline_requests(runner, write, text)
    assert requests[0].status == 200
    assert requests[0].body["contents"][0]["parts"][1]["inlineData"]["data"] == PNG


def test_jpeg_and_urls_pass_the_simulators_checks_for_every_vendor(runner, write) -> None:
    for vendor in BLOCKS:
        parts = [{"type": "text", "text": "Compare."}, {"type": "image", "media_type": "image/jpeg", "data": JPEG}, LINKED]
        requests = offline_requests(runner, write, diagram(vendor, parts))
        assert [r.status for r in requests] == [200], (vendor, requests[0].body if requests else None)


def test_a_parts_base64_loses_only_real_secrets_to_the_redactor() -> None:
    from engine.format.redact import REDACTED, Redactor

    lookalike = PNG + "AIzaSyAbCdEfGhIjKlmn"  # a Google key's shape, as random base64 holds one now and then
    part = {"type": "image", "media_type": "image/png", "data": lookalike}
    redactor = Redactor(["sk-ant-api03-realsecret"])
    assert redactor.value({"rows": [part]})["rows"][0] is part  # the image is left whole
    assert redactor.value({"note": "key AIzaSyAbCdEfGhIjKlmn"})["note"] == f"key {REDACTED}"  # text is still scrubbed
    leaked = {**part, "data": PNG + "sk-ant-api03-realsecret"[:20]}
    assert Redactor(["sk-ant-api03-realsecre"[:20]]).value(leaked)["data"].endswith(REDACTED)


def test_values_show_a_part_by_its_size_at_both_levels() -> None:
    from engine.format.tables import DataTable
    from engine.format.values import full_value, short_value

    table = DataTable(["role", "content"], [["user", [{"type": "text", "text": "hi"}, PHOTO, LINKED]]])
    shown = {"type": "image", "media_type": "image/png", "size": 69}
    assert full_value(table)["rows"][0][1] == [{"type": "text", "text": "hi"}, shown,
                                               {"type": "image", "media_type": "image/jpeg", "url": LINKED["url"]}]
    assert short_value(table)["last"]["content"][1] == shown
    assert short_value({"type": "image", "note": "not a part without data or url"}) == \
        {"type": "image", "note": "not a part without data or url"}


def test_scenarios_see_the_text_parts_of_a_message_of_parts(runner, write) -> None:
    for vendor in BLOCKS:
        requests = offline_requests(runner, write, diagram(vendor, [{"type": "text", "text": "Read it."}, PHOTO]))
        assert {"role": "user", "content": "Read it.", "name": None} in requests[0].messages(), vendor
        assert PNG not in json.dumps(requests[0].messages())
