"""`diagrama api`'s OpenAI-compatible endpoint: what `POST /v1/chat/completions` adds over `POST
/v1/robots/{name}/runs` for the same run (target: under 2 ms p50).

The API runs under uvicorn in another process on 127.0.0.1 (its own interpreter: client and server share no GIL),
with a key, `--offline`, the local backend, logs as JSON to /dev/null. The robot has three blocks: Start, a
ClaudeRequest answered by the simulator, a Set; by the chat convention its input `question` takes the message and
its variable `answer` is the reply. On one kept-alive connection, after a warm-up, each round runs the robot through
the runs route, then through the chat route (whole), then streamed (`stream: true`, read to `[DONE]`); the figures
are each route's p50 and the median of the paired differences (chat − runs), which a loaded machine's drift cancels.

    python -m benchmarks.openai_overhead [--runs 200]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks.serving import free_port, percentile, wait_for_server

KEY = "dgk_benchmark-key-0123456789abcdef"
QUESTION = "Quanto fa 2+2?"
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
SERVER = """
import sys
from pathlib import Path
import uvicorn
from engine.runtime.context import Services
from engine.web.api import create_app
from engine.runs.service_logs import configure

folder, runs, port = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
configure("json", "info", stream=open("/dev/null", "w"))
app = create_app(folder, runs_dir=runs, offline=True, rpm=None,
                 services=Services(offline=True, environ={"DIAGRAMA_API_KEYS": "bench=" + sys.argv[4]}))
uvicorn.run(app, host="127.0.0.1", port=port, log_config=None, access_log=False)
"""
AUTH = {"Authorization": f"Bearer {KEY}"}
RUN_BODY = {"inputs": {"question": QUESTION}}
CHAT_BODY = {"model": "three", "messages": [{"role": "user", "content": QUESTION}]}


def rounds(client: httpx.Client, count: int) -> tuple[list[float], list[float], list[float]]:
    """Milliseconds of each call through the runs route, the chat route, and the chat route streamed, in turn."""
    runs: list[float] = []
    chats: list[float] = []
    streams: list[float] = []
    for _ in range(count):
        began = time.perf_counter()
        answered = client.post("/v1/robots/three/runs", json=RUN_BODY)
        runs.append((time.perf_counter() - began) * 1000)
        assert answered.status_code == 200 and answered.json()["status"] == "succeeded", answered.text
        began = time.perf_counter()
        answered = client.post("/v1/chat/completions", json=CHAT_BODY)
        chats.append((time.perf_counter() - began) * 1000)
        assert answered.status_code == 200 and answered.json()["choices"][0]["message"]["content"], answered.text
        began = time.perf_counter()
        with client.stream("POST", "/v1/chat/completions", json={**CHAT_BODY, "stream": True}) as streamed:
            lines = [line for line in streamed.iter_lines() if line]
        streams.append((time.perf_counter() - began) * 1000)
        assert lines[-1] == "data: [DONE]", lines[-3:]
    return runs, chats, streams


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        folder, runs_dir, port = Path(temp) / "robots", Path(temp) / "runs", free_port()
        folder.mkdir()
        (folder / "three.yaml").write_text(THREE)
        server = subprocess.Popen([sys.executable, "-c", SERVER, str(folder), str(runs_dir), str(port), KEY])
        base = f"http://127.0.0.1:{port}"
        try:
            wait_for_server(f"{base}/openapi.json", server)
            with httpx.Client(base_url=base, headers=AUTH, timeout=30) as client:
                rounds(client, 20)  # warm-up: the diagram loaded, the simulator and the pools made
                runs, chats, streams = rounds(client, options.runs)
        finally:
            server.terminate()
            server.wait(timeout=10)
    differences = [chat - run for run, chat in zip(runs, chats, strict=True)]
    streamed = [stream - run for run, stream in zip(runs, streams, strict=True)]
    print(json.dumps({
        "benchmark": "openai_overhead", "python": platform.python_version(), "machine": platform.machine(),
        "cpus": os.cpu_count(), "calls": options.runs,
        "runs_p50_ms": round(statistics.median(runs), 3), "runs_p99_ms": round(percentile(runs, 0.99), 3),
        "chat_p50_ms": round(statistics.median(chats), 3), "chat_p99_ms": round(percentile(chats, 0.99), 3),
        "chat_stream_p50_ms": round(statistics.median(streams), 3),
        "chat_over_runs_p50_ms": round(statistics.median(differences), 3),
        "chat_stream_over_runs_p50_ms": round(statistics.median(streamed), 3),
    }))


if __name__ == "__main__":
    main()
