"""An example shop's tool handlers (the code a registry's `handler:` names)."""

from __future__ import annotations

from typing import Any

_ORDERS: dict[int, dict[str, Any]] = {
    42: {"status": "shipped", "carrier": "DHL", "shipped_on": "2026-12-01"},
    57: {"status": "packing", "ships": "2026-12-03"},
}


def get_order_status(order_id: int) -> dict[str, Any]:
    if order_id not in _ORDERS:
        raise LookupError(f"there is no order {order_id}")
    return {"order_id": order_id, **_ORDERS[order_id]}


def list_recent_orders(customer_email: str, limit: int = 5) -> list[dict[str, Any]]:
    return [{"order_id": order_id, "status": order["status"]} for order_id, order in list(_ORDERS.items())[:limit]]


def cancel_order(order_id: int, reason: str = "") -> dict[str, Any]:
    if order_id not in _ORDERS:
        raise LookupError(f"there is no order {order_id}")
    if _ORDERS[order_id]["status"] == "shipped":
        return {"order_id": order_id, "cancelled": False, "why": "already shipped; a return can be opened instead"}
    return {"order_id": order_id, "cancelled": True}


def change_delivery_address(order_id: int, address: str) -> dict[str, Any]:
    return {"order_id": order_id, "address": address, "changed": _ORDERS.get(order_id, {}).get("status") != "shipped"}


class Returns:
    """The seed's shape: a class plus a data method."""

    def open_return(self, order_id: int, reason: str) -> dict[str, Any]:
        return {"order_id": order_id, "return_id": f"R-{order_id}-1", "label": "sent by e-mail"}


def track_parcel(tracking_code: str) -> dict[str, Any]:
    return {"tracking_code": tracking_code, "last_scan": "Porto hub", "eta_days": 1}


def product_stock(sku: str) -> dict[str, Any]:
    return {"sku": sku, "in_stock": 12}


def product_price(sku: str) -> dict[str, Any]:
    return {"sku": sku, "price_eur": 39.9}
