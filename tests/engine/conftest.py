"""Fixtures of the durable-run tests (test_durable.py, test_durable_children.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from blocks.registry import BUILTIN_BLOCKS
from engine import BlockRegistry
from engine.runs.checkpoints import CheckpointStore, open_checkpoints
from tests.engine.durable_support import Tick


@pytest.fixture
def blocks() -> BlockRegistry:
    """The built-in blocks and Tick, its log emptied."""
    Tick.log.clear()
    return BlockRegistry((*BUILTIN_BLOCKS, Tick))


@pytest.fixture
def store(store_url: str, tmp_path: Path) -> Iterator[CheckpointStore]:
    """The checkpoint store on each kind of database (tests/conftest.py's `store_url`: SQLite, PostgreSQL)."""
    opened = open_checkpoints(store_url, tmp_path / "runs")
    yield opened
    opened.close()
