"""The real processes a fault scenario starts, and their end: `diagrama api` and `diagrama worker` processes,
redis-server, a throwaway PostgreSQL cluster (tests.postgres's), each in a process group of its own, in a
temporary folder (a `Lab`) that is removed with everything in it when the scenario ends, the script exits, or
Ctrl+C stops it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import httpx

from benchmarks.serving import free_port

KEY = "dgk_faults-benchmark-key-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {KEY}"}
_TICK = os.sysconf("SC_CLK_TCK")
_OPEN: list[Lab] = []


def diagrama() -> list[str]:
    script = Path(sys.executable).with_name("diagrama")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "engine.cli"]


def api_options() -> str:
    """`diagrama api --help`: which of issue 38's options (--drain-timeout, --resume-interrupted) exist yet."""
    return subprocess.run([*diagrama(), "api", "--help"], capture_output=True, text=True, timeout=60).stdout


def _cpu(select: Any) -> float:
    """CPU seconds (user + system) of the live processes whose /proc stat fields `select(pid, fields)` takes."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # from the state on: ppid 1, pgrp 2, utime 11, stime 12
        if select(int(entry), fields):
            total += int(fields[11]) + int(fields[12])
    return total / _TICK


def group_cpu(leader: int) -> float:
    """CPU seconds of every live process in `leader`'s process group (a worker's pool too)."""
    return _cpu(lambda _pid, fields: int(fields[2]) == leader)


def tree_cpu(parent: int) -> float:
    """CPU seconds of a process and its children (a PostgreSQL server and its backends)."""
    return _cpu(lambda pid, fields: pid == parent or int(fields[1]) == parent)


def process_group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


class Lab:
    """A temporary folder and what a scenario started in it; `close()` kills every process group, stops the clusters
    and removes the folder (also at exit, and on Ctrl+C through the scenario's `finally`)."""

    def __init__(self, name: str, *, keep: bool = False) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=f"diagrama-faults-{name}-"))
        os.chmod(self.root, 0o755)  # a PostgreSQL cluster inside runs as another user
        self.keep = keep
        self.processes: list[subprocess.Popen[bytes]] = []
        self._closers: list[Any] = []
        _OPEN.append(self)

    def spawn(self, command: list[str], log: str, env: dict[str, str] | None = None,
              cwd: Path | None = None) -> subprocess.Popen[bytes]:
        """`command` in a new session (its own process group), stdout and stderr to `log` in the folder."""
        out: IO[bytes] = open(self.root / log, "ab")  # noqa: SIM115  (the child holds it; closed here at once)
        try:
            process = subprocess.Popen(command, cwd=cwd or self.root, env={**os.environ, **(env or {})},
                                       stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        finally:
            out.close()
        self.processes.append(process)
        return process

    def on_close(self, closer: Any) -> None:
        self._closers.append(closer)

    def log_tail(self, log: str, lines: int = 20) -> str:
        try:
            return "\n".join((self.root / log).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def close(self) -> None:
        for process in reversed(self.processes):
            kill_group(process, signal.SIGKILL)
        for closer in reversed(self._closers):
            try:
                closer()
            except Exception as exc:  # the rest must still be stopped
                print(f"faults: stopping {closer}: {exc}", file=sys.stderr)
        self._closers.clear()
        if self.keep:
            print(f"faults: kept {self.root}", file=sys.stderr)
        else:
            shutil.rmtree(self.root, ignore_errors=True)
        if self in _OPEN:
            _OPEN.remove(self)


def kill_group(process: subprocess.Popen[bytes], sig: int) -> None:
    if process.poll() is None or sig == signal.SIGKILL:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)  # what it started too (a worker's pool processes)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def _close_all() -> None:
    for lab in list(_OPEN):
        lab.close()


def _stopped(signum: int, _frame: Any) -> None:
    # Everything started is stopped first: a thread waiting on one of them (a restart, a client) is let go, so the
    # unwinding through each scenario's `finally` cannot hang on it.
    _close_all()
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


atexit.register(_close_all)
signal.signal(signal.SIGTERM, _stopped)
signal.signal(signal.SIGINT, _stopped)


class Redis:
    """redis-server on a free port, its append-only file in the lab: stopped and started again it keeps its data,
    as a production broker does across a restart."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.port = free_port()
        self.folder = lab.root / "redis"
        self.folder.mkdir()
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = self.lab.spawn(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                                       "--dir", str(self.folder), "--appendonly", "yes", "--appendfsync", "everysec",
                                       "--save", "", "--maxclients", "10000"], "redis.log")
        deadline = time.monotonic() + 30
        while not self.ping():
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"redis-server did not start:\n{self.lab.log_tail('redis.log')}")
            time.sleep(0.05)

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as connection:
                connection.sendall(b"PING\r\n")
                return connection.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        """SIGTERM: redis-server writes its append-only file and exits, as a stop for maintenance does."""
        assert self.process is not None
        kill_group(self.process, signal.SIGTERM)


class Postgres:
    """A throwaway PostgreSQL cluster (tests.postgres) with one database, `url`; `restart()` is `pg_ctl restart`."""

    def __init__(self, lab: Lab) -> None:
        from tests.postgres import postgres_binaries, start_cluster

        if postgres_binaries() is None:
            raise RuntimeError("PostgreSQL's binaries are absent (apt-get install postgresql)")
        self.cluster = start_cluster()
        lab.on_close(self.cluster.stop)
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.cluster.port} user=diagrama dbname=postgres",
                             autocommit=True) as connection:
            connection.execute("CREATE DATABASE faults")
        self.url = f"postgresql+psycopg://diagrama@127.0.0.1:{self.cluster.port}/faults"

    def restart(self) -> float:
        """`pg_ctl restart -m fast` (every connection dropped); the seconds it took."""
        cluster = self.cluster
        # -l: the new server's output to the cluster's log (a restart does not remember it), never to a pipe of ours,
        # which it would hold open after pg_ctl ends.
        command = [str(cluster.bin_dir / "pg_ctl"), "-D", str(cluster.folder / "data"), "-l",
                   str(cluster.folder / "log"), "-m", "fast", "-w", "-t", "60", "restart"]
        if cluster.user:
            command = ["runuser", "-u", cluster.user, "--", *command]
        began = time.monotonic()
        subprocess.run(command, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, cwd=cluster.folder, timeout=120)
        return time.monotonic() - began

    def cpu(self) -> float:
        """CPU seconds of the server's processes (its backends included) alive now."""
        try:
            postmaster = int((self.cluster.folder / "data" / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return 0.0
        return tree_cpu(postmaster)

    def query(self, statement: str, *params: Any) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.cluster.port} user=diagrama dbname=faults",
                             autocommit=True, connect_timeout=5) as connection:
            return list(connection.execute(statement, params).fetchall())


class Api:
    """`diagrama api ROBOTS --offline --rpm 0` as its own process (group), with the benchmark's key."""

    def __init__(self, lab: Lab, robots: Path, *, backend: str = "local", broker: str | None = None,
                 store: str | None = None, extra: tuple[str, ...] = (), log_level: str = "info",
                 env: dict[str, str] | None = None, port: int | None = None, log: str = "api.log") -> None:
        self.lab, self.robots, self.log = lab, robots, log
        self.port = port or free_port()
        self.command = [*diagrama(), "api", str(robots), "--port", str(self.port), "--offline", "--rpm", "0",
                        "--runs-dir", str(lab.root / "runs"), "--backend", backend, "--log-format", "json",
                        "--log-level", log_level]
        if broker:
            self.command += ["--broker", broker]
        if store:
            self.command += ["--store", store]
        self.command += list(extra)
        self.env = {"DIAGRAMA_API_KEYS": f"bench={KEY}", **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self, extra: tuple[str, ...] = ()) -> None:
        self.process = self.lab.spawn([*self.command, *extra], self.log, self.env)
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{self.url}/openapi.json", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"diagrama api did not start:\n{self.lab.log_tail(self.log)}")
            time.sleep(0.1)

    def cpu(self) -> float:
        return group_cpu(self.pid)


def start_worker(lab: Lab, broker: str, concurrency: int, env: dict[str, str] | None = None,
                 name: str = "worker") -> subprocess.Popen[bytes]:
    return lab.spawn([*diagrama(), "worker", "--broker", broker, "--concurrency", str(concurrency),
                      "--log-format", "json", "--log-level", "info"], f"{name}.log", env)
