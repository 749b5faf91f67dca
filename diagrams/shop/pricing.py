"""Prices for the order-quote example: plain functions a Function block calls (README, "Function")."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

# What a Postgres `numeric` column gives: Decimals. The block turns them into JSON numbers, never "Decimal('…')".
_ORDERS: dict[int, list[tuple[str, Decimal, int]]] = {
    42: [("Kettle", Decimal("39.90"), 2), ("Teapot", Decimal("40.70"), 1)],
    57: [("Mug", Decimal("7.25"), 4)],
}


def quote(order_id: int, currency: str = "EUR") -> dict[str, Any]:
    """The order's lines and total; LookupError for an order the shop does not have."""
    lines = _ORDERS.get(order_id)
    if lines is None:
        raise LookupError(f"no order {order_id}")
    return {
        "order_id": order_id,
        "currency": currency,
        "lines": [{"item": item, "price": price, "quantity": quantity} for item, price, quantity in lines],
        "total": sum((price * quantity for _, price, quantity in lines), Decimal(0)),
    }
