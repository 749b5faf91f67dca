"""What prompt caching saves: a 10-turn chat's cost with and without `cache: true`, in the simulator's figures.

In process, offline: diagrams/cached_chat.yaml (a long handbook as the system text, the history
carried from turn to turn as a session's memory is) runs ten turns on one set of services, so
that the simulated Anthropic keeps its cache between them as the vendor does within its five
minutes. Once as written (Start's `cache: true`) and once with `cache: false`. Each turn is
priced by engine/providers/prices.yaml (cache writes at 1.25× the input price, reads at 0.1×).
Prints one JSON line per variant and one with the saving in %; the target is at least 50%.

    python -m benchmarks.prompt_cache [--turns 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from blocks.registry import registry
from engine import Services, execute
from engine.compile.loader import load_diagram_text

ROOT = Path(__file__).resolve().parent.parent
DIAGRAM = ROOT / "diagrams" / "cached_chat.yaml"
MESSAGES = (
    "Hello! My order has not arrived yet. What can you do?",
    "The order number is BW-20417 and I live in Lyon.",
    "The tracking link has shown no movement since last Tuesday.",
    "Can you send a replacement instead of a refund?",
    "One of the glasses in my previous order arrived broken, too.",
    "I can send a photograph of the glass and of the box this evening.",
    "Will I have to pay anything to send the broken glass back?",
    "And if the replacement arrives damaged again?",
    "Could you also tell me how long the kettle's guarantee is?",
    "Thank you, that is all for today.",
)
TARGET_SAVING = 50.0


async def chat(text: str, turns: int) -> dict[str, Any]:
    """The chat's `turns` turns, each a run with the last run's history: their cost and tokens, summed."""
    diagram = load_diagram_text(text, DIAGRAM, registry())
    services = Services(offline=True)  # one simulator for every turn: the vendor's cache outlives a run
    history: list[Any] = []
    usd = 0.0
    tokens: dict[str, int] = {}
    for turn in range(turns):
        result = await execute(diagram, {"message": MESSAGES[turn % len(MESSAGES)]}, runs_dir=None,
                               services=services, remembered={"history": history})
        assert result.succeeded, result.errors
        history = result.variables["history"]
        usd += result.cost["usd"]
        for kind, count in result.usage.items():
            tokens[kind] = tokens.get(kind, 0) + count
    return {"usd": round(usd, 6), **tokens}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--turns", type=int, default=10)
    options = parser.parse_args()
    cached_text = DIAGRAM.read_text(encoding="utf-8")
    if "    cache: true" not in cached_text:
        raise SystemExit(f"{DIAGRAM} no longer says `cache: true` on Start")
    plain_text = cached_text.replace("    cache: true", "    cache: false", 1)
    plain = asyncio.run(chat(plain_text, options.turns))
    cached = asyncio.run(chat(cached_text, options.turns))
    saving = 100 * (1 - cached["usd"] / plain["usd"])
    print(json.dumps({"benchmark": "prompt_cache", "variant": "without cache", "turns": options.turns, **plain}))
    print(json.dumps({"benchmark": "prompt_cache", "variant": "cache: true", "turns": options.turns, **cached}))
    print(json.dumps({"benchmark": "prompt_cache", "turns": options.turns, "saving_percent": round(saving, 1),
                      "target_percent": TARGET_SAVING, "met": saving >= TARGET_SAVING}))


if __name__ == "__main__":
    main()
