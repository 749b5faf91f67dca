"""Minimal-change YAML rewriting for the studio: every rule with its exact diff, plus Hypothesis round trips."""

from __future__ import annotations

import copy
import difflib
import io
import math
import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from yaml.nodes import MappingNode, Node, ScalarNode

from engine.errors import DiagramInvalid
from engine.format.dialect import MERGE_TAG, core_value
from engine.format.yamlfile import read_yaml_text
from engine.web import yaml_edit as ye
from engine.web.yaml_edit import tree
from engine.web.yaml_edit.checks import Unsupported

ROOT = Path(__file__).resolve().parents[2]

EditError = ye.EditError
apply_edit = ye.apply_edit


def to_json(text: str) -> Any:
    """The file's data as the studio shows it and a run reads it: engine.format's reader, the only one."""
    data, _ = read_yaml_text(text, "f.yaml")
    return {} if data is None else data


def ambiguous(text: str) -> list[str]:
    """The plain scalars of `text` that YAML 1.1 reads otherwise, as written."""
    found: list[Any] = []
    read_yaml_text(text, "f.yaml", None, found)
    return sorted(item.text for item in found)

# Copies of example diagrams, so that the exact diffs below do not move when the examples change.
GREETING = """\
# yaml-language-server: $schema=../diagram.schema.json
diagram: greeting-counter
description: Counts to N with a Set block cycle, then greets; runs without any provider.
blocks:
  - id: start
    type: Start
    error_level: Handle
    message_level: Debug
    inputs:
      name: Ana
      times: 3
    variables:
      i: 0
    next: count

  - id: count
    type: Set
    label: Count one more
    set:
      i: "{{ i + 1 }}"
    next:
      - to: count
        when: "{{ i < times }}"
      - to: greet

  - id: greet
    type: Set
    set:
      greeting: "Olá, {{ name }}! Counted to {{ i }}."
"""

ORDER_AGENT = """\
# yaml-language-server: $schema=../diagram.schema.json
diagram: order-agent
description: Answers a customer's question about an order, calling tools until none is needed.
tools: registry/orders.yaml
blocks:
  - id: start
    type: Start
    error_level: Handle
    message_level: Debug
    max_steps: 40
    inputs:
      question: "Onde está o meu pedido 42?"
    variables:
      history: []
    next: ask

  - id: ask
    type: ClaudeRequest
    label: Ask Claude
    with:
      model: claude-sonnet-5-5
      role: You are a support agent for an online shop. Answer in the customer's language.
      request: "{{ question if history | length == 0 else '' }}"
      history: "{{ history }}"
      tools: "{{ tools('orders', query=question, top_k=3) }}"
      max_tokens: 512
      timeout: 30
    set:
      answer: "{{ result }}"
      history: "{{ history }}"
      calls: "{{ called_tools }}"
    next:
      - to: dispatch
        when: "{{ called_tools | length > 0 }}"
      - to: done
    on_error: apologise

  - id: dispatch
    type: ToolDispatch
    label: Run the tools
    with:
      calls: "{{ calls }}"
      history: "{{ history }}"
    set:
      history: "{{ history }}"
    next: ask

  - id: apologise
    type: Set
    set:
      answer: "Desculpe, não consigo responder agora ({{ error.type }})."

  - id: done
    type: Set
"""

# Comments everywhere, odd quoting, a literal block and a data table.
COMMENTED = """\
# yaml-language-server: $schema=../diagram.schema.json
# A diagram with comments.
diagram: demo   # the name
blocks:
  # the entry point
  - id: start
    type: Start
    label: 'Begin here'
    position: [0, 0]  # top left
    with:
      temperature: 0.2 # warm
      # retries: 3
      prompt: |
        Hello
        world
    variables:
      history:
        - role: user
          content: Hi
        - role: assistant
          content: 'Hello: how can I help?'
    next: b

  # ---- section ----

  # b does things
  - id: b
    type: Set
    set:
      x: 1  # one
# trailing comment
"""

COMPACT = """\
diagram: compact
blocks:
- id: start
  type: Start
  next: a
- id: a
  type: Set
"""

EXAMPLE_FILES = sorted((ROOT / "diagrams").glob("*.yaml"))
TEXTS = {path.name: path.read_text(encoding="utf-8") for path in EXAMPLE_FILES} | {
    "GREETING": GREETING,
    "ORDER_AGENT": ORDER_AGENT,
    "COMMENTED": COMMENTED,
    "COMPACT": COMPACT,
}


def _lines(text: str) -> list[str]:
    # Split on "\n" only (str.splitlines also splits on \x85 and \u2028, which YAML 1.2 keeps inside lines).
    return [line if line.endswith("\n") else line + "\n" for line in re.split(r"(?<=\n)", text) if line]


def diff(old: str, new: str) -> str:
    """The unified diff without file headers or the final newline."""
    return "".join(list(difflib.unified_diff(_lines(old), _lines(new), n=0))[2:]).rstrip("\n")


