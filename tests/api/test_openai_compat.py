"""`diagrama api`'s OpenAI-compatible endpoint, driven by the official `openai` SDK against a real uvicorn server
(offline: request blocks answer from the simulator): models, whole and streamed answers, sessions of a robot with
memory, and the SDK's own error classes for a wrong key, an unknown robot, a failed and a waiting run."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.errors import DiagramInvalid
from tests.api.conftest import AUTH, KEY, OTHER_KEY

openai = pytest.importorskip("openai")

ROBOTS = {
    # The convention: input `question`, output `answer`; a real request block (the simulator answers, streamed).
    "asker": """
        diagram: asker
        description: Asks Claude one question.
        blocks:
          - id: start
            type: Start
            inputs: {question: "Qual è la capitale del Portogallo?"}
            next: ask
          - id: ask
            type: ClaudeRequest
            with: {model: claude-sonnet-5-5, request: "{{ question }}", max_tokens: 64}
            set: {answer: "{{ result }}"}
    """,
    # Start `chat`: the message fills `words`, the answer is `said`, streamed piece by piece by Speak.
    "talker": """
        diagram: talker
        description: Says the words back.
        blocks:
          - id: start
            type: Start
            chat: {input: words, output: said}
            inputs: {words: "uno due", other: 1}
            next: speak
          - id: speak
            type: Speak
            with: {pieces: "{{ words.split(' ') }}"}
            set: {said: "{{ result }}"}
    """,
    "memo": """
        diagram: memo
        description: Remembers every message of its session.
        blocks:
          - id: start
            type: Start
            memory: [heard]
            inputs: {message: hi}
            variables: {heard: []}
            next: keep
          - id: keep
            type: Set
            set: {heard: "{{ heard + [message] }}", answer: "{{ (heard + [message]) | join(' + ') }}"}
    """,
    "asks_a_person": """
        diagram: asks_a_person
        description: Waits for a person before it answers.
        blocks:
          - id: start
            type: Start
            inputs: {message: hi}
            next: ask
          - id: ask
            type: Wait
            with: {prompt: "May I answer {{ message }}?"}
            set: {answer: "{{ answer }}"}
    """,
    "fails": """
        diagram: fails
        description: Fails every time.
        blocks:
          - id: start
            type: Start
            inputs: {message: hi}
            next: call
          - id: call
            type: Set
            set: {answer: "{{ 1 // (message | length - message | length) }}"}
    """,
}


@pytest.fixture
def served(robots_dir: Path, serve: Callable[..., Any], make_app: Callable[..., Any]) -> Any:
    for name, text in ROBOTS.items():
        (robots_dir / f"{name}.yaml").write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return serve(make_app(rpm=None))


def _client(served: Any, key: str = KEY) -> Any:
    return openai.OpenAI(base_url=f"{served.url}/v1", api_key=key, max_retries=0, timeout=30)


def test_models_are_the_robots(served: Any) -> None:
    models = {model.id: model for model in _client(served).models.list()}
    assert {"asker", "talker", "memo", "counter"} <= set(models)
    assert "broken" not in models  # a diagram with problems is no model
    assert models["asker"].owned_by == "diagrama" and models["asker"].object == "model"
    assert models["asker"].created > 0


def test_a_chat_answers_with_the_robots_output_and_usage(served: Any) -> None:
    completion = _client(served).chat.completions.create(
        model="asker", messages=[{"role": "system", "content": "be brief"},
                                 {"role": "user", "content": "What is the capital of Portugal?"}])
    assert completion.object == "chat.completion" and completion.model == "asker"
    assert completion.id.startswith("chatcmpl-")
    choice = completion.choices[0]
    assert choice.message.role == "assistant" and choice.message.content and choice.finish_reason == "stop"
    assert completion.usage is not None and completion.usage.prompt_tokens > 0
    assert completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens
    run_id = completion.id.removeprefix("chatcmpl-")  # the run is the caller's: GET /v1/runs/{id} reads it
    run = httpx.get(f"{served.url}/v1/runs/{run_id}", headers=AUTH).json()
    assert run["status"] == "succeeded" and run["variables"]["question"] == "What is the capital of Portugal?"
    assert run["variables"]["answer"] == choice.message.content


def test_a_streamed_chat_is_the_request_blocks_text_as_it_comes(served: Any) -> None:
    client = _client(served)
    whole = client.chat.completions.create(model="asker", messages=[{"role": "user", "content": "Tell me more"}])
    stream = client.chat.completions.create(model="asker", messages=[{"role": "user", "content": "Tell me more"}],
                                            stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" and c.model == "asker" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(pieces) > 1  # streamed, not one piece at the end
    assert "".join(pieces) == whole.choices[0].message.content
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0


def test_start_chat_names_the_input_and_the_output_and_its_block_streams(served: Any) -> None:
    stream = _client(served).chat.completions.create(
        model="talker", messages=[{"role": "user", "content": [{"type": "text", "text": "a b c"}]}], stream=True)
    pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
    assert pieces == ["a", "b", "c"]


def test_an_answer_no_block_streams_comes_as_one_chunk_at_the_end(served: Any) -> None:
    stream = _client(served).chat.completions.create(model="memo", messages=[{"role": "user", "content": "x"}],
                                                     stream=True)
    pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
    assert pieces == ["x"]


def test_a_memory_robots_session_goes_on_by_header_user_or_conversation(served: Any) -> None:
    client = _client(served)

    def say(text: str, earlier: list[dict[str, str]] | None = None, **options: Any) -> Any:
        return client.chat.completions.with_raw_response.create(
            model="memo", messages=[*(earlier or []), {"role": "user", "content": text}], **options)

    first = say("one", extra_headers={"X-Diagrama-Session": "s1"})
    assert first.headers["x-diagrama-session"] == "s1"
    assert say("two", extra_headers={"X-Diagrama-Session": "s1"}).parse().choices[0].message.content == "one + two"
    assert say("uno", user="bea").parse().choices[0].message.content == "uno"
    assert say("due", user="bea").parse().choices[0].message.content == "uno + due"
    # No header, no user: the earlier messages are the conversation (as a chat front end sends them each turn).
    opened = say("alpha").parse().choices[0].message.content
    assert opened == "alpha"
    earlier = [{"role": "user", "content": "alpha"}, {"role": "assistant", "content": opened}]
    second = say("beta", earlier).parse().choices[0].message.content
    assert second == "alpha + beta"
    earlier += [{"role": "user", "content": "beta"}, {"role": "assistant", "content": second}]
    assert say("gamma", earlier).parse().choices[0].message.content == "alpha + beta + gamma"
    assert say("alpha").parse().choices[0].message.content == "alpha"  # a new conversation: a new session
    # Another key's session of the same name is another conversation.
    other = _client(served, OTHER_KEY).chat.completions.create(
        model="memo", messages=[{"role": "user", "content": "mine"}], extra_headers={"X-Diagrama-Session": "s1"})
    assert other.choices[0].message.content == "mine"


def test_errors_come_as_the_sdks_own_classes(served: Any) -> None:
    client = _client(served)
    message = [{"role": "user", "content": "hi"}]
    with pytest.raises(openai.AuthenticationError) as wrong:
        _client(served, "dgk_wrong-key-0123456789abcdef").chat.completions.create(model="asker", messages=message)
    assert wrong.value.status_code == 401 and "Bearer" in wrong.value.message
    with pytest.raises(openai.AuthenticationError):
        _client(served, "dgk_wrong-key-0123456789abcdef").models.list()
    with pytest.raises(openai.NotFoundError) as unknown:
        client.chat.completions.create(model="nobody", messages=message)
    assert unknown.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as no_chat:
        client.chat.completions.create(model="counter", messages=message)  # no chat input: it says how to add one
    assert "chat: {input" in no_chat.value.message
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="asker", messages=[])
    with pytest.raises(openai.InternalServerError) as failed:
        client.chat.completions.create(model="fails", messages=message)
    assert failed.value.status_code == 500 and "ZeroDivisionError" in failed.value.message
    assert failed.value.response.headers["x-should-retry"] == "false"  # a retry would run the robot again
    with pytest.raises(openai.BadRequestError) as long_session:  # 100 characters pass the header's pattern, but
        client.chat.completions.create(  # scoped to the caller's key the store cannot keep them: OpenAI's shape too
            model="memo", messages=message, extra_headers={"X-Diagrama-Session": "s" * 100})
    assert long_session.value.code == "invalid_session" and "at most 97 characters" in long_session.value.message


def test_a_robot_that_waits_says_so_and_names_its_run(served: Any) -> None:
    client = _client(served)
    with pytest.raises(openai.ConflictError) as waiting:
        client.chat.completions.create(model="asks_a_person", messages=[{"role": "user", "content": "hi"}])
    run_id = waiting.value.response.headers["x-run-id"]
    assert waiting.value.code == "run_waiting"
    assert f"/v1/runs/{run_id}/resume" in waiting.value.message and "May I answer hi?" in waiting.value.message
    with pytest.raises(openai.APIError) as streamed:
        list(client.chat.completions.create(model="asks_a_person", messages=[{"role": "user", "content": "hi"}],
                                            stream=True))
    assert "a chat call cannot give" in streamed.value.message


@pytest.mark.parametrize(("chat", "field"), [("{input: nothing, output: answer}", "chat.input"),
                                              ("{input: message, output: nowhere}", "chat.output")])
def test_start_chat_names_an_input_and_a_variable_the_robot_sets(tmp_path: Path, api_registry: Any, chat: str,
                                                                 field: str) -> None:
    from engine.compile.loader import load_diagram

    path = tmp_path / "bad.yaml"
    path.write_text(textwrap.dedent(ROBOTS["memo"]).lstrip().replace("memory: [heard]", f"chat: {chat}"))
    with pytest.raises(DiagramInvalid) as invalid:
        load_diagram(path, api_registry)
    assert [(p.field, p.line, p.block) for p in invalid.value.problems] == [(field, 6, "start")]  # the line of `chat:`
