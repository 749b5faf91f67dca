"""How soon the vendor's first piece of text reaches a client of `diagrama api`'s event stream.

Three processes on 127.0.0.1: a fake Anthropic that streams (a bare asyncio HTTP server writing Server-Sent Events,
chunked, each piece its own write); `diagrama api` (uvicorn, online, a key, the local backend) serving a robot whose
ClaudeRequest has `stream: true` and `base_url` at the fake; and this client, which starts a run (`wait: false`),
follows `GET /v1/runs/{id}/events` and reads the first `text_delta`. The fake waits 50 ms after the request before
its first piece (the client is following by then) and writes the wall-clock time of that write into the piece's
text; the figure is the client's time on reading it minus that (one machine, one clock). Also the same from the
fake's write to the run's trace timestamp of the event (the request path's own share).

    python -m benchmarks.stream_first_delta [--runs 50]
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
import orjson

from benchmarks.serving import free_port, percentile, wait_for_server

KEY = "dgk_benchmark-key-0123456789abcdef"
ROBOT = """
diagram: streamer
blocks:
  - {id: start, type: Start, message_level: Debug, next: ask}
  - id: ask
    type: ClaudeRequest
    with: {model: claude-haiku-5-5, request: "Say something.", stream: true, base_url: "BASE"}
    set: {answer: "{{ result }}"}
"""
FAKE = r'''
import asyncio, sys, time, orjson

def event(name, data):
    return f"event: {name}\ndata: ".encode() + orjson.dumps(data) + b"\n\n"

def chunk(data):
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"

async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length")), 0)
            await reader.readexactly(length)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
            message = {"id": "msg_bench", "type": "message", "role": "assistant", "model": "claude-haiku-5-5",
                       "content": [], "stop_reason": None, "stop_sequence": None,
                       "usage": {"input_tokens": 12, "output_tokens": 1}}
            writer.write(chunk(event("message_start", {"type": "message_start", "message": message})
                               + event("content_block_start", {"type": "content_block_start", "index": 0,
                                                               "content_block": {"type": "text", "text": ""}})))
            await writer.drain()
            await asyncio.sleep(0.05)
            for n in range(5):
                text = f"{time.time():.6f} " if n == 0 else f"piece{n} "
                writer.write(chunk(event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                                 "delta": {"type": "text_delta", "text": text}})))
                await writer.drain()
                await asyncio.sleep(0.001)
            writer.write(chunk(event("content_block_stop", {"type": "content_block_stop", "index": 0})
                               + event("message_delta", {"type": "message_delta",
                                                         "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                                         "usage": {"output_tokens": 9}})
                               + event("message_stop", {"type": "message_stop"})) + b"0\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()

async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]))
    async with server:
        await server.serve_forever()

asyncio.run(main())
'''
API = """
import sys
from pathlib import Path
import uvicorn
from engine.runtime.context import Services
from engine.web.api import create_app
from engine.runs.service_logs import configure

folder, runs, port, key = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
configure("json", "warning")
app = create_app(folder, runs_dir=runs, offline=False, rpm=None,
                 services=Services(environ={"DIAGRAMA_API_KEYS": "bench=" + key,
                                            "ANTHROPIC_API_KEY": "sk-ant-benchmark-0123456789"}))
uvicorn.run(app, host="127.0.0.1", port=port, log_config=None, access_log=False)
"""
AUTH = {"Authorization": f"Bearer {KEY}"}


def first_delta(client: httpx.Client) -> tuple[float, float]:
    """(ms from the fake's write of the first piece to this client's reading it, ms from that write to the event's
    trace timestamp)."""
    run_id = client.post("/v1/robots/streamer/runs", json={"wait": False}).json()["run_id"]
    with client.stream("GET", f"/v1/runs/{run_id}/events") as response:
        event = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "text_delta":
                received = time.time()
                data = orjson.loads(line[6:])
                sent = float(data["text"].split()[0])
                return (received - sent) * 1000, (data["timestamp"] - sent) * 1000
            elif line.startswith("data: ") and event == "run_finished":
                raise RuntimeError(f"the run ended without a text_delta: {line}")
    raise RuntimeError("no text_delta came")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    machine = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary) / "robots"
        folder.mkdir()
        fake_port, api_port = free_port(), free_port()
        (folder / "streamer.yaml").write_text(ROBOT.lstrip().replace("BASE", f"http://127.0.0.1:{fake_port}"))
        fake = subprocess.Popen([sys.executable, "-c", FAKE, str(fake_port)])
        api = subprocess.Popen([sys.executable, "-c", API, str(folder), str(Path(temporary) / "runs"), str(api_port),
                                KEY], stdout=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{api_port}"
        try:
            wait_for_server(f"{base}/openapi.json", seconds=20)
            with httpx.Client(base_url=base, headers=AUTH, timeout=30) as client:
                for _ in range(3):
                    first_delta(client)  # warm-up: the robot's load, the connections
                measured = [first_delta(client) for _ in range(args.runs)]
            to_client = [pair[0] for pair in measured]
            to_trace = [pair[1] for pair in measured]
            print(json.dumps({"benchmark": "stream_first_text_delta", "runs": args.runs,
                              "vendor_to_client_p50_ms": round(statistics.median(to_client), 3),
                              "vendor_to_client_p99_ms": round(percentile(to_client, 0.99), 3),
                              "vendor_to_client_max_ms": round(max(to_client), 3),
                              "vendor_to_trace_p50_ms": round(statistics.median(to_trace), 3),
                              "load_average_1m": os.getloadavg()[0], **machine}))
        finally:
            for process in (api, fake):
                process.terminate()
                process.wait(timeout=10)


if __name__ == "__main__":
    main()