def strict_equal(a: Any, b: Any) -> bool:
    """== that also tells True from 1 (JSON does)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    return (type(a) is type(b) and a == b) or (isinstance(a, int | float) and isinstance(b, int | float) and a == b)


def assert_reads_back(text: str, new: dict[str, Any], before: str | None = None) -> None:
    """`text` reads back as `new`, and writes no plain scalar YAML 1.1 would read otherwise (`before` may have had)."""
    assert strict_equal(to_json(text), new)
    had = ambiguous(before) if before is not None else []
    assert all(had.count(word) >= ambiguous(text).count(word) for word in ambiguous(text)), (had, ambiguous(text))


def edited(text: str, change: Any) -> tuple[str, dict[str, Any]]:
    new = to_json(text)
    change(new)
    result = apply_edit(text, new)
    assert_reads_back(result, new, text)
    return result, new


# ---------------------------------------------------------------- API basics


def test_content_hash_is_sha256_of_the_utf8_bytes() -> None:
    assert ye.content_hash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert ye.content_hash("Olá") == ye.content_hash("Olá".encode())
    assert ye.content_hash(b"a") != ye.content_hash(b"b")


def test_to_json_gives_plain_json_data() -> None:
    data = to_json(GREETING)
    assert data["diagram"] == "greeting-counter"
    assert data["blocks"][1]["next"] == [{"to": "count", "when": "{{ i < times }}"}, {"to": "greet"}]
    assert type(data["blocks"][0]["inputs"]["times"]) is int
    assert to_json("") == {}
    assert to_json("# nothing yet\n") == {}
    assert to_json("when: 2024-01-02\n1: one\non: yes\n") == {"when": "2024-01-02", "1": "one", "on": "yes"}


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_to_json_reads_every_example(name: str) -> None:
    data = to_json(TEXTS[name])
    assert isinstance(data["blocks"], list) and all(isinstance(b["id"], str) for b in data["blocks"])


def test_new_diagram_text() -> None:
    assert ye.new_diagram_text("my-flow") == "diagram: my-flow\nblocks:\n  - id: start\n    type: Start\n    position: [0, 0]\n"
    assert ye.new_diagram_text("yes") == 'diagram: "yes"\nblocks:\n  - id: start\n    type: Start\n    position: [0, 0]\n'
    assert to_json(ye.new_diagram_text("a: b")) == {
        "diagram": "a: b",
        "blocks": [{"id": "start", "type": "Start", "position": [0, 0]}],
    }
    with pytest.raises(EditError):
        ye.new_diagram_text("")


def test_edit_error_is_a_value_error_that_says_what_is_wrong() -> None:
    assert issubclass(EditError, ValueError)
    with pytest.raises(EditError, match="not valid YAML"):
        apply_edit("a: [1, 2\n", {"blocks": []})
    with pytest.raises(EditError, match=r"duplicate key .a.*line 2"):
        apply_edit("a: 1\na: 2\n", {"blocks": []})
    with pytest.raises(EditError, match="not a mapping"):
        apply_edit("- 1\n- 2\n", {"blocks": []})
    with pytest.raises(EditError, match="must be a mapping"):
        apply_edit(GREETING, [])
    with pytest.raises(EditError, match="'blocks' list"):
        apply_edit(GREETING, {"diagram": "x"})
    with pytest.raises(EditError, match="block 1 is not a mapping"):
        apply_edit(GREETING, {"blocks": [{"id": "a"}, "b"]})
    with pytest.raises(EditError, match="block 0 has no string 'id'"):
        apply_edit(GREETING, {"blocks": [{"id": 3}]})
    with pytest.raises(EditError, match="cannot write a set"):
        apply_edit(GREETING, {"blocks": [{"id": "a", "with": {1, 2}}]})


# ---------------------------------------------------------------- rule 1: no change, no edit


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_rule1_unchanged_data_returns_the_text_byte_identical(name: str) -> None:
    text = TEXTS[name]
    assert apply_edit(text, to_json(text)) is text
    # JSON cannot tell 30 from 30.0; that is no change either.
    new = to_json(GREETING)
    new["blocks"][0]["inputs"]["times"] = 3.0
    assert apply_edit(GREETING, new) is GREETING


def test_rule1_true_is_not_one() -> None:
    new = to_json(GREETING)
    new["blocks"][0]["variables"]["i"] = False
    assert diff(GREETING, apply_edit(GREETING, new)) == "@@ -13 +13 @@\n-      i: 0\n+      i: false"


# ---------------------------------------------------------------- rule 2: moving a block


def test_rule2_adding_a_position_inserts_one_line_after_type() -> None:
    result, _ = edited(GREETING, lambda n: n["blocks"][0].__setitem__("position", [120, 40]))
    assert diff(GREETING, result) == "@@ -6,0 +7 @@\n+    position: [120, 40]"


def test_rule2_adding_a_position_inserts_one_line_after_label() -> None:
    result, _ = edited(ORDER_AGENT, lambda n: n["blocks"][1].__setitem__("position", [240, 0]))
    assert diff(ORDER_AGENT, result) == "@@ -19,0 +20 @@\n+    position: [240, 0]"


def test_rule2_moving_a_block_changes_only_its_position_line() -> None:
    result, _ = edited(COMMENTED, lambda n: n["blocks"][0].__setitem__("position", [-35.5, 1200]))
    assert diff(COMMENTED, result) == "@@ -9 +9 @@\n-    position: [0, 0]  # top left\n+    position: [-35.5, 1200]  # top left"
    moved, _ = edited(result, lambda n: n["blocks"][0].__setitem__("position", [10, 20]))
    assert diff(result, moved) == "@@ -9 +9 @@\n-    position: [-35.5, 1200]  # top left\n+    position: [10, 20]  # top left"


def test_rule2_moving_every_block_of_a_fresh_diagram() -> None:
    text = ye.new_diagram_text("flow")
    result, _ = edited(text, lambda n: n["blocks"][0].__setitem__("position", [3, 4]))
    assert diff(text, result) == "@@ -5 +5 @@\n-    position: [0, 0]\n+    position: [3, 4]"


# ---------------------------------------------------------------- rule 3: one scalar


def test_rule3_a_number_changes_only_its_line() -> None:
    result, _ = edited(ORDER_AGENT, lambda n: n["blocks"][1]["with"].__setitem__("max_tokens", 1024))
    assert diff(ORDER_AGENT, result) == "@@ -26 +26 @@\n-      max_tokens: 512\n+      max_tokens: 1024"
    result, _ = edited(COMMENTED, lambda n: n["blocks"][0]["with"].__setitem__("temperature", 0.5))
    assert diff(COMMENTED, result) == "@@ -11 +11 @@\n-      temperature: 0.2 # warm\n+      temperature: 0.5 # warm"


def test_rule3_a_when_template_keeps_its_double_quotes() -> None:
    result, _ = edited(ORDER_AGENT, lambda n: n["blocks"][1]["next"][0].__setitem__("when", "{{ called_tools }}"))
    assert diff(ORDER_AGENT, result) == (
        '@@ -34 +34 @@\n-        when: "{{ called_tools | length > 0 }}"\n+        when: "{{ called_tools }}"'
    )


def test_rule3_a_label_stays_plain_when_it_can() -> None:
    result, _ = edited(GREETING, lambda n: n["blocks"][1].__setitem__("label", "Count again"))
    assert diff(GREETING, result) == "@@ -18 +18 @@\n-    label: Count one more\n+    label: Count again"


def test_rule3_a_label_is_double_quoted_when_plain_would_misread() -> None:
    for label, written in [
        ("Run: the tools", '"Run: the tools"'),
        ("{{ name }}", '"{{ name }}"'),
        ("a # b", '"a # b"'),
        ("- dash", '"- dash"'),
        ("@here", '"@here"'),
        ('say "hi"', 'say "hi"'),
        ('"hi" she said', '"\\"hi\\" she said"'),
        ("tab\there", '"tab\\there"'),
        ("", '""'),
    ]:
        result, _ = edited(ORDER_AGENT, lambda n, label=label: n["blocks"][2].__setitem__("label", label))
        assert diff(ORDER_AGENT, result) == f"@@ -40 +40 @@\n-    label: Run the tools\n+    label: {written}", label


def test_rule3_single_quotes_are_kept() -> None:
    result, _ = edited(COMMENTED, lambda n: n["blocks"][0].__setitem__("label", "It's here"))
    assert diff(COMMENTED, result) == "@@ -8 +8 @@\n-    label: 'Begin here'\n+    label: 'It''s here'"


def test_rule3_multi_line_strings_are_literal_blocks() -> None:
    result, _ = edited(ORDER_AGENT, lambda n: n["blocks"][1]["with"].__setitem__("role", "Line one.\nLine two.\n"))
    assert diff(ORDER_AGENT, result) == (
        "@@ -22 +22,3 @@\n"
        "-      role: You are a support agent for an online shop. Answer in the customer's language.\n"
        "+      role: |\n"
        "+        Line one.\n"
        "+        Line two."
    )
    result, _ = edited(COMMENTED, lambda n: n["blocks"][0]["with"].__setitem__("prompt", "Bye\nall"))
    assert (
        diff(COMMENTED, result)
        == "@@ -13,3 +13,3 @@\n-      prompt: |\n-        Hello\n-        world\n+      prompt: |-\n+        Bye\n+        all"
    )
    result, _ = edited(COMMENTED, lambda n: n["blocks"][0]["with"].__setitem__("prompt", "one line"))
    assert diff(COMMENTED, result) == "@@ -13,3 +13 @@\n-      prompt: |\n-        Hello\n-        world\n+      prompt: one line"


def test_rule3_strings_a_block_cannot_hold_are_escaped() -> None:
    for value, written in [
        (" lead\nx", '" lead\\nx"'),
        ("a\n\n\n", '"a\\n\\n\\n"'),
        ("nel\x85x", '"nel\\x85x"'),
        ("ls\u2028x", '"ls\\u2028x"'),
        ("nul\x00", '"nul\\0"'),
        ("bell\x07", '"bell\\x07"'),
    ]:
        result, _ = edited(GREETING, lambda n, value=value: n["blocks"][1].__setitem__("label", value))
        assert diff(GREETING, result) == f"@@ -18 +18 @@\n-    label: Count one more\n+    label: {written}", value


def test_rule3_a_value_after_a_comment_stays_on_its_line() -> None:
    # A `|` block cannot be followed by the line's comment, so the new text is double-quoted instead.
    result, _ = edited(COMMENTED, lambda n: n["blocks"][1]["set"].__setitem__("x", "a\nb"))
    assert diff(COMMENTED, result) == '@@ -30 +30 @@\n-      x: 1  # one\n+      x: "a\\nb"  # one'


# ---------------------------------------------------------------- rule 4: adding a block


NEW_BLOCK = {
    "id": "bye",
    "type": "Set",
    "position": [10, 20],
    "set": {"x": "yes", "note": "done: {{ i }}"},
    "next": [{"to": "start", "when": "{{ x }}"}, {"to": "greet"}],
}


def test_rule4_a_new_block_is_appended_in_the_files_style() -> None:
    result, _ = edited(GREETING, lambda n: n["blocks"].append(copy.deepcopy(NEW_BLOCK)))
    assert diff(GREETING, result) == (
        "@@ -29,0 +30,11 @@\n"
        "+\n"
        "+  - id: bye\n"
        "+    type: Set\n"
        "+    position: [10, 20]\n"
        "+    set:\n"
        '+      x: "yes"\n'
        '+      note: "done: {{ i }}"\n'
        "+    next:\n"
        "+      - to: start\n"
        '+        when: "{{ x }}"\n'
        "+      - to: greet"
    )


def test_rule4_no_blank_line_when_the_blocks_have_none() -> None:
    result, _ = edited(COMPACT, lambda n: n["blocks"].append({"id": "b", "type": "Set", "next": [{"to": "a"}]}))
    assert diff(COMPACT, result) == "@@ -7,0 +8,4 @@\n+- id: b\n+  type: Set\n+  next:\n+  - to: a"


def test_rule4_id_type_label_position_come_first() -> None:
    block = {"set": {"a": 1}, "position": [1, 2], "label": "L", "type": "Set", "id": "z"}
    result, _ = edited(COMPACT, lambda n: n["blocks"].append(block))
    assert diff(COMPACT, result) == "@@ -7,0 +8,6 @@\n+- id: z\n+  type: Set\n+  label: L\n+  position: [1, 2]\n+  set:\n+    a: 1"


def test_rule4_a_block_added_to_a_file_without_final_newline() -> None:
    text = GREETING.rstrip("\n")
    result, _ = edited(text, lambda n: n["blocks"].append({"id": "x", "type": "Set"}))
    assert result == GREETING + "\n  - id: x\n    type: Set\n"


# ---------------------------------------------------------------- rule 5: removing a block


def test_rule5_removing_a_block_removes_its_lines_and_blank_line() -> None:
    result, _ = edited(ORDER_AGENT, lambda n: n["blocks"].pop(2))
    assert diff(ORDER_AGENT, result) == (
        "@@ -38,10 +37,0 @@\n"
        "-  - id: dispatch\n"
        "-    type: ToolDispatch\n"
        "-    label: Run the tools\n"
        "-    with:\n"
        '-      calls: "{{ calls }}"\n'
        '-      history: "{{ history }}"\n'
        "-    set:\n"
        '-      history: "{{ history }}"\n'
        "-    next: ask\n"
        "-"
    )
    assert "\n\n  - id: apologise" in result and "\n    on_error: apologise\n\n  - id: apologise" in result


def test_rule5_removing_a_block_removes_its_attached_comment_only() -> None:
    result, _ = edited(COMMENTED, lambda n: n["blocks"].pop(1))
    # The detached section comment and the comment after the blocks stay.
    assert diff(COMMENTED, result) == (
        "@@ -25,6 +24,0 @@\n-\n-  # b does things\n-  - id: b\n-    type: Set\n-    set:\n-      x: 1  # one"
    )
    assert result.endswith("    next: b\n\n  # ---- section ----\n# trailing comment\n")


def test_rule5_removing_the_last_and_first_blocks() -> None:
    result, _ = edited(ORDER_AGENT, lambda n: n["blocks"].pop())
    assert diff(ORDER_AGENT, result) == "@@ -52,3 +51,0 @@\n-\n-  - id: done\n-    type: Set"
    result, _ = edited(GREETING, lambda n: n["blocks"].pop(0))
    assert result == GREETING.replace(GREETING[GREETING.index("  - id: start") : GREETING.index("  - id: count")], "")


# ---------------------------------------------------------------- rule 6: block order


def test_rule6_same_order_keeps_the_file() -> None:
    # Only a value changes; the blocks are not rewritten or reordered.
    result, _ = edited(GREETING, lambda n: n["blocks"][2]["set"].__setitem__("greeting", "Oi"))
    assert diff(GREETING, result) == '@@ -29 +29 @@\n-      greeting: "Olá, {{ name }}! Counted to {{ i }}."\n+      greeting: "Oi"'


def test_rule6_a_new_order_is_followed_moving_whole_blocks() -> None:
    def swap_last_two(new: dict[str, Any]) -> None:
        blocks = new["blocks"]
        blocks[1], blocks[2] = blocks[2], blocks[1]

    result, _ = edited(GREETING, swap_last_two)
    assert [b["id"] for b in to_json(result)["blocks"]] == ["start", "greet", "count"]
    assert diff(GREETING, result) == (
        "@@ -15,0 +16,5 @@\n"
        "+  - id: greet\n"
        "+    type: Set\n"
        "+    set:\n"
        '+      greeting: "Olá, {{ name }}! Counted to {{ i }}."\n'
        "+\n"
        "@@ -25,5 +29,0 @@\n"
        "-\n"
        "-  - id: greet\n"
        "-    type: Set\n"
        "-    set:\n"
        '-      greeting: "Olá, {{ name }}! Counted to {{ i }}."'
    )


def test_rule6_moving_the_first_block_keeps_comments_with_it() -> None:
    result, _ = edited(COMMENTED, lambda n: n["blocks"].reverse())
    assert result.index("  # b does things\n  - id: b") < result.index("  # the entry point\n  - id: start")
    assert result.startswith("# yaml-language-server: $schema=../diagram.schema.json\n")


# ---------------------------------------------------------------- rule 7: renaming a block


def test_rule7_renaming_changes_the_id_and_reference_lines_only() -> None:
    def rename(new: dict[str, Any]) -> None:
        start, count, _ = new["blocks"]
        count["id"] = "counter"
        start["next"] = "counter"
        count["next"][0]["to"] = "counter"

    result, _ = edited(GREETING, rename)
    assert diff(GREETING, result) == (
        "@@ -14 +14 @@\n-    next: count\n+    next: counter\n"
        "@@ -16 +16 @@\n-  - id: count\n+  - id: counter\n"
        "@@ -22 +22 @@\n-      - to: count\n+      - to: counter"
    )


# ---------------------------------------------------------------- rule 8: nested mappings and lists


def test_rule8_keys_added_at_the_end_and_removed_with_their_lines() -> None:
    def change(new: dict[str, Any]) -> None:
        inputs = new["blocks"][0]["inputs"]
        del inputs["name"]
        inputs["extra"] = {"a": [1, 2], "b": None, "c": True}

    result, _ = edited(GREETING, change)
    assert diff(GREETING, result) == (
        "@@ -10 +9,0 @@\n-      name: Ana\n@@ -11,0 +11,4 @@\n+      extra:\n+        a: [1, 2]\n+        b: null\n+        c: true"
    )


def test_rule8_removing_a_key_takes_its_comment_above() -> None:
    result, _ = edited(COMMENTED, lambda n: n["blocks"][0]["with"].pop("prompt"))
    assert diff(COMMENTED, result) == "@@ -12,4 +11,0 @@\n-      # retries: 3\n-      prompt: |\n-        Hello\n-        world"


def test_rule8_a_new_header_key_goes_before_the_blocks() -> None:
    result, _ = edited(GREETING, lambda n: n.__setitem__("tools", "registry/orders.yaml"))
    assert diff(GREETING, result) == "@@ -3,0 +4 @@\n+tools: registry/orders.yaml"


def test_rule8_data_table_rows_appended_and_removed() -> None:
    row = {"role": "user", "content": "Onde está? #42"}
    result, _ = edited(COMMENTED, lambda n: n["blocks"][0]["variables"]["history"].append(row))
    assert diff(COMMENTED, result) == '@@ -21,0 +22,2 @@\n+        - role: user\n+          content: "Onde está? #42"'
    result, _ = edited(COMMENTED, lambda n: n["blocks"][0]["variables"]["history"].pop())
    assert diff(COMMENTED, result) == "@@ -20,2 +19,0 @@\n-        - role: assistant\n-          content: 'Hello: how can I help?'"
    result, _ = edited(COMMENTED, lambda n: n["blocks"][0]["variables"]["history"].pop(0))
    assert diff(COMMENTED, result) == "@@ -18,2 +17,0 @@\n-        - role: user\n-          content: Hi"
    result, _ = edited(COMMENTED, lambda n: n["blocks"][0]["variables"]["history"][1].__setitem__("content", "Hey"))
    assert diff(COMMENTED, result) == "@@ -21 +21 @@\n-          content: 'Hello: how can I help?'\n+          content: 'Hey'"


def test_rule8_an_empty_list_becomes_a_block_table() -> None:
    result, _ = edited(ORDER_AGENT, lambda n: n["blocks"][0]["variables"].__setitem__("history", [{"role": "user", "content": "Olá"}]))
    assert (
        diff(ORDER_AGENT, result)
        == "@@ -14 +14,3 @@\n-      history: []\n+      history:\n+        - role: user\n+          content: Olá"
    )


def test_rule8_flow_collections_stay_flow() -> None:
    text = TEXTS.get("gemini_tools.yaml", "")
    if not text:
        pytest.skip("the gemini example is gone")
    result, _ = edited(text, lambda n: n["blocks"][0]["variables"]["tools"][0]["parameters"]["required"].append("units"))
    assert diff(text, result) == "@@ -19 +19 @@\n-            required: [city, day]\n+            required: [city, day, units]"
    props = ["blocks", 0, "variables", "tools", 0, "parameters", "properties", "day"]

    def add_default(new: dict[str, Any]) -> None:
        node: Any = new
        for step in props:
            node = node[step]
        node["default"] = "today"

    result, _ = edited(text, add_default)
    assert diff(text, result) == (
        "@@ -18 +18 @@\n"
        "-              day: {type: string, enum: [today, tomorrow]}\n"
        "+              day: {type: string, enum: [today, tomorrow], default: today}"
    )


def test_rule8_a_scalar_becomes_a_mapping_and_back() -> None:
    result, _ = edited(GREETING, lambda n: n["blocks"][1].__setitem__("next", "greet"))
    assert diff(GREETING, result) == (
        '@@ -21,4 +21 @@\n-    next:\n-      - to: count\n-        when: "{{ i < times }}"\n-      - to: greet\n+    next: greet'
    )
    back, _ = edited(result, lambda n: n["blocks"][1].__setitem__("next", to_json(GREETING)["blocks"][1]["next"]))
    assert back == GREETING


# ---------------------------------------------------------------- rule 9: comments


def test_rule9_comments_survive_edits_elsewhere() -> None:
    result, _ = edited(COMMENTED, lambda n: n["blocks"][1]["set"].__setitem__("y", 2))
    assert diff(COMMENTED, result) == "@@ -30,0 +31 @@\n+      y: 2"
    for comment in ["# yaml-language-server", "# the name", "# the entry point", "# top left", "# warm", "# retries: 3",
                    "# ---- section ----", "# b does things", "# one", "# trailing comment"]:  # fmt: skip
        assert comment in result


# ---------------------------------------------------------------- rule 11: YAML 1.1 and 1.2 agree


def test_rule11_scalars_read_back_the_same_by_pyyaml() -> None:
    values: dict[str, Any] = {
        "yes": '"yes"', "on": '"on"', "No": '"No"', "1": '"1"', "0o17": '"0o17"', "1e3": '"1e3"', "1:30": '"1:30"',
        "null": '"null"', "~": '"~"', "2024-01-01": '"2024-01-01"', "=": '"="', "<<": '"<<"', "true": '"true"',
        ".inf": '".inf"', "plain words": "plain words",
    }  # fmt: skip
    scalars: list[tuple[Any, str]] = [*values.items(), (True, "true"), (False, "false"), (None, "null"), (7, "7"),
                                      (1e-05, "1.0e-05"), (2.5e20, "2.5e+20"), (0.1, "0.1"), (-0.0, "-0.0")]  # fmt: skip
    for value, written in scalars:
        result, _ = edited(GREETING, lambda n, value=value: n["blocks"][0]["inputs"].__setitem__("name", value))
        assert diff(GREETING, result) == f"@@ -10 +10 @@\n-      name: Ana\n+      name: {written}", value


def test_rule11_keys_pyyaml_would_misread_are_quoted() -> None:
    result, _ = edited(GREETING, lambda n: n["blocks"][0]["inputs"].update({"on": 1, "2": "two", "a: b": 3}))
    assert diff(GREETING, result) == '@@ -11,0 +12,3 @@\n+      "on": 1\n+      "2": two\n+      "a: b": 3'


def test_rule11_an_edit_elsewhere_leaves_ambiguous_words_as_written() -> None:
    # The bug this pins: relabelling one block rewrote another line's `yes`/`on`/`0o17`, and the next run read them
    # otherwise. The file means one thing to every reader now, and an edit touches only what it changes.
    text = "diagram: d\nflags:\n  debug: yes   # kept\n  mode: on\n  n: 0o17\nblocks:\n  - id: s\n    type: Start\n"
    assert to_json(text)["flags"] == {"debug": "yes", "mode": "on", "n": 15}
    result, _ = edited(text, lambda n: n["blocks"][0].__setitem__("label", "Begin"))
    assert diff(text, result) == "@@ -8,0 +9 @@\n+    label: Begin"
    assert to_json(result)["flags"] == {"debug": "yes", "mode": "on", "n": 15}
    assert ambiguous(result) == ambiguous(text) == ["0o17", "on", "yes"]


def test_rule11_a_changed_value_is_written_unambiguously() -> None:
    text = "diagram: d\nflags: {debug: yes, n: 0o17}\nblocks:\n  - id: s\n    type: Start\n"
    result, _ = edited(text, lambda n: n["flags"].update({"debug": "on", "n": 16}))
    assert diff(text, result) == '@@ -2 +2 @@\n-flags: {debug: yes, n: 0o17}\n+flags: {debug: "on", n: 16}'
    assert ambiguous(result) == []


# ---------------------------------------------------------------- rule 12: hostile input


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


@pytest.mark.slow
def test_rule12_too_deep_values_are_refused_not_crashed() -> None:
    new = to_json(GREETING)
    new["blocks"][0]["with"] = _nested(96)  # the root, the blocks list and the block: 100 levels to the leaf
    assert_reads_back(apply_edit(GREETING, new), new)
    for depth in (97, 200_000):
        new["blocks"][0]["with"] = _nested(depth)
        with pytest.raises(EditError, match="too deeply nested"):
            apply_edit(GREETING, new)
    deep_list: Any = []
    for _ in range(100_000):
        deep_list = [deep_list]
    with pytest.raises(EditError, match="too deeply nested"):
        apply_edit(GREETING, {"blocks": [{"id": "a", "with": deep_list}]})


def test_rule12_too_deep_files_are_refused() -> None:
    # A million brackets would take ruamel's scanner minutes: refused in milliseconds.
    for depth in (150, 5000, 1_000_000):
        text = "blocks: []\nx: " + "[" * depth + "]" * depth + "\n"
        with pytest.raises(DiagramInvalid, match="nest"):
            to_json(text)
        with pytest.raises(EditError, match=r"nest.*line 2"):
            apply_edit(text, {"blocks": []})


def test_rule12_keys_must_be_strings() -> None:
    with pytest.raises(EditError, match="keys must be strings"):
        apply_edit(GREETING, {"blocks": [{"id": "a", "with": {1: "x"}}]})


@pytest.mark.slow
def test_rule12_more_than_8_mb_is_refused() -> None:
    with pytest.raises(EditError, match="larger than"):
        apply_edit("x: " + "a" * (8 * 1024 * 1024), {"blocks": []})
    with pytest.raises(EditError, match="larger than"):
        apply_edit("x: " + "é" * (4 * 1024 * 1024 + 1), {"blocks": []})
    with pytest.raises(EditError, match="larger than"):
        apply_edit(GREETING, {"blocks": [{"id": "a", "label": "a" * (8 * 1024 * 1024)}]})
    many = {"blocks": [{"id": f"{n:040d}", "position": [n, n]} for n in range(200_000)]}
    with pytest.raises(EditError, match="larger than"):
        apply_edit(GREETING, many)


def test_rule12_alias_bombs_are_refused() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for n in range(1, 8):
        bomb += f"{chr(97 + n)}: &{chr(97 + n)} [{', '.join(['*' + chr(96 + n)] * 10)}]\n"
    with pytest.raises(EditError, match="more than"):
        apply_edit(bomb + "blocks: []\n", {"blocks": []})


# ---------------------------------------------------------------- files of other shapes


def test_windows_line_ends_and_bom_are_kept() -> None:
    text = "\ufeff" + GREETING.replace("\n", "\r\n")
    result, _ = edited(text, lambda n: n["blocks"][0].__setitem__("position", [1, 2]))
    assert result == "\ufeff" + GREETING.replace("    type: Start\n", "    type: Start\n    position: [1, 2]\n").replace("\n", "\r\n")


def test_an_empty_or_comment_only_file_gets_the_diagram_under_its_comments() -> None:
    new = {"diagram": "x", "blocks": [{"id": "start", "type": "Start"}]}
    assert apply_edit("", new) == "diagram: x\nblocks:\n  - id: start\n    type: Start\n"
    assert apply_edit("# keep me", new) == "# keep me\ndiagram: x\nblocks:\n  - id: start\n    type: Start\n"


def test_anchors_and_aliases_fall_back_to_a_ruamel_dump_that_reads_back() -> None:
    text = "diagram: a\nbase: &b {x: 1}\nblocks:\n  - id: s\n    type: Start\n    with: *b  # shared\n"
    result, _ = edited(text, lambda n: n["blocks"][0].__setitem__("position", [1, 2]))
    assert diff(text, result) == "@@ -5,0 +6 @@\n+    position: [1, 2]"
    result, new = edited(text, lambda n: n["blocks"][0]["with"].__setitem__("x", 2))
    assert new["base"] == {"x": 1} and result.startswith("diagram: a\n")


def test_four_space_indentation_is_kept() -> None:
    text = "diagram: wide\nblocks:\n    -   id: a\n        type: Set\n        set:\n            x: 1\n"
    result, _ = edited(text, lambda n: n["blocks"].append({"id": "b", "type": "Set", "set": {"y": [{"k": 1}]}}))
    assert diff(text, result) == (
        "@@ -6,0 +7,6 @@\n+\n+    -   id: b\n+        type: Set\n+        set:\n+            y:\n+                -   k: 1"
    )


# ---------------------------------------------------------------- rule 10: Hypothesis round trips

TRICKY = [
    "yes", "No", "on", "OFF", "y", "~", "null", "true", "1", "-1", "0o17", "0x1F", "1e3", "1_000", "1:30", "2024-01-01",
    ".inf", "{{ x }}", "a: b", "# no comment", "a #b", "- item", "? q", "multi\nline\n", "multi\nline", "x\n\ny\n",
    "  lead", "trail ", " both ", "'q'", '"dq"', "", "=", "<<", "...", "---", "@x", "%x", "`x", "|", ">", "!tag", "&a", "*a",
    "tab\there", "a\\b", "ü ✓ 😀", "\x85", "\u2028", "\ufeff", "line\n  indented\n", "\r\n", "end:",
]  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**15), max_value=10**15),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(TRICKY),
)
KEYS = st.one_of(
    st.sampled_from(["alpha", "with", "set", "yes", "on", "1", "a b", "a: b", "#k", "", "position"]), st.text(min_size=1, max_size=6)
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3), max_leaves=6)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*path, k))
    elif isinstance(value, list):
        for n, v in enumerate(value):
            out += _paths(v, (*path, n))
    return out


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _protected(path: tuple[Any, ...]) -> bool:
    """The diagram's skeleton, which the studio never breaks: the root, `blocks`, each block and its id."""
    return len(path) < 2 or (path[0] == "blocks" and (len(path) < 3 or path[2] == "id"))


