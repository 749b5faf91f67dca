"""The robots the fault scenarios serve, written into a lab's `robots/` folder.

- `steps`: five Function steps; each appends `TAG STEP PID TIME` to the effects file (one O_APPEND write) and then
  sleeps `pause` seconds. Durable (Start `durable: true`): a checkpoint after each step. The line is written before
  the step can finish, so a step whose line is there and whose successor's is not was in flight.
- `three`: Start, a ClaudeRequest the simulator answers (`--offline`: one checkpoint), a Set; as
  benchmarks.api_overhead's.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

STEPS = 5

EFFECTS = '''
import os
import time


def step(tag: str, step: int, effects: str, pause: float) -> dict:
    line = f"{tag} {step} {os.getpid()} {time.time():.6f}\\n".encode()
    descriptor = os.open(effects, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, line)
    finally:
        os.close(descriptor)
    time.sleep(pause)
    return {"step": step}
'''

THREE = """
diagram: three
blocks:
  - {id: start, type: Start, inputs: {question: "Quanto fa 2+2?"}, next: ask}
  - id: ask
    type: ClaudeRequest
    with: {model: claude-haiku-5-5, request: "{{ question }}", max_tokens: 50}
    set: {answer: "{{ result }}"}
    next: keep
  - {id: keep, type: Set, set: {done: true}}
"""


def _steps_robot() -> str:
    blocks = ['  - {id: start, type: Start, durable: true, inputs: {tag: "", effects: "", pause: 0.5}, next: s1}']
    for number in range(1, STEPS + 1):
        after = f", next: s{number + 1}" if number < STEPS else ""
        blocks.append(f"  - {{id: s{number}, type: Function, with: {{function: 'fault_effects:step', arguments: "
                      f"{{tag: '{{{{ tag }}}}', step: {number}, effects: '{{{{ effects }}}}', "
                      f"pause: '{{{{ pause }}}}'}}, timeout: 60}}{after}}}")
    return "diagram: steps\nallowed_modules: [fault_effects]\nblocks:\n" + "\n".join(blocks) + "\n"


def write_robots(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fault_effects.py").write_text(EFFECTS.lstrip())
    (folder / "steps.yaml").write_text(_steps_robot())
    (folder / "three.yaml").write_text(THREE.lstrip())
    return folder


class Effect(NamedTuple):
    tag: str
    step: int
    pid: int
    at: float


def read_effects(path: Path) -> list[Effect]:
    """The effects file's complete lines, in the order they were written."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    found = []
    for line in text.splitlines(keepends=True):
        parts = line.split()
        if line.endswith("\n") and len(parts) == 4:
            found.append(Effect(parts[0], int(parts[1]), int(parts[2]), float(parts[3])))
    return found


def repeated_steps(effects: list[Effect], before: int) -> tuple[int, int]:
    """Of one run's effects, the first `before` written before a fault: (finished steps written again, the in-flight
    step written again). The last line before the fault is the step in flight; the steps before it had finished."""
    done = [e.step for e in effects[:before]]
    in_flight = done[-1] if done else None
    again = [e.step for e in effects[before:]]
    finished = set(done[:-1])
    return sum(1 for step in again if step in finished), sum(1 for step in again if step == in_flight)
