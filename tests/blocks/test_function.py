"""Function: one Python call as a step: imported at load like tool handlers, run under its timeout and the deadline."""

from __future__ import annotations

import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from engine import DiagramInvalid, MessageLevel, Services
from engine.compile.loader import load_diagram

CODE = '''
import asyncio, decimal, os, threading, time

def quote(order_id: int, currency: str = "EUR"):
    if order_id < 0:
        raise ValueError(f"no order {order_id}")
    return {"order_id": order_id, "total": decimal.Decimal("120.50"), "currency": currency, "raw": b"\\x00\\x01"}

async def later(value):
    await asyncio.sleep(0)
    return {"value": value, "thread": threading.current_thread().name}

def where():
    return {"thread": threading.current_thread().name}

def leaky():
    raise RuntimeError("the key was " + os.environ["SHOP_API_KEY"])

def stuck(seconds: float):
    time.sleep(seconds)

def opaque():
    return object()

def positional(a, /):
    return a

class Catalogue:
    def price(self, sku: str):
        return {"sku": sku, "price": decimal.Decimal("9.90")}
'''


@pytest.fixture
def module(tmp_path: Path) -> str:
    """A module of functions beside the diagram, with a name of its own (imported modules stay in sys.modules)."""
    name = f"fn_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(CODE)
    return name


def diagram(write, module: str, block: str, *, level: str = "Default", start: str = "") -> Path:
    return write(f"""
        diagram: d
        allowed_modules: [{module}]
        blocks:
          - id: start
            type: Start
            inputs: {{order_id: 42}}
            {start}
            next: call
          - id: call
            type: Function
            error_level: {level}
{textwrap.indent(textwrap.dedent(block).strip(), " " * 12)}
            set: {{out: "{{{{ result }}}}"}}
            on_error: handler
          - {{id: handler, type: Set, set: {{why: "{{{{ error.type }}}}: {{{{ error.message }}}}"}}}}
    """)


def test_a_sync_function_runs_off_the_loop_and_its_decimal_becomes_a_number(runner, write, module) -> None:
    path = diagram(write, module, f"""
        with:
          function: {module}:quote
          arguments: {{order_id: "{{{{ order_id }}}}"}}
          timeout: 5
    """)
    result = runner.run(path, message_level=MessageLevel.DEBUG)
    assert result.status == "succeeded", result.errors
    assert result.variables["out"] == {"order_id": 42, "total": 120.5, "currency": "EUR", "raw": "AAE="}
    [called] = [e for e in runner.events(result) if e["event"] == "function_called"]
    assert called["function"] == f"{module}:quote" and called["arguments"] == {"order_id": 42} and called["ok"]
    assert called["notes"] == ["result.raw: 2 bytes written as base64 text"] and "result" not in called


def test_detailed_traces_the_whole_result(runner, write, module) -> None:
    path = diagram(write, module, f"with: {{function: '{module}:quote', arguments: {{order_id: 1}}}}")
    result = runner.run(path, message_level=MessageLevel.DETAILED)
    [called] = [e for e in runner.events(result) if e["event"] == "function_called"]
    assert called["result"]["total"] == 120.5


def test_an_async_function_is_awaited_on_the_loop_and_a_sync_one_runs_on_a_thread(runner, write, module) -> None:
    result = runner.run(diagram(write, module, f"with: {{function: '{module}:later', arguments: {{value: 3}}}}"))
    assert result.variables["out"] == {"value": 3, "thread": "MainThread"}
    result = runner.run(diagram(write, module, f"with: {{function: '{module}:where'}}"))
    assert result.variables["out"]["thread"] == f"diagrama-tool:{module}:where"


def test_a_method_of_a_class_written_in_the_module(runner, write, module) -> None:
    result = runner.run(diagram(write, module, f"with: {{function: '{module}:Catalogue.price', arguments: {{sku: A1}}}}"))
    assert result.variables["out"] == {"sku": "A1", "price": 9.9}


def test_an_exception_is_a_function_error_naming_its_type_under_the_error_level(runner, write, module) -> None:
    block = f"with: {{function: '{module}:quote', arguments: {{order_id: -1}}}}"
    handled = runner.run(diagram(write, module, block, level="Handle"))
    assert handled.path == ["start", "call", "handler"]
    assert handled.errors[0]["type"] == "function_error"
    assert handled.errors[0]["message"] == f"function '{module}:quote' raised ValueError: no order -1"
    assert "Traceback" not in handled.variables["why"]
    ignored = runner.run(diagram(write, module, block, level="Ignore"))
    assert ignored.status == "succeeded" and ignored.path == ["start", "call"] and "out" not in ignored.variables


