"""Batches on the local backend: order, failures, results files, the store, interrupt and resume."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from blocks.registry import registry
from engine import Services
from engine.cli import app
from engine.compile.loader import load_diagram
from engine.errors import UsageError
from engine.providers import Simulator
from engine.runs.batch import read_rows, run_batch, write_results
from engine.runs.store import RunStore

ROOT = Path(__file__).resolve().parents[2]
cli = CliRunner()

DIAGRAM = """
diagram: echo-batch
blocks:
  - id: start
    type: Start
    inputs: {question: "hi", n: 0}
    next: ask
  - id: ask
    type: GroqChatRequest
    with: {model: llama-3.3-70b-versatile, request: "row {{ n }}: {{ question }}", timeout: 20}
    set: {answer: "{{ result }}", doubled: "{{ n * 2 }}"}
"""


@pytest.fixture
def project(tmp_path: Path) -> dict[str, Path]:
    diagram = tmp_path / "echo.yaml"
    diagram.write_text(DIAGRAM)
    rows = tmp_path / "rows.csv"
    rows.write_text("n,question\n" + "".join(f"{i},question {i}\n" for i in range(1, 201)))
    return {"diagram": diagram, "rows": rows, "runs": tmp_path / "runs"}


def run(project, rows, *, batch_id: str = "b1", concurrency: int = 20, stop_after: int | None = None,
        scripts: dict | None = None, store: RunStore | None = None):
    diagram = load_diagram(project["diagram"], registry())
    store = store or RunStore(f"sqlite:///{project['runs'] / 'diagrama.db'}")

    async def no_wait(_s: float) -> None:
        await asyncio.sleep(0)

    services = Services(environ={}, offline=True, sleep=no_wait, simulator=Simulator(scripts or {}))
    stop = asyncio.Event()
    finished = 0

    def progress(kind: str, _result) -> None:
        nonlocal finished
        if kind == "finished":
            finished += 1
            if stop_after is not None and finished >= stop_after:
                stop.set()

    async def go():
        return await run_batch(diagram, rows, batch_id=batch_id, store=store, services=services,
                               runs_dir=project["runs"], concurrency=concurrency, stop=stop, grace=5, progress=progress)

    return asyncio.run(go()), store


def test_rows_are_typed_by_the_start_defaults(project) -> None:
    rows = read_rows(project["rows"], load_diagram(project["diagram"], registry()))
    assert rows[0] == {"n": 1, "question": "question 1"} and len(rows) == 200


def test_bad_rows_name_the_file_and_row_and_are_all_listed_before_anything_runs(project, tmp_path: Path) -> None:
    diagram = load_diagram(project["diagram"], registry())
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("n,question\n1,a\ntwo,b\n3,c\nfour,d\n")
    with pytest.raises(UsageError) as caught:
        read_rows(bad_csv, diagram)
    message = str(caught.value)
    assert str(bad_csv) in message and "2 problems" in message
    assert "row 2 (line 3): input 'n' is a whole number" in message and "row 4 (line 5)" in message
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("- {n: 1}\n- {questoin: x}\n- just text\n")
    with pytest.raises(UsageError) as caught:
        read_rows(bad_yaml, diagram)
    message = str(caught.value)
    assert "row 2: the diagram has no input 'questoin'" in message and "question" in message
    assert "row 3: a str, not a mapping" in message
    shown = cli.invoke(app, ["batch", str(project["diagram"]), "--inputs", str(bad_csv), "--offline",
                             "--runs-dir", str(project["runs"])])
    assert shown.exit_code == 2 and "row 2 (line 3)" in shown.stderr and "row 4 (line 5)" in shown.stderr
    assert not project["runs"].exists() or not list(project["runs"].glob("*/trace.jsonl"))


@pytest.mark.slow
def test_200_rows_at_concurrency_20_in_order_with_a_failing_row(project, tmp_path: Path) -> None:
    rows = read_rows(project["rows"], load_diagram(project["diagram"], registry()))
    failing = [{"match": "row 17:", "error": {"status": 500}}] * 5
    outcome, store = run(project, rows, scripts={"ask": [dict(r) for r in failing]})
    assert outcome.succeeded == 199 and outcome.failed == 1 and outcome.not_run == 0
    write_results(tmp_path / "out.jsonl", store, "b1", len(rows), ["answer", "doubled"])
    write_results(tmp_path / "out.csv", store, "b1", len(rows), ["answer", "doubled"])
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [line["row"] for line in lines] == list(range(1, 201))
    assert lines[0]["doubled"] == 2 and "row 1: question 1" in lines[0]["answer"]
    assert lines[16]["status"] == "failed" and "after 5 attempts" in lines[16]["error"]
    with (tmp_path / "out.csv").open() as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == 200 and table[16]["status"] == "failed" and table[1]["doubled"] == "4"
    recorded = store.batch_runs("b1")
    assert len(recorded) == 200 and recorded[5]["inputs"] == {"n": 5, "question": "question 5"}


@pytest.mark.slow
def test_interrupt_then_resume_runs_exactly_the_missing_rows(project) -> None:
    rows = read_rows(project["rows"], load_diagram(project["diagram"], registry()))
    first, store = run(project, rows, stop_after=50, concurrency=10)
    assert first.interrupted
    done_first = store.succeeded_rows("b1")
    assert 50 <= len(done_first) < 200
    before = {row: run["finished"] for row, run in store.batch_runs("b1").items()}
    second, store = run(project, rows, store=store)
    assert second.skipped == len(done_first)
    assert second.succeeded == 200 - len(done_first)
    after = store.batch_runs("b1")
    assert len(after) == 200 and all(run["status"] == "succeeded" for run in after.values())
    assert all(after[row]["finished"] == finished for row, finished in before.items())  # nothing ran twice


@pytest.mark.slow
def test_cli_batch_writes_results_and_refuses_resume_after_an_edit(project) -> None:
    output = project["runs"] / "results.jsonl"
    shown = cli.invoke(app, ["batch", str(project["diagram"]), "--inputs", str(project["rows"]), "--offline",
                             "--concurrency", "20", "--runs-dir", str(project["runs"]), "--output", str(output),
                             "--collect", "doubled"])
    assert shown.exit_code == 0, shown.output
    assert "succeeded 200" in shown.stdout
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    # llama-3.3-70b-versatile is priced: each row says its run's cost, the summary their sum.
    assert all(line["cost_usd"] > 0 for line in lines)
    summary = dict(part.split(" ", 1) for part in shown.stdout.strip().splitlines()[-1].split(" · "))
    assert float(summary["cost_usd"]) == pytest.approx(sum(line["cost_usd"] for line in lines))
    assert summary["cost_unknown_rows"] == "0"
    batch_id = lines[0]["run_id"].rsplit("-r", 1)[0]
    project["diagram"].write_text(DIAGRAM.replace("n * 2", "n * 3"))
    refused = cli.invoke(app, ["batch", str(project["diagram"]), "--inputs", str(project["rows"]), "--offline",
                               "--runs-dir", str(project["runs"]), "--resume", batch_id])
    assert refused.exit_code == 2 and "diagram changed" in refused.stderr
    forced = cli.invoke(app, ["batch", str(project["diagram"]), "--inputs", str(project["rows"]), "--offline",
                              "--runs-dir", str(project["runs"]), "--resume", batch_id, "--force"])
    assert forced.exit_code == 0 and "skipped_already_done 200" in forced.stdout
    listed = cli.invoke(app, ["runs", "--runs-dir", str(project["runs"]), "--limit", "3"])
    assert batch_id in listed.stdout


def test_a_single_run_is_recorded_in_the_store(tmp_path: Path) -> None:
    shown = cli.invoke(app, ["run", str(ROOT / "diagrams/greeting_counter.yaml"), "--runs-dir", str(tmp_path), "-q",
                             "--output", "json"])
    run_id = json.loads(shown.stdout)["run_id"]
    recent = RunStore(f"sqlite:///{tmp_path / 'diagrama.db'}").recent()
    assert recent[0]["run_id"] == run_id and recent[0]["status"] == "succeeded" and recent[0]["batch_id"] is None


def test_diagrama_store_names_the_store_for_run_runs_and_batch(project, tmp_path: Path, monkeypatch) -> None:
    shared = tmp_path / "elsewhere" / "shared.db"
    monkeypatch.setenv("DIAGRAMA_STORE", f"sqlite:///{shared}")
    shown = cli.invoke(app, ["run", str(ROOT / "diagrams/greeting_counter.yaml"), "--runs-dir", str(project["runs"]),
                             "-q", "--output", "json"])
    run_id = json.loads(shown.stdout)["run_id"]
    assert shared.is_file() and not (project["runs"] / "diagrama.db").exists()
    rows = project["rows"].parent / "three.csv"
    rows.write_text("n,question\n1,a\n2,b\n3,c\n")
    batch = cli.invoke(app, ["batch", str(project["diagram"]), "--inputs", str(rows), "--offline",
                             "--runs-dir", str(project["runs"])])
    assert batch.exit_code == 0, batch.output
    listed = cli.invoke(app, ["runs", "--runs-dir", str(project["runs"])])
    assert run_id in listed.stdout and "#3" in listed.stdout  # the single run and the batch's third row
    given = tmp_path / "given.db"
    other = cli.invoke(app, ["batch", str(project["diagram"]), "--inputs", str(rows), "--offline",
                             "--runs-dir", str(project["runs"]), "--store", f"sqlite:///{given}"])
    assert other.exit_code == 0 and len(RunStore(f"sqlite:///{given}").recent()) == 3  # --store wins


@pytest.mark.slow
def test_rate_limit_spaces_requests_from_the_first_second(project) -> None:
    from engine.runs.limits import TokenBucket, VendorLimits

    diagram = load_diagram(project["diagram"], registry())
    store = RunStore(f"sqlite:///{project['runs'] / 'diagrama.db'}")
    services = Services(environ={}, offline=True)
    services.limits = VendorLimits(rpm={"groq": TokenBucket(600)})  # 10 a second: no burst of 600 at the start

    async def go():
        began = asyncio.get_running_loop().time()
        await run_batch(diagram, [{"n": i} for i in range(1, 7)], batch_id="rl", store=store, services=services,
                        runs_dir=None, concurrency=6)
        return asyncio.get_running_loop().time() - began

    assert asyncio.run(go()) >= 0.45  # the first at once, then 5 refills at 10/s


@pytest.mark.slow
def test_sigint_stops_the_batch_and_the_printed_resume_command_finishes_it(tmp_path: Path) -> None:
    import os
    import shlex
    import signal
    import subprocess
    import sys
    import time

    from tests.batch.test_celery import DIAGRAM as SLOW_DIAGRAM
    from tests.batch.test_celery import REGISTRY, SLOW_TOOLS

    (tmp_path / "slow_tools.py").write_text(SLOW_TOOLS)
    (tmp_path / "slow.yaml").write_text(REGISTRY)
    (tmp_path / "batch.yaml").write_text(SLOW_DIAGRAM)
    (tmp_path / "rows.csv").write_text("n,seconds\n" + "".join(f"{i},0.04\n" for i in range(1, 121)))
    store_file = tmp_path / "store" / "batch.db"
    command = [sys.executable, "-m", "engine.cli", "batch", str(tmp_path / "batch.yaml"), "--inputs",
               str(tmp_path / "rows.csv"), "--offline", "--concurrency", "4", "--runs-dir", str(tmp_path / "runs"),
               "--output", str(tmp_path / "out.jsonl"), "--rpm", "groq=60000", "--max-concurrent", "gemini=3",
               "--store", f"sqlite:///{store_file}", "--grace", "5"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if store_file.is_file() and len(RunStore(f"sqlite:///{store_file}").recent(1000)) >= 30:
            break
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 1, err
    assert "waiting up to 5 s for" in err and "Ctrl-C again" in err, err
    assert "Resume with:" in err, err
    printed = shlex.split(err.split("Resume with:")[1].strip().splitlines()[0])
    assert printed[:2] == ["diagrama", "batch"]
    for option in ("--offline", "--concurrency", "--rpm", "--max-concurrent", "--runs-dir", "--store", "--output",
                   "--grace"):
        assert option in printed, (option, printed)
    store = RunStore(f"sqlite:///{store_file}")
    batch_id = printed[printed.index("--resume") + 1]
    first = {row: run["finished"] for row, run in store.batch_runs(batch_id).items()}
    assert 30 <= len(first) < 120, (len(first), err)
    assert all(run["status"] == "succeeded" for run in store.batch_runs(batch_id).values())
    # Run as printed, with no API key anywhere: an offline batch must stay offline.
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "DIAGRAMA_STORE"}
    again = subprocess.run([sys.executable, "-m", "engine.cli", *printed[1:]], capture_output=True, text=True,
                           timeout=120, env=environ)
    assert again.returncode == 0, again.stderr
    assert f"skipped_already_done {len(first)}" in again.stdout
    final = store.batch_runs(batch_id)
    assert len(final) == 120 and all(final[row]["finished"] == when for row, when in first.items())
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert len(lines) == 120 and all('"succeeded"' in line for line in lines)


@pytest.mark.slow
def test_a_second_ctrl_c_stops_the_running_rows_at_once(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    from tests.batch.test_celery import DIAGRAM as SLOW_DIAGRAM
    from tests.batch.test_celery import REGISTRY, SLOW_TOOLS

    (tmp_path / "slow_tools.py").write_text(SLOW_TOOLS)
    (tmp_path / "slow.yaml").write_text(REGISTRY)
    (tmp_path / "batch.yaml").write_text(SLOW_DIAGRAM)
    (tmp_path / "rows.csv").write_text("n,seconds\n" + "".join(f"{i},60\n" for i in range(1, 5)))
    runs = tmp_path / "runs"
    process = subprocess.Popen([sys.executable, "-m", "engine.cli", "batch", str(tmp_path / "batch.yaml"), "--inputs",
                                str(tmp_path / "rows.csv"), "--offline", "--concurrency", "2", "--runs-dir", str(runs),
                                "--grace", "120"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(list(runs.glob("*/trace.jsonl"))) < 2:
        time.sleep(0.05)
    time.sleep(0.5)  # both rows are in their 60-second tool call
    process.send_signal(signal.SIGINT)
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    began = time.monotonic()
    _out, err = process.communicate(timeout=30)
    assert time.monotonic() - began < 20, err  # not the grace period, nor the rows' minute
    assert process.returncode == 1, err
    assert "waiting up to 120 s for 2 running rows to finish (1, 2)" in err, err
    assert "stopping the running rows now" in err and "Resume with:" in err, err
    store = RunStore(f"sqlite:///{runs / 'diagrama.db'}")
    assert store.recent(10) == []  # nothing recorded: --resume runs every row


COUNTED_TOOLS = '''
import os
import time

def pause(seconds: float, n: int):
    # One line per call, appended whole: the test counts each row's calls (an effect must not run more than twice).
    handle = os.open(os.path.join(os.path.dirname(__file__), "calls.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(handle, f"{n}\\n".encode())
    os.close(handle)
    time.sleep(seconds)
    return {"slept": seconds}
'''


@pytest.mark.slow
@pytest.mark.parametrize("durable", [True, False])
def test_rows_in_flight_when_the_batch_is_killed_resume_from_their_checkpoints(tmp_path: Path, durable: bool) -> None:
    """A durable diagram's rows killed mid-run continue from their checkpoints under their own run ids (the request
    block before the tool call does not run again); without checkpoints (`durable: false`) they start again as
    attempt 2, in a fresh trace."""
    import signal
    import subprocess
    import sys
    import time

    from engine.runs.checkpoints import open_checkpoints
    from engine.runs.traces import list_runs
    from tests.batch.test_celery import DIAGRAM as SLOW_DIAGRAM
    from tests.batch.test_celery import REGISTRY

    (tmp_path / "slow_tools.py").write_text(COUNTED_TOOLS)
    (tmp_path / "slow.yaml").write_text(REGISTRY.replace("properties: {seconds: {type: number}}",
                                                         "properties: {seconds: {type: number}, n: {type: integer}}"))
    diagram = SLOW_DIAGRAM.replace("'arguments': {'seconds': seconds}", "'arguments': {'seconds': seconds, 'n': n}")
    if not durable:
        diagram = diagram.replace("inputs: {n: 0, seconds: 0.0}", "inputs: {n: 0, seconds: 0.0}\n    durable: false")
    (tmp_path / "batch.yaml").write_text(diagram)
    (tmp_path / "rows.csv").write_text("n,seconds\n" + "".join(f"{i},0.3\n" for i in range(1, 13)))
    runs = tmp_path / "runs"
    command = [sys.executable, "-m", "engine.cli", "batch", str(tmp_path / "batch.yaml"), "--inputs",
               str(tmp_path / "rows.csv"), "--offline", "--concurrency", "4", "--runs-dir", str(runs),
               "--output", str(tmp_path / "out.jsonl")]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    store_file = runs / "diagrama.db"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if store_file.is_file() and len(RunStore(f"sqlite:///{store_file}").recent(1000)) >= 4:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)  # no grace: the rows in flight die mid-run
    process.communicate(timeout=30)
    store = RunStore(f"sqlite:///{store_file}")
    batch_id = store.recent(1)[0]["batch_id"]
    killed = [s for s in list_runs(runs, limit=1000) if s.status == "interrupted"]
    assert killed, "rows were in flight when the batch was killed"
    # A run writes its trace's first line, then checkpoint 0: one killed in between has no checkpoint to continue
    # from, and starts again as attempt 2, as a run of a diagram that is not durable does (CI caught one there).
    checkpoints = open_checkpoints(None, runs)
    try:
        checkpointed = {s.run_id for s in killed if durable and checkpoints.states(s.run_id)}
    finally:
        checkpoints.close()
    assert checkpointed or not durable, "the rows killed in their tool calls had checkpoints"
    # A row killed after taking its run folder but before its trace's first line is in flight too, unlisted.
    in_flight = {int(folder.name.split("-r")[-1]) for folder in runs.iterdir() if folder.is_dir()
                 and (not (folder / "trace.jsonl").is_file() or b"run_finished" not in (folder / "trace.jsonl").read_bytes())}
    again = subprocess.run([*command, "--resume", batch_id], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert f"resumed_from_checkpoint {len(checkpointed)}" in again.stdout, again.stdout
    final = store.batch_runs(batch_id)
    assert len(final) == 12 and all(run["status"] == "succeeded" for run in final.values())
    assert all(run["variables"]["slept"] == 0.3 for run in final.values())
    calls = [int(line) for line in (tmp_path / "calls.log").read_text().split()]
    assert all(calls.count(row) == 1 for row in range(1, 13) if row not in in_flight)
    assert all(1 <= calls.count(row) <= 2 for row in in_flight)  # at most the call in flight runs again
    resumed_at = []
    for summary in killed:
        row = int(summary.run_id.split("-r")[-1])
        events = [json.loads(line) for line in summary.trace.read_text().splitlines()]
        starts = [e for e in events if e["event"] == "run_started"]
        if summary.run_id in checkpointed:  # the same run, continued in its own trace
            assert final[row]["run_id"] == summary.run_id and final[row]["attempt"] == 1
            # Killed before its first checkpoint past Start (a row just begun: checkpoint 0 says `start`), while
            # asking, or in the tool call: it continues from the last checkpoint it had.
            assert len(starts) == 2 and starts[1]["resumed_at"] in ("start", "ask", "wait")
            resumed_at.append(starts[1]["resumed_at"])
            asked = [e for e in events if e["event"] == "block_started" and e["block"] == "ask"]
            # the request runs again only if it was in flight (never after its checkpoint)
            assert len(asked) == 1 if starts[1]["resumed_at"] == "wait" else len(asked) in (1, 2), \
                [(e["event"], e.get("block"), e.get("status"), e.get("resumed_at")) for e in events]
            assert events[-1]["event"] == "run_finished" and events[-1]["status"] == "succeeded"
        else:  # a fresh attempt beside the killed one
            assert final[row]["run_id"] == f"{batch_id}-r{row:06d}-a2" and final[row]["attempt"] == 2
            assert summary.trace != Path(final[row]["trace"]) and len(starts) == 1
    if durable:
        # Killed in their 0.3 s tool calls, past the instant offline request: they continue at the tool.
        assert "wait" in resumed_at, resumed_at
    assert all(run["attempt"] == 1 for row, run in final.items() if row not in in_flight)
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [line["status"] for line in lines] == ["succeeded"] * 12


def test_rows_stopped_by_ctrl_c_are_retried_in_fresh_traces(tmp_path: Path, registry) -> None:
    text = """
