"""A throwaway PostgreSQL cluster for the tests: Debian's binaries, a temporary folder, a free loopback port.

As root the server runs as the `postgres` user (PostgreSQL refuses root), in a folder that user owns.
Durability is off (`fsync`, `synchronous_commit`): the cluster dies with the test session. Each test
that asks gets a database of its own, dropped (its connections ended) when the test is done.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["PostgresCluster", "postgres_binaries", "sql", "start_cluster"]


def postgres_binaries() -> Path | None:
    """The folder with initdb and pg_ctl: on PATH, else Debian's /usr/lib/postgresql/N/bin; None without them."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(os.path.realpath(found)).parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(folder, "pg_ctl").is_file() and Path(folder, "initdb").is_file():
            return Path(folder)
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresCluster:
    """A running cluster; `database()` makes a fresh database and gives its SQLAlchemy URL."""

    def __init__(self, bin_dir: Path, folder: Path, user: str | None) -> None:
        self.bin_dir, self.folder, self.user = bin_dir, folder, user
        self.port = _free_port()
        self._names = itertools.count(1)

    def _command(self, tool: str, *args: str) -> list[str]:
        command = [str(self.bin_dir / tool), *args]
        return ["runuser", "-u", self.user, "--", *command] if self.user else command

    def start(self) -> None:
        data = self.folder / "data"
        subprocess.run(self._command("initdb", "-D", str(data), "-A", "trust", "-U", "diagrama", "-E", "UTF8",
                                     "--no-sync", "--no-instructions"),
                       check=True, capture_output=True, cwd=self.folder)
        options = (f"-k {self.folder} -c listen_addresses=127.0.0.1 -p {self.port} -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300")
        subprocess.run(self._command("pg_ctl", "-D", str(data), "-l", str(self.folder / "log"), "-w", "-t", "60",
                                     "-o", options, "start"), check=True, capture_output=True, cwd=self.folder)

    def stop(self) -> None:
        subprocess.run(self._command("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop"),
                       capture_output=True, cwd=self.folder)
        shutil.rmtree(self.folder, ignore_errors=True)

    @property
    def admin_url(self) -> str:
        return f"postgresql+psycopg://diagrama@127.0.0.1:{self.port}/postgres"

    def _admin(self, statement: str) -> None:
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=diagrama dbname=postgres",
                             autocommit=True) as connection:
            connection.execute(statement)  # type: ignore[arg-type]

    @contextlib.contextmanager
    def database(self) -> Iterator[str]:
        name = f"test_{os.getpid()}_{next(self._names)}"
        self._admin(f"CREATE DATABASE {name}")
        try:
            yield f"postgresql+psycopg://diagrama@127.0.0.1:{self.port}/{name}"
        finally:
            self._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def start_cluster() -> PostgresCluster:
    """A started cluster (the caller stops it); as root, run by `postgres` (or `nobody`)."""
    bin_dir = postgres_binaries()
    assert bin_dir is not None
    user = None
    if os.geteuid() == 0:
        user = "postgres" if _has_user("postgres") else "nobody"
    folder = Path(tempfile.mkdtemp(prefix="diagrama-pg-"))
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    cluster = PostgresCluster(bin_dir, folder, user)
    try:
        cluster.start()
    except subprocess.CalledProcessError as exc:
        log = (folder / "log").read_text(errors="replace") if (folder / "log").is_file() else ""
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start: {exc.stderr.decode(errors='replace')}{log}") from exc
    return cluster


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def sql(store: Any, statement: str, **params: Any) -> None:
    """Run one statement on a checkpoint store's database through a connection of the test's own: to make a run look
    killed, or a question old, the way a store of either kind is changed from outside."""
    from sqlalchemy import create_engine, text

    engine = create_engine(store.url)
    try:
        with engine.begin() as connection:
            connection.execute(text(statement), params)
    finally:
        engine.dispose()
