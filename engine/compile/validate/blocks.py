"""Stage 1 and 2: the file's shape and each block's own keys, then one CompiledBlock per good block.

A block is checked alone here: its id, its type, its keys and its settings. Links between
blocks and templates are later stages.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from pydantic import BaseModel, ValidationError

from engine.compile.block import Block
from engine.compile.diagram import CompiledBlock
from engine.compile.validate.compilation import Compilation
from engine.format.names import suggest
from engine.format.spec import COMMON_BLOCK_KEYS, DEFAULTED_KEYS, BlockSpec, DiagramSpec

__all__ = ["build_blocks", "read_blocks"]

Where = tuple[str | int, ...]


class _Keys(NamedTuple):
    ports: frozenset[str]
    settings: frozenset[str]
    allowed: frozenset[str]
    """Every key a block of the type may have."""


_KEYS: dict[type[Block], _Keys] = {}


def _keys(cls: type[Block]) -> _Keys:
    """A block type's keys, worked out once per type (a diagram has many blocks of few types)."""
    found = _KEYS.get(cls)
    if found is None:
        ports = frozenset(cls.ports())
        settings = frozenset(cls.Settings.model_fields) if cls.Settings else frozenset()
        found = _KEYS[cls] = _Keys(ports, settings, COMMON_BLOCK_KEYS | ports | settings)
    return found


def read_blocks(c: Compilation) -> DiagramSpec | None:
    """The diagram's top-level keys, then each block's; None when there are no blocks to go on with."""
    if not isinstance(c.data, dict):
        c.problems.add((), "a diagram file must be a mapping with 'diagram' and 'blocks'", code="not_mapping")
        return None
    try:
        spec = c.spec = DiagramSpec.model_validate(c.data)
    except ValidationError as exc:
        c.problems.from_validation(exc, (), block=None, allowed=DiagramSpec.model_fields)
        blocks = c.data.get("blocks")
        if not isinstance(blocks, list):
            return None
        spec = DiagramSpec.model_construct(diagram=str(c.data.get("diagram", c.path.stem)), blocks=blocks)
    first_line: dict[str, int | None] = {}
    for index, raw in enumerate(spec.blocks):
        _read_block(c, index, raw, first_line)
    return spec


def _read_block(c: Compilation, index: int, raw: Any, first_line: dict[str, int | None]) -> None:
    where: Where = ("blocks", index)
    if not isinstance(raw, dict):
        c.problems.add(where, "a block must be a mapping with at least 'id' and 'type'", code="not_mapping")
        return
    block_id = raw.get("id")
    if isinstance(block_id, str) and not _claim_id(c, block_id, where, first_line):
        return
    shown_id = block_id if isinstance(block_id, str) else None
    cls = _block_class(c, raw.get("type"), where, shown_id)
    if cls is None:
        return
    c.start_written = c.start_written or cls.is_start
    keys = _keys(cls)
    allowed = keys.allowed
    common, extras = _split_keys(c, raw, cls, keys, where, shown_id)
    try:
        spec = BlockSpec.model_validate(common)
    except ValidationError as exc:
        c.problems.from_validation(exc, where, block=shown_id, allowed=allowed)
        wrong = {str(error["loc"][0]) for error in exc.errors(include_url=False) if error["loc"]}
        if not wrong or not wrong <= DEFAULTED_KEYS:
            return
        # Keep checking the rest of the diagram with this block's defaults for what is wrong (as settings do).
        spec = BlockSpec.model_validate({key: value for key, value in common.items() if key not in wrong})
    settings, settings_ok = _read_settings(c, cls, extras, where, shown_id, allowed)
    ports_ok = _check_ports(c, common, keys.ports, where, spec.id)
    if settings_ok and ports_ok:
        c.specs.append((index, spec, cls, settings))


def _claim_id(c: Compilation, block_id: str, where: Where, first_line: dict[str, int | None]) -> bool:
    """False (with a problem) when another block already has this id."""
    if block_id in first_line:
        c.problems.add((*where, "id"), f"duplicate block id '{block_id}' (first used on line {first_line[block_id]})",
                       block=block_id, field="id", hint="give each block its own id", code="duplicate_id")
        return False
    first_line[block_id] = c.lines.line((*where, "id"))
    c.known_ids.add(block_id)
    return True


def _block_class(c: Compilation, type_name: Any, where: Where, shown_id: str | None) -> type[Block] | None:
    found = c.registry.get(type_name) if isinstance(type_name, str) else None
    if found is not None:
        return found
    known = ", ".join(sorted(c.registry))
    if not isinstance(type_name, str):
        c.problems.add(where, "missing required key 'type'", block=shown_id, field="type", code="missing_key",
                       hint=f"one of: {known}")
        return None
    if type_name not in c.registry:
        c.problems.add((*where, "type"), f"unknown block type '{type_name}'", block=shown_id, field="type",
                       hint=suggest(type_name, c.registry) or f"known types: {known}", code="unknown_block_type")
        return None
    return c.registry[type_name]


def _split_keys(c: Compilation, raw: dict[str, Any], cls: type[Block], keys: _Keys, where: Where,
                shown_id: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The keys every block has (with its ports), and its type's settings; a problem for any other key."""
    ports, settings_fields, allowed = keys
    common: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    for key, value in raw.items():
        if key in COMMON_BLOCK_KEYS or key in ports:
            common[key] = value
        elif key in settings_fields:
            extras[key] = value
        else:
            hint = suggest(key, allowed)
            for other in c.registry.values():
                if key in other.ports() or (other.Settings and key in other.Settings.model_fields):
                    hint = hint or f"'{key}' belongs to {other.type_name} blocks"
                    break
            c.problems.add((*where, key), f"unknown key '{key}' for a {cls.type_name} block",
                           block=shown_id, field=key, hint=hint, code="unknown_key")
    return common, extras


def _read_settings(c: Compilation, cls: type[Block], extras: dict[str, Any], where: Where, shown_id: str | None,
                   allowed: Iterable[str]) -> tuple[BaseModel | None, bool]:
    """The block type's settings and whether the block can go on; bad settings fall back to the defaults."""
    if cls.Settings is None:
        return None, True
    try:
        return cls.Settings.model_validate(extras), True
    except ValidationError as exc:
        c.problems.from_validation(exc, where, block=shown_id, allowed=allowed)
    # Keep checking the rest of the diagram with this block's defaults.
    try:
        return cls.Settings(), True
    except ValidationError:
        return None, False


def _check_ports(c: Compilation, common: dict[str, Any], ports: Iterable[str], where: Where, block_id: str) -> bool:
    ok = True
    for port in ports:
        if port in common and not isinstance(common[port], str):
            c.problems.add((*where, port), f"'{port}' must be a block id", block=block_id, field=port,
                           code="invalid_link")
            ok = False
    return ok


def build_blocks(c: Compilation) -> None:
    for index, spec, cls, settings in c.specs:
        impl = cls(spec, settings)
        compiled = CompiledBlock(impl, c.lines.line(("blocks", index)))
        compiled.child = c.children.get(spec.id)
        c.blocks[spec.id] = compiled
        c.index_of[spec.id] = index
