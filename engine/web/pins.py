"""The studio's pinned outputs (engine.testing.pins): list a diagram's pins, pin a block's output (from a past run's
step, or typed), unpin it; and the pinned vendors a studio run of the diagram asks instead of a pinned block's vendor.

Pins are a scenario file beside the diagram, so the routes that change them write a file (refused under
--read-only). RunRoutes holds them, as the pins take part in its runs. Answers' models are here, beside the routes
(engine.web.api_schema joins them into the page's types).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from engine.format.links import written_ids
from engine.format.yamlfile import read_yaml
from engine.testing.pins import PinnedVendors, pin_reply, pins_file, read_pins, write_pins
from engine.web.files import Folder, FolderError
from engine.web.http import answer, json_body
from engine.web.models import Answer

__all__ = ["Pin", "PinRoutes", "Pins"]

Guarded = Callable[[Callable[[Request], Awaitable[Response]]], Callable[[Request], Awaitable[Response]]]

_MAX_PIN = 200_000


class Pin(Answer):
    """One pinned block: its reply as the scenario scripts it (`text`, or a structured `output`)."""

    block: str
    text: str | None = None
    output: Any = None


class Pins(Answer):
    """A diagram's pins: the scenario file they are kept in (relative to the folder; None when there are none)."""

    file: str | None
    pins: list[Pin]


class PinRoutes:
    """The pins routes, and one PinnedVendors per diagram, its pins read again from the file at each run's start."""

    def __init__(self, folder: Folder) -> None:
        self.folder = folder
        self._vendors: dict[Path, PinnedVendors] = {}

    def routes(self, handle: Guarded, writes: Guarded) -> list[Route]:
        """The routes, each behind the app's guard (`writes`: refused under --read-only)."""
        at = "/api/diagrams/{path:path}/pins"
        return [Route(at, handle(self.listing), methods=["GET"]), Route(f"{at}/{{block}}", writes(self.put), methods=["PUT"]),
                Route(f"{at}/{{block}}", writes(self.delete), methods=["DELETE"])]

    def vendors_for(self, diagram: Path) -> PinnedVendors | None:
        """What a run of `diagram` asks for its pinned blocks (Services.pins); None when none is pinned."""
        pins, _ = read_pins(diagram)
        if not pins:
            return None
        vendors = self._vendors.setdefault(diagram, PinnedVendors())
        vendors.set(pins)
        return vendors

    def _pins(self, diagram: Path) -> Pins:
        pins, _ = read_pins(diagram)
        file = pins_file(diagram)
        return Pins(file=self.folder.relative(file) if pins else None,
                    pins=[Pin(block=block, text=reply.get("text"), output=reply.get("output"))
                          for block, reply in pins.items()])

    async def listing(self, request: Request) -> Response:
        diagram = self.folder.diagram(request.path_params["path"])
        return answer(await asyncio.to_thread(self._pins, diagram))

    async def put(self, request: Request) -> Response:
        """Pin `{output}` (text, or a structured answer) for the block; `inputs`, when sent, are the scenario's."""
        diagram = self.folder.diagram(request.path_params["path"])
        block = request.path_params["block"]
        payload = await json_body(request)
        if "output" not in payload or payload["output"] is None:
            raise FolderError(422, "send {\"output\": the block's answer (text, or a structured answer)}")
        if len(repr(payload["output"])) > _MAX_PIN:
            raise FolderError(413, "a pinned output is at most 200,000 characters")
        inputs = payload.get("inputs")
        if inputs is not None and not isinstance(inputs, dict):
            raise FolderError(422, "inputs: {name: value}")

        def work() -> Pins:
            data, _ = read_yaml(diagram)
            if block not in written_ids(data):
                raise FolderError(422, f"the diagram has no block '{block}'")
            pins, kept = read_pins(diagram)
            write_pins(diagram, {**pins, block: pin_reply(payload["output"])}, kept if inputs is None else inputs)
            return self._pins(diagram)

        return answer(await asyncio.to_thread(work))

    async def delete(self, request: Request) -> Response:
        diagram = self.folder.diagram(request.path_params["path"])
        block = request.path_params["block"]

        def work() -> Pins:
            pins, inputs = read_pins(diagram)
            if block not in pins:
                raise FolderError(404, f"block '{block}' has no pinned output")
            write_pins(diagram, {b: reply for b, reply in pins.items() if b != block}, inputs)
            return self._pins(diagram)

        return answer(await asyncio.to_thread(work))
