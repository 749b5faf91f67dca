"""A key missing inside a written input (a mapping's required key) is a load problem at its line and field, as a
missing input is: the loader once left these to the run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.errors import DiagramInvalid
from tests.conftest import Runner

WAITS = """
diagram: waits
blocks:
  - id: start
    type: Start
    next: ask
  - id: ask
    type: Wait
    with:
      prompt: "Ship it?"
      notify:
        email:
          subject: "Ship it?"
"""


def test_a_key_missing_inside_a_written_input_is_named_at_its_line(runner: Runner,
                                                                   write: Callable[..., Path]) -> None:
    with pytest.raises(DiagramInvalid) as raised:
        runner.load(write(WAITS))
    [problem] = [p for p in raised.value.problems if p.block == "ask"]
    assert problem.field == "with.notify.email.to" and problem.message == "missing required key 'to'"
    assert problem.line == 11  # the `email:` mapping that lacks it


def test_a_missing_input_itself_is_still_said_once_with_its_description(runner: Runner,
                                                                        write: Callable[..., Path]) -> None:
    with pytest.raises(DiagramInvalid) as raised:
        runner.load(write(WAITS.replace('      prompt: "Ship it?"\n', "")))
    said = [p for p in raised.value.problems if p.block == "ask" and p.field == "with.prompt"]
    assert len(said) == 1 and said[0].message == "missing input 'prompt'"
