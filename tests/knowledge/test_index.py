"""The knowledge index: only changed files chunked and embedded again, removed files dropped, filters, stores."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from engine.format.knowledge import ChunkSpec, KnowledgeSpec
from engine.tools.embeddings import HashedNgramEmbedder
from engine.tools.knowledge.index import KnowledgeBase
from engine.tools.knowledge.store import INDEX_FILE


class Counting:
    """An embedder that counts the texts it embeds (hashed n-grams: fast, no weights)."""

    def __init__(self) -> None:
        self.inner = HashedNgramEmbedder(256)
        self.name = self.inner.name
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> Any:
        self.texts += len(texts)
        return self.inner.embed(texts)


def base(folder: Path, embedder: Counting, environ: dict[str, str] | None = None, **spec: Any) -> KnowledgeBase:
    made = KnowledgeBase("shop", KnowledgeSpec(folder=str(folder), **spec), folder, environ=environ or {})
    made.embedder = embedder
    return made


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    (kb / "pt").mkdir(parents=True)
    (kb / "refunds.md").write_text("---\nlang: en\n---\n# Refunds\n\nReturns within 30 days of delivery.\n",
                                   encoding="utf-8")
    (kb / "shipping.txt").write_text("We ship to every country in the European Union.\n", encoding="utf-8")
    (kb / "pt" / "devolucoes.md").write_text("---\nlang: pt\n---\n# Devoluções\n\nDevoluções em 30 dias.\n",
                                             encoding="utf-8")
    (kb / "products.csv").write_text("sku,name,lang\nA1,Blue mug,en\nB2,Caneca azul,pt\n", encoding="utf-8")
    (kb / "notes.docx").write_text("not included", encoding="utf-8")
    return kb


def test_only_changed_files_are_chunked_and_embedded_again(folder: Path) -> None:
    embedder = Counting()
    first = base(folder, embedder).refresh()
    assert (first.files, first.added, first.chunks, first.embedded) == (4, 4, 5, 5)
    assert embedder.texts == 5
    assert (folder / INDEX_FILE).is_file()

    again = base(folder, embedder).refresh()
    assert (again.added, again.changed, again.removed, again.unchanged, again.embedded) == (0, 0, 0, 4, 0)
    assert embedder.texts == 5  # nothing read or embedded again

    (folder / "shipping.txt").write_text("We ship to the EU and to the UK.\n", encoding="utf-8")
    (folder / "products.csv").unlink()
    (folder / "faq.jsonl").write_text('{"text": "Gift wrapping is free."}\n', encoding="utf-8")
    changed = base(folder, embedder).refresh()
    assert (changed.added, changed.changed, changed.removed, changed.unchanged) == (1, 1, 1, 2)
    assert (changed.embedded, changed.chunks) == (2, 4)  # the new and the changed file's passages; the rows gone
    assert embedder.texts == 7


def test_a_run_embeds_nothing_the_index_holds(folder: Path) -> None:
    embedder = Counting()
    base(folder, embedder).refresh()
    searched = base(folder, embedder)
    passages = searched.retrieve("returns within 30 days", top_k=2)
    assert passages[0].chunk.source == "refunds.md" and passages[0].chunk.line == 4
    assert embedder.texts == 5 + 1  # the query alone


def test_another_chunk_size_chunks_every_file_again(folder: Path) -> None:
    embedder = Counting()
    base(folder, embedder).refresh()
    report = base(folder, embedder, chunk=ChunkSpec(size=400, overlap=40)).refresh()
    assert (report.added, report.embedded) == (4, 5)


def test_filters_keep_passages_by_metadata_and_source(folder: Path) -> None:
    searched = base(folder, Counting())
    assert {p.chunk.source for p in searched.retrieve("30 days", top_k=10, filter={"lang": "pt"})} == \
        {"pt/devolucoes.md", "products.csv"}
    assert [p.chunk.metadata["sku"] for p in searched.retrieve("mug", filter={"sku": ["B2", "C3"]})] == ["B2"]
    assert [p.chunk.source for p in searched.retrieve("ship", filter={"source": "shipping.txt"})] == ["shipping.txt"]
    assert searched.retrieve("ship", filter={"lang": "it"}) == []


def test_min_score_and_top_k(folder: Path) -> None:
    searched = base(folder, Counting())
    assert len(searched.retrieve("returns", top_k=2)) == 2
    kept = searched.retrieve("returns within 30 days of delivery", top_k=10, min_score=0.5)
    assert kept and all(p.score >= 0.5 for p in kept)


def test_an_unreadable_file_is_reported_and_keeps_no_passages(folder: Path) -> None:
    (folder / "broken.jsonl").write_text("not json\n", encoding="utf-8")
    report = base(folder, Counting()).refresh()
    assert [(source, why.split(" (")[0]) for source, why in report.failed] == [("broken.jsonl", "line 1 is not JSON")]
    assert report.chunks == 5


def test_postgresql_holds_the_index_when_the_run_store_is_there(folder: Path, postgres_url: str) -> None:
    embedder = Counting()
    environ = {"DIAGRAMA_STORE": postgres_url}
    assert base(folder, embedder, environ).refresh().embedded == 5
    assert not (folder / INDEX_FILE).exists()
    assert base(folder, embedder, environ).refresh().unchanged == 4
    assert base(folder, embedder, environ).retrieve("ship to the EU")[0].chunk.source == "shipping.txt"
