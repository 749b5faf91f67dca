"""Ranking tools for a request: words (names split, stop words, stems), hub correction, fused scores."""

from __future__ import annotations

import functools
import textwrap
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from engine.format.yamlfile import LineMap
from engine.tools.lexical import LexicalIndex
from engine.tools.ranking import DOCUMENT_FORM, Ranker, Ranking, fuse, tool_document, tool_text
from engine.tools.registry import ToolRegistry, load_registries
from engine.tools.words import guess_language, identifier_words, request_words, words


def registry_of(tmp_path: Path, tools: str, ranking: Ranking | None = None) -> ToolRegistry:
    module = f"handlers_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text("def run(**kwargs):\n    return kwargs\n")
    body = textwrap.indent(textwrap.dedent(tools).strip("\n").replace("MODULE", module), "  ")
    (tmp_path / "registry.yaml").write_text(f"registry: r\nallowed_modules: [{module}]\ntools:\n{body}\n")
    registry = load_registries("registry.yaml", tmp_path / "d.yaml", LineMap(str(tmp_path / "d.yaml")))
    if ranking is not None:
        registry.ranking = ranking  # read when the first ranked selection builds the ranking
    return registry


PLUGINS = """
- {function: video_summarize, handler: "MODULE:run", description: Gives the gist of a clip in a few lines.}
- {function: weather_forecast, handler: "MODULE:run", description: Tells whether it will rain tomorrow where you are.}
- {function: stock_quote, handler: "MODULE:run", description: The latest price of a share on an exchange.}
"""


@pytest.mark.parametrize(("name", "expected"), [
    ("getOrderStatus", ["get", "order", "status"]),
    ("get_order_status", ["get", "order", "status"]),
    ("orders.get-status", ["orders", "get", "status"]),
    ("parseHTTPResponse", ["parse", "http", "response"]),
    ("consultarEncomendaJá", ["consultar", "encomenda", "ja"]),
])
def test_identifiers_are_split_into_words(name: str, expected: list[str]) -> None:
    assert identifier_words(name) == expected


@pytest.mark.parametrize(("text", "language"), [
    ("Onde está o meu pedido 42?", "portuguese"),
    ("Dov'è il mio ordine?", "italian"),
    ("Where is my order?", "english"),
    ("refund", "english"),  # nothing tells: English
])
def test_the_language_is_guessed_from_stop_words(text: str, language: str) -> None:
    assert guess_language(identifier_words(text)) == language
    assert words(text)[1] == language


def test_stop_words_go_and_words_are_stemmed_in_their_language() -> None:
    assert words("Where are my orders being shipped?")[0] == ["where", "order", "ship"]  # question words stay
    assert words("Quero devolver as encomendas")[0] == ["devolv", "encomend"]
    assert words("Vorrei restituire gli ordini")[0] == ["restitu", "ordin"]


def test_a_request_word_can_be_looked_up_in_the_other_languages() -> None:
    # No Italian function word: "rimborso" is first stemmed in English, then in the others.
    assert request_words("rimborso")[0] == ("rimborso", "rimbors")


def test_a_tools_name_is_counted(tmp_path: Path) -> None:
    registry = registry_of(tmp_path, PLUGINS)
    (best, score), *others = registry.select(query="summarize this video for me")
    assert best.name == "video_summarize"
    assert score is not None and score.lexical > 0.5
    assert all(other is not None and other.lexical == 0 for _, other in others)


def test_scores_are_a_weighted_sum_on_a_zero_to_one_scale(tmp_path: Path) -> None:
    registry = registry_of(tmp_path, PLUGINS)
    share = Ranking().lexical_weight
    for _, score in registry.select(query="will it rain tomorrow?"):
        assert score is not None
        assert 0 <= score.lexical <= 1 and 0 <= score.embedding <= 1
        assert score.score == pytest.approx(share * score.lexical + (1 - share) * score.embedding, abs=1e-5)
    assert [t.name for t, _ in registry.select(query="will it rain tomorrow?", min_score=0.5)] == ["weather_forecast"]
    assert registry.select(query="zzzz qqqq", min_score=0.1) == []  # no word of any tool, and no likeness


def test_a_word_no_tool_has_lowers_every_score_alike() -> None:
    index = LexicalIndex([tool_document("track_parcel", "Where a parcel is."), tool_document("refund", "Money back.")])
    alone = index.scores(request_words("parcel"))
    diluted = index.scores(request_words("parcel yesterday"))
    assert 0.6 < alone[0] < 1 and alone[1] == 0  # in its name and description: most of the word's share
    # "yesterday" is in no tool: it counts as much as "parcel" (also in one tool only) against every score.
    assert diluted[0] == pytest.approx(alone[0] / 2, rel=1e-3) and diluted[1] == 0


def test_ranked_selection_keeps_to_the_group_and_top_k(tmp_path: Path) -> None:
    registry = registry_of(tmp_path, """
        - {function: rain, handler: "MODULE:run", group: weather, description: Rain tomorrow.}
        - {function: snow, handler: "MODULE:run", group: weather, description: Snow tomorrow.}
        - {function: rain_gauge, handler: "MODULE:run", group: shop, description: Sells rain gauges.}
    """)
    chosen = registry.select("weather", query="rain tomorrow", top_k=1)
    assert [t.name for t, _ in chosen] == ["rain"]
    assert [t.name for t, _ in registry.select("shop", query="rain tomorrow")] == ["rain_gauge"]


