"""SQLAlchemy URLs as the stores show and use them: without their password in a message, the driver to install
for each, and the driver's own connection string (engine.runs.checkpoints_pg's writes on the event loop)."""

from __future__ import annotations

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

__all__ = ["DRIVERS", "conninfo", "scrubbed", "shown_url"]

DRIVERS = {"psycopg": "psycopg[binary]", "psycopg2": "psycopg2-binary", "asyncpg": "asyncpg", "pg8000": "pg8000",
            "pymysql": "pymysql", "mysqldb": "mysqlclient", "pyodbc": "pyodbc", "oracledb": "oracledb"}
"""What to install for each SQLAlchemy driver (a URL without one, `postgresql://`, means psycopg2)."""
def shown_url(url: str) -> str:
    """The URL as a message may show it: without its password."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url.split(":", 1)[0] + ":…"


def conninfo(url: str) -> str:
    """The driver's own connection string for a SQLAlchemy URL (`postgresql+psycopg://…` → `postgresql://…`)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def scrubbed(exc: BaseException, url: str) -> str:
    """An error's first line, the URL's password taken out wherever the driver quoted it."""
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    try:
        password = make_url(url).password
    except ArgumentError:
        password = None
    return text.replace(str(password), "***") if password else text