diagram: sleepy
blocks:
  - {id: start, type: Start, inputs: {n: 0}, next: wait}
  - {id: wait, type: Sleep, with: {seconds: "{{ 0 if n % 2 else SLOW }}"}}
"""
    path = tmp_path / "sleepy.yaml"
    store = RunStore(f"sqlite:///{tmp_path / 'runs' / 'diagrama.db'}")
    rows = [{"n": n} for n in range(1, 11)]

    async def go(slow: float, stop_after: int | None):
        path.write_text(text.replace("SLOW", str(slow)))
        stop = asyncio.Event()
        finished = 0

        def progress(kind: str, _result) -> None:
            nonlocal finished
            finished += kind == "finished"
            if stop_after is not None and finished >= stop_after:
                stop.set()

        return await run_batch(load_diagram(path, registry), rows, batch_id="b1", store=store,
                               services=Services(environ={}), runs_dir=tmp_path / "runs", concurrency=10, stop=stop,
                               grace=0.05, progress=progress)

    first = asyncio.run(go(30, stop_after=5))  # the odd rows finish, the even ones are stopped mid-run
    assert first.interrupted and first.succeeded == 5
    second = asyncio.run(go(0, stop_after=None))
    assert second.succeeded == 5 and second.skipped == 5
    traces = sorted((tmp_path / "runs").glob("*/trace.jsonl"))
    assert len(traces) == 15  # the stopped rows' first attempts are kept beside their retries
    for trace in traces:
        started = [line for line in trace.read_text().splitlines() if '"event":"run_started"' in line]
        assert len(started) == 1, f"{trace}: {len(started)} run_started"
    final = store.batch_runs("b1")
    assert {row: run["attempt"] for row, run in final.items()} == {n: 1 if n % 2 else 2 for n in range(1, 11)}
    assert all(final[n]["run_id"] == f"b1-r{n:06d}-a2" for n in range(2, 11, 2))


def test_a_store_from_before_attempts_gains_the_column(tmp_path: Path) -> None:
    import sqlite3

    url = f"sqlite:///{tmp_path / 'old.db'}"
    RunStore(url).close()
    with sqlite3.connect(tmp_path / "old.db") as connection:  # the store as it was made before attempts were counted
        connection.execute("ALTER TABLE runs DROP COLUMN attempt")
        connection.execute("INSERT INTO runs (run_id, diagram, content_hash, status, batch_id, row) "
                           "VALUES ('b-r000001', 'd.yaml', 'h', 'failed', 'b', 1)")
    store = RunStore(url)
    assert store.last_attempt("b", 1) == 1 and store.last_attempt("b", 2) == 0
    assert store.batch_runs("b")[1]["attempt"] is None


def test_a_batch_with_a_row_of_unknown_cost_has_no_total() -> None:
    from engine.runs.batch import BatchOutcome

    outcome = BatchOutcome("b1", 3)
    outcome.count(0.1, 10, "succeeded", 0.002)
    outcome.count(0.1, 10, "succeeded", 0.001)
    assert outcome.summary()["cost_usd"] == pytest.approx(0.003) and outcome.summary()["cost_unknown_rows"] == 0
    outcome.count(0.1, 10, "failed", None)  # its model has no price
    assert outcome.summary()["cost_usd"] is None and outcome.summary()["cost_unknown_rows"] == 1


def test_a_total_budget_stops_the_batch_and_a_resume_counts_what_was_spent(project, tmp_path: Path) -> None:
    rows = tmp_path / "rows10.csv"
    rows.write_text("n,question\n" + "".join(f"{i},question {i}\n" for i in range(1, 11)))
    common = [str(project["diagram"]), "--inputs", str(rows), "--offline", "--runs-dir", str(project["runs"]),
              "--concurrency", "1"]
    first = cli.invoke(app, ["batch", *common, "--budget-total", "requests=4"])
    assert first.exit_code == 1, first.output
    summary = dict(part.split(" ", 1) for part in first.stdout.strip().split(" · "))
    assert summary["succeeded"] == "4" and summary["not_run"] == "6" and summary["budget_spent"] == "True"
    assert "total budget (--budget-total) is spent" in first.stderr and "--budget-total requests=4" in first.stderr
    batch_id = summary["batch_id"]
    # Resumed with the same total: the four recorded rows spent it all, so nothing more runs.
    again = cli.invoke(app, ["batch", *common, "--resume", batch_id, "--budget-total", "requests=4"])
    assert dict(part.split(" ", 1) for part in again.stdout.strip().split(" · "))["not_run"] == "6"
    more = cli.invoke(app, ["batch", *common, "--resume", batch_id, "--budget-total", "requests=7"])
    assert dict(part.split(" ", 1) for part in more.stdout.strip().split(" · "))["succeeded"] == "3"
    wrong = cli.invoke(app, ["batch", *common, "--budget-total", "usd=lots"])
    assert wrong.exit_code == 2 and "--budget-total: usd: input should be a valid number" in wrong.output
