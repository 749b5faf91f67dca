"""Durable runs in the studio, end to end in headless Chromium: answer a run waiting at a Wait (a wrong answer's
problems first), talk to a diagram that keeps memory in the Chat tab, and run a past run again from a block.
Screenshots go to tests/artifacts/ (git-ignored)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import Served
from tests.web.test_browser import DIAGRAMS, node, open_diagram, shot

pytestmark = pytest.mark.browser  # Debian's Chromium through Playwright (slow too)

APPROVE = "approve_reply.yaml"
CHAT = "chat_memory.yaml"


@pytest.fixture(scope="module")
def durable(studio: Any, tmp_path_factory: pytest.TempPathFactory) -> Served:
    root = tmp_path_factory.mktemp("durable") / "diagrams"
    root.mkdir()
    for name in (APPROVE, CHAT):
        shutil.copy(DIAGRAMS / name, root / name)
    # a note the form asks for, at least 5 letters long: a short one is a wrong answer
    text = (DIAGRAMS / APPROVE).read_text(encoding="utf-8")
    strict = text.replace("note: {type: string}", "note: {type: string, minLength: 5}") \
        .replace("required: [approved]", "required: [approved, note]")
    assert strict != text
    (root / "approve_strict.yaml").write_text(strict, encoding="utf-8")
    return studio(root)


def run_until(page: Any, status: str) -> None:
    page.locator(".run-status strong").filter(has_text=re.compile(f"^{status}$")).wait_for(timeout=30_000)


def start_run(page: Any, served: Served, path: str) -> Any:
    open_diagram(page, served, path, blocks=5)
    page.get_by_role("button", name="Open the run panel").click()
    panel = page.locator(".run-panel")
    panel.get_by_role("button", name="Run", exact=True).click()
    return panel


def test_a_waiting_run_is_answered_from_its_form(page: Any, durable: Served, artifacts: Path) -> None:
    panel = start_run(page, durable, "approve_strict.yaml")
    run_until(page, "waiting")
    prompt = panel.get_by_test_id("wait-prompt")
    assert re.fullmatch(r"approve asks: Send this reply\? \(simulated claude-sonnet-4-5\) You said: Where is my order "
                        r"42\?", prompt.inner_text()), prompt.inner_text()
    waiting = panel.get_by_role("list", name="Waiting runs")
    waiting.wait_for()
    assert "Send this reply?" in waiting.inner_text()

    form = panel.get_by_role("form", name="Answer approve")
    form.get_by_test_id("wait-field-approved").check()
    form.get_by_test_id("wait-field-note").fill("ok")
    form.get_by_role("button", name="Send answer").click()
    problems = form.get_by_role("alert")
    problems.wait_for()
    assert problems.inner_text() == 'note: "ok" is shorter than 5 characters'
    shot(page, artifacts, "durable-wrong-answer")
    assert panel.locator(".run-status strong").inner_text() == "waiting"

    form.get_by_test_id("wait-field-note").fill("looks good")
    form.get_by_role("button", name="Send answer").click()
    run_until(page, "succeeded")
    variables = panel.get_by_role("table", name="Final variables")
    assert re.search(r"approved\s+true", variables.inner_text()), variables.inner_text()
    assert re.search(r"sent\s+\(simulated", variables.inner_text()), variables.inner_text()
    steps = panel.locator(".steps-table tbody tr td:nth-child(2) button")
    assert steps.all_inner_texts() == ["start", "draft", "approve", "approve", "send"]  # it asked, then it took the answer
    statuses = panel.locator(".steps-table tbody tr td:nth-child(3)").all_inner_texts()
    assert statuses == ["succeeded", "succeeded", "waiting", "succeeded", "succeeded"]
    assert "run-ok" in (node(page, "send").get_attribute("class") or "")
    page.get_by_role("list", name="Waiting runs").wait_for(state="detached")
    shot(page, artifacts, "durable-answered")


def test_a_conversation_in_the_chat_tab_remembers_until_a_new_session(page: Any, durable: Served,
                                                                       artifacts: Path) -> None:
    open_diagram(page, durable, CHAT, blocks=2)
    page.get_by_role("tab", name="Chat").click()
    panel = page.locator(".chat-panel")
    box = panel.get_by_test_id("chat-message")
    memory = panel.get_by_role("table", name="Memory")

    def say(text: str, turn: int) -> None:
        box.fill(text)
        box.press("Enter")
        panel.get_by_test_id("chat-reply").nth(turn - 1).filter(has_text="You said").wait_for(timeout=30_000)
        memory.locator("caption").filter(has_text=re.compile(f"^after turn {turn}$")).wait_for()

    # a message half typed is kept while another tab shows
    box.fill("Hi, I'm")
    page.get_by_role("button", name="Open the run panel").click()
    assert box.count() == 0
    page.get_by_role("tab", name="Chat").click()
    assert box.input_value() == "Hi, I'm"
    say("Hi, I'm Alice", 1)
    assert box.input_value() == ""  # sent: the box is empty for the next one
    assert panel.get_by_test_id("chat-reply").first.inner_text() == "(simulated claude-sonnet-4-5) You said: Hi, I'm Alice"
    say("What is my name?", 2)
    kept = memory.inner_text()
    assert "Hi, I'm Alice" in kept and "What is my name?" in kept, kept
    assert re.search(r"turns\s+2", kept), kept
    shot(page, artifacts, "durable-chat")

    panel.get_by_role("button", name="New session").click()
    assert panel.get_by_test_id("chat-reply").count() == 0
    say("Hello again", 1)
    kept = memory.inner_text()
    assert "Alice" not in kept and re.search(r"turns\s+1", kept), kept


def test_run_from_here_replays_a_past_run_from_a_block(page: Any, durable: Served, artifacts: Path) -> None:
    panel = start_run(page, durable, APPROVE)
    run_until(page, "waiting")
    form = panel.get_by_role("form", name="Answer approve")
    form.get_by_role("button", name="Send answer").click()  # not approved: the run goes to hold
    run_until(page, "succeeded")
    first = panel.locator(".run-status .muted").inner_text()

    node(page, "send").locator(".block-node__title").click(button="right")
    menu = page.get_by_role("menu")
    item = menu.get_by_role("menuitem", name="Run from here")
    assert item.is_disabled() and item.get_attribute("title") == "this run never reached send"
    page.keyboard.press("Escape")
    menu.wait_for(state="detached")

    node(page, "hold").locator(".block-node__title").click(button="right")
    menu.get_by_role("menuitem", name="Run from here").click()
    old_id = re.search(r"run (\S+)", first)
    assert old_id is not None
    # the panel follows the new run, which says whose replay it is
    panel.locator(".run-status .muted").filter(has_text=f"replay of {old_id.group(1)}").wait_for()
    run_until(page, "succeeded")
    steps = panel.locator(".steps-table tbody tr td:nth-child(2) button")
    assert steps.all_inner_texts() == ["hold"]
    shot(page, artifacts, "durable-run-from-here")
