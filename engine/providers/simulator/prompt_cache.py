"""The simulated vendors' prompt caches: which prefixes a request finds again, and the tokens it reports so.

Anthropic caches what a request marks (`cache_control` breakpoints): the first request with a marked
prefix reports it as `cache_creation_input_tokens`, a later one whose prefix matches a written one (at a
breakpoint or up to 20 blocks before it) reports the longest such prefix as `cache_read_input_tokens`,
and `input_tokens` counts only the rest. Gemini (2.5 on) and Groq (its caching models) cache on their
own: a request reports the longest prefix a recent request shared (`cachedContentTokenCount`,
`prompt_tokens_details.cached_tokens`). A prefix below the vendor's minimum is not cached, as with the
vendors. Tokens are counted as the simulator counts them everywhere: 4 bytes of the JSON a token.

The store is bounded (the least recently used prefixes go first) and entries expire as the vendors'.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from engine.errors import SimulatorRejected
from engine.providers.anthropic_inputs import CACHE_BREAKPOINTS, CACHE_TTL_S, cache_minimum

__all__ = ["GROQ_CACHING_MODELS", "CacheUse", "PromptCache", "check_breakpoints"]

_BYTES_PER_TOKEN = 4
_LOOKBACK = 20
"""Blocks before a breakpoint Anthropic looks back for an earlier cached prefix."""
GROQ_CACHING_MODELS = ("moonshotai/kimi-k2", "openai/gpt-oss")
"""Groq's prompt caching is for these model families only (its prompt-caching docs)."""
_GROQ_TTL_S = 2 * 3600.0
_GEMINI_TTL_S = 3600.0
_IMPLICIT_MINIMUM = 1024
_GEMINI_PRO_MINIMUM = 4096
_NO_IMPLICIT_GEMINI = ("gemini-1", "gemini-2.0")


@dataclass(frozen=True, slots=True)
class CacheUse:
    """Prompt tokens a request wrote to the cache and read from it (both within its input tokens)."""

    written: int = 0
    read: int = 0


def _rejected(message: str) -> SimulatorRejected:
    return SimulatorRejected(400, {"type": "error", "error": {"type": "invalid_request_error", "message": message},
                                   "request_id": "req_sim"})


