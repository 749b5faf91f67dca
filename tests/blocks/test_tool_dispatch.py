"""ToolDispatch: arguments, handlers, tool rows, parallel calls, error levels."""

from __future__ import annotations

import re

import orjson
import pytest

from engine import MessageLevel
from tests.engine.test_tools import BASIC, make_registry


def dispatch_diagram(write, tmp_path, calls, *, level: str = "Default", tools: str = BASIC, strict: bool = False) -> object:
    path, _ = make_registry(tmp_path, tools.replace("group: orders\n  description: Returns",
                                                    f"group: orders\n  strict: {str(strict).lower()}\n  description: Returns"))
    return write(f"""
        diagram: d
        tools: {path.name}
        blocks:
          - id: start
            type: Start
            variables: {{calls: {orjson.dumps(calls).decode()}, history: []}}
            next: dispatch
          - id: dispatch
            type: ToolDispatch
            error_level: {level}
            with: {{calls: "{{{{ calls }}}}", history: "{{{{ history }}}}"}}
            set: {{rows: "{{{{ history }}}}", results: "{{{{ results }}}}", failures: "{{{{ errors }}}}"}}
            on_error: handler
          - id: handler
            type: Set
            set: {{why: "{{{{ error.message }}}}"}}
    """)


def tool_rows(result):
    return [(r["tool_call_id"], r["name"], orjson.loads(r["content"])) for r in result.variables["rows"]]


def test_two_parallel_calls_keep_their_ids(runner, write, tmp_path) -> None:
    calls = [{"id": "a", "name": "get_order_status", "arguments": {"order_id": 1}},
             {"id": "b", "name": "refund_payment", "arguments": {"order_id": 2, "amount": 9.5}}]
    result = runner.run(dispatch_diagram(write, tmp_path, calls))
    assert result.status == "succeeded", result.errors
    assert tool_rows(result) == [("a", "get_order_status", {"order_id": 1, "status": "shipped"}),
                                 ("b", "refund_payment", {"refunded": 9.5})]
    assert set(result.variables["results"]) == {"a", "b"}


def test_coercing_turns_text_numbers_into_numbers(runner, write, tmp_path) -> None:
    calls = [{"id": "a", "name": "get_order_status", "arguments": {"order_id": "42"}}]
    result = runner.run(dispatch_diagram(write, tmp_path, calls))
    assert tool_rows(result)[0][2] == {"order_id": 42, "status": "shipped"}


def test_an_integer_enum_given_as_text_is_coerced_back(runner, write, tmp_path) -> None:
    # What GeminiRequest's Debug note promises: Gemini's enum holds strings, so the model answers "42".
    tools = BASIC.replace("properties: {order_id: {type: integer}}, required: [order_id]}",
                          "properties: {order_id: {type: integer, enum: [42, 57]}}, required: [order_id]}", 1)
    calls = [{"id": "a", "name": "get_order_status", "arguments": {"order_id": "42"}},
             {"id": "b", "name": "get_order_status", "arguments": {"order_id": "43"}}]
    result = runner.run(dispatch_diagram(write, tmp_path, calls, tools=tools))
    rows = tool_rows(result)
    assert rows[0][2] == {"order_id": 42, "status": "shipped"}
    assert "order_id: 43 is not one of 42 or 57" in rows[1][2]["error"]


def test_strict_tools_refuse_text_numbers(runner, write, tmp_path) -> None:
    calls = [{"id": "a", "name": "get_order_status", "arguments": {"order_id": "42"}}]
    result = runner.run(dispatch_diagram(write, tmp_path, calls, strict=True))
    content = tool_rows(result)[0][2]
    assert "invalid arguments" in content["error"] and "order_id" in content["error"]
    assert result.variables["failures"][0]["type"] == "invalid_tool_arguments"


def test_unknown_disabled_missing_arguments_and_raising_handler_become_tool_rows(runner, write, tmp_path) -> None:
    tools = BASIC + """
- function: broken
  handler: MODULE:boom
  group: orders
  description: Always fails.
  parameters: {type: object, properties: {order_id: {type: integer}}}
"""
    calls = [{"id": "1", "name": "nope", "arguments": {}},
             {"id": "2", "name": "hidden", "arguments": {"order_id": 1}},
             {"id": "3", "name": "get_order_status", "arguments": {}},
             {"id": "4", "name": "broken", "arguments": {"order_id": 1}}]
    result = runner.run(dispatch_diagram(write, tmp_path, calls, tools=tools))
    assert result.status == "succeeded"
    errors = [row[2]["error"] for row in tool_rows(result)]
    assert errors[0] == "unknown tool 'nope'" and errors[1] == "tool 'hidden' is disabled"
    assert [f["type"] for f in result.variables["failures"]][:2] == ["unknown_tool", "tool_disabled"]
    assert "arguments: \"order_id\" is a required property" in errors[2]
    assert "RuntimeError: database is down" in errors[3]


def test_handle_takes_on_error_instead(runner, write, tmp_path) -> None:
    calls = [{"id": "1", "name": "nope", "arguments": {}}]
    result = runner.run(dispatch_diagram(write, tmp_path, calls, level="Handle"))
    assert result.path == ["start", "dispatch", "handler"]
    assert "unknown tool 'nope'" in result.variables["why"]


