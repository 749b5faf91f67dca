"""Data tables in their three written forms, and the history rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import DataTable, InputError, TableError, history_rows, history_table, to_table


def test_list_of_mappings() -> None:
    table = to_table([{"role": "user", "content": "oi"}, {"role": "assistant", "content": "olá", "name": None}])
    assert table.columns == ("role", "content", "name")
    assert table.rows == [("user", "oi", None), ("assistant", "olá", None)]


def test_columns_and_rows() -> None:
    table = to_table({"columns": ["a", "b"], "rows": [[1, 2], [3, 4]]})
    assert table.records() == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]


def test_csv_relative_to_the_diagram(tmp_path: Path) -> None:
    (tmp_path / "h.csv").write_text("quem;texto\nuser;Onde está o pedido?\nassistant;Já vou ver.\n", encoding="utf-8")
    table = to_table({"csv": "h.csv"}, tmp_path)
    assert table.columns == ("quem", "texto")
    assert len(table) == 2
    rows = history_rows(table)  # no role/content headers: the first two columns are used
    assert [(r.role, r.content) for r in rows] == [("user", "Onde está o pedido?"), ("assistant", "Já vou ver.")]


def test_ragged_row_is_an_error() -> None:
    with pytest.raises(TableError, match="row 2 has 1 cells but the table has 2 columns"):
        to_table({"columns": ["a", "b"], "rows": [[1, 2], [3]]})


def test_ragged_csv_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n3\n")
    with pytest.raises(TableError, match=r"bad.csv:3"):
        to_table({"csv": "bad.csv"}, tmp_path)


def test_bad_role_is_an_error() -> None:
    with pytest.raises(TableError, match="role 'robot'"):
        history_rows(to_table([{"role": "robot", "content": "x"}]))


def test_tool_row_needs_its_columns() -> None:
    with pytest.raises(TableError, match="no tool_call_id or name column"):
        history_rows(to_table([{"role": "tool", "content": "{}"}]))


def test_four_column_tool_history_round_trips() -> None:
    written = [
        {"role": "user", "content": "Where are my orders?"},
        {"role": "assistant", "content": '{"order_id": 42}', "tool_call_id": "c1", "name": "get_order_status"},
        {"role": "tool", "content": '{"status": "shipped"}', "tool_call_id": "c1", "name": "get_order_status"},
    ]
    rows = history_rows(to_table(written))
    assert rows[1].is_tool_call and rows[2].role == "tool"
    table = history_table(rows)
    assert table.columns == ("role", "content", "tool_call_id", "name")
    assert history_rows(table) == rows


def test_signature_column_is_kept() -> None:
    rows = history_rows(to_table([{"role": "assistant", "content": "{}", "tool_call_id": "x", "name": "f",
                                   "signature": "SIG"}]))
    assert rows[0].signature == "SIG"
    assert history_table(rows).columns[-1] == "signature"


def test_not_a_table() -> None:
    with pytest.raises(TableError):
        to_table(42)
    with pytest.raises(TableError, match="expected"):
        to_table({"rows": []})


def test_table_equality_and_append() -> None:
    table = DataTable(["role", "content"], [["user", "a"]])
    assert table == [{"role": "user", "content": "a"}]
    longer = table + [{"role": "assistant", "content": "b"}]  # noqa: RUF005  # DataTable.__add__ under test
    assert len(longer) == 2 and len(table) == 1


def test_table_error_is_one_class_wherever_it_is_imported_from() -> None:
    import engine.errors
    import engine.format.tables

    assert engine.errors.TableError is engine.format.tables.TableError is TableError
    assert issubclass(TableError, InputError) and TableError.type == "invalid_table"
    with pytest.raises(InputError):
        to_table("not a table")


def test_csv_outside_the_folder_is_refused_without_reading_it(tmp_path: Path) -> None:
    folder = tmp_path / "diagram"
    folder.mkdir()
    (tmp_path / "secret.csv").write_text("a,b\nSECRET,1,2\n", encoding="utf-8")
    for written in ("../secret.csv", str(tmp_path / "secret.csv")):
        with pytest.raises(TableError, match="leaves the diagram's folder") as caught:
            to_table({"csv": written}, folder)
        assert caught.value.type == "path_outside_folder"
        assert "SECRET" not in caught.value.message and "cells" not in caught.value.message


def test_csv_in_a_data_root_is_read(tmp_path: Path) -> None:
    from engine.format.paths import DataFolder

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "h.csv").write_text("role,content\nuser,oi\n", encoding="utf-8")
    (tmp_path / "diagram").mkdir()
    folder = DataFolder(tmp_path / "diagram", (tmp_path / "data",))
    assert len(to_table({"csv": str(tmp_path / "data" / "h.csv")}, folder)) == 1
    assert len(to_table({"csv": "../data/h.csv"}, folder)) == 1


def test_csv_field_past_the_csv_module_limit_is_a_table_error(tmp_path: Path) -> None:
    (tmp_path / "big.csv").write_text('a\n"' + "x" * 200_000 + '"\n', encoding="utf-8")
    with pytest.raises(TableError, match=r"big.csv:\d+: not readable as CSV"):
        to_table({"csv": "big.csv"}, tmp_path)
