"""What a request cost: the price table (prices.yaml, beside this module) and `cost_of`.

Prices are USD per million tokens, per vendor and model (a name, or a pattern with `*` for dated
names), per token kind; an entry's `long_prompt` band prices every token of a request whose prompt is over its
`above` tokens. `DIAGRAMA_PRICES=path.yaml`, in the same shape, overrides or adds models.
A model with no price, or usage of a kind its entry does not price, costs "unknown" (None), never 0.
"""

from __future__ import annotations

import datetime
import fnmatch
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from engine.errors import DiagramInvalid, Problem
from engine.format.yamlfile import LineMap, read_yaml

__all__ = ["PRICES_FILE", "Cost", "LongPrompt", "Price", "Rates", "check_prices", "cost_of", "estimate", "price_of",
           "read_prices", "reset_prices"]

PRICES_FILE = Path(__file__).with_name("prices.yaml")
_MILLION = 1_000_000


class Rates(BaseModel):
    """Prices per token kind, USD per million tokens: an entry's own, or its long-prompt band's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_write: float | None = Field(default=None, ge=0)
    """Absent: cache writes are billed as input."""
    cache_read: float | None = Field(default=None, ge=0)
    """Absent: a reply that reports cache reads costs "unknown"."""
    thinking: float | None = Field(default=None, ge=0)
    """Absent: thinking tokens are output tokens (they are counted in output_tokens)."""


class LongPrompt(Rates):
    """The prices of a request whose prompt (input_tokens: cache writes and reads among it) is over `above` tokens,
    for every token of it, output included. Its kinds stand alone: an absent one follows the rules above at this
    band's own input and output prices, never the entry's."""

    above: StrictInt = Field(gt=0)


class Price(Rates):
    """One model's prices, USD per million tokens."""

    long_prompt: LongPrompt | None = None
    """Present: a request whose prompt is over its `above` tokens pays its prices instead, on all of its tokens."""
    taken: datetime.date
    source: str = Field(pattern=r"^https://")

    def at(self, prompt_tokens: int) -> Rates:
        """The prices a request whose prompt has `prompt_tokens` pays: the long-prompt band's over its `above`."""
        band = self.long_prompt
        return band if band is not None and prompt_tokens > band.above else self


@dataclass(frozen=True, slots=True)
class Cost:
    usd: float

    def as_json(self) -> dict[str, float]:
        return {"usd": self.usd}


Table = dict[str, dict[str, Price]]


def read_prices(path: Path) -> Table:
    """A prices file's table; DiagramInvalid naming each wrong entry's file:line and field."""
    data, lines = read_yaml(path)
    file = str(path)
    if not isinstance(data, dict):
        raise DiagramInvalid([Problem(file, lines.line(()), "a prices file is a mapping: vendor -> model -> prices",
                                      code="prices")])
    table: Table = {}
    problems: list[Problem] = []
    for vendor, models in data.items():
        if not isinstance(models, dict):
            problems.append(Problem(file, lines.line((vendor,)), f"'{vendor}' is a mapping of models to prices",
                                    field=str(vendor), code="prices"))
            continue
        table[str(vendor)] = {}
        for model, entry in models.items():
            try:
                table[str(vendor)][str(model)] = Price.model_validate(entry)
            except ValidationError as exc:
                problems.extend(_problems(file, lines, (vendor, model), exc))
    if problems:
        raise DiagramInvalid(problems)
    return table


def _problems(file: str, lines: LineMap, at: tuple[Any, ...], exc: ValidationError) -> list[Problem]:
    found = []
    for error in exc.errors():
        where = at + tuple(error["loc"])
        name = ".".join(str(part) for part in where)
        found.append(Problem(file, lines.line(where), str(error["msg"]).lower(), field=name, code="prices"))
    return found


