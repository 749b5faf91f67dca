"""5,000 random JSON bodies at the studio's edit and validate endpoints: not one answer of 500 or more.

The bodies are made from a seeded generator (the same every run): whole random values, and the order agent
with a few of its values, keys or blocks replaced by random ones (a block that is a number, an id that is a list,
`next` that is a mapping, ...), as a broken page or a hostile script would send them. Saves (PUT) go to a copy of
the diagram with the hash it has at that moment, so those that are accepted are written and the next ones edit
the result.
"""

from __future__ import annotations

import asyncio
import copy
import random
import shutil
from pathlib import Path
from typing import Any

import httpx

from blocks.registry import registry
from engine.web.app import create_app
from tests.web.test_studio_api import HEADERS, ROOT, TOKEN

BODIES = 5000
KEYS = ["diagram", "blocks", "id", "type", "next", "on_error", "body", "with", "set", "position", "to", "when",
        "inputs", "variables", "tools", "error_level", "message_level", "label", "description", "timeout", "x"]


def random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(12 if depth < 4 else 8)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2**53 + 1, 10**30, -(10**30), rng.randrange(-1000, 1000)])
    if kind == 3:
        return rng.choice([0.5, -0.0, 1e308, -1e308, 3.14])
    if kind in (4, 5, 6, 7):
        return rng.choice(["", "start", "ask", "done", "Start", "Set", "ClaudeRequest", "Loop", "{{ x", "{{ 1/0 }}",
                           "{% for %}", "a" * 300, "é\u2028\x00", "[1]", "{a: 1}", "- x", "*alias", "&anchor x",
                           "Handle", "Debug", "registry/orders.yaml", "../../etc/passwd", "{{ tools('orders') }}"])
    if kind in (8, 9):
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(KEYS): random_value(rng, depth + 1) for _ in range(rng.randrange(4))}


def mutated(rng: random.Random, diagram: dict[str, Any]) -> Any:
    """The diagram with one to four random changes: a value, a key, a block replaced or removed, a block added."""
    found = copy.deepcopy(diagram)
    for _ in range(rng.randrange(1, 5)):
        blocks = found.get("blocks") if isinstance(found, dict) else None
        choice = rng.randrange(6)
        if choice == 0 and isinstance(blocks, list) and blocks:
            blocks[rng.randrange(len(blocks))] = random_value(rng)
        elif choice == 1 and isinstance(blocks, list) and blocks:
            block = blocks[rng.randrange(len(blocks))]
            if isinstance(block, dict):
                block[rng.choice(KEYS)] = random_value(rng)
        elif choice == 2 and isinstance(blocks, list) and blocks:
            block = blocks[rng.randrange(len(blocks))]
            if isinstance(block, dict) and block:
                block.pop(rng.choice(list(block)))
        elif choice == 3 and isinstance(found, dict):
            found[rng.choice(KEYS)] = random_value(rng)
        elif choice == 4 and isinstance(blocks, list):
            blocks.insert(rng.randrange(len(blocks) + 1), random_value(rng))
        elif isinstance(found, dict) and found:
            found.pop(rng.choice(list(found)))
    return found


def test_5000_random_bodies_get_no_5xx(tmp_path: Path) -> None:
    folder = tmp_path / "diagrams"
    shutil.copytree(ROOT / "diagrams", folder, ignore=shutil.ignore_patterns("*.embeddings.json", "__pycache__"))
    shutil.copy(folder / "order_agent.yaml", folder / "fuzz.yaml")
    app = create_app(folder, tmp_path / "runs", registry(), token=TOKEN)
    rng = random.Random(25)

    async def go() -> dict[int, int]:
        statuses: dict[int, int] = {}
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8765") as c:
            original = (await c.get("/api/diagrams/order_agent.yaml")).json()["diagram"]
            for number in range(BODIES):
                draft = mutated(rng, original) if rng.random() < 0.8 else random_value(rng)
                if number % 5 == 4:  # a save of the copy, from the hash it has now
                    current = (await c.get("/api/diagrams/fuzz.yaml/hash")).json().get("hash", "x")
                    body = {"base_hash": current, "diagram": draft} if rng.random() < 0.9 else draft
                    answer = await c.put("/api/diagrams/fuzz.yaml", json=body, headers=HEADERS)
                    if answer.status_code == 404:  # a save made it something else than a diagram: start again
                        shutil.copy(folder / "order_agent.yaml", folder / "fuzz.yaml")
                else:
                    body = {"diagram": draft, "path": rng.choice(["order_agent.yaml", "new.yaml", "../x.yaml"])} \
                        if rng.random() < 0.9 else draft
                    answer = await c.post("/api/validate", json=body, headers=HEADERS)
                assert answer.status_code < 500, (answer.status_code, answer.text[:500], body)
                assert isinstance(answer.json(), dict)
                statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
        return statuses

    statuses = asyncio.run(go())
    assert sum(statuses.values()) == BODIES and not [status for status in statuses if status >= 500]
    assert statuses.get(200, 0) > BODIES // 2  # most were answered with problems, not refused
