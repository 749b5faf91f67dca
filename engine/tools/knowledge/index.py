"""A knowledge base: its folder's documents kept indexed (only changed files chunked and embedded again), and search.

`refresh` hashes each file the base includes, re-reads only those whose hash changed, drops the chunks of
removed ones, and embeds what it chunked; a run refreshes a base at its first retrieval (so a new base is
built then), and `diagrama index` does it ahead. `retrieve` ranks the chunks through search.py's
PassageIndex (words and embeddings fused) among those a metadata filter keeps.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from engine.format.knowledge import KnowledgeSpec
from engine.tools.knowledge.chunks import Chunk, chunk_sections
from engine.tools.knowledge.documents import DocumentError, read_document
from engine.tools.knowledge.store import IndexStore, index_url

if TYPE_CHECKING:
    from engine.tools.embeddings import Embedder
    from engine.tools.knowledge.search import PassageIndex

__all__ = ["IndexReport", "KnowledgeBase", "Passage", "Progress"]

_SETTINGS_VERSION = 1
"""Raised when chunking changes: every index is then cut again."""
_EMBED_BATCH = 256


class Progress(Protocol):
    """What a console shows while a base is indexed (the CLI's bar); the index calls it, never prints."""

    def start(self, name: str, total: int) -> None: ...

    def advance(self) -> None: ...

    def stop(self) -> None: ...


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What one refresh did: files added, changed, removed and left; chunks made and embedded; the total kept."""

    name: str
    files: int
    added: int
    changed: int
    removed: int
    unchanged: int
    chunked: int
    embedded: int
    chunks: int
    seconds: float
    failed: tuple[tuple[str, str], ...] = ()
    """Files that could not be read: (source, why); they keep no chunks."""


@dataclass(frozen=True, slots=True)
class Passage:
    """A retrieved chunk with its scores: the fused score, and its lexical and embedding parts."""

    chunk: Chunk
    score: float
    lexical: float
    embedding: float

    def row(self) -> dict[str, Any]:
        chunk = self.chunk
        return {"text": chunk.text, "source": chunk.source, "line": chunk.line, "page": chunk.page,
                "score": round(self.score, 6), "lexical": round(self.lexical, 6),
                "embedding": round(self.embedding, 6), "metadata": chunk.metadata}


class _Loaded:
    """A base's chunks and their search index, as the last refresh left them."""

    __slots__ = ("chunks", "filtered", "search")

    def __init__(self, chunks: list[Chunk], search: PassageIndex) -> None:
        self.chunks = chunks
        self.search = search
        self.filtered: dict[str, list[int]] = {}


def _matches(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, list | tuple):
        return any(_matches(value, one) for one in wanted)
    if isinstance(value, list):
        return any(_matches(item, wanted) for item in value)
    return value == wanted or (value is not None and str(value) == str(wanted))


class KnowledgeBase:
    """One declared knowledge base: a folder, the file patterns it reads, how it chunks; indexed on demand."""

    def __init__(self, name: str, spec: KnowledgeSpec, folder: Path, *, declared_in: str = "",
                 line: int | None = None, environ: Mapping[str, str] | None = None) -> None:
        self.name = name
        self.spec = spec
        self.folder = folder
        self.declared_in = declared_in
        self.line = line
        self.environ = os.environ if environ is None else environ
        self.embedder: Embedder | None = None
        """The embedder its passages are ranked with (None: search.py's default, chosen at first use)."""
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()

    def store(self) -> IndexStore:
        return IndexStore(*index_url(self.folder, self.environ))

    def documents(self) -> list[tuple[str, Path]]:
        """The files the base includes, (path relative to the folder with '/', path), in order; dot files left out."""
        found = []
        for directory, folders, names in os.walk(self.folder):
            folders[:] = sorted(name for name in folders if not name.startswith("."))
            for name in sorted(names):
                if name.startswith(".") or not any(fnmatch.fnmatch(name, pattern) for pattern in self.spec.include):
                    continue
                path = Path(directory) / name
                found.append((path.relative_to(self.folder).as_posix(), path))
        return found

    def _embedder(self) -> Embedder:
        if self.embedder is None:
            from engine.tools.knowledge.search import default_embedder

            self.embedder = default_embedder()
        return self.embedder

    # A refresh reads the store's hashes, then each file: unchanged ones cost a hash, the others are read, chunked,
    # embedded and written in one transaction each (so an interrupted index keeps every file it finished).
    def refresh(self, progress: Progress | None = None) -> IndexReport:
        """Bring the index up to the folder's files; what it did."""
        began = time.perf_counter()
        store = self.store()
        chunk = self.spec.chunk
        settings = f"v{_SETTINGS_VERSION} size={chunk.size} overlap={chunk.overlap}"
        if store.settings() != settings:
            store.reset(settings)
        known = store.hashes()
        documents = self.documents()
        present = {source for source, _ in documents}
        removed = sorted(set(known) - present)
        if removed:
            store.remove_files(removed)
        embedder = self._embedder()
        added = changed = chunked = embedded = 0
        failed: list[tuple[str, str]] = []
        if progress is not None:
            progress.start(self.name, len(documents))
        try:
            for source, path in documents:
                hashed = hashlib.sha256(path.read_bytes()).hexdigest()
                if known.get(source) != hashed:
                    added, changed = (added + 1, changed) if source not in known else (added, changed + 1)
                    made = self._chunks(source, path, failed)
                    matrix = _embed(embedder, [c.text for c in made]) if made else None
                    store.replace_file(source, hashed, made, embedder.name, matrix)
                    chunked += len(made)
                    embedded += len(made)
                if progress is not None:
                    progress.advance()
        finally:
            if progress is not None:
                progress.stop()
        with self._lock:
            self._loaded = None
        return IndexReport(self.name, len(documents), added, changed, len(removed), len(documents) - added - changed,
                           chunked, embedded, store.count(), time.perf_counter() - began, tuple(failed))

    def _chunks(self, source: str, path: Path, failed: list[tuple[str, str]]) -> list[Chunk]:
        try:
            sections = read_document(path)
        except (DocumentError, OSError) as exc:
            failed.append((source, str(exc)))
            return []
        return chunk_sections(sections, source, self.spec.chunk.size, self.spec.chunk.overlap)

    def _load(self, store: IndexStore) -> _Loaded:
        """The chunks and their search index, embeddings read from the store (those missing embedded and stored)."""
        import numpy as np

        from engine.tools.knowledge.search import PassageIndex

        with self._lock:
            if self._loaded is not None:
                return self._loaded
            embedder = self._embedder()
            keyed = store.chunks()
            stored = store.vectors(embedder.name)
            texts = [chunk.text for _, chunk in keyed]
            if keyed and all(key in stored for key, _ in keyed):
                matrix = np.vstack([np.frombuffer(stored[key], dtype=np.float32) for key, _ in keyed])
                search = PassageIndex(texts, embedder, vectors=matrix)
            else:
                search = PassageIndex(texts, embedder)
                missing = [(position, key) for position, (key, _) in enumerate(keyed) if key not in stored]
                if missing:
                    store.put_vectors([key for _, key in missing], embedder.name,
                                      np.asarray(search.vectors)[[position for position, _ in missing]])
            self._loaded = _Loaded([chunk for _, chunk in keyed], search)
            return self._loaded

    @property
    def ready(self) -> bool:
        """Whether the base has been indexed and loaded in this process (a retrieval then costs milliseconds)."""
        return self._loaded is not None

    def loaded(self, progress: Progress | None = None) -> _Loaded:
        """The base ready to search: refreshed from its folder at first use in this process."""
        found = self._loaded
        if found is None:
            self.refresh(progress)
            found = self._load(self.store())
        return found

    def retrieve(self, query: str, top_k: int = 5, min_score: float = 0.0,
                 filter: Mapping[str, Any] | None = None) -> list[Passage]:
        """The `top_k` best passages for `query` scoring at least `min_score`, among those `filter` keeps (each
        field a metadata key, or `source`; a list value: any of them)."""
        loaded = self.loaded()
        among = self._among(loaded, filter) if filter else None
        if among is not None and not among:
            return []
        hits = loaded.search.search(query, top_k=top_k, among=among)
        return [Passage(loaded.chunks[hit.index], hit.score, hit.lexical, hit.embedding)
                for hit in hits if hit.score >= min_score]

    @staticmethod
    def _among(loaded: _Loaded, filter: Mapping[str, Any]) -> list[int]:
        key = repr(sorted(filter.items()))
        found = loaded.filtered.get(key)
        if found is None:
            found = [position for position, chunk in enumerate(loaded.chunks)
                     if all(_matches(chunk.source if name == "source" else chunk.metadata.get(name), wanted)
                            for name, wanted in filter.items())]
            if len(loaded.filtered) < 256:  # a run's filters are few; one made from free text is not kept forever
                loaded.filtered[key] = found
        return found


def _embed(embedder: Embedder, texts: Sequence[str]) -> Any:
    import numpy as np

    parts = [embedder.embed(texts[at:at + _EMBED_BATCH]) for at in range(0, len(texts), _EMBED_BATCH)]
    return np.vstack(parts).astype(np.float32)
