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


def test_the_claude_5_generation_resolves_each_name_to_its_own_price() -> None:
    def prices(model: str) -> tuple[float, float, float | None, float | None] | None:
        price = price_of("anthropic", model)
        return None if price is None else (price.input, price.output, price.cache_write, price.cache_read)

    sonnet_5_5, sonnet_5 = (2.00, 10.00, 2.50, 0.10), (2.00, 10.00, 2.50, 0.20)
    opus_5_5, opus_5 = (4.00, 20.00, 5.00, 0.20), (5.00, 25.00, 6.25, 0.50)
    assert prices("claude-sonnet-5-5") == prices("claude-sonnet-5-5-20260915") == sonnet_5_5
    assert prices("claude-sonnet-5") == prices("claude-sonnet-5-20260630") == sonnet_5
    assert prices("claude-opus-5-5") == prices("claude-opus-5-5-20261001") == opus_5_5
    assert prices("claude-opus-5") == prices("claude-opus-5-20260724") == opus_5
    for model in ("claude-opus-4-8", "claude-opus-4-7", "claude-opus-4-6", "claude-opus-4-5-20251101"):
        assert prices(model) == opus_5, model
    assert prices("claude-sonnet-4-6") == (3.00, 15.00, 3.75, 0.30)
    assert prices("claude-fable-5-1") == (10.00, 50.00, 12.50, 0.25)
    assert prices("claude-opus-4-1") == (15.00, 75.00, 18.75, 1.50)  # the older entries stay
    # claude-sonnet-5's dated names only: a Sonnet 5.x the table does not have is not priced as Sonnet 5.
    assert prices("claude-sonnet-5-2") is None and prices("claude-opus-5-1") is None
    # Priced in two bands by prompt length, which the table cannot say; no checked source: both unknown.
    assert price_of("anthropic", "claude-haiku-5-5") is None
    assert price_of("gemini", "gemini-3.5-flash") is None
    for model in ("claude-sonnet-5-5", "claude-sonnet-5", "claude-opus-5-5", "claude-fable-5-1"):
        price = price_of("anthropic", model)
        assert price is not None and str(price.taken) == "2026-12-06"
        assert price.source == "https://platform.claude.com/docs/en/about-claude/pricing"


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
    assert price_of("anthropic", "claude-haiku-5-5") is None  # not in the shipped table
    own = tmp_path / "prices.yaml"
    own.write_text("anthropic:\n  claude-haiku-5-5*:\n    input: 0.1\n    output: 0.5\n    taken: 2026-01-01\n"
                   "    source: https://example.com/prices\n"
                   "groq:\n  llama-3.3-70b-versatile:\n    input: 1\n    output: 1\n    taken: 2026-01-01\n"
                   "    source: https://example.com/prices\n")
    monkeypatch.setenv("DIAGRAMA_PRICES", str(own))
    reset_prices()
    added = cost_of("anthropic", "claude-haiku-5-5-20260101", {"input_tokens": 1_000_000, "output_tokens": 0})
    assert added is not None and added.usd == pytest.approx(0.1)
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
