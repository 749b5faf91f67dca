"""`response_schema` on the three request blocks: sent natively, checked per model at load, the answer read as `output`."""

from __future__ import annotations

import asyncio
import json

import pytest

from engine import DiagramInvalid, Services, execute
from engine.compile.loader import load_diagram
from engine.providers import Simulator
from tests.blocks.test_request_blocks import ANTHROPIC_REPLY, GEMINI_REPLY, GROQ_REPLY, run
from tests.blocks.vendors import FakeVendor

BLOCKS = {"anthropic": "ClaudeRequest", "groq": "GroqChatRequest", "gemini": "GeminiRequest"}
MODELS = {"anthropic": "claude-sonnet-5-5", "groq": "openai/gpt-oss-120b", "gemini": "gemini-3.5-flash"}
PLAN = {"type": "object", "properties": {"steps": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                                         "done": {"type": "boolean"}},
        "required": ["steps", "done"], "additionalProperties": False}
VENDORS = list(BLOCKS)


def structured(vendor: str, *, schema: object = PLAN, model: str | None = None, extra: str = "",
               level: str = "Handle") -> str:
    return f"""
        diagram: d
        blocks:
          - id: start
            type: Start
            error_level: {level}
            message_level: Detailed
            next: plan
          - id: plan
            type: {BLOCKS[vendor]}
            with:
              model: {model or MODELS[vendor]}
              request: Plan how to find who won the 2024 Australian Open.
              response_schema: {json.dumps(schema)}
              {extra}
            set: {{plan: "{{{{ output }}}}", text: "{{{{ result }}}}"}}
            on_error: failed
          - {{id: failed, type: Set, set: {{error_type: "{{{{ error.type }}}}", error_message: "{{{{ error.message }}}}"}}}}
    """


def offline(runner, write, text: str, simulator: Simulator | None = None):
    diagram = load_diagram(write(text), runner.registry)
    services = Services(environ={}, offline=True, simulator=simulator or Simulator())
    return asyncio.run(execute(diagram, runs_dir=runner.runs_dir, services=services))


@pytest.mark.parametrize("vendor", VENDORS)
def test_offline_the_simulator_answers_an_object_matching_the_schema_the_same_for_the_same_seed(runner, write,
                                                                                              vendor) -> None:
    first = offline(runner, write, structured(vendor))
    assert first.status == "succeeded", first.errors
    plan = first.variables["plan"]
    assert isinstance(plan["steps"], list) and plan["steps"] and all(isinstance(s, str) for s in plan["steps"])
    assert isinstance(plan["done"], bool)
    assert json.loads(first.variables["text"]) == plan  # `result` keeps the answer's text
    again = offline(runner, write, structured(vendor))
    assert again.variables["plan"] == plan
    others = [offline(runner, write, structured(vendor), Simulator(seed=seed)).variables["plan"] for seed in (1, 2, 3)]
    assert any(other != plan for other in others)


SENT = {
    "anthropic": lambda body: body["output_config"] == {"format": {"type": "json_schema", "schema": PLAN}},
    "groq": lambda body: body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "response", "schema": PLAN, "strict": True}},
    "gemini": lambda body: body["generationConfig"] == {"responseMimeType": "application/json",
                                                        "responseJsonSchema": PLAN},
}
ANSWERS = {
    "anthropic": lambda text: {**ANTHROPIC_REPLY, "content": [{"type": "text", "text": text}]},
    "groq": lambda text: {**GROQ_REPLY, "choices": [{"index": 0, "finish_reason": "stop",
                                                     "message": {"role": "assistant", "content": text}}]},
    "gemini": lambda text: {**GEMINI_REPLY, "candidates": [{"index": 0, "finishReason": "STOP",
                                                            "content": {"role": "model", "parts": [{"text": text}]}}]},
}


@pytest.mark.parametrize("vendor", VENDORS)
def test_the_schema_goes_in_the_vendors_own_field_and_the_answer_comes_back_as_output(runner, write, vendor) -> None:
    answer = {"steps": ["Find the winner.", "Check the date."], "done": False}
    fake = FakeVendor().reply(200, ANSWERS[vendor](json.dumps(answer)))
    result = run(runner, write, structured(vendor), fake.services(vendor))
    assert result.status == "succeeded", result.errors
    assert SENT[vendor](fake.bodies()[0]), fake.bodies()[0]
    assert result.variables["plan"] == answer  # a list stays a list: no "F" from "Find the winner."


