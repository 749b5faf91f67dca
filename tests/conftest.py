"""Shared fixtures: test-only blocks, a registry with them, and a no-network guard."""

from __future__ import annotations

import asyncio
import socket
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from blocks.registry import BUILTIN_BLOCKS
from engine import Block, BlockError, BlockRegistry, Diagram, RunContext, RunResult, execute, read_events
from engine.compile.loader import load_diagram


class EchoInputs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: Any = None
    count: int = 0


class EchoOutputs(BaseModel):
    result: Any = None
    count: int = 0


class Echo(Block):
    """Test block: returns its inputs as outputs."""

    Inputs = EchoInputs
    Outputs = EchoOutputs

    async def run(self, inputs: EchoInputs, context: RunContext) -> dict[str, Any]:
        return {"result": inputs.value, "count": inputs.count}


class FailInputs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str = "it broke"
    crash: bool = False


class Fail(Block):
    """Test block: raises a BlockError, or a plain exception with crash: true."""

    Inputs = FailInputs
    Outputs = EchoOutputs

    async def run(self, inputs: FailInputs, context: RunContext) -> dict[str, Any]:
        if inputs.crash:
            raise ValueError(inputs.message)
        raise BlockError(inputs.message, type="test_failure")


class SleepInputs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seconds: float = 1.0


class Sleep(Block):
    """Test block: waits."""

    Inputs = SleepInputs

    async def run(self, inputs: SleepInputs, context: RunContext) -> dict[str, Any]:
        await asyncio.sleep(inputs.seconds)
        return {}


TEST_BLOCKS = (Echo, Fail, Sleep)


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection to a non-loopback address fails loudly."""
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and not (host.startswith("127.") or host in ("localhost", "::1")) \
                and self.family != socket.AF_UNIX:
            raise RuntimeError(f"test tried to reach the network: {address!r}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


@pytest.fixture
def registry() -> BlockRegistry:
    return BlockRegistry((*BUILTIN_BLOCKS, *TEST_BLOCKS))


@pytest.fixture
def write(tmp_path: Path) -> Callable[..., Path]:
    def write_file(text: str, name: str = "diagram.yaml") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    return write_file


class Runner:
    def __init__(self, registry: BlockRegistry, tmp_path: Path) -> None:
        self.registry = registry
        self.runs_dir = tmp_path / "runs"
        self.tmp_path = tmp_path

    def load(self, path: Path) -> Diagram:
        return load_diagram(path, self.registry)

    def run(self, diagram: Diagram | Path, inputs: dict[str, Any] | None = None, **options: Any) -> RunResult:
        if isinstance(diagram, Path):
            diagram = self.load(diagram)
        options.setdefault("runs_dir", self.runs_dir)
        return asyncio.run(execute(diagram, inputs, **options))

    def events(self, result: RunResult) -> list[dict[str, Any]]:
        assert result.trace is not None
        return read_events(result.trace)


@pytest.fixture
def runner(registry: BlockRegistry, tmp_path: Path) -> Iterator[Runner]:
    yield Runner(registry, tmp_path)


# -- checkpoint stores: the SQLite file, and a real PostgreSQL where its binaries are installed ----------------------
@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Any]:
    """A throwaway PostgreSQL cluster for the session (tests/postgres.py); skips only where its binaries are absent."""
    from tests.postgres import postgres_binaries, start_cluster

    if postgres_binaries() is None:
        pytest.skip("PostgreSQL's initdb and pg_ctl are absent (apt-get install postgresql)")
    cluster = start_cluster()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_cluster: Any) -> Iterator[str]:
    """A fresh database of the session's cluster, as a SQLAlchemy URL; dropped after the test."""
    with postgres_cluster.database() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The run store's URL, and so the checkpoint store's: the runs folder's SQLite file, then PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs' / 'diagrama.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow as well: every test on PostgreSQL (a database of its own, on the session's cluster: `store_url`'s second
    value, `postgres_url`) and every browser test. `-m "not slow"` is then the core: SQLite, in-process."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        on_postgres = "postgres_url" in fixtures or "postgres_cluster" in fixtures or "[postgresql" in item.name \
            or "-postgresql" in item.name
        if on_postgres or item.get_closest_marker("browser") is not None:
            item.add_marker(pytest.mark.slow)
