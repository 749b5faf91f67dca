"""The facts of the file format, each written once in the engine: block keys, level names, the links a file names.

The links a file writes are read by one function (engine.format.links) for the validator and for the
studio's drawing of a diagram that does not compile: it must never raise, whatever the data, and it must
agree with the compiled diagram's links wherever the diagram compiles.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from blocks.registry import BUILTIN_BLOCKS
from engine import BlockRegistry, DiagramInvalid
from engine.cli import LEVELS
from engine.compile.loader import load_diagram, load_diagram_text
from engine.format.levels import DEFAULT, ERROR_LEVELS, MESSAGE_LEVELS, ErrorLevel, MessageLevel
from engine.format.links import WrittenLink, written_ids, written_links
from engine.format.spec import COMMON_BLOCK_KEYS, DEFAULTED_KEYS, LINK_KEYS, BlockSpec
from engine.format.yamlfile import read_yaml_text
from engine.web.picture import diagram_links, written_picture
from tests.property import budget

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = BlockRegistry(BUILTIN_BLOCKS)
EXAMPLES = sorted((ROOT / "diagrams").glob("*.yaml"))


def test_the_common_keys_are_block_specs_fields_and_name_the_link_and_defaulted_keys() -> None:
    assert {field.alias or name for name, field in BlockSpec.model_fields.items()} == COMMON_BLOCK_KEYS
    assert set(LINK_KEYS) <= COMMON_BLOCK_KEYS and DEFAULTED_KEYS <= COMMON_BLOCK_KEYS
    assert not set(LINK_KEYS) & DEFAULTED_KEYS  # a wrong link is never passed over with a default


def test_level_names_come_from_the_enums_and_reach_the_schema_and_the_command_line() -> None:
    assert list(ERROR_LEVELS) == [DEFAULT, "Ignore", "Handle"]
    assert list(MESSAGE_LEVELS) == [DEFAULT, "Release", "Debug", "Detailed"]
    assert [v for v in ERROR_LEVELS.values() if v is not None] == list(ErrorLevel)
    assert [v for v in MESSAGE_LEVELS.values() if v is not None] == list(MessageLevel)
    published = json.loads((ROOT / "diagram.schema.json").read_text())["properties"]["blocks"]["items"]["oneOf"]
    for block in published:  # one schema per block type, each with the common keys
        assert block["properties"]["error_level"]["enum"] == list(ERROR_LEVELS)
        assert block["properties"]["message_level"]["enum"] == list(MESSAGE_LEVELS)
    assert list(LEVELS) == [name for name in MESSAGE_LEVELS if name != DEFAULT]


@pytest.mark.parametrize("data", [
    None, 5, "text", [], {}, {"blocks": 5}, {"blocks": "x"}, {"blocks": [1, None, "a", [1]]},
    {"blocks": [{"id": ["a"], "next": "b"}]},  # an id that is a list: a link with no source, no exception
    {"blocks": [{"id": "a", "type": ["Loop"], "body": "b"}]},  # a type that is a list asks no ports
    {"blocks": [{"id": "a", "type": {"x": 1}, "next": {"to": "b"}, "on_error": ["b"]}]},
    {"blocks": [{"id": "a", "next": [1, None, [], {"to": 5}, {"when": "{{ x }}"}, {"to": ["b"]}]}]},
    {"blocks": [{1: "x", ("t",): 2, "id": "a"}]},
])
def test_malformed_data_names_no_link_and_raises_nothing(data: Any) -> None:
    links = written_links(data, REGISTRY.ports_of)
    assert all(link.source is None for link in links)
    written_ids(data)
    assert written_picture(data, REGISTRY)["links"] == []


def test_each_kind_of_link_is_read_with_where_it_is_written() -> None:
    data = {"blocks": [
        {"id": "s", "type": "Start", "next": "loop"},
        {"id": "loop", "type": "Loop", "body": "step", "on_error": "h",
         "next": [{"to": "x", "when": "{{ a }}"}, "junk", {"to": "done"}]},
        {"id": "bad", "type": "NoSuchType", "body": "step", "next": "nowhere"},
    ]}
    assert written_links(data, REGISTRY.ports_of) == [
        WrittenLink(0, "s", "loop", "next", ("blocks", 0, "next"), "next"),
        WrittenLink(1, "loop", "x", "next", ("blocks", 1, "next", 0, "to"), "next[0].to", "{{ a }}", 0),
        WrittenLink(1, "loop", "done", "next", ("blocks", 1, "next", 2, "to"), "next[2].to", None, 2),
        WrittenLink(1, "loop", "step", "body", ("blocks", 1, "body"), "body"),
        WrittenLink(1, "loop", "h", "error", ("blocks", 1, "on_error"), "on_error"),
        WrittenLink(2, "bad", "nowhere", "next", ("blocks", 2, "next"), "next"),  # an unknown type has no ports
    ]
    # The drawing keeps the links between blocks the file has, in their written order.
    drawn = written_picture(data, REGISTRY)["links"]
    assert [(e["source"], e["target"], e["kind"], e["order"]) for e in drawn] == [("s", "loop", "next", 1)]


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4) | st.sampled_from(["a", "b", "Loop", "Start"]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["id", "type", "to", "when", "next", "on_error", "body", "x"]) | st.integers(),
                      inner, max_size=4),
    max_leaves=12,
)


@pytest.mark.slow
@given(blocks=_values, wrap=st.booleans())
@budget(max_examples=300)
def test_any_data_at_all_is_read_without_an_exception(blocks: Any, wrap: bool) -> None:
    data = {"blocks": blocks} if wrap else blocks
    links = written_links(data, REGISTRY.ports_of)
    for link in links:
        assert isinstance(link.target, str) and link.kind in {"next", "error", "body"}
    picture = written_picture(data, REGISTRY)
    known = set(written_ids(data))
    assert all(e["target"] in known and isinstance(e["source"], str) for e in picture["links"])


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_the_files_links_are_the_compiled_diagrams_links(path: Path) -> None:
    """Where a diagram compiles, the reading the studio draws a broken one from gives the compiled links."""
    data, _lines = read_yaml_text(path.read_text(encoding="utf-8"), str(path))
    compiled = diagram_links(load_diagram(path, REGISTRY))
    assert written_picture(data, REGISTRY)["links"] == compiled


def test_a_block_that_fails_its_own_checks_still_has_every_link_checked(tmp_path: Path) -> None:
    text = ("diagram: d\nblocks:\n  - {id: start, type: Start, next: loop}\n"
            "  - {id: loop, type: Loop, count: 2, body: nowhere, on_error: nobody, extra_key: 1, next: gone}\n")
    with pytest.raises(DiagramInvalid) as raised:
        load_diagram_text(text, tmp_path / "d.yaml", REGISTRY)
    fields = {(p.block, p.field, p.code) for p in raised.value.problems}
    assert {("loop", "body", "unknown_link_target"), ("loop", "on_error", "unknown_link_target"),
            ("loop", "next", "unknown_link_target"), ("loop", "extra_key", "unknown_key")} <= fields