@lru_cache(maxsize=1)
def _table() -> Table:
    table = read_prices(PRICES_FILE)
    own = os.environ.get("DIAGRAMA_PRICES")
    if own:
        for vendor, models in read_prices(Path(own)).items():
            table[vendor] = {**table.get(vendor, {}), **models}
    return table


def check_prices() -> None:
    """Read the table now (prices.yaml and DIAGRAMA_PRICES): DiagramInvalid naming each wrong entry, before a run."""
    _table()


def reset_prices() -> None:
    """Forget the table read so far: the next look-up reads prices.yaml and DIAGRAMA_PRICES again."""
    _table.cache_clear()
    price_of.cache_clear()


@lru_cache(maxsize=256)
def price_of(vendor: str, model: str) -> Price | None:
    """The model's prices: its own name's entry, else the longest pattern that matches it; None when none."""
    models = _table().get(vendor)
    if not models:
        return None
    exact = models.get(model)
    if exact is not None:
        return exact
    matches = [pattern for pattern in models if "*" in pattern and fnmatch.fnmatchcase(model, pattern)]
    return models[max(matches, key=len)] if matches else None


def cost_of(vendor: str, model: str, usage: dict[str, int]) -> Cost | None:
    """What a request with `usage` (input_tokens, output_tokens and the kinds beside them) cost; None: unknown.

    input_tokens counts the whole prompt, cache writes and reads among it; output_tokens counts thinking. A model
    with a long-prompt band costs its prices when input_tokens is over the band's `above`, on every token.
    """
    price = price_of(vendor, model)
    if price is None:
        return None
    return _cost(price.at(usage.get("input_tokens", 0)), usage)


def _cost(price: Rates, usage: dict[str, int]) -> Cost | None:
    written = usage.get("cache_write_tokens", 0)
    read = usage.get("cache_read_tokens", 0)
    if read and price.cache_read is None:
        return None
    thinking = usage.get("thinking_tokens", 0) if price.thinking is not None else 0
    fresh = max(usage.get("input_tokens", 0) - written - read, 0)
    total = (fresh * price.input
             + written * (price.input if price.cache_write is None else price.cache_write)
             + read * (price.cache_read or 0.0)
             + (usage.get("output_tokens", 0) - thinking) * price.output
             + thinking * (price.thinking or 0.0))
    return Cost(round(total / _MILLION, 9))


FILE_TOKENS = 1_600
"""What a budget's estimate counts for one image or document part: about what a page-sized image costs at the
vendors (a document's pages are not counted before it is sent)."""


def estimate(vendor: str, model: str, body: dict[str, Any], files: list[int],
             max_tokens: int | None) -> tuple[int, float | None]:
    """What a request may spend at most, for a budget's check before it is sent: (tokens, USD or None when the
    model has no price). Input: about four characters a token of its JSON body, less each file part's data
    (`files`: each file part's data length in the body, its base64 or URL text) and FILE_TOKENS for it; output: its
    `max_tokens` (None: none counted; the vendor's own default bounds it). A model with a long-prompt band: its
    prices whenever the prompt could be over the band's `above` (see below)."""
    import orjson

    characters = len(orjson.dumps(body)) - sum(files)
    tokens_in = max(1, characters // 4) + FILE_TOKENS * len(files)
    tokens_out = max_tokens or 0
    price = price_of(vendor, model)
    if price is None:
        return tokens_in + tokens_out, None
    # The band: never the cheaper one when the prompt could be over its `above`. tokens_in guesses four characters a
    # token, but a token may be as short as one (its body's characters bound its text's tokens), and a file part's
    # tokens are not known before it is sent (a document's pages are not counted at all): so the long-prompt band
    # whenever the body has more characters than `above`, or any file part; else the band of tokens_in.
    band = price.long_prompt
    rates: Rates = band if band is not None and (characters > band.above or files) else price.at(tokens_in)
    cost = _cost(rates, {"input_tokens": tokens_in, "output_tokens": tokens_out})
    return tokens_in + tokens_out, None if cost is None else cost.usd
