"""The API and damaged store rows (issue 37, 7; tests/security/test_damaged_rows.py damages them and checks the command
line): reading such a run still answers, resuming it is a 409 naming the run and what is wrong, never a 500."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.test_durable_api import APPROVE
from tests.security.test_damaged_rows import HOW, damage


@pytest.mark.parametrize("how", HOW)
def test_the_api_answers_409_for_a_damaged_run_and_still_reads_it(make_app: Callable[..., Any], robots_dir: Path,
                                                                  tmp_path: Path,
                                                                  client: Callable[..., httpx.AsyncClient],
                                                                  how: str) -> None:
    (robots_dir / "approve.yaml").write_text(APPROVE.lstrip(), encoding="utf-8")
    app = make_app()

    async def go() -> tuple[str, httpx.Response, httpx.Response]:
        async with client(app) as caller:
            first = await caller.post("/v1/robots/approve/runs", json={"inputs": {"text": "ciao"}})
            run_id = first.json()["run_id"]
            damage(tmp_path / "runs" / "diagrama.db", run_id, how)
            read = await caller.get(f"/v1/runs/{run_id}")
            resumed = await caller.post(f"/v1/runs/{run_id}/resume", json={"answer": {"approved": True}})
            return run_id, read, resumed

    run_id, read, resumed = asyncio.run(go())
    assert read.status_code == 200, read.text
    assert resumed.status_code == 409, resumed.text
    assert f"run '{run_id}' cannot go on" in resumed.json()["error"] and "damaged" in resumed.json()["error"]