def _random_edit(data: st.DataObject, new: dict[str, Any]) -> None:
    blocks = new["blocks"]
    op = data.draw(st.sampled_from(["set", "set", "add", "remove", "move", "add_block", "remove_block", "swap", "rename", "list"]))
    paths = [p for p in _paths(new) if not _protected(p)]
    if op == "set" and paths:
        path = data.draw(st.sampled_from(paths))
        _get(new, path[:-1])[path[-1]] = data.draw(VALUES)
    elif op == "add":
        dicts = [p for p in _paths(new) if isinstance(_get(new, p), dict) and p != ("blocks",)]
        target = _get(new, data.draw(st.sampled_from(dicts)))
        key = data.draw(KEYS)
        if target is not new or key != "blocks":
            target[key] = data.draw(VALUES)
    elif op == "remove":
        keyed = [p for p in paths if isinstance(_get(new, p[:-1]), dict)]
        if keyed:
            path = data.draw(st.sampled_from(keyed))
            del _get(new, path[:-1])[path[-1]]
    elif op == "move" and blocks:
        block = data.draw(st.sampled_from(blocks))
        block["position"] = [data.draw(st.integers(-2000, 2000)), data.draw(st.integers(-2000, 2000) | st.floats(-1e4, 1e4))]
    elif op == "add_block":
        block = {"id": f"new{len(blocks)}_{data.draw(st.integers(0, 999))}", "type": "Set", "set": {"v": data.draw(VALUES)}}
        if block["id"] not in {b["id"] for b in blocks}:
            blocks.insert(data.draw(st.integers(0, len(blocks))), block)
    elif op == "remove_block" and len(blocks) > 1:
        blocks.pop(data.draw(st.integers(0, len(blocks) - 1)))
    elif op == "swap" and len(blocks) > 1:
        i, j = data.draw(st.integers(0, len(blocks) - 1)), data.draw(st.integers(0, len(blocks) - 1))
        blocks[i], blocks[j] = blocks[j], blocks[i]
    elif op == "rename" and blocks:
        block = data.draw(st.sampled_from(blocks))
        old_id, new_id = block["id"], block["id"] + "_renamed"
        block["id"] = new_id
        for path in _paths(new):
            if path and _get(new, path) == old_id and path[-1] in ("next", "to", "on_error", "body"):
                _get(new, path[:-1])[path[-1]] = new_id
    elif op == "list":
        lists = [p for p in paths if isinstance(_get(new, p), list)]
        if lists:
            target = _get(new, data.draw(st.sampled_from(lists)))
            if target and data.draw(st.booleans()):
                target.pop(data.draw(st.integers(0, len(target) - 1)))
            else:
                target.insert(data.draw(st.integers(0, len(target))), data.draw(VALUES))


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(name=st.sampled_from(sorted(TEXTS)), data=st.data())
def test_rule10_random_edits_read_back_exactly(name: str, data: st.DataObject) -> None:
    text = TEXTS[name]
    new = to_json(text)
    for _ in range(data.draw(st.integers(1, 4))):
        _random_edit(data, new)
    result = apply_edit(text, new)
    assert_reads_back(result, new)
    assert apply_edit(result, to_json(result)) == result
    # Whatever else happened, the lines of the file's head that did not change are still there.
    if new.get("diagram") == to_json(text).get("diagram") and text.startswith("# yaml-language-server"):
        assert result.startswith(text.split("\n", 1)[0] + "\n")


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(TEXTS)), data=st.data())
def test_rule2_random_moves_change_exactly_one_line(name: str, data: st.DataObject) -> None:
    text = TEXTS[name]
    new = to_json(text)
    block = data.draw(st.sampled_from(new["blocks"]))
    had = "position" in block
    block["position"] = [data.draw(st.integers(-5000, 5000)), data.draw(st.integers(-5000, 5000))]
    result = apply_edit(text, new)
    assert_reads_back(result, new)
    changed = [line for line in diff(text, result).split("\n") if line[:1] in ("+", "-")]
    x, y = block["position"]
    if not had:
        assert len(changed) == 1 and changed[0][0] == "+" and changed[0][1:].strip() == f"position: [{x}, {y}]"
    elif changed:
        assert len(changed) == 2 and changed[0].startswith("-") and changed[1].startswith("+") and f"[{x}, {y}]" in changed[1]


