"""Knowledge bases: documents read and chunked (documents, chunks), indexed in SQL (store, index), searched (search).

A diagram or registry file declares them (`knowledge:`, bases.py); Retrieve and `diagrama index` use them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.format.lazy import lazy_face

if TYPE_CHECKING:
    from engine.tools.knowledge.bases import declared_bases
    from engine.tools.knowledge.chunks import Chunk, chunk_sections, split_text
    from engine.tools.knowledge.documents import DocumentError, Section, read_document
    from engine.tools.knowledge.index import IndexReport, KnowledgeBase, Passage, Progress
    from engine.tools.knowledge.store import INDEX_FILE, IndexStore

_HOMES = {
    "engine.tools.knowledge.bases": ["declared_bases"],
    "engine.tools.knowledge.chunks": ["Chunk", "chunk_sections", "split_text"],
    "engine.tools.knowledge.documents": ["DocumentError", "Section", "read_document"],
    "engine.tools.knowledge.index": ["IndexReport", "KnowledgeBase", "Passage", "Progress"],
    "engine.tools.knowledge.store": ["INDEX_FILE", "IndexStore"],
}

__getattr__, __dir__ = lazy_face(__name__, _HOMES, globals())

__all__ = ["INDEX_FILE", "Chunk", "DocumentError", "IndexReport", "IndexStore", "KnowledgeBase", "Passage", "Progress",
           "Section", "chunk_sections", "declared_bases", "read_document", "split_text"]
