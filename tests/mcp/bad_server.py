"""A malformed MCP server over stdio, written by hand (JSON-RPC lines): it starts and lists its tools properly, then
answers a call with what a broken server sends. `--noisy` also writes lines that are not JSON-RPC before it answers
`initialize`. `--linger PIDFILE` writes its process id there and does not exit when its stdin ends (it is killed).

- `garbage`: lines that are not JSON, then nothing;
- `deep`: a result nested 100,000 levels deep;
- `fine`: a proper text result (the server works until a broken call).
"""

from __future__ import annotations

import json
import os
import sys
import time

TOOLS = [{"name": name, "description": f"answers {name}", "inputSchema": {"type": "object", "properties": {}}}
         for name in ("garbage", "deep", "fine")]


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    noisy = "--noisy" in sys.argv
    linger = sys.argv[sys.argv.index("--linger") + 1] if "--linger" in sys.argv else None
    if linger:
        with open(linger, "w") as pid:
            pid.write(str(os.getpid()))
    for line in sys.stdin:
        request = json.loads(line)
        method, ident = request.get("method"), request.get("id")
        if method == "initialize":
            if noisy:
                sys.stdout.write("starting the shop server...\nnot json {\n")
                sys.stdout.flush()
            send({"jsonrpc": "2.0", "id": ident, "result": {
                "protocolVersion": request["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "bad", "version": "1"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            name = request["params"]["name"]
            if name == "garbage":
                sys.stdout.write("Traceback? no: just text\n{\"half\": \n\x00\x01 binary\n")
                sys.stdout.flush()
            elif name == "deep":
                depth = 100_000
                text = '{"jsonrpc": "2.0", "id": ' + json.dumps(ident) + ', "result": {"content": [{"type": "text", ' \
                       '"text": "x"}], "structuredContent": {"a": ' + "[" * depth + "]" * depth + "}}}\n"
                sys.stdout.write(text)
                sys.stdout.flush()
            else:
                send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "fine"}]}})
        elif ident is not None:
            send({"jsonrpc": "2.0", "id": ident, "result": {}})
    while linger:  # a server that ignores the end of its input
        time.sleep(60)


if __name__ == "__main__":
    main()
