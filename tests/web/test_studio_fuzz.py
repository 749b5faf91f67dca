"""5,000 random JSON bodies at the studio's edit and validate endpoints: not one answer of 500 or more.

The bodies are made from a seeded generator (the same every run; `python -m benchmarks.safety` sends them to a
real server): whole random values, and the order agent
with a few of its values, keys or blocks replaced by random ones (a block that is a number, an id that is a list,
`next` that is a mapping, ...), as a broken page or a hostile script would send them. Saves (PUT) go to a copy of
the diagram with the hash it has at that moment, so those that are accepted are written and the next ones edit
the result.
"""

from __future__ import annotations

import asyncio
import random
import shutil
from pathlib import Path

import httpx
import pytest

from benchmarks.safety import mutated, random_value
from blocks.registry import registry
from engine.web.app import create_app
from tests.web.studio_client import HEADERS, ROOT, TOKEN

pytestmark = pytest.mark.slow  # 5,000 random request bodies

BODIES = 5000


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
