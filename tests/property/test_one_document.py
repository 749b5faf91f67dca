"""One document: what a run reads is what the studio shows, and a studio edit changes nothing it was not asked to.

Hypothesis writes diagram files the way people do (plain scalars YAML 1.1 and 1.2 read differently, flow and
block collections, comments, quotes) and checks two properties against the real loader, the studio's API and
its editor: (1) `diagrama run` sees exactly what `GET /api/diagrams/{path}` shows, before and after an edit
elsewhere in the file; (2) an edit operation (move, set a property, rename, add or remove a link or a block)
leaves every line outside the blocks it touches byte-identical, and their meaning unchanged.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import math
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from blocks.registry import registry
from engine import run
from engine.errors import DiagramInvalid
from engine.format.jsonout import plain
from engine.format.values import dumps
from engine.format.yamlfile import read_yaml_text
from engine.web.app import create_app
from engine.web.yaml_edit import apply_edit, kept_where_unrepresentable

pytestmark = pytest.mark.slow  # property searches

TOKEN = "t"
HEADERS = {"x-diagrama-token": TOKEN, "origin": "http://127.0.0.1:8765"}

# Plain scalars people write, many of which YAML 1.1 (PyYAML) and 1.2 read differently.
PLAIN = [
    "yes", "Yes", "NO", "no", "on", "On", "OFF", "off", "y", "Y", "n", "N", "~", "null", "Null", "true", "False", "TRUE",
    "1", "-1", "+7", "0", "00", "012", "08", "0o17", "0o8", "0x1F", "0b101", "1_000", "1e3", "1.5e3", "1.0e+3", "1.", ".5",
    "-.5", "1:30", "190:20:30", "2024-01-01", "2024-01-01 10:00:00", ".inf", "-.Inf", ".nan", ".NaN", "=", "<<x", "hello",
    "plain words", "é ✓ 😀", "a-b_c", "http://x.y/z", "99999999999999999999", "-0", "0.1", "1e-5",
]  # fmt: skip
QUOTED = ["'yes'", '"on"', "'012'", '"0o17"', "''", '"a: b"', "'it''s'", '"tab\\there"']
SCALAR_TEXT = st.sampled_from(PLAIN) | st.sampled_from(QUOTED) | st.integers(-(10**20), 10**20).map(str)


def _flow(depth: int) -> st.SearchStrategy[str]:
    if depth == 0:
        return SCALAR_TEXT
    inner = _flow(depth - 1)
    return st.one_of(
        SCALAR_TEXT,
        st.lists(inner, max_size=3).map(lambda items: "[" + ", ".join(items) + "]"),
        st.lists(st.tuples(st.sampled_from(["k", "on", "yes", "n1"]), inner), max_size=3, unique_by=lambda kv: kv[0])
        .map(lambda kvs: "{" + ", ".join(f"{k}: {v}" for k, v in kvs) + "}"),
    )


FLOW_VALUE = _flow(2)


@st.composite
def value_lines(draw: st.DrawFn, indent: int) -> list[str]:
    """A value after `key:` on the first line, and the lines under it (block collections)."""
    kind = draw(st.sampled_from(["flow", "flow", "block_list", "block_map"]))
    pad = " " * indent
    if kind == "flow":
        return [" " + draw(FLOW_VALUE)]
    items = draw(st.lists(FLOW_VALUE, min_size=1, max_size=3))
    if kind == "block_list":
        return ["", *(f"{pad}- {item}" for item in items)]
    keys = draw(st.lists(st.sampled_from(["a", "b", "yes", "on", "x1"]), min_size=len(items), max_size=len(items), unique=True))
    return ["", *(f"{pad}{k}: {v}" for k, v in zip(keys, items, strict=True))]


@st.composite
def start_variables(draw: st.DrawFn) -> list[str]:
    names = draw(st.lists(st.sampled_from(["flag", "mode", "n", "z", "when", "items", "limits", "name"]), min_size=1,
                          max_size=4, unique=True))
    lines = ["    variables:"]
    for name in names:
        first, *rest = draw(value_lines(8))
        lines.append(f"      {name}:{first}")
        lines.extend(rest)
    return lines


def diagram_text(variables: list[str]) -> str:
    return "\n".join([
        "# one document",
        "diagram: differential",
        "blocks:",
        "  - id: start",
        "    type: Start",
        *variables,
        "    next: done",
        "",
        "  - id: done  # the end",
        "    type: Set",
        "    label: Done",
        "",
    ])


def _call(app: Any, method: str, url: str, **kwargs: Any) -> httpx.Response:
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8765") as client:
            return await client.request(method, url, **kwargs)

    return asyncio.run(go())


def _as_json(value: Any) -> Any:
    """A value as JSON gives it to the page (NaN and infinities are null there)."""
    return plain(value)


def _typed(value: Any) -> Any:
    """The data with every scalar's type (1, 1.0 and True differ); a mapping's key order does not matter."""
    if isinstance(value, dict):
        return ("map", sorted((k, _typed(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("seq", [_typed(v) for v in value])
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return (type(value).__name__, value)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(variables=start_variables())
def test_a_run_sees_what_the_studio_shows_before_and_after_an_unrelated_edit(tmp_path_factory: Any,
                                                                              variables: list[str]) -> None:
    folder = tmp_path_factory.mktemp("doc")
    text = diagram_text(variables)
    try:
        read_yaml_text(text, "d.yaml")
    except DiagramInvalid:
        assume(False)  # a generated text that is not YAML (e.g. a key repeated in a flow mapping)
    path = folder / "d.yaml"
    path.write_text(text, encoding="utf-8")
    app = create_app(folder, folder / "runs", registry(), token=TOKEN)

    def shown() -> tuple[dict[str, Any], str]:
        answer = _call(app, "GET", "/api/diagrams/d.yaml")
        assert answer.status_code == 200, answer.text
        body = orjson.loads(answer.content) if b"NaN" not in answer.content else answer.json()
        return body["diagram"], body["hash"]

    def ran() -> dict[str, Any]:
        result = run(path, runs_dir=folder / "runs")
        assert result.status == "succeeded", result.errors
        return {name: value for name, value in result.variables.items()}

    def same_everywhere(page: dict[str, Any]) -> None:
        # The page gets JSON; the run's values, written as JSON, are exactly what it shows.
        assert _typed(_as_json(ran())) == _typed(_as_json(page["blocks"][0]["variables"]))

    page, digest = shown()
    same_everywhere(page)
    before = ran()
    page["blocks"][1]["label"] = "Finished"  # another block's label: nothing about the variables
    saved = _call(app, "PUT", "/api/diagrams/d.yaml", json={"base_hash": digest, "diagram": page}, headers=HEADERS)
    assert saved.status_code == 200, saved.text
    edited = path.read_text(encoding="utf-8")
    changed = [line for line in difflib.ndiff(text.splitlines(), edited.splitlines()) if line[:1] in "+-"]
    assert changed == ["-     label: Done", "+     label: Finished"], changed
    page, _ = shown()
    same_everywhere(page)
    assert _typed(ran()) == _typed(before)


# ---------------------------------------------------------------------------------------------- edits


@st.composite
def diagram_file(draw: st.DrawFn) -> tuple[str, dict[str, tuple[int, int]]]:
    """A diagram file and each block's lines (0-based, end excluded): from the blank and comment lines above it
    (which the editor moves and removes with it) to its last line."""
    count = draw(st.integers(2, 6))
    ids = ["start"] + [f"b{n}" for n in range(1, count)]
    lines = [draw(st.sampled_from(["# a diagram", "# yaml-language-server: $schema=x.json", ""])), "diagram: edits",
             "description: " + draw(st.sampled_from(["plain", '"quoted: yes"', "yes"])), "blocks:"]
    spans: dict[str, tuple[int, int]] = {}
    indent = draw(st.sampled_from([2, 4]))
    for n, block in enumerate(ids):
        first = len(lines)
        if n and draw(st.booleans()):
            lines.append("")
        if draw(st.integers(0, 3)) == 0:
            lines.append(" " * indent + f"# about {block}")
        pad = " " * (indent + 2)
        lines.append(" " * indent + f"- id: {block}")
        lines.append(pad + ("type: Start" if n == 0 else "type: Set"))
        if draw(st.booleans()):
            lines.append(pad + "label: " + draw(st.sampled_from(["Begin here", "'on'", "yes", '"a: b"'])))
        if draw(st.booleans()):
            lines.append(pad + f"position: [{draw(st.integers(-500, 500))}, {draw(st.integers(-500, 500))}]")
        if n == 0:
            lines.append(pad + "variables: {i: 0, flag: " + draw(SCALAR_TEXT) + "}")
        else:
            entries = draw(st.lists(st.tuples(st.sampled_from(["x", "y", "mode", "on"]), FLOW_VALUE), max_size=3,
                                    unique_by=lambda kv: kv[0]))
            if entries and draw(st.booleans()):
                lines.append(pad + "set:")
                lines.extend(pad + "  " + f"{k}: {v}" for k, v in entries)
            elif entries:
                lines.append(pad + "set: {" + ", ".join(f"{k}: {v}" for k, v in entries) + "}")
        later = ids[n + 1:]
        if later:
            targets = draw(st.lists(st.sampled_from(later), min_size=1, max_size=2, unique=True))
            if len(targets) == 1 and draw(st.booleans()):
                lines.append(pad + f"next: {targets[0]}")
            else:
                lines.append(pad + "next:")
                for k, target in enumerate(targets):
                    when = '    when: "{{ i < 3 }}"' if k < len(targets) - 1 else None
                    lines.append(pad + f"  - to: {target}")
                    if when:
                        lines.append(pad + when)
        if draw(st.integers(0, 4)) == 0:
            lines.append(pad + "# a note")
        spans[block] = (first, len(lines))
    lines.append("")
    return "\n".join(lines), spans


def _links(block: dict[str, Any]) -> list[dict[str, Any]]:
    following = block.get("next")
    if isinstance(following, str):
        return [{"to": following}]
    return list(following) if isinstance(following, list) else []


def _set_links(block: dict[str, Any], links: list[dict[str, Any]]) -> None:
    if not links:
        block.pop("next", None)
    elif len(links) == 1 and set(links[0]) == {"to"}:
        block["next"] = links[0]["to"]
    else:
        block["next"] = links


def edit_operation(data: st.DataObject, new: dict[str, Any]) -> tuple[str, set[str]]:
    """One edit the canvas makes, as the studio's front end makes it (model/ops.ts); returns the op's name and the
    ids of the blocks it touches (a rename or removal also touches the blocks that link to that block)."""
    blocks = new["blocks"]
    op = data.draw(st.sampled_from(["move", "set", "rename", "add_link", "remove_link", "add_block", "remove_block"]))
    block = data.draw(st.sampled_from(blocks))
    touched = {block["id"]}
    if op == "move":
        block["position"] = [data.draw(st.integers(-900, 900)), data.draw(st.integers(-900, 900))]
    elif op == "set":
        field = data.draw(st.sampled_from(["label", "error_level", "message_level", "set"]))
        if field == "set" and block["type"] == "Set":
            block.setdefault("set", {})[data.draw(st.sampled_from(["x", "z", "on"]))] = data.draw(
                st.sampled_from(["yes", "012", "plain", "{{ i }}", 7, 1.5, True, None]))
        elif field == "set":
            block["label"] = "Start here"
        else:
            block[field] = data.draw(st.sampled_from({"label": ["yes", "A label", "on: off"], "error_level": ["Ignore"],
                                                      "message_level": ["Detailed"]}[field]))
    elif op == "rename" and block["id"] != "start":
        old, renamed = block["id"], block["id"] + "_x"
        block["id"] = renamed
        for other in blocks:
            links = _links(other)
            if any(link["to"] == old for link in links):
                touched.add(other["id"] if other is not block else renamed)
                _set_links(other, [{**link, "to": renamed} if link["to"] == old else link for link in links])
        touched.add(old)
    elif op == "add_link":
        target = data.draw(st.sampled_from([b["id"] for b in blocks if b["id"] != "start"]))
        _set_links(block, [*_links(block), {"to": target, "when": "{{ i > 5 }}"}])
    elif op == "remove_link" and _links(block):
        links = _links(block)
        links.pop(data.draw(st.integers(0, len(links) - 1)))
        _set_links(block, links)
    elif op == "add_block":
        touched = set()
        blocks.insert(data.draw(st.integers(1, len(blocks))), {"id": "added", "type": "Set", "set": {"v": "yes"}})
    elif op == "remove_block" and block["id"] != "start":
        blocks.remove(block)
        for other in blocks:
            links = _links(other)
            if any(link["to"] == block["id"] for link in links):
                touched.add(other["id"])
                _set_links(other, [link for link in links if link["to"] != block["id"]])
    return op, touched


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(file=diagram_file(), data=st.data())
def test_an_edit_never_rewrites_a_line_outside_the_blocks_it_touches(file: tuple[str, dict[str, tuple[int, int]]],
                                                                      data: st.DataObject) -> None:
    text, spans = file
    old, _ = read_yaml_text(text, "d.yaml")
    new = as_the_page_reads(old)
    op, touched = edit_operation(data, new)
    result = apply_edit(text, new)

    # Every line outside the touched blocks' spans is still there, byte for byte, in order.
    kept = [line for n, line in enumerate(text.split("\n")) if n not in
            {n for block in touched if block in spans for n in range(*spans[block])}]
    assert _in_order(kept, result.split("\n")), (op, touched, text, result)

    # The file reads back as the page's data, and whatever the edit did not touch means what it meant.
    read_back, _ = read_yaml_text(result, "d.yaml")
    assert _typed(read_back) == _typed(kept_where_unrepresentable(old, new))
    assert _typed({k: v for k, v in read_back.items() if k != "blocks"}) == _typed({k: v for k, v in old.items() if k != "blocks"})
    untouched_before = {b["id"]: b for b in old["blocks"] if b["id"] not in touched}
    for block in read_back["blocks"]:
        if block["id"] in untouched_before:
            assert _typed(block) == _typed(untouched_before[block["id"]]), (op, block["id"])


def _in_order(lines: list[str], within: list[str]) -> bool:
    """Whether `lines` all appear in `within`, in their order (a subsequence: greedy matching decides it)."""
    rest = iter(within)
    return all(any(line == other for other in rest) for line in lines)


def as_the_page_reads(value: Any) -> Any:
    """The studio's data after the page's JSON.parse: numbers are doubles (integers past 2**53 rounded), NaN and
    infinities null; what the page sends back holds those values unless it changes them."""
    return json.loads(dumps(value), parse_int=lambda text: int(text) if abs(int(text)) <= 2**53 else float(text))


def test_a_big_integer_the_page_rounds_is_kept_as_written(tmp_path: Path) -> None:
    text = "diagram: d\nids: [12345678901234567891]\nblocks:\n  - id: start\n    type: Start\n"
    page = orjson.loads(orjson.dumps({"diagram": "d", "ids": [float(12345678901234567891)],
                                      "blocks": [{"id": "start", "type": "Start", "label": "Go"}]}))
    result = apply_edit(text, page)
    assert result == text.replace("type: Start\n", "type: Start\n    label: Go\n")
    exact = text.replace("12345678901234567891", str(2**53 + 2))  # past 2**53, yet a double holds it exactly
    assert kept_where_unrepresentable(read_yaml_text(exact, "d")[0], as_the_page_reads(read_yaml_text(exact, "d")[0])) \
        == read_yaml_text(exact, "d")[0]
