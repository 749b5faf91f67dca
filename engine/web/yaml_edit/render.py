"""Rendering new values as YAML text in the file's own style.

Owns the file's indentation (learnt by the span scan) and the choice of flow or block
style per key, for values the file does not have yet and for whole new diagrams.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.web.yaml_edit.checks import Unsupported
from engine.web.yaml_edit.scalars import dq, plain_ok, scalar

# New collections are written in flow style only when the line stays this short.
FLOW_WIDTH = 100


@dataclass
class Indents:
    """The file's block indentation: `blocks:\\n  - id` is sequence 4, offset 2."""

    mapping: int = 2
    sequence: int = 4
    offset: int = 2


def _block_order(block: dict[str, Any]) -> list[str]:
    # A new block reads like the others: who it is and where it sits first.
    head = [k for k in ("id", "type", "label", "position") if k in block]
    return head + [k for k in block if k not in head]


class Renderer:
    """Writes new values in the file's style (indentation, and flow or block per key)."""

    def __init__(self, indents: Indents, styles: dict[tuple[str, bool], bool]) -> None:
        self.indents = indents
        self.styles = styles

    def key(self, key: str, flow: bool = False) -> str:
        if len(key) > 1000:
            raise Unsupported("implicit keys are limited to 1024 characters")
        return key if plain_ok(key, flow, key=True) else dq(key)

    def flow(self, value: Any) -> str:
        if isinstance(value, dict):
            return "{" + ", ".join(f"{self.key(k, True)}: {self.flow(v)}" for k, v in value.items()) + "}"
        if isinstance(value, list):
            return "[" + ", ".join(self.flow(v) for v in value) + "]"
        return scalar(value, flow=True)

    def wants_flow(self, key: str | None, value: Any, col: int, prefer: bool | None = None) -> bool:
        if not value:
            return True
        scalars_only = isinstance(value, list) and all(not isinstance(v, dict | list) for v in value)
        if key == "position" and scalars_only:
            return True
        if prefer is None and key is not None:
            prefer = self.styles.get((key, isinstance(value, dict)))  # how the file writes this key's mappings or lists
        if prefer is None:
            prefer = scalars_only
        return prefer and col + len(key or "") + 2 + len(self.flow(value)) <= FLOW_WIDTH

    def after_key(self, key: str, value: Any, col: int, prefer: bool | None = None) -> str:
        """The text after a key at column `col`, from its ':' on (no final newline)."""
        if isinstance(value, dict | list):
            if self.wants_flow(key, value, col, prefer):
                return ": " + self.flow(value)
            if isinstance(value, dict):
                return ":\n" + "\n".join(self.entry(k, v, col + self.indents.mapping) for k, v in value.items())
            # The diagram's blocks are separated by blank lines, as in the examples.
            sep = "\n\n" if key == "blocks" and col == 0 else "\n"
            dash = col + self.indents.offset
            return ":\n" + sep.join(self.item(v, dash, key) for v in value)
        return ": " + scalar(value, flow=False, block_col=col + self.indents.mapping)

    def entry(self, key: str, value: Any, col: int) -> str:
        return " " * col + self.key(key) + self.after_key(key, value, col)

    def item(self, value: Any, dash: int, parent_key: str | None = None) -> str:
        """A sequence item with its dash at column `dash` (no final newline)."""
        col = dash + max(2, self.indents.sequence - self.indents.offset)
        lead = " " * dash + "-" + " " * (col - dash - 1)
        if isinstance(value, dict) and value and not self.wants_flow(None, value, col):
            keys = _block_order(value) if parent_key == "blocks" else list(value)
            return lead + "\n".join(self.entry(k, value[k], col) for k in keys)[col:]
        if isinstance(value, list) and value and not self.wants_flow(None, value, col):
            return lead + "\n".join(self.item(v, col) for v in value)[col:]
        if isinstance(value, dict | list):
            return lead + self.flow(value)
        return lead + scalar(value, flow=False, block_col=col)

    def document(self, value: dict[str, Any]) -> str:
        return "".join(self.entry(k, v, 0) + "\n" for k, v in value.items())