@pytest.mark.parametrize(("vendor", "text", "said"), [
    ("anthropic", "Sure! Here are the steps: 1. Find the winner.", "is not JSON"),
    ("groq", '{"steps": [], "done": "no"}', 'steps: [] has less than 1 item; done: "no" is not of type "boolean"'),
    ("gemini", '{"steps": ["a"]}', '"done" is a required property'),
])
def test_an_answer_that_does_not_parse_or_match_is_invalid_output_under_the_error_level(runner, write, vendor, text,
                                                                                       said) -> None:
    fake = FakeVendor().reply(200, ANSWERS[vendor](text))
    result = run(runner, write, structured(vendor), fake.services(vendor))
    assert result.status == "succeeded"  # Handle: on_error took it
    assert result.path == ["start", "plan", "failed"]
    assert result.variables["error_type"] == "invalid_output"
    assert said in result.variables["error_message"]
    events = [e for e in runner.events(result) if e["event"] == "provider_called"]
    assert events and events[0]["structured"] is True  # the call (and its tokens) is told before the error


def test_an_answer_cut_off_at_max_tokens_says_so(runner, write) -> None:
    simulator = Simulator({"plan": [{"finish": "max_tokens", "text": '{"steps": ["Find the'}]})
    result = offline(runner, write, structured("anthropic"), simulator)
    assert result.variables["error_type"] == "invalid_output"
    assert "cut off at the token limit: raise max_tokens" in result.variables["error_message"]


def test_ignore_records_the_error_and_goes_on_without_set(runner, write) -> None:
    simulator = Simulator({"plan": [{"output": {"steps": "Find the winner.", "done": False}}]})
    result = offline(runner, write, structured("groq", level="Ignore"), simulator)
    assert result.status == "succeeded" and result.path == ["start", "plan"]
    assert "plan" not in result.variables
    assert result.errors[0]["type"] == "invalid_output" and "steps" in result.errors[0]["message"]


def test_a_scripted_output_is_sent_as_the_vendors_answer_text(runner, write) -> None:
    simulator = Simulator({"plan": [{"output": {"steps": ["Search the web."], "done": True}}]})
    result = offline(runner, write, structured("gemini"), simulator)
    assert result.variables["plan"] == {"steps": ["Search the web."], "done": True}
    assert json.loads(result.variables["text"]) == {"steps": ["Search the web."], "done": True}


def test_a_turn_that_calls_tools_has_no_output(runner, write) -> None:
    tool = {"name": "search", "description": "Searches the web.", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}
    simulator = Simulator({"plan": [{"tool_calls": [{"name": "search", "arguments": {"query": "AO 2024"}}]}]})
    text = structured("anthropic", extra=f"tools: {json.dumps([tool])}").replace(
        'text: "{{ result }}"}', 'text: "{{ result }}", calls: "{{ called_tools }}"}')
    result = offline(runner, write, text, simulator)
    assert result.status == "succeeded", result.errors
    assert result.variables["plan"] is None and result.variables["calls"][0]["name"] == "search"


def test_groq_sends_strict_only_where_the_model_and_the_schema_take_it(runner, write) -> None:
    loose = {"type": "object", "properties": {"steps": {"type": "array", "items": {"type": "string"}},
                                              "note": {"type": "string"}}, "required": ["steps"]}
    cases = [("openai/gpt-oss-120b", PLAN, True), ("openai/gpt-oss-120b", loose, False),
             ("meta-llama/llama-4-scout-17b-16e-instruct", PLAN, False)]
    for model, schema, strict in cases:
        fake = FakeVendor().reply(200, ANSWERS["groq"]('{"steps": ["a"], "done": true}'))
        result = run(runner, write, structured("groq", schema=schema, model=model), fake.services("groq"))
        sent = fake.bodies()[0]["response_format"]["json_schema"]
        assert sent.get("strict", False) is strict, (model, sent)
        notes = next(e for e in runner.events(result) if e["event"] == "provider_called")["notes"]
        assert any("without strict" in note and "additionalProperties: false" in note for note in notes) is \
            (schema is loose), notes


