"""The tools table `tools(...)` yields: rows a model is offered, with each ranked tool's scores for the trace."""

from __future__ import annotations

from typing import Any

from engine.format.tables import DataTable, to_table
from engine.tools.ranking import ToolScore

__all__ = ["ToolsTable"]


class ToolsTable(DataTable):
    """A tools table that remembers each ranked tool's scores, for the Debug trace.

    The scores travel with the rows: `tools('a', query=q) + tools('b', query=q)` keeps both
    tables' scores, and a slice keeps those of its rows.
    """

    __slots__ = ("parts",)

    def __init__(self, columns: tuple[str, ...], rows: list[tuple[Any, ...]], parts: dict[str, ToolScore]) -> None:
        super().__init__(columns, rows)
        self.parts = parts

    @property
    def scores(self) -> dict[str, float]:
        """Each ranked tool's fused score, by name."""
        return {name: part.score for name, part in self.parts.items()}

    @property
    def selected_tools(self) -> list[dict[str, Any]]:
        """The `tools_selected` event's rows: name, fused score, and its lexical and embedding parts."""
        return [{"name": name, **part.fields()} for name, part in self.parts.items()]

    def __add__(self, other: object) -> DataTable:
        joined = super().__add__(other)
        parts = {**self.parts, **(other.parts if isinstance(other, ToolsTable) else {})}
        return self._keeping(joined, parts)

    def __radd__(self, other: object) -> DataTable:
        """`[{...}] + tools(...)`: rows written in the template, then the selected ones."""
        joined = DataTable.__add__(to_table(other, files=False), self)
        return self._keeping(joined, self.parts)

    def __getitem__(self, index: int | slice) -> Any:
        item = super().__getitem__(index)
        return self._keeping(item, self.parts) if isinstance(item, DataTable) else item

    @staticmethod
    def _keeping(table: DataTable, parts: dict[str, ToolScore]) -> DataTable:
        """`table` as a ToolsTable with the scores of the tools it still holds."""
        names = set(table.column("name")) if "name" in table.columns else set()
        return ToolsTable(table.columns, table.rows, {name: part for name, part in parts.items() if name in names})
