"""What resuming a durable run needs besides the turn (engine.runs.turn): a Wait's answer checked against its form,
`--input` pairs read as an answer, and where a replay from a block begins.

A waiting run's answer is checked against its Wait's form (a JSON Schema) before the run goes on: a wrong one is
refused with each problem and the run stays waiting. A replay (`--from BLOCK`) starts a new run, linked to the old
one, with the scope the old run had when it first reached that block: its last checkpoint before that point, then
the blocks without effects in between, run again in the diagram as it is now. A finished run whose checkpoints were
pruned after the retention (engine.runs.prune), or went with its forgotten session, has none to start from: the
replay is refused, saying so and what still shows the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from engine.errors import TurnRefused, UsageError
from engine.format.schemas import schema_problems
from engine.runs.prune import shown_retention
from engine.runs.session_memory import tombstone_of
from engine.runtime.durable import Resumed, SnapshotDamaged, resumed_from

__all__ = ["answer_problems", "parse_answer_pairs", "replay_point"]


def answer_problems(form: Mapping[str, Any] | None, answer: Any) -> list[str]:
    """What is wrong with `answer` for a Wait's `form` (a JSON Schema): one line per problem, none when it fits."""
    if not form:
        return []
    return schema_problems(form, answer)  # patterns matched in linear time (engine.format.schemas): a person's text


def parse_answer_pairs(form: Mapping[str, Any] | None, pairs: list[str]) -> dict[str, Any]:
    """`--input approved=true note=ok` as an answer: each value read as YAML, or kept as text where the form's
    property is a string."""
    from engine.format.yamlfile import read_yaml_value

    properties = (form or {}).get("properties") or {}
    answer: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"--input takes name=value, got {pair!r}")
        kind = (properties.get(name) or {}).get("type")
        answer[name] = text if kind == "string" else read_yaml_value(text, f"--input {name}")
    return answer


def replay_point(run_id: str, states: list[bytes], block: str) -> Resumed:
    """The checkpoint a replay from `block` starts at: the last one written before the old run first reached it
    (SnapshotDamaged for a checkpoint that does not decode; TurnRefused when its checkpoints were deleted)."""
    pruned = tombstone_of(states[0]) if states else None
    if pruned is not None:
        raise TurnRefused(_pruned(run_id, pruned), reason="not_resumable")
    chosen = 0
    seen: list[str] = []
    for index, state in enumerate(states):
        header = _header(state, index, len(states))
        if block in header["segment"]:
            break  # first reached between the checkpoint before and this one
        seen.extend(header["segment"])
        chosen = index
        if header["next"] == block:
            break
    else:
        ran = ", ".join(dict.fromkeys(seen)) or "no block"
        raise TurnRefused(f"run '{run_id}' never reached block '{block}' (it ran {ran})", reason="not_resumable")
    resumed = resumed_from(states[: chosen + 1], seq=0)
    resumed.path, resumed.steps, resumed.errors, resumed.tokens = [], 0, [], 0
    return resumed


def _pruned(run_id: str, pruned: Mapping[str, Any]) -> str:
    import datetime

    at = pruned.get("at")
    when = datetime.datetime.fromtimestamp(float(at)).strftime(" on %Y-%m-%d %H:%M") if isinstance(at, int | float) \
        else ""
    if pruned.get("forgotten") is not None:
        why = (f"deleted{when} with its session '{pruned['forgotten']}', which was forgotten (diagrama sessions "
               "--forget)")
    else:
        after = pruned.get("after")
        kept = f"for {shown_retention(float(after))}" if isinstance(after, int | float) else "for a retention"
        why = (f"pruned{when}: a finished run's checkpoints are kept {kept} after it ends (diagrama runs --prune "
               "--older-than, diagrama api --prune-after)")
    return (f"run '{run_id}' cannot be replayed: its checkpoints were {why}, so no scope is left to start from. What "
            f"it did is still there: its trace (diagrama trace {run_id}) and its record (diagrama runs); run the "
            "diagram again to go through it anew")


def _header(state: bytes, index: int, total: int) -> dict[str, Any]:
    """A checkpoint's header (its path segment and next block), or SnapshotDamaged naming the checkpoint."""
    try:
        header = orjson.loads(state)["h"]
        if isinstance(header, dict) and isinstance(header.get("segment"), list):
            return header
    except (orjson.JSONDecodeError, KeyError, TypeError):
        pass
    raise SnapshotDamaged(f"checkpoint {index + 1} of {total} is damaged: not a checkpoint")
