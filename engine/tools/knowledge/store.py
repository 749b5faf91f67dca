"""Where a knowledge base's index lives: its files' hashes, their chunks, and the chunks' embeddings per embedder.

SQLite beside the documents (`<folder>/.diagrama-index.sqlite`) by default; any SQLAlchemy URL otherwise
(the run store's PostgreSQL, `$DIAGRAMA_STORE`, holds every base's rows keyed by its folder). A file's
chunks and vectors are replaced in one transaction, so a crash leaves each file's index whole or absent.
Embeddings are float32 bytes. Reading files and embedding are index.py's.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    JSON,
    Column,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    delete,
    event,
    func,
    insert,
    select,
)

from engine.format.sqlite_files import sqlite_pragmas
from engine.tools.knowledge.chunks import Chunk

if TYPE_CHECKING:
    import numpy as np
    from sqlalchemy.engine import Engine

__all__ = ["INDEX_FILE", "IndexStore", "index_url"]

INDEX_FILE = ".diagrama-index.sqlite"
"""The SQLite index's name in the knowledge folder (a dot file: the folder's listing leaves it out)."""

metadata = MetaData()
bases = Table(
    "knowledge_bases", metadata,
    Column("base", String(1000), primary_key=True),
    Column("settings", Text, nullable=False),  # how its chunks were cut: other settings mean chunking again
)
files = Table(
    "knowledge_files", metadata,
    Column("base", String(1000), primary_key=True),
    Column("source", String(1000), primary_key=True),
    Column("hash", String(64), nullable=False),
)
chunks = Table(
    "knowledge_chunks", metadata,
    Column("base", String(1000), primary_key=True),
    Column("source", String(1000), primary_key=True),
    Column("ordinal", Integer, primary_key=True),
    Column("text", Text, nullable=False),
    Column("line", Integer),
    Column("page", Integer),
    Column("metadata", JSON),
)
vectors = Table(
    "knowledge_vectors", metadata,
    Column("base", String(1000), primary_key=True),
    Column("source", String(1000), primary_key=True),
    Column("ordinal", Integer, primary_key=True),
    Column("embedder", String(200), primary_key=True),
    Column("vector", LargeBinary, nullable=False),
)


def index_url(folder: Path, environ: Mapping[str, str]) -> tuple[str, str]:
    """The index's database URL and the base's key in it: the run store's PostgreSQL when `$DIAGRAMA_STORE` names
    one (keyed by the folder's path), else SQLite in the folder (keyed '.': the folder may move)."""
    configured = environ.get("DIAGRAMA_STORE", "")
    if configured.startswith("postgresql"):
        return configured, str(folder.resolve())
    return f"sqlite:///{folder.resolve() / INDEX_FILE}", "."


_ENGINES: dict[str, Engine] = {}
_ENGINES_LOCK = threading.Lock()


def _engine(url: str) -> Engine:
    """One engine per URL in a process, its tables made on first use."""
    with _ENGINES_LOCK:
        found = _ENGINES.get(url)
        if found is None:
            found = create_engine(url)
            if url.startswith("sqlite"):
                event.listen(found, "connect", sqlite_pragmas)  # readers (runs) go on while `diagrama index` writes
            metadata.create_all(found)
            _ENGINES[url] = found
        return found


class IndexStore:
    """One knowledge base's rows in the index database."""

    def __init__(self, url: str, base: str) -> None:
        self.url = url
        self.base = base
        self.engine = _engine(url)

    def settings(self) -> str | None:
        with self.engine.connect() as connection:
            return connection.execute(select(bases.c.settings).where(bases.c.base == self.base)).scalar()

    def reset(self, settings: str) -> None:
        """Forget every file of the base (its chunks were cut otherwise) and record the new settings."""
        with self.engine.begin() as connection:
            for table in (vectors, chunks, files, bases):
                connection.execute(delete(table).where(table.c.base == self.base))
            connection.execute(insert(bases).values(base=self.base, settings=settings))

    def hashes(self) -> dict[str, str]:
        """Each indexed file's content hash, by source."""
        with self.engine.connect() as connection:
            rows = connection.execute(select(files.c.source, files.c.hash).where(files.c.base == self.base))
            return {source: hashed for source, hashed in rows}

    def replace_file(self, source: str, hashed: str, found: Sequence[Chunk], embedder: str | None,
                     matrix: np.ndarray | None) -> None:
        """A file's chunks (and their vectors by `embedder`) in place of what it had, in one transaction."""
        base = self.base
        with self.engine.begin() as connection:
            for table in (vectors, chunks, files):
                connection.execute(delete(table).where(table.c.base == base, table.c.source == source))
            connection.execute(insert(files).values(base=base, source=source, hash=hashed))
            if found:
                connection.execute(insert(chunks), [
                    {"base": base, "source": source, "ordinal": ordinal, "text": chunk.text, "line": chunk.line,
                     "page": chunk.page, "metadata": chunk.metadata} for ordinal, chunk in enumerate(found)])
            if found and embedder is not None and matrix is not None:
                self._insert_vectors(connection, [(source, ordinal) for ordinal in range(len(found))], embedder, matrix)

    def remove_files(self, sources: Sequence[str]) -> None:
        with self.engine.begin() as connection:
            for table in (vectors, chunks, files):
                for source in sources:
                    connection.execute(delete(table).where(table.c.base == self.base, table.c.source == source))

    def chunks(self) -> list[tuple[tuple[str, int], Chunk]]:
        """Every chunk of the base, by file then position, each with its key (source, ordinal)."""
        query = (select(chunks.c.source, chunks.c.ordinal, chunks.c.text, chunks.c.line, chunks.c.page,
                        chunks.c.metadata).where(chunks.c.base == self.base)
                 .order_by(chunks.c.source, chunks.c.ordinal))
        with self.engine.connect() as connection:
            return [((source, ordinal), Chunk(text, source, line, page, found or {}))
                    for source, ordinal, text, line, page, found in connection.execute(query)]

    def count(self) -> int:
        """How many chunks the base holds."""
        with self.engine.connect() as connection:
            return int(connection.execute(select(func.count()).select_from(chunks).where(
                chunks.c.base == self.base)).scalar() or 0)

    def vectors(self, embedder: str) -> dict[tuple[str, int], bytes]:
        """The stored embeddings by `embedder`, float32 bytes, by chunk key."""
        query = select(vectors.c.source, vectors.c.ordinal, vectors.c.vector).where(
            vectors.c.base == self.base, vectors.c.embedder == embedder)
        with self.engine.connect() as connection:
            return {(source, ordinal): vector for source, ordinal, vector in connection.execute(query)}

    def put_vectors(self, keys: Sequence[tuple[str, int]], embedder: str, matrix: np.ndarray) -> None:
        """Embeddings of chunks that had none by `embedder` (another embedder's run, or an index built without)."""
        with self.engine.begin() as connection:
            self._insert_vectors(connection, keys, embedder, matrix)

    def _insert_vectors(self, connection: Any, keys: Sequence[tuple[str, int]], embedder: str,
                        matrix: np.ndarray) -> None:
        import numpy as np

        rows = np.ascontiguousarray(matrix, dtype=np.float32)
        connection.execute(insert(vectors), [
            {"base": self.base, "source": source, "ordinal": ordinal, "embedder": embedder,
             "vector": rows[position].tobytes()} for position, (source, ordinal) in enumerate(keys)])
