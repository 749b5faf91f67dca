"""A streaming request block's text through `diagrama api`: each piece the simulator streams is a `text_delta`
event of the run's event stream, in order, before the block's end, and together they are the run's answer."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import httpx
import orjson

from tests.api.conftest import AUTH, Served
from tests.api.test_events import start, stream

STREAMER = """
diagram: streamer
blocks:
  - id: start
    type: Start
    message_level: Debug
    inputs: {question: "Quanto fa due più due?"}
    next: ask
  - id: ask
    type: GroqChatRequest
    with: {model: llama-3.3-70b-versatile, request: "{{ question }}", stream: true}
    set: {answer: "{{ result }}"}
"""


def test_a_streaming_request_blocks_pieces_are_text_delta_events_of_the_run(serve: Callable[..., Served],
                                                                             robots_dir: Path) -> None:
    (robots_dir / "streamer.yaml").write_text(textwrap.dedent(STREAMER).lstrip(), encoding="utf-8")
    served = serve()
    run_id = start(served, "streamer")
    events = stream(served, run_id)
    names = [event.event for event in events]
    deltas = [orjson.loads(event.data) for event in events if event.event == "text_delta"]
    assert len(deltas) > 1 and {(d["block"], d["block_type"]) for d in deltas} == {("ask", "GroqChatRequest")}
    assert names.index("text_delta") < names.index("provider_called") and names[-1] == "run_finished"
    result = httpx.get(f"{served.url}/v1/runs/{run_id}", headers=AUTH).json()
    assert result["status"] == "succeeded"
    assert "".join(d["text"] for d in deltas) == result["variables"]["answer"]
    assert result["variables"]["answer"].endswith("You said: Quanto fa due più due?")
