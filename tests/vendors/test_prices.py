"""The price table: its shipped entries, DIAGRAMA_PRICES, and what a request's usage costs (issue 40, 1)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.errors import DiagramInvalid
from engine.providers.prices import PRICES_FILE, check_prices, cost_of, estimate, price_of, read_prices, reset_prices


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
    # claude-haiku-5-5: two bands by prompt length (below); no checked source for gemini-3.5-flash: unknown.
    assert prices("claude-haiku-5-5") == prices("claude-haiku-5-5-20261115") == (0.10, 0.50, 0.125, 0.01)
    assert prices("claude-haiku-5") is None and prices("claude-haiku-5-0") is None
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
    assert price_of("gemini", "gemini-3.5-flash") is None  # not in the shipped table
    own = tmp_path / "prices.yaml"
    own.write_text("gemini:\n  gemini-3.5-flash*:\n    input: 0.1\n    output: 0.5\n    taken: 2026-01-01\n"
                   "    source: https://example.com/prices\n"
                   "groq:\n  llama-3.3-70b-versatile:\n    input: 1\n    output: 1\n    taken: 2026-01-01\n"
                   "    source: https://example.com/prices\n")
    monkeypatch.setenv("DIAGRAMA_PRICES", str(own))
    reset_prices()
    added = cost_of("gemini", "gemini-3.5-flash-001", {"input_tokens": 1_000_000, "output_tokens": 0})
    assert added is not None and added.usd == pytest.approx(0.1)
    overridden = cost_of("groq", "llama-3.3-70b-versatile", {"input_tokens": 1_000_000, "output_tokens": 0})
    assert overridden is not None and overridden.usd == pytest.approx(1)
    assert price_of("anthropic", "claude-haiku-4-5") is not None  # the shipped entries stay
    assert price_of("gemini", "gemini-2.5-flash") is not None


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


def test_a_prompt_over_100k_tokens_pays_haikus_long_band_on_every_token() -> None:
    # claude-haiku-5-5: up to 100,000 prompt tokens 0.10 in, 0.50 out, 0.125 cache write, 0.01 cache read per
    # million; over, 0.50, 2.50, 0.625 and 0.05, output and cache reads included. input_tokens is the whole prompt.
    def usd(prompt: int) -> float | None:
        cost = cost_of("anthropic", "claude-haiku-5-5-20261115", {
            "input_tokens": prompt, "output_tokens": 10_000, "cache_write_tokens": 20_000, "cache_read_tokens": 30_000})
        return None if cost is None else cost.usd

    # 50,000 fresh x 0.10 + 20,000 x 0.125 + 30,000 x 0.01 + 10,000 x 0.50
    assert usd(100_000) == 0.0128
    # 50,001 fresh x 0.50 + 20,000 x 0.625 + 30,000 x 0.05 + 10,000 x 2.50
    assert usd(100_001) == 0.0640005
    band = cost_of("anthropic", "claude-haiku-5-5", {"input_tokens": 100_001, "output_tokens": 1_000_000})
    assert band is not None and band.usd == 2.5500005  # the output at 2.50 too
    short = cost_of("anthropic", "claude-haiku-5-5", {"input_tokens": 1_000, "output_tokens": 1_000_000})
    assert short is not None and short.usd == 0.5001


def test_a_budgets_estimate_takes_the_long_band_whenever_the_prompt_could_be_long() -> None:
    def body(characters: int) -> dict[str, object]:
        return {"model": "claude-haiku-5-5", "messages": [{"role": "user", "content": "x" * characters}]}

    # 40,000 characters of text (40,070 with the JSON): 10,017 tokens at 0.10, 1,000 max_tokens at 0.50
    assert estimate("anthropic", "claude-haiku-5-5", body(40_000), [], 1_000) == (11_017, 0.0015017)
    # 200,070 characters: about 50,017 tokens, but a token may be one character: the long band, 0.50 and 2.50
    assert estimate("anthropic", "claude-haiku-5-5", body(200_000), [], 1_000) == (51_017, 0.0275085)
    # 500,070 characters: about 125,017 tokens, over 100,000 by the estimate itself
    assert estimate("anthropic", "claude-haiku-5-5", body(500_000), [], 1_000) == (126_017, 0.0650085)
    # a file part's tokens are not known before it is sent (a document's pages): the long band
    small = body(1_000)
    small["messages"][0]["content"] += "d" * 4_000  # type: ignore[index]  # the file part's data, not counted as text
    # 1,070 characters (267 tokens) and the file's 1,600: 1,867 at 0.50, 1,000 at 2.50 (not 0.0006867 at 0.10)
    assert estimate("anthropic", "claude-haiku-5-5", small, [4_000], 1_000) == (2_867, 0.0034335)
    # a model with one price: as before
    assert estimate("anthropic", "claude-sonnet-5-5", body(200_000), [], 1_000) == (51_017, 0.110034)


def test_a_wrong_long_prompt_band_names_its_file_line_and_field(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    own = tmp_path / "prices.yaml"
    own.write_text("anthropic:\n  claude-haiku-5-5*:\n    input: 0.1\n    output: 0.5\n    long_prompt:\n"
                   "      above: 100k\n      input: 0.5\n      output: -2.5\n      cache_reads: 0.05\n"
                   "    taken: 2026-12-06\n    source: https://example.com/prices\n"
                   "  claude-haiku-5-6:\n    input: 0.1\n    output: 0.5\n    long_prompt: {above: 0, output: 1}\n"
                   "    taken: 2026-12-06\n    source: https://example.com/prices\n")
    monkeypatch.setenv("DIAGRAMA_PRICES", str(own))
    reset_prices()
    with pytest.raises(DiagramInvalid) as raised:
        check_prices()
    shown = {(problem.line, problem.field) for problem in raised.value.problems}
    assert shown == {(6, "anthropic.claude-haiku-5-5*.long_prompt.above"),
                     (8, "anthropic.claude-haiku-5-5*.long_prompt.output"),
                     (9, "anthropic.claude-haiku-5-5*.long_prompt.cache_reads"),
                     (15, "anthropic.claude-haiku-5-6.long_prompt.above"),
                     (15, "anthropic.claude-haiku-5-6.long_prompt.input")}, raised.value.problems
    assert str(raised.value).startswith(f"{own}:6")
    assert "greater than 0" in str(raised.value) and "valid integer" in str(raised.value)