def _on_one_line(value: Any, lines: list[str]) -> bool:
    """Whether a text value is written whole on one line of the file (any other scalar is)."""
    return not isinstance(value, str) or any(value in line for line in lines)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(TEXTS)), data=st.data())
def test_rule3_random_scalar_changes_touch_one_line(name: str, data: st.DataObject) -> None:
    text = TEXTS[name]
    new = to_json(text)
    lines = text.split("\n")
    # A scalar written on one line: a folded `>-` one reads back without a newline but spans several lines, and
    # replacing it rewrites all of them (policy_bot.yaml's `role`); this rule is about the one-line ones.
    leaves = [
        p for p in _paths(new) if not _protected(p) and not isinstance(_get(new, p), dict | list)
        and "\n" not in str(_get(new, p)) and _on_one_line(_get(new, p), lines)
    ]
    path = data.draw(st.sampled_from(leaves))
    value = data.draw(SCALARS.filter(lambda v: not (isinstance(v, str) and "\n" in v)))
    _get(new, path[:-1])[path[-1]] = value
    result = apply_edit(text, new)
    assert_reads_back(result, new)
    changed = [line for line in diff(text, result).split("\n") if line[:1] in ("+", "-")]
    assert len(changed) in (0, 2), changed


# ---------------------------------------------------------------- the editor's tree is the reader's file


