"""ToolDispatch `context:`: values the handlers read (the user's id, a tenant) that the model never sees.

A Python handler gets a context value as a keyword argument where it declares a parameter of that name (over any
argument the model sent by that name); an `http:` tool's templates read `context.NAME`. The model's tool schemas,
and every request body the simulator receives, never hold the value.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from engine import Services
from engine.providers.simulator import Simulator

USER = "u-7731-ctx"
"""The user's id: a value no model request may contain."""

HANDLERS = """
SEEN = []

def my_orders(status: str, user_id: str, tenant: str = "none"):
    SEEN.append({"user_id": user_id, "tenant": tenant})
    return {"orders": [42] if user_id.startswith("u-") else [], "status": status}

def plain(status: str):
    return {"status": status}
"""


def _agent(write: Any, tmp_path: Path) -> tuple[Path, str]:
    module = f"ctx_handlers_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(HANDLERS)
    write(f"""
        registry: shop
        allowed_modules: [{module}]
        groups: {{orders: Orders}}
        tools:
          - function: my_orders
            handler: {module}:my_orders
            group: orders
            description: The customer's orders in a status.
            parameters: {{type: object, properties: {{status: {{type: string}}}}, required: [status]}}
          - function: plain
            handler: {module}:plain
            group: orders
            description: Takes no context.
            parameters: {{type: object, properties: {{status: {{type: string}}}}, required: [status]}}
    """, "registry.yaml")
    return write("""
        diagram: ctx
        tools: registry.yaml
        blocks:
          - id: start
            type: Start
            inputs: {user: {id: "u-7731-ctx"}}
            variables: {history: []}
            next: ask
          - id: ask
            type: ClaudeRequest
            with: {model: claude-sonnet-5-5, request: "{{ 'my orders?' if history | length == 0 else '' }}",
                   history: "{{ history }}", tools: "{{ tools('orders') }}", max_tokens: 100}
            set: {answer: "{{ result }}", history: "{{ history }}", calls: "{{ called_tools }}"}
            next:
              - to: dispatch
                when: "{{ called_tools | length > 0 }}"
          - id: dispatch
            type: ToolDispatch
            with: {calls: "{{ calls }}", history: "{{ history }}",
                   context: {user_id: "{{ user.id }}", tenant: acme}}
            set: {history: "{{ history }}", results: "{{ results }}"}
            next: ask
    """), module


def test_a_handler_reads_the_context_and_no_model_request_holds_it(runner, write, tmp_path: Path) -> None:
    import importlib
    import sys

    path, module = _agent(write, tmp_path)
    simulator = Simulator({"ask": [
        # The model tries to say whose orders to read: the context's user_id wins.
        {"tool_calls": [{"name": "my_orders", "arguments": {"status": "open", "user_id": "someone-else"}},
                        {"name": "plain", "arguments": {"status": "open"}}]},
        {"text": "You have one open order."}]})
    sys.path.insert(0, str(tmp_path))
    try:
        result = runner.run(path, services=Services(environ={}, offline=True, simulator=simulator))
        seen = importlib.import_module(module).SEEN
    finally:
        sys.path.remove(str(tmp_path))
    assert result.status == "succeeded", result.errors
    assert seen == [{"user_id": USER, "tenant": "acme"}]
    assert list(result.variables["results"].values()) == [{"orders": [42], "status": "open"}, {"status": "open"}]
    bodies = [json.dumps(request.body) for request in simulator.requests]
    assert len(bodies) == 2 and "my_orders" in bodies[0]  # the schema offered: status alone
    assert all(USER not in body and "acme" not in body for body in bodies)
    offered = next(tool for tool in simulator.requests[0].body["tools"] if tool["name"] == "my_orders")
    assert set(offered["input_schema"]["properties"]) == {"status"}


def test_an_http_tool_reads_the_context_in_its_templates(runner, write) -> None:
    from tests.engine.test_http_tools import Weather, agent

    weather = Weather()
    calls = "[{id: c1, name: get_weather, arguments: {city: Lisbon}}]"
    path = agent(write, method="POST", extra='      json: {city: "{{ city }}", user: "{{ context.user_id }}"}\n',
                 calls=calls)
    text = path.read_text().replace('history: "{{ history }}"}', 'history: "{{ history }}", context: {user_id: u-1}}')
    path.write_text(text)
    result = runner.run(path, services=weather.services())
    assert result.status == "succeeded", result.errors
    assert json.loads(weather.seen[0].content) == {"city": "Lisbon", "user": "u-1"}
