"""json_result: what user code returns, as JSON data, exactly; anything else a clear error, never a repr."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import uuid
from decimal import Decimal

import orjson
import pytest
from pydantic import BaseModel

from engine import BlockError, dumps, json_result


@dataclasses.dataclass
class Line:
    sku: str
    price: Decimal


class Order(BaseModel):
    id: uuid.UUID
    placed: datetime.date
    lines: list[Line]
    tags: set[str]


class Colour(enum.Enum):
    RED = "red"


def test_decimals_keep_their_value_exactly() -> None:
    assert json_result(Decimal("120.50")) == 120.5
    assert json_result(Decimal("1E+3")) == 1000 and type(json_result(Decimal("42.000"))) is int
    many = Decimal("12345678901234567890.123456789")  # more digits than a float holds: kept, written whole
    assert json_result(many) is many
    assert dumps({"n": json_result(many)}) == b'{"n":12345678901234567890.123456789}'


def test_dates_uuids_bytes_models_dataclasses_sets_and_enums() -> None:
    notes: list[str] = []
    value = {
        "at": datetime.datetime(2025, 3, 1, 9, 30, tzinfo=datetime.UTC), "day": datetime.date(2025, 3, 1),
        "time": datetime.time(9, 30), "raw": bytearray(b"\x00\x01"), "colour": Colour.RED,
        "order": Order(id=uuid.UUID(int=7), placed=datetime.date(2025, 1, 2), lines=[Line("a", Decimal("9.90"))],
                       tags={"b", "a"}),
        3: ("x", frozenset({2, 1})),
    }
    assert json_result(value, notes) == {
        "at": "2025-03-01T09:30:00+00:00", "day": "2025-03-01", "time": "09:30:00", "raw": "AAE=", "colour": "red",
        "order": {"id": "00000000-0000-0000-0000-000000000007", "placed": "2025-01-02",
                  "lines": [{"sku": "a", "price": 9.9}], "tags": ["a", "b"]},
        "3": ["x", [1, 2]],
    }
    assert notes == ["result.raw: 2 bytes written as base64 text"]
    assert orjson.loads(dumps(json_result(value)))["order"]["lines"][0]["price"] == 9.9


@pytest.mark.parametrize(("value", "where", "what"), [
    ({"a": [1, object()]}, "result.a[1]", "a value of type object cannot be turned into JSON"),
    ({"when": datetime.timedelta(1)}, "result.when", "datetime.timedelta"),
    ({"n": Decimal("NaN")}, "result.n", "the Decimal NaN has no JSON form"),
    ({(1, 2): "pair"}, "result", "a key of type tuple"),
])
def test_anything_else_is_an_unserializable_result_naming_the_type_and_place(value, where, what) -> None:
    with pytest.raises(BlockError) as caught:
        json_result(value)
    assert caught.value.type == "unserializable_result"
    assert caught.value.message.startswith(f"{where}: ") and what in caught.value.message
    assert " at 0x" not in caught.value.message


def test_a_result_that_contains_itself_is_refused() -> None:
    looped: list[object] = []
    looped.append(looped)
    with pytest.raises(BlockError, match=r"result\[0\]: contains itself"):
        json_result(looped)