def test_order_agent_runs_offline_end_to_end(runner) -> None:
    from pathlib import Path

    from engine import Services

    diagram = runner.load(Path(__file__).resolve().parents[2] / "diagrams" / "order_agent.yaml")
    result = runner.run(diagram, services=Services(environ={}, offline=True))
    assert result.status == "succeeded", result.errors
    assert result.path == ["start", "ask", "dispatch", "ask", "done"]
    assert "shipped" in result.variables["answer"]


def test_handle_names_the_failed_call_and_keeps_the_tool_error_type(runner, write, tmp_path) -> None:
    calls = [{"id": "a", "name": "get_order_status", "arguments": {"order_id": 1}},
             {"id": "b", "name": "nope", "arguments": {}}]
    result = runner.run(dispatch_diagram(write, tmp_path, calls, level="Handle"))
    assert result.status == "succeeded"
    assert result.errors == [{"block": "dispatch", "type": "unknown_tool", "message": "call b: unknown tool 'nope'",
                              "handled_by": "handler"}]
    assert "rows" not in result.variables  # the block failed: its outputs were never set


def test_handle_without_on_error_fails_the_run_with_the_tool_error(runner, write, tmp_path) -> None:
    calls = [{"id": "1", "name": "nope", "arguments": {}}]
    path = dispatch_diagram(write, tmp_path, calls, level="Handle")
    text = re.sub(r"\n\s*on_error: handler", "", path.read_text())
    path.write_text(text[:text.index("- id: handler")])  # no handler block, no on_error
    result = runner.run(path)
    assert result.status == "failed" and result.path == ["start", "dispatch"]
    assert result.errors == [{"block": "dispatch", "type": "unknown_tool", "message": "call 1: unknown tool 'nope'"}]


@pytest.mark.parametrize("level", ["Ignore", "Default"])
def test_ignore_and_default_keep_failed_calls_as_rows(runner, write, tmp_path, level: str) -> None:
    calls = [{"id": "1", "name": "nope", "arguments": {}}]
    result = runner.run(dispatch_diagram(write, tmp_path, calls, level=level))
    assert result.status == "succeeded" and result.errors == []
    assert tool_rows(result) == [("1", "nope", {"error": "unknown tool 'nope'"})]
    assert result.variables["failures"] == [{"id": "1", "name": "nope", "error": "unknown tool 'nope'",
                                             "type": "unknown_tool"}]


def test_every_schema_error_of_the_arguments_is_reported(runner, write, tmp_path) -> None:
    calls = [{"id": "a", "name": "refund_payment", "arguments": {"order_id": "x", "amount": "lots", "extra": 1}}]
    tools = BASIC.replace("required: [order_id, amount]}", "required: [order_id, amount], additionalProperties: false}")
    result = runner.run(dispatch_diagram(write, tmp_path, calls, tools=tools))
    error = tool_rows(result)[0][2]["error"]
    assert error.startswith("invalid arguments for 'refund_payment': ")
    assert "order_id: \"x\" is not of type \"integer\"" in error and "amount: \"lots\" is not of type \"number\"" in error
    assert "'extra' was unexpected" in error


PRICED = BASIC + """
- function: get_price
  handler: MODULE:priced
  group: orders
  description: Prices an order.
  parameters: {type: object, properties: {order_id: {type: integer}}}
- function: get_opaque
  handler: MODULE:opaque
  group: orders
  description: Returns what JSON cannot hold.
  parameters: {type: object, properties: {order_id: {type: integer}}}
"""


def test_a_decimal_result_reaches_the_model_as_a_number_not_its_repr(runner, write, tmp_path) -> None:
    # The regression: Decimal("120.50") used to reach the model as "Decimal('120.50')", bytes as "b'\\x00\\x01'".
    calls = [{"id": "a", "name": "get_price", "arguments": {"order_id": 1}}]
    result = runner.run(dispatch_diagram(write, tmp_path, calls, tools=PRICED), message_level=MessageLevel.DEBUG)
    content = result.variables["rows"][0]["content"]
    assert "Decimal" not in content and "b'" not in content
    assert orjson.loads(content) == {"total": 120.5, "paid_at": "2025-03-01T09:30:00",
                                     "ref": "00000000-0000-0000-0000-000000000001", "raw": "AAE="}
    assert result.variables["results"]["a"]["total"] == 120.5
    called = [e for e in runner.events(result) if e["event"] == "tool_called"]
    assert called[0]["notes"] == ["result.raw: 2 bytes written as base64 text"]


def test_a_result_json_cannot_hold_is_an_unserializable_result_row_naming_the_type(runner, write, tmp_path) -> None:
    calls = [{"id": "a", "name": "get_opaque", "arguments": {"order_id": 1}}]
    result = runner.run(dispatch_diagram(write, tmp_path, calls, tools=PRICED))
    error = tool_rows(result)[0][2]["error"]
    assert "result.row: a value of type" in error and ".Opaque cannot be turned into JSON" in error
    assert "object at 0x" not in error
    assert result.variables["failures"][0]["type"] == "unserializable_result"
