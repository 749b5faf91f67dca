"""The `cite` filter: retrieved passages (Retrieve's `result`) as a numbered context with their sources, for a prompt.

`{{ passages | cite }}` gives `[1] text (source: refunds.md, line 12)` blocks, one per passage, so that a
model can answer citing [1], [2]… Pure text work; knows nothing of the index.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["cite"]


def _where(passage: Mapping[str, Any]) -> str:
    source = passage.get("source")
    parts = [str(source)] if source else []
    if passage.get("page"):
        parts.append(f"page {passage['page']}")
    elif passage.get("line"):
        parts.append(f"line {passage['line']}")
    return f" (source: {', '.join(parts)})" if parts else ""


def cite(passages: Any, start: int = 1) -> str:
    """Each passage as `[n] its text (source: file, line n)`, numbered from `start`, separated by blank lines; a row
    that is text alone is cited as it is. Nothing (''), for no passages."""
    if passages is None:
        return ""
    rows: Iterable[Any] = [passages] if isinstance(passages, str | Mapping) else passages
    cited = []
    for number, passage in enumerate(rows, start=start):
        if isinstance(passage, Mapping):
            text = " ".join(str(passage.get("text", "")).split())
            cited.append(f"[{number}] {text}{_where(passage)}")
        else:
            cited.append(f"[{number}] {' '.join(str(passage).split())}")
    return "\n\n".join(cited)