LOAD_ERRORS = [
    ("anthropic", "claude-3-5-haiku-latest", PLAN, "has no structured output"),
    ("anthropic", "claude-opus-4-1", PLAN, "has no structured output"),
    ("anthropic", "claude-sonnet-5-5", {"type": "object", "properties": {"n": {"type": "integer"}}},
     "needs additionalProperties: false on every object"),
    ("anthropic", "claude-sonnet-5-5", {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}},
                                        "additionalProperties": False}, "properties.n.minimum"),
    ("groq", "llama-3.3-70b-versatile", PLAN, "takes no response schema"),
    ("gemini", "gemini-1.5-pro", PLAN, "takes no response schema"),
    ("gemini", "gemini-3.5-flash", {"type": "objec"}, "not a JSON Schema"),
    ("groq", "openai/gpt-oss-120b", {"$ref": "https://example.com/plan.json"}, "is outside the schema"),
    ("anthropic", "claude-sonnet-5-5", {}, "the schema is empty"),
    ("gemini", "gemini-3.5-flash", {"type": "object", "properties": {"n": {"type": "integer", "maximum": 2**64}}},
     "the schema cannot be sent as JSON: Integer exceeds 64-bit range"),
]


@pytest.mark.parametrize(("vendor", "model", "schema", "said"), LOAD_ERRORS)
def test_a_schema_the_model_or_vendor_does_not_take_is_a_load_error_at_its_line(write, registry, vendor, model,
                                                                               schema, said) -> None:
    path = write(structured(vendor, schema=schema, model=model))
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    problem = next(p for p in caught.value.problems if p.field == "with.response_schema")
    assert said in problem.message, problem.message
    assert problem.block == "plan" and problem.file == str(path) and problem.line == 13


def test_gemini_2_takes_no_schema_with_tools_gemini_3_does(write, registry) -> None:
    tools = 'tools: [{name: search, description: Searches., parameters: {type: object, properties: {q: {type: string}}}}]'
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(write(structured("gemini", model="gemini-2.5-flash", extra=tools)), registry)
    assert "together with tools" in caught.value.problems[0].message
    load_diagram(write(structured("gemini", model="gemini-3.5-flash", extra=tools)), registry)
    load_diagram(write(structured("gemini", model="gemini-2.5-flash", extra="tools: []")), registry)  # none offered


def test_a_templated_model_is_checked_when_the_block_runs(runner, write) -> None:
    text = structured("groq", model='"{{ model }}"').replace("next: plan", 'variables: {model: llama-3.3-70b-versatile}\n'
                                                                          '            next: plan')
    result = offline(runner, write, text)
    assert result.variables["error_type"] == "invalid_input"
    assert "with.response_schema: llama-3.3-70b-versatile takes no response schema" in result.variables["error_message"]


def test_a_schema_file_is_read_from_the_diagrams_folder_and_no_further(runner, write, registry) -> None:
    write(json.dumps(PLAN), "schemas/plan.json")
    result = offline(runner, write, structured("anthropic", schema={"file": "schemas/plan.json"}))
    assert result.status == "succeeded" and set(result.variables["plan"]) == {"steps", "done"}
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(write(structured("anthropic", schema={"file": "../../plan.json"})), registry)
    assert "leaves the diagram's folder" in caught.value.problems[0].message
    write("{not json", "schemas/broken.json")
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(write(structured("anthropic", schema={"file": "schemas/broken.json"})), registry)
    assert "the schema file 'schemas/broken.json' is not JSON" in caught.value.problems[0].message


def test_a_schema_file_with_a_rule_the_vendor_refuses_fails_when_the_block_runs(runner, write) -> None:
    write(json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}}), "open.json")
    text = structured("anthropic", schema={"file": "open.json"}).replace("request: Plan", 'request: "{{ \'Plan\' }}')
    text = text.replace("Open.\n", "Open.\"\n")
    result = offline(runner, write, text)
    assert result.variables["error_type"] == "invalid_input"
    assert "additionalProperties: false" in result.variables["error_message"]