def _typed(value: Any) -> Any:
    """The data with every scalar's type, so that 1, 1.0 and True differ."""
    if isinstance(value, dict):
        return ("map", [(k, _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("seq", [_typed(v) for v in value])
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return (type(value).__name__, value)


_ALIASED = ("alias",)


def _tree_data(node: Node | None) -> Any:
    """The data the span editor's tree says the file holds (an alias, or a mapping with a merge key: unknown)."""
    if node is None:
        return None
    if isinstance(node, ScalarNode):
        if node.tag == tree.ALIAS_TAG:
            return _ALIASED
        if node.tag.endswith(":timestamp"):
            return node.value
        return core_value(node.tag, node.value)
    if isinstance(node, MappingNode):
        if any(key.tag in (MERGE_TAG, tree.ALIAS_TAG) for key, _ in node.value):
            return _ALIASED
        return {key.value: _tree_data(value) for key, value in node.value}
    return [_tree_data(item) for item in node.value]


def _same_file(data: Any, seen: Any) -> bool:
    if seen == _ALIASED:
        return True
    if isinstance(data, dict) and isinstance(seen, dict):
        return list(data) == list(seen) and all(_same_file(data[k], seen[k]) for k in data)
    if isinstance(data, list) and isinstance(seen, list):
        return len(data) == len(seen) and all(_same_file(a, b) for a, b in zip(data, seen, strict=True))
    return _typed(data) == _typed(seen)


def _tree_agrees(text: str) -> bool:
    """Whether the reader reads `text`; where it does, the editor's tree holds the same data at the same places."""
    try:
        data, _ = read_yaml_text(text, "f.yaml")
    except DiagramInvalid:
        return False
    try:
        root = tree.compose(text)
    except Unsupported:
        return True  # the editor leaves such a file to the ruamel dump, checked by the reader
    assert _same_file(data, _tree_data(root)), text
    return True


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_the_tree_holds_what_the_reader_reads_in_every_example(name: str) -> None:
    assert _tree_agrees(TEXTS[name])


TREE_READS = [
    "a: 0o17\nb: 0x1F\nc: 1_000\nd: 1e3\ne: -.inf\nf: .NaN\ng: 017\nh: 1:30\ni: +12\nj: 0b1\n",
    "a: yes\nb: No\nc: on\nd: TRUE\ne: ~\nf: Null\ng:\nh: ''\n",
    "d: 2024-01-01\ne: 2024-01-01T10:00:00Z\nf: 2024-01-01 10:00:00.5 +02:00\ng: 2024-1-1\n",
    "7: a\n2.5: b\ntrue: c\nnull: d\n2024-01-01: e\n'2': f\n",
    "a: [a:b, http://x.y/z, {c: d:e}]\nb: {f: [1, 2,], g}\n",
    "a: \"\\/\\N\\_\\x41\\u00e9\\U0001F600 Olá, città 😀\"\nb: 'it''s'\nc: \"x\\\n  y\"\n",
    "a: |2-\n   x\n  y\nb: >+\n  x\n\n  y\n\n\nc: |\n\n  z\nd: >-\n  p\n   q\n  r\n",
    "a: &x [1, {b: 2}]\nc: *x\nd: &y é\n*y : e\n",
    "a: !!str 1\nb: !!int '3'\nc: !!float 1\nd: !!map {e: !!seq [f]}\n",
    "a:\n- b\n-\n- c: d\n  e: [f, # c\n    g]\n# end\n",
    "a:\tb\n",
    "<<: {a: 1}\nb: 2\n",
]


@pytest.mark.parametrize("text", TREE_READS)
def test_the_tree_holds_what_the_reader_reads(text: str) -> None:
    assert _tree_agrees(text)


def test_tree_positions_count_characters_not_bytes() -> None:
    text = "a: Olá, città 😀\nb: 'ção'\nc: [é, 😀]\n"
    root = tree.compose(text)
    assert isinstance(root, MappingNode)
    value = root.value[1][1]
    assert text[value.start_mark.index : value.end_mark.index] == "'ção'"


YAML_PIECES = [
    "a", "key", ":", ": ", " ", "  ", "\n", "\n  ", "\n    ", "- ", "-", "[", "]", "{", "}", ", ", "'", '"', "#", " # c", "&x ", "*x",
    "!!str ", "!!int ", "!!map ", "! ", "|", "|-", "|+", "|2", ">", ">-", "? ", "1", "1.5", "0o7", "1e3", "yes", "on", "~", "null",
    "é", "😀", "---", "...", "\\", "\\x41", "2024-01-01", "12:30", "<<", "=", "%", "@", "\r\n", "{{ x }}", "http://x", ".inf",
    "\n\n", "x:y", "\n- ", "\n  - ", ": |\n  ", ": >\n  ", ":\n  ", "\n  a: ", "\na: ", "!x ", "&", "*", "\ufeff", "\t",
]  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(YAML_PIECES), max_size=30).map("".join))
def test_the_tree_holds_what_the_reader_reads_in_any_text(text: str) -> None:
    _tree_agrees(text)


@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.dictionaries(KEYS, VALUES, min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_the_tree_holds_what_the_reader_reads_in_dumped_yaml(value: dict[str, Any], rnd: random.Random) -> None:
    texts = [yaml.safe_dump(value, default_flow_style=rnd.choice([None, True, False]), allow_unicode=rnd.random() < 0.5,
                            width=rnd.choice([20, 1000]), indent=rnd.choice([2, 4]), sort_keys=False,
                            default_style=rnd.choice([None, "'", '"', "|"]))]  # fmt: skip
    rt = YAML(typ="rt")
    rt.width = rnd.choice([20, 4096])
    rt.indent(mapping=2, sequence=rnd.choice([2, 4]), offset=rnd.choice([0, 2]))
    buf = io.StringIO()
    rt.dump(value, buf)
    texts.append(buf.getvalue())
    for text in texts:
        lines = text.split("\n")
        lines.insert(rnd.randrange(len(lines) + 1), rnd.choice(["", "# c", "  # deeper"]))
        _tree_agrees(text)
        _tree_agrees("\n".join(lines))


# ---------------------------------------------------------------- the studio's notes (a top-level list after the blocks)


def test_notes_are_added_after_the_blocks_and_edited_line_by_line() -> None:
    note = {"text": "# Why\nThe *greeting* loop.", "x": 10, "y": -40, "width": 240, "height": 120, "color": "yellow"}
    added, _ = edited(GREETING, lambda n: n.__setitem__("notes", [note]))
    tail = added[len(GREETING):]
    assert added.startswith(GREETING)
    assert tail == ("notes:\n  - text: |-\n      # Why\n      The *greeting* loop.\n    x: 10\n    y: -40\n"
                    "    width: 240\n    height: 120\n    color: yellow\n")
    moved, _ = edited(added, lambda n: n["notes"][0].__setitem__("x", 55))
    line = added.count("\n") - 4  # the note's `x:`, 5 lines from the end
    assert diff(added, moved) == f"@@ -{line} +{line} @@\n-    x: 10\n+    x: 55"
    frame = {"text": "Retries", "x": 0, "y": 0, "width": 500, "height": 300, "frame": True}
    framed, _ = edited(moved, lambda n: n["notes"].append(frame))
    gone, _ = edited(framed, lambda n: n["notes"].pop(0))
    assert "Why" not in gone and "frame: true" in gone
    cleared, _ = edited(gone, lambda n: n.pop("notes"))
    assert cleared == GREETING
