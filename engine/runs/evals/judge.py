"""The LLM judge: one structured request (a score and a one-line reason) through the providers' request path.

It goes the way a request block's call goes (`ask`: the shared client, retries, the run's limits; the simulator when
offline, whose made-up structured answers are seeded by the request, so an offline report is the same every time).
The vendor is told by the model's name: `claude-…` Anthropic, `gemini-…` Google, anything else Groq.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.errors import ProviderError
from engine.format.tables import HistoryRow
from engine.runs.evals.scorers import Scored, Scoring, judge_prompt

if TYPE_CHECKING:
    from engine.providers import Adapter
    from engine.runs.evals.spec import JudgeSpec
    from engine.runtime.context import Services

__all__ = ["adapter_for", "ask_judge"]

OFFLINE_KEY = "offline-simulator-key"
_ROLE = ("You grade a support robot's answer against a rubric. Reply with the score and one short sentence "
         "saying why.")


def adapter_for(model: str) -> Adapter:
    from engine.providers import Anthropic, Gemini, Groq

    if model.startswith("claude"):
        return Anthropic()
    if model.startswith("gemini"):
        return Gemini()
    return Groq()


def _schema(scale: Any) -> dict[str, Any]:
    """The answer's JSON Schema: the score as the scale writes it (an enum, so every vendor takes it) and a reason."""
    if scale == "pass/fail":
        score: dict[str, Any] = {"type": "string", "enum": ["pass", "fail"]}
    elif scale == "1-5":
        score = {"type": "integer", "enum": [1, 2, 3, 4, 5]}
    else:
        low, high = float(scale[0]), float(scale[-1])
        score = {"type": "number", "enum": [round(low + (high - low) * step / 4, 4) for step in range(5)]}
    return {"type": "object", "properties": {"score": score, "reason": {"type": "string"}},
            "required": ["score", "reason"], "additionalProperties": False}


def normalised(scale: Any, score: Any) -> float:
    """The judge's score on [0, 1]."""
    if scale == "pass/fail":
        return 1.0 if score == "pass" else 0.0
    if scale == "1-5":
        return (float(score) - 1) / 4
    low, high = float(scale[0]), float(scale[-1])
    return min(1.0, max(0.0, (float(score) - low) / ((high - low) or 1)))


def _key(adapter: Adapter, services: Services) -> str:
    for variable in adapter.key_variables:
        if services.environ.get(variable):
            return services.environ[variable]
    if services.offline:
        return OFFLINE_KEY
    raise ProviderError(f"the judge needs an API key: set {' or '.join(adapter.key_variables)} (or --offline)",
                        type="missing_api_key")


async def ask_judge(judge: JudgeSpec, seen: Scoring, services: Services, block: str) -> Scored:
    """The judge's score of one case, normalised to [0, 1], with its reason (cut to one line)."""
    from engine.providers import Request, ask, read_output

    adapter = adapter_for(judge.model)
    schema = _schema(judge.scale)
    request = Request(judge.model, _ROLE, [HistoryRow.user(judge_prompt(judge, seen))], [], 0.0, judge.max_tokens,
                      response_schema=schema)
    call = adapter.build(request, _key(adapter, services))
    answer = await ask(services, adapter, call, block=block, timeout=60)
    output = read_output(adapter.vendor, answer.reply, schema) or {}
    reason = str(output.get("reason") or "").strip().splitlines()
    score = round(normalised(judge.scale, output.get("score")), 4)
    return Scored(score, reason[0][:200] if reason else None, judged=True)
