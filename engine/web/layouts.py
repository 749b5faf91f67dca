"""Automatic layouts the page computed (ELK), remembered by the server for the next page that opens the same graph.

ELK runs in the page, and its first layout in a fresh page is the slow part of opening a large diagram (its code
is compiled on the way). A page that laid a graph out stores the result here under the SHA-256 of the layout graph
it gave ELK; a page that opens the same graph (a reload, another tab, another browser) takes it instead of running
ELK again. Memory only, a few dozen graphs, each bounded: nothing is written to the folder (the YAML files stay
the source of truth, and a layout is only where blocks without `position` are drawn).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from engine.web.files import FolderError
from engine.web.http import answer, read_body
from engine.web.models import LayoutAnswer

__all__ = ["LayoutCache"]

_KEY = re.compile(r"^[0-9a-f]{64}$")
_KEPT = 32
_MAX_LAYOUT = 2 * 1024 * 1024  # a 1,000-block layout is about 300 kB


class LayoutCache:
    """The last layouts stored, by graph key."""

    def __init__(self, size: int = _KEPT) -> None:
        self._layouts: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._size = size

    @staticmethod
    def _key(request: Request) -> str:
        key = request.path_params["key"]
        if not _KEY.match(key):
            raise FolderError(404, "not found")
        return str(key)

    async def get(self, request: Request) -> Response:
        layout = self._layouts.get(self._key(request))
        if layout is None:
            raise FolderError(404, "no layout stored for this graph")
        return answer(LayoutAnswer(layout=layout))

    async def put(self, request: Request) -> Response:
        key = self._key(request)
        try:
            payload = orjson.loads(await read_body(request, _MAX_LAYOUT))
        except orjson.JSONDecodeError:
            raise FolderError(400, "the request body is not JSON") from None
        layout = payload.get("layout") if isinstance(payload, dict) else None
        if not isinstance(layout, dict) or not isinstance(layout.get("nodes"), dict) or not isinstance(layout.get("edges"), dict):
            raise FolderError(422, "send {\"layout\": {\"nodes\": {...}, \"edges\": {...}}}")
        self._layouts[key] = layout
        self._layouts.move_to_end(key)
        while len(self._layouts) > self._size:
            self._layouts.popitem(last=False)
        return Response(status_code=204)
