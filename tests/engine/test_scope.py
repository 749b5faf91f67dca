"""template_scope: the names each block's templates may use, as the static name check sees them."""

from __future__ import annotations

from pathlib import Path

from blocks.registry import registry
from engine.compile.loader import load_diagram
from engine.compile.validate import template_scope

ROOT = Path(__file__).resolve().parents[2]


def test_order_agent_scope_per_block_and_section() -> None:
    scope = template_scope(load_diagram(ROOT / "diagrams/order_agent.yaml", registry()))
    assert set(scope) == {"start", "ask", "dispatch", "apologise", "done"}
    # inputs, variables, every `set`, tools(), secret(), now(), today(), and jinja2's standard globals
    everywhere = {"question", "history", "answer", "calls", "tools", "secret", "now", "today", "range", "dict",
                  "namespace", "cycler", "joiner", "lipsum"}
    assert set(scope["ask"]["with"]) == everywhere
    assert {"result", "called_tools", "usage"} <= set(scope["ask"]["set"]) and scope["ask"]["set"] == scope["ask"]["when"]
    assert "result" not in scope["ask"]["with"] and "results" in scope["dispatch"]["set"]
    # Only the handler reached through on_error sees `error`.
    assert "error" in scope["apologise"]["with"]
    assert all("error" not in scope[block]["with"] for block in ("start", "ask", "dispatch", "done"))
    assert scope["ask"]["with"] == sorted(scope["ask"]["with"])


def test_loop_body_sees_item_and_index_and_handlers_after_on_error_see_error(write, registry) -> None:
    path = write("""
        diagram: looped
        blocks:
          - {id: start, type: Start, variables: {items: [1, 2], total: 0}, next: each}
          - id: each
            type: Loop
            with: {for_each: "{{ items }}"}
            body: add
            next: after
          - {id: add, type: Echo, with: {value: "{{ item }}"}, set: {total: "{{ total + index }}"}, on_error: oops, next: each}
          - {id: oops, type: Set, set: {note: "{{ error.message }}"}}
          - {id: after, type: Echo, with: {value: "{{ total }}"}}
    """)
    scope = template_scope(load_diagram(path, registry))
    assert {"item", "index"} <= set(scope["add"]["with"]) and {"item", "index"} <= set(scope["each"]["with"])
    assert "item" not in scope["after"]["with"] and "item" not in scope["start"]["with"]
    # The handler leaves the loop (it ends the run): `error` is bound there, `item` is not.
    assert "error" in scope["oops"]["with"] and "item" not in scope["oops"]["with"]
    assert all("error" not in scope[block]["with"] for block in ("start", "each", "add", "after"))
    assert {"result", "count"} <= set(scope["add"]["set"]) and "result" not in scope["add"]["with"]
    assert {"iterations", "collected"} <= set(scope["each"]["when"])
