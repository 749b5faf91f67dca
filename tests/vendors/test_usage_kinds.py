"""Each vendor's usage read into all its kinds (issue 40, 2): cache writes and reads beside input and output,
counted in input_tokens as before, never folded away."""

from __future__ import annotations

from engine.providers.anthropic import Anthropic
from engine.providers.gemini import Gemini
from engine.providers.groq import Groq

TEXT = "Order 42 has shipped with DHL."


def test_anthropic_cache_creation_and_reads_are_their_own_kinds() -> None:
    reply = Anthropic().parse({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": TEXT}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 20, "output_tokens": 30, "cache_creation_input_tokens": 1200,
                  "cache_read_input_tokens": 3400}})
    assert (reply.input_tokens, reply.output_tokens) == (20 + 1200 + 3400, 30)  # the whole prompt, as before
    assert (reply.cache_write_tokens, reply.cache_read_tokens) == (1200, 3400)


def test_gemini_cached_content_is_read_tokens_and_thoughts_stay_thinking() -> None:
    reply = Gemini().parse({
        "candidates": [{"index": 0, "finishReason": "STOP", "content": {"role": "model", "parts": [{"text": TEXT}]}}],
        "usageMetadata": {"promptTokenCount": 2266, "cachedContentTokenCount": 2048, "candidatesTokenCount": 24,
                          "thoughtsTokenCount": 96, "totalTokenCount": 2386},
        "modelVersion": "gemini-2.5-flash", "responseId": "r1"})
    assert (reply.input_tokens, reply.output_tokens, reply.thinking_tokens) == (2266, 24 + 96, 96)
    assert (reply.cache_write_tokens, reply.cache_read_tokens) == (0, 2048)


def test_groq_cached_tokens_where_it_reports_them() -> None:
    body = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1764680402, "model": "moonshotai/kimi-k2",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": TEXT}}],
            "usage": {"prompt_tokens": 497, "completion_tokens": 26, "total_tokens": 523,
                      "prompt_tokens_details": {"cached_tokens": 256}}}
    reply = Groq().parse(body)
    assert (reply.input_tokens, reply.output_tokens, reply.cache_read_tokens) == (497, 26, 256)
    del body["usage"]["prompt_tokens_details"]  # type: ignore[attr-defined]
    assert Groq().parse(body).cache_read_tokens == 0
