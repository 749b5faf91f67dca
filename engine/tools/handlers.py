"""Handler paths (`package.module:callable`, `package.module:Class.method`) turned into callables, and no further.

A handler path may name only what its module itself defines: `getattr` would follow what the
module imports (`shop.tools:os.system`, `engine.tools.standard:httpx.post`) or reach Python's
machinery. Modules are imported from the diagram's folder for their own import alone. One
implementation for a registry's tool handlers and a Function block's function: the path's form,
`allowed_modules`, and the import (`load_handler`, whose failures are HandlerRefused or HandlerUnloadable).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["HANDLER_PATH", "STANDARD_MODULE", "HandlerRefused", "HandlerUnloadable", "handler_path_problem",
           "load_handler", "module_allowed", "resolve_handler"]

STANDARD_MODULE = "engine.tools.standard"

HANDLER_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)?$")
"""`package.module:callable` or `package.module:Class.method`."""


class HandlerRefused(Exception):
    """A handler path that leaves its module: something it imports, or Python's own machinery."""


class HandlerUnloadable(Exception):
    """A handler whose module cannot be imported (missing, a syntax error, raising while it loads) or that names
    nothing callable; the message says what happened, never with a traceback."""


def module_allowed(module: str, allowed: list[str] | tuple[str, ...]) -> bool:
    """Whether `module` is one of `allowed`, or inside one of them (`shop` allows `shop.pricing`)."""
    return any(module == a or module.startswith(a + ".") for a in allowed)


def handler_path_problem(path: str, allowed_modules: list[str] | tuple[str, ...]) -> tuple[str, str] | None:
    """(message, hint) when a handler path is malformed or its module is not in `allowed_modules`; None when fine."""
    if not HANDLER_PATH.match(path):
        return (f"'{path}' must be package.module:function or package.module:Class.method",
                "for example shop.pricing:quote")
    module = path.partition(":")[0]
    if not module_allowed(module, allowed_modules):
        return (f"module '{module}' is not in allowed_modules",
                f"add it to allowed_modules ({', '.join(allowed_modules) or 'none yet'})")
    return None


def _defined_in(value: Any, module_name: str) -> bool:
    return getattr(value, "__module__", None) == module_name


def _method(owner: type, name: str, module_name: str) -> Any:
    """The function `owner.name` stands for, found where it is defined: refused unless written in the module."""
    for klass in owner.__mro__:
        if name in klass.__dict__:
            raw = klass.__dict__[name]
            break
    else:
        raise AttributeError(f"class '{owner.__name__}' has no attribute '{name}'")
    function = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
    # callable, not only a plain function: a decorated method (functools.cache) keeps its module
    if not (callable(function) and _defined_in(function, module_name)):
        raise HandlerRefused(f"'{owner.__name__}.{name}' is not a method written in {module_name}")
    return raw


_IMPORT_LOCK = threading.Lock()


def _import_handler_module(module_name: str, folder: Path | None) -> Any:
    """Import a handler's module, looking in the diagram's folder first, for the length of that import alone.

    The folder is never left on sys.path: a diagram folder holding `httpx.py` or `sqlalchemy.py`
    would otherwise shadow the engine's own lazy imports for the rest of the process. Only the
    module a registry names (which allowed_modules permits) and what it imports as it loads see
    the folder.
    """
    if folder is None or module_name in sys.modules:
        return importlib.import_module(module_name)
    entry = str(folder)
    with _IMPORT_LOCK:
        sys.path.insert(0, entry)
        try:
            return importlib.import_module(module_name)
        finally:
            with contextlib.suppress(ValueError):
                sys.path.remove(entry)
            sys.path_importer_cache.pop(entry, None)


def load_handler(handler: str, allowed_hosts: tuple[str, ...], folder: Path | None = None) -> Callable[..., Any]:
    """`resolve_handler`, with every way the module can fail to load as HandlerUnloadable (HandlerRefused stays)."""
    try:
        return resolve_handler(handler, allowed_hosts, folder)
    except HandlerRefused:
        raise
    except (ImportError, AttributeError, TypeError) as exc:
        raise HandlerUnloadable(str(exc)) from exc
    except Exception as exc:  # the module is user code: a SyntaxError, or whatever it raises as it loads
        raise HandlerUnloadable(f"{type(exc).__name__}: {exc}") from exc


def resolve_handler(handler: str, allowed_hosts: tuple[str, ...], folder: Path | None = None) -> Callable[..., Any]:
    """The callable a handler path names, only if the named module itself defines it.

    `getattr` would follow anything the module imports (`shop.tools:os.system`) or reach
    Python's machinery (`Class.__init__` of `object`); a handler path may do neither.
    """
    module_name, _, attribute = handler.partition(":")
    if any(part.startswith("__") for part in attribute.split(".")):
        raise HandlerRefused(f"'{attribute}' names a dunder attribute")
    module = _import_handler_module(module_name, folder)
    owner_name, _, method = attribute.partition(".")
    target: Any = getattr(module, owner_name)
    if inspect.ismodule(target):
        raise HandlerRefused(f"'{owner_name}' is a module that {module_name} imports")
    if not _defined_in(target, module_name):
        raise HandlerRefused(f"'{owner_name}' is imported into {module_name}, not defined there "
                             f"(it comes from {getattr(target, '__module__', None) or 'elsewhere'})")
    if method:
        if not isinstance(target, type):
            raise HandlerRefused(f"'{owner_name}' is not a class; only Class.method may be named with a dot")
        raw = _method(target, method, module_name)
        member = getattr(target, method)
        if not isinstance(raw, (staticmethod, classmethod)):
            member = getattr(target(), method)  # the seed's "class plus a data method": one instance per process
        target = member
    if module_name == STANDARD_MODULE and owner_name == "http_get":
        target = functools.partial(target, allowed_hosts=allowed_hosts)
    if not callable(target):
        raise TypeError(f"{handler} is not callable")
    return target  # type: ignore[no-any-return]