def test_a_hub_is_pulled_back_by_weighting_what_every_tool_shares() -> None:
    # Dimension 0 is in every tool (like the n-grams of "the"); the hub is made of it alone.
    matrix = np.array([[1.0, 0, 0], [0.6, 0.8, 0], [0.6, 0, 0.8]], dtype=np.float32)
    documents = [tool_document(name, "") for name in ("hub", "a", "b")]
    request = np.array([1.0, 0.45, 0], dtype=np.float32) / np.linalg.norm([1.0, 0.45, 0])
    plain = Ranker(documents, matrix, Ranking(hubs="none")).scores("", request)[2]
    corrected = Ranker(documents, matrix).scores("", request)[2]
    assert plain.argmax() == 0  # the hub wins on the raw cosine
    assert corrected.argmax() == 1  # what tool a has of its own decides once the shared dimension weighs less


def test_reciprocal_rank_fusion_gives_one_to_a_tool_first_in_both(tmp_path: Path) -> None:
    registry = registry_of(tmp_path, PLUGINS, Ranking(fusion="rrf"))
    (best, score), *_ = registry.select(query="weather forecast: will it rain tomorrow?")
    assert best.name == "weather_forecast" and score is not None and score.score == pytest.approx(1.0)


def test_a_tools_embedding_is_made_of_its_name_description_examples_and_parameters() -> None:
    parameters = {"type": "object", "properties": {"orderId": {"type": "integer", "description": "the order number"}}}
    assert tool_text("get_order_status", "Returns the status.", ["Where is 42?"], parameters) == \
        "get order status\nReturns the status.\nWhere is 42?\norder id\nthe order number"
    # What was embedded before names and parameters were: the description and examples.
    assert tool_text("get_order_status", "Returns the status.", ["Where is 42?"], parameters, "description") == \
        "Returns the status.\nWhere is 42?"


def _cached(tmp_path: Path) -> dict[str, Any]:
    entries: dict[str, Any] = orjson.loads((tmp_path / "registry.embeddings.json").read_bytes())
    return entries


def _write_cache(tmp_path: Path, entries: dict[str, Any]) -> None:
    (tmp_path / "registry.embeddings.json").write_bytes(orjson.dumps(entries))


def test_a_tools_words_are_cached_with_its_embedding_and_ranked_from_there(tmp_path: Path) -> None:
    registry_of(tmp_path, PLUGINS)
    entries = _cached(tmp_path)
    [key] = [key for key in entries if key.startswith("weather_forecast@")]
    assert entries[key]["document"] == {"form": DOCUMENT_FORM, "fields": tool_document(
        "weather_forecast", "Tells whether it will rain tomorrow where you are.", parameters={
            "type": "object", "properties": {}})}
    assert entries[key]["metadata"]["embedded"] == Ranking().embedded
    # A word only the cached document has: the ranking reads the cache, not the tool's text.
    entries[key]["document"]["fields"]["name"].append("zebra")
    _write_cache(tmp_path, entries)
    loaded = load_registries("registry.yaml", tmp_path / "d.yaml", LineMap(str(tmp_path / "d.yaml")))
    (best, score), *others = loaded.select(query="zebra")
    assert best.name == "weather_forecast" and score is not None and score.lexical > 0
    assert all(other is not None and other.lexical == 0 for _, other in others)
    assert loaded.embedded == 0


def test_cached_words_of_another_form_are_worked_out_again_and_the_embedding_kept(tmp_path: Path) -> None:
    registry_of(tmp_path, PLUGINS)
    entries = _cached(tmp_path)
    for entry in entries.values():
        entry["document"]["form"] = DOCUMENT_FORM - 1
        entry["document"]["fields"]["name"].append("zebra")
    _write_cache(tmp_path, entries)
    loaded = load_registries("registry.yaml", tmp_path / "d.yaml", LineMap(str(tmp_path / "d.yaml")))
    assert loaded.embedded == 0
    assert all(entry["document"]["form"] == DOCUMENT_FORM and "zebra" not in entry["document"]["fields"]["name"]
               for entry in _cached(tmp_path).values())
    assert all(score is not None and score.lexical == 0 for _, score in loaded.select(query="zebra"))


def test_an_embedding_of_another_text_is_made_again(tmp_path: Path) -> None:
    registry_of(tmp_path, PLUGINS)
    entries = _cached(tmp_path)
    for entry in entries.values():
        del entry["metadata"]["embedded"]  # as a cache written before the text was named: description and examples
    _write_cache(tmp_path, entries)
    load = functools.partial(load_registries, "registry.yaml", tmp_path / "d.yaml", LineMap(str(tmp_path / "d.yaml")))
    assert load().embedded == 3
    registry = load()
    assert registry.embedded == 0
    registry.ranking = Ranking(embedded="description")  # the old text is embedded again when it next ranks
    assert registry.select(query="rain tomorrow", top_k=1)[0][0].name == "weather_forecast"
    assert registry.embedded == 3
    assert {entry["metadata"]["embedded"] for entry in _cached(tmp_path).values()} == {"description"}


@pytest.mark.parametrize("ranking", [Ranking(), Ranking(fusion="rrf")])
def test_fusing_many_requests_at_once_fuses_each_alone(ranking: Ranking) -> None:
    rng = np.random.default_rng(3)
    lexical, embedding = rng.random((4, 6), dtype=np.float32), rng.random((4, 6), dtype=np.float32)
    together = fuse(lexical, embedding, ranking)
    for row in range(4):
        assert np.allclose(together[row], fuse(lexical[row], embedding[row], ranking))


def test_an_index_of_no_tools_scores_nothing() -> None:
    assert LexicalIndex([]).scores(request_words("where is my order")).shape == (0,)
