"""An eval's results written out: the console table's rows, JUnit XML for CI, and one self-contained HTML page.

The HTML page has no script, no link and no fetch: its CSS is inline, and every value in it is escaped.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from engine.format.jsonout import dumps_plain

__all__ = ["html_report", "junit_xml", "table_lines"]


def _shown(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else dumps_plain(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def table_lines(report: dict[str, Any]) -> list[str]:
    """The console's table: a row per case (its scores, and beside them the other version's with the delta), then
    the per-scorer means, tokens and latency."""
    summary = report["summary"]
    scorers = list(summary["scorers"])
    against = report.get("against")
    other = {case["id"]: case for case in against["cases"]} if against else {}
    width = max([len("case"), *(len(case["id"]) for case in report["cases"])])
    head = f"{'case':<{width}}  " + "  ".join(f"{s:>{max(6, len(s))}}" for s in scorers) + "   score"
    lines = [head + ("   against   delta (this − against)" if against else "")]
    order = [row["id"] for row in report["deltas"]] if against else [case["id"] for case in report["cases"]]
    cases = {case["id"]: case for case in report["cases"]}
    for case_id in order:
        case = cases[case_id]
        cells = "  ".join(f"{case['scores'][s]:>{max(6, len(s))}.2f}" for s in scorers)
        line = f"{case_id:<{width}}  {cells}   {case['score']:.2f}" + ("  " if case["passed"] else " ✗")
        if against and case_id in other:
            delta = case["score"] - other[case_id]["score"]
            line += f" {other[case_id]['score']:7.2f}   {delta:+.2f}"
        lines.append(line)
    means = "  ".join(f"{summary['scorers'][s]:>{max(6, len(s))}.2f}" for s in scorers)
    lines.append(f"{'mean':<{width}}  {means}   {summary['score']:.2f}"
                 + (f"   {against['summary']['score']:7.2f}   {report['delta']['score']:+.2f}" if against else ""))
    latency = summary["latency_ms"]
    judged = f" (+ {summary['judge_tokens']} the judges')" if summary.get("judge_tokens") else ""
    lines.append(f"{summary['passed']} of {summary['cases']} cases passed · tokens {summary['tokens']}{judged} · "
                 f"latency p50 {latency['p50']} ms, p95 {latency['p95']} ms · {_cost(summary.get('cost'))}")
    if summary["repeat"] > 1:
        lines.append(f"repeated {summary['repeat']} times: the score moved by {summary['spread']:.3f} between repeats")
    if against and report["delta"]["noise"]:
        lines.append(f"the difference ({report['delta']['score']:+.3f}) is within the spread of repeated runs: noise")
    return lines


def junit_xml(report: dict[str, Any], name: str, path: Path) -> None:
    """JUnit XML: a testsuite for the eval, a testcase per case, failed below the threshold."""
    cases = report["cases"]
    suite = ElementTree.Element("testsuite", name=name, tests=str(len(cases)),
                                failures=str(sum(1 for case in cases if not case["passed"])))
    for case in cases:
        element = ElementTree.SubElement(suite, "testcase", classname=name, name=case["id"],
                                         time=f"{case['latency_ms'] / 1000:.3f}")
        if not case["passed"]:
            scores = ", ".join(f"{scorer} {score:.2f}" for scorer, score in case["scores"].items())
            failure = ElementTree.SubElement(element, "failure", message=f"score {case['score']:.2f}: {scores}")
            failure.text = "\n".join(f"{scorer}: {reason}" for scorer, reason in case["reasons"].items())
    path.parent.mkdir(parents=True, exist_ok=True)
    ElementTree.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


_STYLE = """body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f3f3f3}
.bad{color:#b00020}.good{color:#1b7f3b}.num{text-align:right;font-variant-numeric:tabular-nums}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0;max-width:30em}"""


def _cell(value: Any, cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f"<td{klass}>{html.escape(str(value))}</td>"


def _pre(value: Any) -> str:
    """A value in a cell as a person reads it: text as it is, a mapping a `key: value` line each, the rest as JSON."""
    if isinstance(value, dict):
        shown = "\n".join(f"{key}: {item if isinstance(item, str) else dumps_plain(item)}" for key, item in value.items())
    else:
        shown = value if isinstance(value, str) else dumps_plain(value)
    return f"<td><pre>{html.escape(shown)}</pre></td>"


def html_report(report: dict[str, Any], title: str, path: Path) -> None:
    """One HTML file, readable offline: the summary table, the deltas, each case side by side, its trace linked."""
    parts = [f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title><style>{_STYLE}</style>",
             f"<h1>{html.escape(title)}</h1>"]
    parts += _summary_table(report)
    if report.get("against"):
        parts.append("<h2>Deltas (worse first)</h2><table><tr><th>case</th><th>score</th><th>against</th>"
                     "<th>delta</th></tr>")
        for row in report["deltas"]:
            cls = "bad" if row["delta"] < 0 else "good" if row["delta"] > 0 else ""
            note = " (noise)" if row["noise"] else ""
            parts.append("<tr>" + _cell(row["id"]) + _cell(f"{row['score']:.2f}", "num")
                         + _cell(f"{row['against']:.2f}", "num") + _cell(f"{row['delta']:+.2f}{note}", f"num {cls}")
                         + "</tr>")
        parts.append("</table>")
    parts += _cases_table(report)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(parts) + "\n", encoding="utf-8")


def _summary_table(report: dict[str, Any]) -> list[str]:
    rows = [("this version", report["summary"])]
    if report.get("against"):
        rows.append(("against", report["against"]["summary"]))
    scorers = list(report["summary"]["scorers"])
    parts = ["<h2>Summary</h2><table><tr><th></th><th>score</th><th>passed</th>"
             + "".join(f"<th>{html.escape(s)}</th>" for s in scorers)
             + "<th>tokens</th><th>latency p50 / p95 ms</th><th>cost</th></tr>"]
    for label, summary in rows:
        latency = summary["latency_ms"]
        parts.append("<tr>" + _cell(label) + _cell(f"{summary['score']:.3f}", "num")
                     + _cell(f"{summary['passed']} / {summary['cases']}", "num")
                     + "".join(_cell(f"{(summary['scorers'].get(s) or 0):.2f}", "num") for s in scorers)
                     + _cell(summary["tokens"], "num") + _cell(f"{latency['p50']} / {latency['p95']}", "num")
                     + _cell(_cost(summary.get("cost")).removeprefix("cost ")) + "</tr>")
    parts.append("</table>")
    return parts


def _cases_table(report: dict[str, Any]) -> list[str]:
    against = {case["id"]: case for case in report["against"]["cases"]} if report.get("against") else {}
    heads = ["case", "inputs", "expected", "answer", "scores", "reasons", "trace"]
    if against:
        heads[3:4] = ["answer", "answer (against)"]
    parts = ["<h2>Cases</h2><table><tr>" + "".join(f"<th>{h}</th>" for h in heads) + "</tr>"]
    for case in report["cases"]:
        scores = ", ".join(f"{scorer} {score:.2f}" for scorer, score in case["scores"].items())
        reasons = "\n".join(f"{scorer}: {reason}" for scorer, reason in case["reasons"].items())
        row = [_cell(case["id"], "" if case["passed"] else "bad"), _pre(case["inputs"]), _pre(case["expected"]),
               _pre(case["output"])]
        if against:
            row.append(_pre(against.get(case["id"], {}).get("output")))
        trace = case.get("trace")
        link = _cell(case["run_id"])
        if trace:
            link = (f"<td><a href='{html.escape(Path(trace).resolve().as_uri(), quote=True)}'>"
                    f"{html.escape(case['run_id'])}</a>")
            if case.get("judges"):
                link += f"<br><a href='{html.escape(Path(case['judges']).resolve().as_uri(), quote=True)}'>judges</a>"
            link += "</td>"
        row += [_cell(f"{case['score']:.2f} ({scores})"), _pre(reasons), link]
        parts.append("<tr>" + "".join(row) + "</tr>")
    parts.append("</table>")
    return parts


def _cost(usd: Any) -> str:
    """`cost $0.001234`, or `cost unknown` (a run's request had no price, or a report from before costs)."""
    return f"cost ${usd:.6f}" if isinstance(usd, int | float) else "cost unknown"
