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

__all__ = ["adapter_for", "ask_judge", "judge_refusal", "normalised"]

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


def judge_refusal(judge: JudgeSpec) -> str | None:
    """Why the judge's vendor would refuse its structured answer on its model (a Groq model without structured
    output), read at load as a request block's response schema is; None when it takes it."""
    from engine.providers import claude_output_refusal, gemini_output_refusal, groq_output_refusal

    schema = _schema(judge.scale)
    vendor = adapter_for(judge.model).vendor
    if vendor == "anthropic":
        refusal = claude_output_refusal(judge.model, schema)
    elif vendor == "gemini":
        refusal = gemini_output_refusal(judge.model, schema, False)
    else:
        refusal = groq_output_refusal(judge.model, schema)
    return f"the judge's model cannot answer with a score and a reason: {refusal.message}" if refusal else None


def normalised(scale: Any, score: Any) -> float:
    """The judge's score on [0, 1]."""
    if scale == "pass/fail":
        return 1.0 if score == "pass" else 0.0
    if scale == "1-5":
        return (float(score) - 1) / 4
    low, high = float(scale[0]), float(scale[-1])
    return min(1.0, max(0.0, (float(score) - low) / ((high - low) or 1)))


class _Exchanges:
    """The judge's HTTP attempts as the case's judge trace keeps them: URL, bodies, status, never the headers (the
    key rides in them)."""

    def __init__(self, kept: list[dict[str, Any]]) -> None:
        self.kept = kept

    def requested(self, method: str, url: str, headers: dict[str, str], body: Any, attempt: int) -> None:
        self.kept.append({"event": "http_request", "method": method, "url": url, "body": body, "attempt": attempt})

    def responded(self, status: int, headers: dict[str, str], body: Any, duration_ms: float, attempt: int) -> None:
        self.kept.append({"event": "http_response", "status": status, "body": body,
                          "duration_ms": round(duration_ms, 3), "attempt": attempt})


def _key(adapter: Adapter, services: Services) -> str:
    for variable in adapter.key_variables:
        if services.environ.get(variable):
            return services.environ[variable]
    if services.offline:
        return OFFLINE_KEY
    raise ProviderError(f"the judge needs an API key: set {' or '.join(adapter.key_variables)} (or --offline)",
                        type="missing_api_key")


async def ask_judge(judge: JudgeSpec, seen: Scoring, services: Services, block: str,
                    trace: list[dict[str, Any]] | None = None) -> Scored:
    """The judge's score of one case, normalised to [0, 1], with its reason (cut to one line). `trace` hears the
    judge's request and reply, and its verdict (the case's `judges.jsonl`, beside its run's trace)."""
    from engine.providers import Request, ask, read_output

    adapter = adapter_for(judge.model)
    schema = _schema(judge.scale)
    request = Request(judge.model, _ROLE, [HistoryRow.user(judge_prompt(judge, seen))], [], 0.0, judge.max_tokens,
                      response_schema=schema)
    call = adapter.build(request, _key(adapter, services))
    exchanges: list[dict[str, Any]] = []
    answer = await ask(services, adapter, call, block=block, timeout=60, exchanges=_Exchanges(exchanges))
    output = read_output(adapter.vendor, answer.reply, schema) or {}
    reason = str(output.get("reason") or "").strip().splitlines()
    score = round(normalised(judge.scale, output.get("score")), 4)
    scored = Scored(score, reason[0][:200] if reason else None, judged=True,
                    tokens=(answer.reply.input_tokens or 0) + (answer.reply.output_tokens or 0))
    if trace is not None:
        trace += exchanges
        trace.append({"event": "judged", "judge": block, "model": judge.model, "score": score, "reason": scored.reason,
                      "said": output.get("score"), "input_tokens": answer.reply.input_tokens,
                      "output_tokens": answer.reply.output_tokens})
    return scored
