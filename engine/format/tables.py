"""Data tables (named columns and rows) and the chat-history rules built on them.

A table is written as a list of mappings, as ``{columns, rows}`` or as ``{csv: path}``;
in a template it behaves as a list of row mappings. Vendor formats are not known here.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import orjson
from pydantic import PlainValidator, ValidationInfo, WithJsonSchema

from engine.errors import TableError
from engine.format.parts import Part, PartsError, part_text, parts_of
from engine.format.paths import DataFolder, PathRefused

__all__ = [
    "HISTORY_COLUMNS",
    "ROLES",
    "DataTable",
    "HistoryRow",
    "Table",
    "TableError",
    "csv_dialect",
    "history_rows",
    "history_table",
    "to_table",
]

ROLES = ("system", "user", "assistant", "tool")
HISTORY_COLUMNS = ("role", "content", "tool_call_id", "name")


class DataTable:
    """Named columns and rows; iterates as row mappings, as templates expect."""

    __slots__ = ("columns", "rows", "source")

    def __init__(self, columns: Sequence[str], rows: Sequence[Sequence[Any]] = (), *,
                 source: tuple[str, Sequence[int]] | None = None) -> None:
        self.source: tuple[str, tuple[int, ...]] | None = (source[0], tuple(source[1])) if source else None
        """The CSV file the rows were read from, and the line each row starts on; None for a written table."""
        self.columns: tuple[str, ...] = tuple(columns)
        width = len(self.columns)
        checked: list[tuple[Any, ...]] = []
        for number, row in enumerate(rows, start=1):
            if len(row) != width:
                raise TableError(
                    f"row {number} has {len(row)} cells but the table has {width} columns "
                    f"({', '.join(self.columns)})"
                )
            checked.append(tuple(row))
        self.rows: list[tuple[Any, ...]] = checked

    @classmethod
    def from_records(cls, records: Sequence[Mapping[str, Any]]) -> DataTable:
        columns: dict[str, None] = {}
        for number, record in enumerate(records, start=1):
            if not isinstance(record, Mapping):
                raise TableError(
                    f"row {number} is {type(record).__name__}, not a mapping of column names to values",
                    )
            for key in record:
                columns.setdefault(str(key), None)
        names = tuple(columns)
        return cls(names, [tuple(record.get(name) for name in names) for record in records])

    def __len__(self) -> int:
        return len(self.rows)

    def __bool__(self) -> bool:
        return bool(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        columns = self.columns
        for row in self.rows:
            yield dict(zip(columns, row, strict=True))

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            source = (self.source[0], self.source[1][index]) if self.source else None
            return DataTable(self.columns, self.rows[index], source=source)
        return dict(zip(self.columns, self.rows[index], strict=True))

    def row_error(self, number: int, message: str) -> TableError:
        """A TableError about row `number` (1-based), at its CSV file and line when the table came from one."""
        if self.source is not None and 0 < number <= len(self.source[1]):
            return TableError(message, row=number, file=self.source[0], line=self.source[1][number - 1])
        return TableError(message, row=number)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DataTable):
            return self.columns == other.columns and self.rows == other.rows
        if isinstance(other, list):
            return self.records() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable rows: like a list, not hashable

    def __add__(self, other: object) -> DataTable:
        """`history + [{role: user, content: ...}]` in a template appends rows (never a CSV file's)."""
        extra = to_table(other, files=False)
        if extra.columns == self.columns:
            return DataTable(self.columns, [*self.rows, *extra.rows])
        return DataTable.from_records([*self.records(), *extra.records()])

    def __repr__(self) -> str:
        return f"DataTable(columns={list(self.columns)!r}, rows={len(self.rows)})"

    def records(self) -> list[dict[str, Any]]:
        return list(self)

    def column(self, name: str) -> list[Any]:
        try:
            position = self.columns.index(name)
        except ValueError as exc:
            raise TableError(f"the table has no column '{name}' (columns: {', '.join(self.columns)})") from exc
        return [row[position] for row in self.rows]


def csv_dialect(text: str) -> Any:
    """The file's delimiter: spreadsheets in Portuguese and Italian locales export with ';'."""
    try:
        return csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        return csv.excel  # one column, or nothing to tell by


def _read_csv(written: str, base_dir: Path | DataFolder | None) -> DataTable:
    folder = base_dir if isinstance(base_dir, DataFolder) else DataFolder(base_dir if base_dir is not None else Path())
    try:
        resolved = folder.resolve(written)
    except PathRefused as exc:
        raise TableError(f"CSV file: {exc}", type="path_outside_folder") from None
    path = folder.folder / written  # named as written in messages; read where it resolved
    try:
        text = resolved.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise TableError(f"cannot read CSV file {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise TableError(f"CSV file {path} is not UTF-8 text") from exc
    if not text.strip():
        return DataTable(())
    reader = csv.reader(io.StringIO(text), csv_dialect(text))
    rows: list[list[str]] = []
    lines: list[int] = []  # where each row starts: a quoted cell may span lines, and blank lines are skipped
    try:
        header = next(reader)
        ended = reader.line_num
        for row in reader:
            if row:
                rows.append(row)
                lines.append(ended + 1)
            ended = reader.line_num
    except csv.Error as exc:  # a field past the csv module's size limit
        raise TableError(f"{path}:{reader.line_num}: not readable as CSV ({exc})") from exc
    width = len(header)
    for row, line in zip(rows, lines, strict=True):
        if len(row) != width:
            raise TableError(f"{path}:{line}: row has {len(row)} cells but the header has {width}")
    return DataTable([name.strip() for name in header], rows, source=(str(path), lines))


def to_table(value: Any, base_dir: Path | DataFolder | None = None, *, files: bool = True) -> DataTable:
    """Turn any of the written forms of a table into a DataTable.

    A `{csv: path}` is read only from inside `base_dir` (the diagram's folder, with its data
    roots when a DataFolder; the working directory when None): TableError `path_outside_folder` otherwise.
    With `files=False` (a table a template builds) no file is read at all.
    """
    if isinstance(value, DataTable):
        return value
    if value is None or value == "":
        return DataTable(())
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError as exc:
            raise TableError(
                "a table must be a list of mappings, {columns, rows} or {csv: path}, not text"
            ) from exc
        return to_table(value, base_dir, files=files)
    if isinstance(value, Mapping):
        if set(value) == {"csv"}:
            if not files:
                raise TableError("a table built in a template cannot read a CSV file", type="path_outside_folder")
            return _read_csv(str(value["csv"]), base_dir)
        if set(value) == {"columns", "rows"}:
            columns = value["columns"]
            rows = value["rows"]
            if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
                raise TableError("'columns' must be a list of column names")
            if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
                raise TableError("'rows' must be a list of rows, each a list of cells")
            return DataTable(columns, rows)
        raise TableError(
            f"a table mapping has keys {sorted(value)}; expected {{columns, rows}} or {{csv: path}}"
        )
    if isinstance(value, (list, tuple)):
        return DataTable.from_records(list(value))
    raise TableError(f"a table must be a list of mappings, {{columns, rows}} or {{csv: path}}, not {type(value).__name__}")


@dataclass(frozen=True, slots=True)
class HistoryRow:
    """One row of a chat history in its normal form.

    A user row whose content is a list of parts (text, images, documents) keeps them in `parts`,
    and its text parts, joined, in `content`.
    """

    role: str
    content: str
    tool_call_id: str | None = None
    name: str | None = None
    signature: str | None = None
    parts: tuple[Part, ...] = ()

    @classmethod
    def user(cls, message: str | tuple[Part, ...] | list[Part]) -> HistoryRow:
        """A user row of text, or of parts."""
        if isinstance(message, str):
            return cls("user", message)
        parts = tuple(message)
        return cls("user", part_text(parts), parts=parts)

    @property
    def is_tool_call(self) -> bool:
        return self.role == "assistant" and self.tool_call_id is not None


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _optional(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return str(value)


def history_rows(table: DataTable) -> list[HistoryRow]:
    """Normalise a history table: role/content columns, else the first two columns."""
    if not table.rows:
        return []
    columns = table.columns
    if "role" in columns and "content" in columns:
        role_at, content_at = columns.index("role"), columns.index("content")
    elif len(columns) >= 2:
        role_at, content_at = 0, 1
    else:
        raise TableError(
            "a history table needs a role and a content column "
            f"(it has {', '.join(columns) or 'none'})"
        )
    call_at = columns.index("tool_call_id") if "tool_call_id" in columns else None
    name_at = columns.index("name") if "name" in columns else None
    signature_at = columns.index("signature") if "signature" in columns else None
    rows: list[HistoryRow] = []
    for number, row in enumerate(table.rows, start=1):
        role = str(row[role_at]).strip().lower() if row[role_at] is not None else ""
        if role not in ROLES:
            raise table.row_error(
                number, f"history row {number} has role {row[role_at]!r}; a role is one of {', '.join(ROLES)}"
            )
        call_id = _optional(row[call_at]) if call_at is not None else None
        name = _optional(row[name_at]) if name_at is not None else None
        if role == "tool":
            missing = [c for c, at in (("tool_call_id", call_at), ("name", name_at)) if at is None]
            if missing:
                raise table.row_error(
                    number, f"history row {number} is a tool result but the table has no "
                    f"{' or '.join(missing)} column (tool histories have role, content, tool_call_id, name)"
                )
            if call_id is None or name is None:
                raise table.row_error(number, f"history row {number} is a tool result without tool_call_id and name")
        if role == "assistant" and call_id is not None and name is None:
            raise table.row_error(number, f"history row {number} is a tool call (tool_call_id set) without a name")
        content = row[content_at]
        if isinstance(content, (list, tuple)):  # a message of parts: text, images, documents
            if role != "user":
                raise table.row_error(number, f"history row {number} ({role}) has a list as content; only user rows "
                                              "hold parts (text, images, documents)")
            try:
                rows.append(HistoryRow.user(parts_of(content)))
            except PartsError as exc:
                raise table.row_error(number, f"history row {number}: {exc}") from None
            continue
        rows.append(
            HistoryRow(
                role=role,
                content=_cell_text(content),
                tool_call_id=call_id if role in ("assistant", "tool") else None,
                name=name if role in ("assistant", "tool") and call_id is not None else None,
                signature=_optional(row[signature_at]) if signature_at is not None else None,
            )
        )
    return rows


def history_table(rows: Sequence[HistoryRow]) -> DataTable:
    """Write normal-form rows back as a table (four columns, five when signatures exist); a row of parts keeps
    them as a list of part mappings in its content cell."""
    with_signature = any(row.signature for row in rows)
    columns = (*HISTORY_COLUMNS, "signature") if with_signature else HISTORY_COLUMNS
    cells = []
    for row in rows:
        content: Any = [part.model_dump(exclude_none=True) for part in row.parts] if row.parts else row.content
        cell = [row.role, content, row.tool_call_id, row.name]
        if with_signature:
            cell.append(row.signature)
        cells.append(cell)
    return DataTable(columns, cells)


def _table_input(value: Any, info: ValidationInfo) -> DataTable:
    base_dir = (info.context or {}).get("base_dir") if info.context else None
    try:
        return to_table(value, base_dir)
    except TableError as exc:
        raise ValueError(exc.message) from exc


Table = Annotated[DataTable, PlainValidator(_table_input), WithJsonSchema({
    "anyOf": [
        {"type": "array", "items": {"type": "object"}, "description": "a list of row mappings"},
        {"type": "object", "properties": {"columns": {"type": "array", "items": {"type": "string"}},
                                          "rows": {"type": "array", "items": {"type": "array"}}},
         "required": ["columns", "rows"]},
        {"type": "object", "properties": {"csv": {"type": "string"}}, "required": ["csv"]},
    ]
})]
"""A pydantic field type for a data table input; CSV paths are relative to the diagram."""
