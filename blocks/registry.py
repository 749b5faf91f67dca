"""The block types diagrama ships, and the registry of all installed ones."""

from __future__ import annotations

from blocks.claude_request import ClaudeRequest
from blocks.function import Function
from blocks.gemini_request import GeminiRequest
from blocks.groq_chat_request import GroqChatRequest
from blocks.http_request import HttpRequest
from blocks.loop import Loop
from blocks.retrieve import Retrieve
from blocks.set import Set
from blocks.start import Start
from blocks.subdiagram import Subdiagram
from blocks.tool_dispatch import ToolDispatch
from blocks.wait import Wait
from engine import Block, BlockRegistry, entry_point_blocks

__all__ = ["BUILTIN_BLOCKS", "registry"]

BUILTIN_BLOCKS: tuple[type[Block], ...] = (Start, Set, Loop, ClaudeRequest, GroqChatRequest, GeminiRequest,
                                            ToolDispatch, Wait, Function, HttpRequest, Subdiagram, Retrieve)


def registry(*, plugins: bool = True) -> BlockRegistry:
    """Our blocks, plus those other packages register under `diagrama.blocks`."""
    blocks = BlockRegistry(BUILTIN_BLOCKS)
    if plugins:
        for block in entry_point_blocks():
            blocks.register(block)
    return blocks