def test_a_secret_in_an_exception_message_is_redacted(runner, write, module, monkeypatch) -> None:
    monkeypatch.setenv("SHOP_API_KEY", "sk-shop-0123456789")
    result = runner.run(diagram(write, module, f"with: {{function: '{module}:leaky'}}", level="Handle"),
                        services=Services(environ={"SHOP_API_KEY": "sk-shop-0123456789"}))
    assert "sk-shop-0123456789" not in result.variables["why"] and "[REDACTED]" in result.variables["why"]


def test_a_function_past_its_timeout_is_abandoned_as_a_block_timeout(runner, write, module) -> None:
    block = f"with: {{function: '{module}:stuck', arguments: {{seconds: 30}}, timeout: 0.05}}"
    result = runner.run(diagram(write, module, block, level="Handle"), message_level=MessageLevel.DEBUG)
    assert result.errors[0]["type"] == "block_timeout" and "abandoned, still running" in result.errors[0]["message"]
    [called] = [e for e in runner.events(result) if e["event"] == "function_called"]
    assert called["ok"] is False and called["error_type"] == "block_timeout"


def test_the_run_deadline_abandons_a_stuck_function(runner, write, module) -> None:
    block = f"with: {{function: '{module}:stuck', arguments: {{seconds: 30}}}}"
    result = runner.run(diagram(write, module, block, start="timeout: 0.05"), message_level=MessageLevel.DEBUG)
    assert result.status == "failed" and result.errors[0]["type"] == "run_timeout"
    [called] = [e for e in runner.events(result) if e["event"] == "function_called"]
    assert "abandoned" in called["error"]


def test_a_result_json_cannot_hold_is_unserializable_result(runner, write, module) -> None:
    result = runner.run(diagram(write, module, f"with: {{function: '{module}:opaque'}}", level="Handle"))
    assert result.errors[0]["type"] == "unserializable_result"
    assert result.errors[0]["message"] == (f"function '{module}:opaque' returned result: a value of type object cannot "
                                           "be turned into JSON (a result may hold dicts, lists, text, numbers, "
                                           "booleans, None, Decimal, dates and times, UUIDs, bytes, sets, dataclasses "
                                           "and pydantic models)")


@pytest.mark.parametrize(("block", "field", "code", "words"), [
    ("with: {function: 'os:system'}", "with.function", "module_not_allowed", "module 'os' is not in allowed_modules"),
    ("with: {function: 'MOD'}", "with.function", "invalid_function", "must be package.module:function"),
    ("with: {function: '{{ order_id }}'}", "with.function", "invalid_function", "not computed by a template"),
    ("with: {function: 'MOD:nothing'}", "with.function", "invalid_function", "has no attribute 'nothing'"),
    ("with: {function: 'MOD:asyncio.sleep'}", "with.function", "handler_not_allowed", "is a module that"),
    ("with: {function: 'MOD:quote', arguments: {order_id: 1, order: 1}}", "with.arguments", "invalid_input",
     "has no parameter 'order'"),
    ("with: {function: 'MOD:quote', arguments: {currency: '{{ order_id }}'}}", "with.arguments", "invalid_input",
     "missing argument 'order_id' of MOD:quote(order_id: int, currency: str = 'EUR')"),
    ("with: {function: 'MOD:positional', arguments: {a: 1}}", "with.arguments", "invalid_input",
     "takes 'a' only by position"),
])
def test_a_bad_function_or_bad_literal_arguments_are_load_errors_with_file_line_block_field(
        write, registry, module, block: str, field: str, code: str, words: str) -> None:
    path = diagram(write, module, block.replace("MOD", module))
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    [problem] = [p for p in caught.value.problems if p.block == "call"]
    assert (problem.file, problem.line, problem.field, problem.code) == (str(path), 12, field, code), problem
    assert words.replace("MOD", module) in problem.message


def test_a_module_that_fails_to_import_is_a_load_error_and_the_folder_never_stays_on_sys_path(
        write, registry, tmp_path) -> None:
    name = f"broken_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text("def f(:\n")
    path = diagram(write, name, f"with: {{function: '{name}:f'}}")
    with pytest.raises(DiagramInvalid, match=r"cannot be loaded: SyntaxError: invalid syntax"):
        load_diagram(path, registry)
    assert str(tmp_path) not in sys.path and str(tmp_path.resolve()) not in sys.path
