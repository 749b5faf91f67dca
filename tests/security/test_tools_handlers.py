"""A handler path may not leave its allowed module (issue 13, hole 4).

`getattr` walks into whatever a module imports; a registry could name `httpx.post` through
the always-allowed standard module, or `os.system` through its own. Each is a load error
with the registry file, the handler's line and field.
"""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path

import pytest

from engine import DiagramInvalid
from engine.format.yamlfile import LineMap
from engine.tools.registry import load_registries

ALLOWED = """
import os
from collections import OrderedDict
from os import system

import httpx

class Shop:
    def lookup(self, order_id: int):
        return {"order_id": order_id}

    @staticmethod
    def ping():
        return "pong"

class Basket(Shop):
    pass

class Orders(OrderedDict):
    pass

def status(order_id: int):
    return {"order_id": order_id, "status": "shipped"}

post = httpx.post
"""


def registry_with(tmp_path: Path, handler: str, *, allowed: str = "MODULE") -> tuple[Path, str]:
    module = f"allowed_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(ALLOWED)
    path = tmp_path / "registry.yaml"
    path.write_text(textwrap.dedent(f"""\
        registry: shop
        allowed_modules: [{allowed.replace("MODULE", module)}]
        tools:
          - function: t
            description: d
            handler: {handler.replace("MODULE", module)}
    """))
    return path, module


def load(tmp_path: Path, path: Path):
    return load_registries(path.name, tmp_path / "diagram.yaml", LineMap(str(tmp_path / "diagram.yaml")))


def refusal(tmp_path: Path, handler: str, *, allowed: str = "MODULE"):
    path, _ = registry_with(tmp_path, handler, allowed=allowed)
    with pytest.raises(DiagramInvalid) as caught:
        load(tmp_path, path)
    [problem] = caught.value.problems
    assert problem.file == str(path) and problem.line == 6, problem
    assert problem.field is not None and problem.field.endswith("handler"), problem
    return problem


def test_standard_module_lends_only_its_standard_tools(tmp_path: Path) -> None:
    problem = refusal(tmp_path, "engine.tools.standard:httpx.post", allowed="")
    assert "is not a standard tool" in problem.message and "engine.tools.standard:calculator" in problem.message


@pytest.mark.parametrize("attribute", ["_evaluate", "ZoneInfo", "httpx"])
def test_standard_module_refuses_its_helpers_and_imports(tmp_path: Path, attribute: str) -> None:
    assert "is not a standard tool" in refusal(tmp_path, f"engine.tools.standard:{attribute}", allowed="").message


@pytest.mark.parametrize(("handler", "says"), [
    ("MODULE:os.system", "'os' is a module that"),
    ("MODULE:httpx.post", "'httpx' is a module that"),
    ("MODULE:system", "'system' is imported into"),
    ("MODULE:post", "'post' is imported into"),
    ("MODULE:OrderedDict.fromkeys", "'OrderedDict' is imported into"),
    ("MODULE:Orders.fromkeys", "'Orders.fromkeys' is not a method written in"),
    ("MODULE:Shop.__init__", "dunder"),
    ("MODULE:status.__call__", "dunder"),
])
def test_a_handler_path_may_not_leave_its_module(tmp_path: Path, handler: str, says: str) -> None:
    problem = refusal(tmp_path, handler)
    assert "is refused" in problem.message and says in problem.message, problem.message
    assert problem.code == "handler_not_allowed"


def test_dotted_path_needs_a_class_defined_in_the_module(tmp_path: Path) -> None:
    problem = refusal(tmp_path, "MODULE:status.lookup")
    assert "'status' is not a class" in problem.message


def test_functions_methods_and_standard_tools_still_load(tmp_path: Path) -> None:
    path, module = registry_with(tmp_path, "MODULE:status")
    text = path.read_text() + textwrap.indent(textwrap.dedent(f"""\
        - function: lookup
          description: d
          handler: {module}:Shop.lookup
        - function: inherited
          description: d
          handler: {module}:Basket.lookup
        - function: ping
          description: d
          handler: {module}:Shop.ping
        - function: calc
          description: d
          handler: engine.tools.standard:calculator
    """), "  ")
    path.write_text(text)
    registry = load(tmp_path, path)
    assert registry.get("t").handler()(order_id=3) == {"order_id": 3, "status": "shipped"}
    assert registry.get("lookup").handler()(order_id=4) == {"order_id": 4}
    assert registry.get("inherited").handler()(order_id=5) == {"order_id": 5}
    assert registry.get("ping").handler()() == "pong"
    assert registry.get("calc").handler()(expression="2*3")["result"] == 6



def test_the_diagram_folder_is_not_left_on_sys_path(tmp_path: Path) -> None:
    """A folder holding `sqlalchemy_shadow_<id>.py` (say `httpx.py`) must not shadow what the engine imports later:
    the folder is searched while the registry's own handler module loads, and only then."""
    import importlib
    import sys

    path, module = registry_with(tmp_path, "MODULE:status")
    shadow = f"shadow_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{shadow}.py").write_text("raise SystemExit('the diagram folder shadowed an engine import')\n")
    before = list(sys.path)
    load_registries(path.name, tmp_path / "d.yaml", LineMap(str(tmp_path / "d.yaml")))
    assert module in sys.modules  # the handler's own module was imported from the folder
    assert sys.path == before
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(shadow)
