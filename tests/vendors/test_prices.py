"""The price table: its shipped entries, DIAGRAMA_PRICES, and what a request's usage costs (issue 40, 1)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.errors import DiagramInvalid
from engine.providers.prices import PRICES_FILE, cost_of, price_of, read_prices, reset_prices


@pytest.fixture(autouse=True)
def _fresh_table(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("DIAGRAMA_PRICES", raising=False)
    reset_prices()
    yield
    reset_prices()


def test_the_shipped_table_reads_and_says_where_each_price_came_from() -> None:
    table = read_prices(PRICES_FILE)
    assert set(table) == {"anthropic", "groq", "gemini"}
    for models in table.values():
        for price in models.values():
            assert price.source.startswith("https://")
            assert price.input > 0 and price.output > 0


def test_a_dated_model_name_takes_its_patterns_price() -> None:
    assert price_of("anthropic", "claude-sonnet-4-5-20250929") == price_of("anthropic", "claude-sonnet-4-5")
    assert price_of("anthropic", "claude-sonnet-4-50") == price_of("anthropic", "claude-sonnet-4-5")  # the pattern's `*`
    assert price_of("groq", "llama-3.3-70b-versatile-x") is None  # no pattern: the exact name only


def test_input_output_and_cache_kinds_are_each_at_their_price() -> None:
    # claude-sonnet-4-5: 3 in, 15 out, 3.75 cache write, 0.30 cache read per million.
    usage = {"input_tokens": 1_000_000, "output_tokens": 100_000, "cache_write_tokens": 200_000,
             "cache_read_tokens": 500_000}
    cost = cost_of("anthropic", "claude-sonnet-4-5", usage)
    assert cost is not None
    assert cost.usd == pytest.approx(0.3 * 3 + 0.2 * 3.75 + 0.5 * 0.30 + 0.1 * 15)
    assert cost.as_json() == {"usd": cost.usd}


def test_thinking_is_output_unless_priced_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    usage = {"input_tokens": 0, "output_tokens": 1_000_000, "thinking_tokens": 400_000}
    shipped = cost_of("gemini", "gemini-2.5-flash", usage)
    assert shipped is not None and shipped.usd == pytest.approx(2.50)
    own = tmp_path / "prices.yaml"
    own.write_text("gemini:\n  gemini-2.5-flash:\n    input: 0.3\n    output: 2.5\n    thinking: 3.5\n"
                   "    taken: 2025-10-15\n    source: https://example.com/prices\n")
    monkeypatch.setenv("DIAGRAMA_PRICES", str(own))
    reset_prices()
    priced = cost_of("gemini", "gemini-2.5-flash", usage)
    assert priced is not None and priced.usd == pytest.approx(0.6 * 2.5 + 0.4 * 3.5)


def test_an_unknown_model_or_an_unpriced_kind_costs_unknown_never_zero() -> None:
    assert cost_of("anthropic", "claude-x", {"input_tokens": 10, "output_tokens": 10}) is None
    assert cost_of("openai", "gpt-4o", {"input_tokens": 10, "output_tokens": 10}) is None
    # llama-3.3-70b-versatile has no cache-read price in the table: a reply that read the cache costs unknown.
    assert cost_of("groq", "llama-3.3-70b-versatile", {"input_tokens": 10, "output_tokens": 1,
                                                        "cache_read_tokens": 5}) is None
    zero = cost_of("groq", "llama-3.3-70b-versatile", {"input_tokens": 0, "output_tokens": 0})
    assert zero is not None and zero.usd == 0  # known and free is not unknown


def test_a_users_file_overrides_and_adds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = tmp_path / "prices.yaml"
    own.write_text("anthropic:\n  claude-sonnet-5-5*:\n    input: 2\n    output: 10\n    taken: 2026-01-01\n"
                   "    source: https://example.com/prices\n"
                   "groq:\n  llama-3.3-70b-versatile:\n    input: 1\n    output: 1\n    taken: 2026-01-01\n"
                   "    source: https://example.com/prices\n")
    monkeypatch.setenv("DIAGRAMA_PRICES", str(own))
    reset_prices()
    added = cost_of("anthropic", "claude-sonnet-5-5-20260101", {"input_tokens": 1_000_000, "output_tokens": 0})
    assert added is not None and added.usd == pytest.approx(2)
    overridden = cost_of("groq", "llama-3.3-70b-versatile", {"input_tokens": 1_000_000, "output_tokens": 0})
    assert overridden is not None and overridden.usd == pytest.approx(1)
    assert price_of("anthropic", "claude-haiku-4-5") is not None  # the shipped entries stay


def test_a_wrong_entry_names_its_file_line_and_field(tmp_path: Path) -> None:
    own = tmp_path / "prices.yaml"
    own.write_text("groq:\n  llama-3.3-70b-versatile:\n    input: 1\n    output: -1\n    taken: 2026-01-01\n"
                   "    source: https://example.com/prices\n  other:\n    input: 1\n    output: 1\n"
                   "    source: http://example.com\n")
    with pytest.raises(DiagramInvalid) as raised:
        read_prices(own)
    shown = [(problem.line, problem.field) for problem in raised.value.problems]
    assert (4, "groq.llama-3.3-70b-versatile.output") in shown
    assert (10, "groq.other.source") in shown
    assert (7, "groq.other.taken") in shown  # missing: the entry's own line
    assert str(raised.value).startswith(f"{own}:4")
