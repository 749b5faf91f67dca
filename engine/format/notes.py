"""The `notes:` list of a diagram: the studio's sticky notes and labelled frames, studio-only data.

Only the model; the engine reads the list's shape and nothing else (no note changes a run).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["NoteSpec"]


class NoteSpec(BaseModel):
    """A sticky note on the canvas (Markdown text), or with `frame: true` a labelled frame drawn behind blocks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(default="", description="Markdown (a frame: its label)")
    x: float = Field(description="left edge, in canvas units")
    y: float = Field(description="top edge, in canvas units")
    width: float = Field(default=240, gt=0, le=20000)
    height: float = Field(default=120, gt=0, le=20000)
    color: str | None = Field(default=None, max_length=32, description="a colour name (yellow, blue, green, pink, "
                                                                        "purple, grey) or a CSS colour")
    frame: bool = Field(default=False, description="a labelled frame that groups the blocks inside it")
