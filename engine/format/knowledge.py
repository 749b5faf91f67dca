"""The `knowledge:` mapping of a diagram or a registry file: each knowledge base's folder, files and chunking.

Only the models; reading the files, chunking and the index are engine.tools.knowledge's.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["DEFAULT_INCLUDE", "KNOWLEDGE_NAME_PATTERN", "ChunkSpec", "KnowledgeSpec"]

DEFAULT_INCLUDE = ("*.md", "*.txt", "*.html", "*.pdf", "*.csv", "*.jsonl")
"""The file kinds a knowledge base reads when it names none."""

KNOWLEDGE_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]*$"


class ChunkSpec(BaseModel):
    """How a document is cut into passages: `size` characters at most, `overlap` of them repeated in the next."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    size: int = Field(default=800, ge=50, le=20000, description="characters a passage holds at most")
    overlap: int = Field(default=120, ge=0, description="characters of a passage repeated at the start of the next")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkSpec:
        if self.overlap >= self.size // 2:
            raise ValueError(f"overlap ({self.overlap}) must be less than half of size ({self.size})")
        return self


class KnowledgeSpec(BaseModel):
    """A knowledge base: the documents of a folder, cut into passages and indexed for Retrieve."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    folder: str = Field(min_length=1, description="the documents' folder, relative to this file; inside its folder "
                                                  "or a data root")
    include: tuple[str, ...] = Field(default=DEFAULT_INCLUDE, min_length=1,
                                     description="file name patterns to read (in every subfolder): .md, .txt, "
                                                 ".html, .pdf, .csv and .jsonl files")
    chunk: ChunkSpec = Field(default_factory=ChunkSpec, description="{size, overlap} in characters; headings start "
                                                                    "a new passage")
