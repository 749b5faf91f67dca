"""Package faces whose names load on first use (PEP 562): `engine`, `engine.providers`, `engine.tools`.

A face lists its names by home module; `import engine` then costs a few dictionaries, and a
name's module (with what it imports: httpx, asyncio, jsonschema…) loads when first read.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_face"]


def lazy_face(package: str, homes: Mapping[str, list[str]],
              namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's `__getattr__` and `__dir__`: each name imported from its home module when first read."""
    home_of = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = home_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        loaded = importlib.import_module(module)
        # Bind all of the module's names, so later reads skip this function. Importing a submodule
        # sets the package attribute of its name to the module (`engine.providers.ask`): the
        # function of that name must win.
        for each in homes[module]:
            namespace[each] = getattr(loaded, each)
        return namespace[name]

    def __dir__() -> list[str]:
        return sorted({*namespace, *home_of})

    return __getattr__, __dir__