def _marks(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """Every cache_control in the request, where it is (Anthropic's order: tools, system, messages)."""
    found: list[tuple[str, Any]] = []
    for index, tool in enumerate(body.get("tools") or []):
        if isinstance(tool, dict) and "cache_control" in tool:
            found.append((f"tools.{index}", tool["cache_control"]))
    system = body.get("system")
    for index, block in enumerate(system if isinstance(system, list) else []):
        if isinstance(block, dict) and "cache_control" in block:
            found.append((f"system.{index}", block["cache_control"]))
    for number, message in enumerate(body.get("messages") or []):
        content = message.get("content") if isinstance(message, dict) else None
        for index, block in enumerate(content if isinstance(content, list) else []):
            if isinstance(block, dict) and "cache_control" in block:
                found.append((f"messages.{number}.content.{index}", block["cache_control"]))
    return found


def check_breakpoints(body: dict[str, Any]) -> None:
    """What Anthropic refuses of cache_control: a mark that is not {type: ephemeral}, or more than four."""
    marks = _marks(body)
    for where, mark in marks:
        if not isinstance(mark, dict) or mark.get("type") != "ephemeral" or mark.get("ttl", "5m") not in ("5m", "1h"):
            raise _rejected(f"{where}.cache_control: Input should be {{'type': 'ephemeral'}} (ttl '5m' or '1h')")
    if len(marks) > CACHE_BREAKPOINTS:
        raise _rejected(f"A maximum of {CACHE_BREAKPOINTS} blocks with cache_control may be provided. "
                        f"Found {len(marks)}.")


def _plain(value: Any) -> bytes:
    """A block as it weighs in the prefix, its mark left out (a marked block is the same block)."""
    if isinstance(value, dict) and "cache_control" in value:
        value = {key: item for key, item in value.items() if key != "cache_control"}
    return orjson.dumps(value)


def _anthropic_blocks(body: dict[str, Any]) -> list[tuple[bytes, bool]]:
    """The request in cache order, block by block: (the block's bytes, whether it is a breakpoint)."""
    blocks: list[tuple[bytes, bool]] = [(_plain(tool), "cache_control" in tool) for tool in body.get("tools") or []]
    system = body.get("system")
    # A text given as a string is the one text block it stands for: marked later, the same prefix.
    if isinstance(system, str) and system:
        blocks.append((orjson.dumps({"type": "text", "text": system}), False))
    elif isinstance(system, list):
        blocks += [(_plain(block), "cache_control" in block) for block in system]
    for message in body["messages"]:
        content = message["content"]
        role = str(message["role"]).encode()
        if isinstance(content, str):
            blocks.append((role + orjson.dumps({"type": "text", "text": content}), False))
        else:
            blocks += [(role + _plain(block), "cache_control" in block) for block in content]
    return blocks


def _implicit_blocks(vendor: str, body: dict[str, Any]) -> list[bytes]:
    """A Gemini or Groq request in the order its prefix is read: instructions, tools, then each turn."""
    if vendor == "gemini":
        head = [orjson.dumps(body.get(key)) for key in ("systemInstruction", "tools", "toolConfig") if key in body]
        return head + [orjson.dumps(content) for content in body.get("contents") or []]
    head = [orjson.dumps(body["tools"])] if body.get("tools") else []
    return head + [orjson.dumps(message) for message in body.get("messages") or []]


def _prefixes(model: str, blocks: list[bytes]) -> list[tuple[bytes, int]]:
    """Each prefix's digest (the model's own cache: another model's prefix is not found) and its tokens."""
    running = hashlib.sha256(model.encode())
    size = 0
    found = []
    for block in blocks:
        running.update(len(block).to_bytes(8, "big") + block)
        size += len(block)
        found.append((running.digest(), size // _BYTES_PER_TOKEN))
    return found


class PromptCache:
    """Prefixes the simulated vendors hold, per vendor and model: at most `limit`, each until its lifetime passes."""

    def __init__(self, limit: int = 4096, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.clock = clock
        self._held: OrderedDict[bytes, float] = OrderedDict()
        """Prefix digest → when it expires."""

    def _found(self, digest: bytes, ttl_s: float) -> bool:
        """Whether the prefix is held and alive; a hit starts its lifetime again, as the vendors' do."""
        expires = self._held.get(digest)
        if expires is None:
            return False
        now = self.clock()
        if expires <= now:
            del self._held[digest]
            return False
        self._held[digest] = now + ttl_s
        self._held.move_to_end(digest)
        return True

    def _hold(self, digest: bytes, ttl_s: float) -> None:
        self._held[digest] = self.clock() + ttl_s
        self._held.move_to_end(digest)
        while len(self._held) > self.limit:
            self._held.popitem(last=False)

    def anthropic(self, body: dict[str, Any], total: int) -> CacheUse:
        """What a Messages request wrote and read, of its `total` input tokens (nothing without breakpoints)."""
        model = str(body["model"])
        blocks = _anthropic_blocks(body)
        breakpoints = [index for index, (_block, marked) in enumerate(blocks) if marked]
        if not breakpoints:
            return CacheUse()
        prefixes = _prefixes(model, [block for block, _marked in blocks])
        minimum = cache_minimum(model)
        read = 0
        for point in breakpoints:
            for index in range(point, max(point - _LOOKBACK, -1), -1):
                digest, tokens = prefixes[index]
                if tokens <= read:  # an earlier block's prefix is shorter still
                    break
                if self._found(digest, CACHE_TTL_S):
                    read = tokens
                    break
        cached = [prefixes[point] for point in breakpoints if prefixes[point][1] >= minimum]
        for digest, _tokens in cached:
            self._hold(digest, CACHE_TTL_S)
        longest = max((tokens for _digest, tokens in cached), default=0)
        read = min(read, total)
        return CacheUse(written=min(max(longest - read, 0), total - read), read=read)

    def implicit(self, vendor: str, model: str, body: dict[str, Any], total: int) -> int:
        """The tokens a Gemini or Groq request read from the cache its vendor keeps on its own; 0 where it keeps none."""
        if vendor == "groq":
            if not model.startswith(GROQ_CACHING_MODELS):
                return 0
            minimum, ttl_s = _IMPLICIT_MINIMUM, _GROQ_TTL_S
        else:
            if model.startswith(_NO_IMPLICIT_GEMINI):
                return 0
            minimum, ttl_s = (_GEMINI_PRO_MINIMUM if "-pro" in model else _IMPLICIT_MINIMUM), _GEMINI_TTL_S
        prefixes = [(digest, tokens) for digest, tokens in _prefixes(f"{vendor}/{model}", _implicit_blocks(vendor, body))
                    if tokens >= minimum]
        read = next((tokens for digest, tokens in reversed(prefixes) if self._found(digest, ttl_s)), 0)
        # The newest request's prefixes are kept, the last turn's (the one answered now) among them.
        for digest, _tokens in prefixes:
            self._hold(digest, ttl_s)
        return min(read, total)
