"""The deploy files (README, "Deploy"). Always: compose.yaml and the Dockerfile name only commands and options that
diagrama's command line really has (parsed by its own click commands), and their services fit together. Where a
container runtime answers: the image builds, answers `diagrama --help`, and serves a robot with no network; elsewhere
those tests are skipped, saying why.

Knobs for the image tests (all optional): DIAGRAMA_TEST_NODE_IMAGE and DIAGRAMA_TEST_PYTHON_IMAGE build on other
base images than the Dockerfile's (a registry mirror's copies), DIAGRAMA_TEST_BUILD_NETWORK is `--network` for the
build (host: where the runtime's bridge cannot reach the package registries)."""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
import shutil
import subprocess
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click
import pytest
import yaml

import engine.web
from engine.cli import app
from engine.web.app import STUDIO_BUILD
from engine.web.service.keys import keys_from_environ

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "compose.yaml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
TAG = "diagrama:deploy-test"

# Settings compose.yaml documents, each tried: its defaults, vendors on, more API options, more worker concurrency.
SETTINGS: list[dict[str, str]] = [
    {},
    {"DIAGRAMA_API_OPTIONS": ""},
    {"DIAGRAMA_API_OPTIONS": "--offline --prune-after 7d --rpm 120 --keys-file /keys/keys.txt"},
    {"DIAGRAMA_WORKER_CONCURRENCY": "8", "DIAGRAMA_API_KEYS": "ci=dgk_0123456789abcdef0123", "POSTGRES_PASSWORD": "s3cret"},
]


# --- compose.yaml read as `docker compose` reads it --------------------------------------------------------------------

_VARIABLE = re.compile(r"\$(?:(?P<dollar>\$)|\{(?P<braced>[A-Za-z_]\w*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}"
                       r"|(?P<bare>[A-Za-z_]\w*))")


def interpolate(text: str, environ: Mapping[str, str]) -> str:
    """Compose's interpolation: $$, $NAME, ${NAME}, ${NAME:-default} (unset or empty), ${NAME-default} (unset),
    ${NAME:?error}, ${NAME?error}, ${NAME:+other}, ${NAME+other}."""

    def one(match: re.Match[str]) -> str:
        if match.group("dollar"):
            return "$"
        name = match.group("braced") or match.group("bare")
        op, arg, value = match.group("op"), match.group("arg") or "", environ.get(name)
        if op in (":-", "-"):
            return arg if value is None or (op == ":-" and value == "") else value
        if op in (":+", "+"):
            return "" if value is None or (op == ":+" and value == "") else arg
        if op in (":?", "?") and (value is None or (op == ":?" and value == "")):
            raise ValueError(f"{name}: {arg}")
        return value or ""

    return _VARIABLE.sub(one, text)


def _walk(node: Any, change: Callable[[str], str]) -> Any:
    if isinstance(node, dict):
        return {key: _walk(value, change) for key, value in node.items()}
    if isinstance(node, list):
        return [_walk(item, change) for item in node]
    return change(node) if isinstance(node, str) else node


def compose(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """compose.yaml with YAML's merge keys resolved and every value interpolated from `environ` (none: defaults)."""
    document = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(document, dict), "compose.yaml is a mapping"
    loaded: dict[str, Any] = _walk(document, lambda text: interpolate(text, environ or {}))
    return loaded


def command_of(service: dict[str, Any]) -> list[str]:
    command = service.get("command", [])
    return shlex.split(command) if isinstance(command, str) else [str(part) for part in command]


def diagrama_services(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The services that run diagrama's image: those built from this repository."""
    return {name: service for name, service in document["services"].items() if "build" in service}


def volume_targets(service: dict[str, Any]) -> dict[str, str]:
    """A service's mounts, `source` by `target` (short syntax: SOURCE:TARGET[:MODE])."""
    mounts = {}
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        mounts[target] = source
    return mounts


# --- diagrama's own command line --------------------------------------------------------------------------------------

def parse_diagrama(args: list[str]) -> click.Context:
    """`diagrama ARGS` parsed as the command line parses it (every option's name, type, range and callback), without
    running it; click.UsageError for an unknown command or option, or a bad value."""
    root = click.Context(app, info_name="diagrama")
    if not args or args[0].startswith("-"):
        return app.make_context("diagrama", list(args))
    command = app.get_command(root, args[0])
    if command is None:
        raise click.UsageError(f"diagrama has no command {args[0]!r}")
    return command.make_context(args[0], list(args[1:]), parent=root)


def test_a_misspelled_command_option_or_value_is_caught() -> None:
    api = command_of(compose()["services"]["api"])
    assert parse_diagrama(api).params["backend"] == "celery"
    with pytest.raises(click.NoSuchOption):
        parse_diagrama([part.replace("--backend", "--bakend") for part in api])
    with pytest.raises(click.UsageError, match="no command 'workr'"):
        parse_diagrama(["workr", "--broker", "redis://redis:6379/0"])
    with pytest.raises(click.BadParameter):
        parse_diagrama(["worker", "--concurrency", "0"])
    with pytest.raises(ValueError, match="FOO: needed"):
        interpolate("${FOO:?needed}", {})


# --- compose.yaml -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("environ", SETTINGS, ids=["defaults", "online", "more-api-options", "more-workers"])
def test_compose_runs_only_commands_and_options_diagrama_has(environ: dict[str, str]) -> None:
    document = compose(environ)
    assert "${" not in json.dumps(document), "every ${…} is one compose can interpolate"
    services = diagrama_services(document)
    apis = {name: parse_diagrama(command_of(service)) for name, service in services.items()
            if command_of(service)[:1] == ["api"]}
    workers = {name: parse_diagrama(command_of(service)) for name, service in services.items()
               if command_of(service)[:1] == ["worker"]}
    assert set(services) == set(apis) | set(workers), "each diagrama service is an API process or a worker"
    assert len(apis) == 2, "two API processes"
    assert sum(int(services[name].get("deploy", {}).get("replicas", 1)) for name in workers) == 2, "two workers"

    for name, ctx in apis.items():
        params = ctx.params
        assert params["host"] == "0.0.0.0", f"{name} serves the containers' network"
        assert params["backend"] == "celery", f"{name} sends its runs to the workers"
        assert params["offline"] == ("--offline" in environ.get("DIAGRAMA_API_OPTIONS", "--offline")), \
            f"{name} is offline unless DIAGRAMA_API_OPTIONS says otherwise"
        published = [port.rsplit(":", 1) for port in services[name]["ports"]]
        assert [target for _, target in published] == [str(params["port"])], f"{name} publishes the port it serves"
        assert all(host.startswith("127.0.0.1:") for host, _ in published), f"{name}: the demo key stays local"
        keys, _plain = keys_from_environ(services[name]["environment"])
        assert keys, f"{name} has keys (DIAGRAMA_API_KEYS)"
    hosts = [port.rsplit(":", 1)[0] for name in apis for port in services[name]["ports"]]
    assert len(set(hosts)) == len(hosts), "the API processes' host ports differ"

    brokers = {ctx.params["broker"] for ctx in [*apis.values(), *workers.values()]}
    assert len(brokers) == 1, f"one broker for every process: {brokers}"
    broker = urlsplit(brokers.pop())
    assert broker.scheme == "redis" and broker.hostname in document["services"], "the broker is the redis service"
    assert "redis" in document["services"][broker.hostname]["image"]

    stores = {ctx.params["store_url"] for ctx in apis.values()}
    stores |= {service["environment"]["DIAGRAMA_STORE"] for service in services.values()}
    assert len(stores) == 1, f"one store, the same in --store and DIAGRAMA_STORE: {stores}"
    store = urlsplit(stores.pop())
    database = document["services"][store.hostname]
    assert store.scheme == "postgresql+psycopg" and "postgres" in database["image"]
    assert (store.username, store.password, store.path.lstrip("/")) == (
        database["environment"]["POSTGRES_USER"], database["environment"]["POSTGRES_PASSWORD"],
        database["environment"]["POSTGRES_DB"]), "the store's user, password and database are PostgreSQL's"

    for name, service in services.items():
        mounts = volume_targets(service)
        if name in apis:
            folder, runs = str(apis[name].params["folder"]), str(apis[name].params["runs_dir"])
            assert mounts.get(folder) is not None \
                and mounts.get(folder) == volume_targets(services[next(iter(workers))]).get(folder), \
                f"{name}: workers find the robots at the path the API sends ({folder})"
            assert mounts.get(runs) in document["volumes"], f"{name}: --runs-dir is the shared volume"
        assert mounts.get("/runs") in document["volumes"], f"{name} shares the runs volume"
        source = mounts.get("/robots")
        assert source is not None and (ROOT / source).is_dir(), f"{name} mounts the robots folder"
        assert any((ROOT / source).glob("*.yaml")), f"{name}: the robots folder has diagrams"


def test_compose_services_have_what_they_need() -> None:
    document = compose()
    services = document["services"]
    for name, service in services.items():
        assert "image" in service or "build" in service, f"{name} has an image or a build"
        if "build" in service:
            assert (ROOT / service["build"] / "Dockerfile").is_file(), f"{name} builds from the Dockerfile"
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            assert source.startswith((".", "/")) or source in document["volumes"], f"{name}: volume {source} declared"
        for needed, condition in service.get("depends_on", {}).items():
            assert needed in services, f"{name} depends on a service there is: {needed}"
            if condition.get("condition") == "service_healthy":
                check = services[needed].get("healthcheck", {})
                assert check.get("test") and not check.get("disable"), f"{needed} has the healthcheck {name} waits for"
    for name, service in diagrama_services(document).items():
        assert set(service["depends_on"]) == {"redis", "postgres"}, f"{name} starts once Redis and PostgreSQL are up"
        assert all(condition["condition"] == "service_healthy" for condition in service["depends_on"].values()), name
        if command_of(service)[0] == "worker":
            assert service.get("healthcheck", {}).get("disable") is True, f"{name} serves no /health"

    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    assert services["redis"]["healthcheck"]["test"][-2:] == ["redis-cli", "ping"]

    # The vendor keys handed to the workers are the variables the vendors' adapters read.
    known: set[str] = set()
    for module in ("anthropic", "gemini", "groq"):
        for value in vars(importlib.import_module(f"engine.providers.{module}")).values():
            if isinstance(value, type) and "key_variables" in vars(value):
                known.update(value.key_variables)
    vendor_keys = {name for name in services["worker"]["environment"] if name.endswith("_API_KEY")}
    assert vendor_keys == known, "every vendor's key, and only those, goes to the workers"
    assert all(services["worker"]["environment"][name] is None for name in vendor_keys), \
        "vendor keys come from the shell or .env (no value in compose.yaml)"


def test_the_readme_deploy_commands_match_compose() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("\n## Deploy\n")
    section = readme[start:readme.index("\n## ", start + 1)]
    commands = section[section.index("```bash\n") + 8:].split("```")[0]
    assert commands.splitlines()[0].startswith("docker compose up -d --build")
    found = re.search(r"curl -s http://127\.0\.0\.1:(\d+)/v1/robots/(\w+)/runs -H \"Authorization: Bearer (\S+)\"",
                      commands)
    assert found is not None, "the second command runs a robot with curl"
    port, robot, key = found.groups()
    services = compose()["services"]
    assert f"127.0.0.1:{port}:8080" in services["api"]["ports"]
    assert (ROOT / "diagrams" / f"{robot}.yaml").is_file()
    _keys, plain = keys_from_environ(services["api"]["environment"])
    assert key in plain, "the README's key is compose.yaml's default"


# --- Dockerfile ------------------------------------------------------------------------------------------------------

def dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions, (INSTRUCTION, rest), continuation lines joined and comments left out."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for line in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("#") or (not line.strip() and not pending):
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        keyword, _, rest = pending.strip().partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
        pending = ""
    assert not pending, "the Dockerfile does not end inside a continued line"
    return instructions


def dockerignored(path: str) -> bool:
    """Whether .dockerignore leaves `path` (relative to the repository) out of the build context: a pattern matches
    it or a folder above it, from the context's root (`*` within a name, `**` any number of folders)."""
    patterns = [line.strip() for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.startswith("#")]
    parts = path.split("/")
    prefixes = ["/".join(parts[:end]) for end in range(1, len(parts) + 1)]
    for pattern in patterns:
        regex = re.escape(pattern).replace(r"\*\*/", "(?:.*/)?").replace(r"\*", "[^/]*")
        if any(re.fullmatch(regex, prefix) for prefix in prefixes):
            return True
    return False


def stages() -> list[tuple[str, list[tuple[str, str]]]]:
    """Each stage's base image (ARG defaults filled in) with its instructions."""
    args: dict[str, str] = {}
    found: list[tuple[str, list[tuple[str, str]]]] = []
    for keyword, rest in dockerfile():
        if keyword == "ARG" and not found and "=" in rest:
            name, _, value = rest.partition("=")
            args[name] = value
        elif keyword == "FROM":
            found.append((interpolate(rest.split()[0], args), []))
        elif found:
            found[-1][1].append((keyword, rest))
    return found


def test_the_dockerfile_builds_the_studio_then_the_package_then_a_slim_image() -> None:
    (node, studio), (python, build), (final_base, final) = stages()
    assert node.startswith("node:20"), "the studio's bundle is built with Node 20"
    assert python.startswith("python:3.11-slim") and final_base == python
    assert ("RUN", "npm ci --no-audit --no-fund") in studio, "from the committed lockfile"
    assert ("RUN", "npm run build") in studio

    # The sources it copies exist and are in the build context; what it must not carry is left out.
    for keyword, rest in studio + build + final:
        if keyword == "COPY" and not rest.startswith("--from"):
            for source in rest.split()[:-1]:
                assert (ROOT / source).exists(), f"COPY {source}: there is no such file"
                assert not dockerignored(source.rstrip("/")), f"COPY {source}: .dockerignore leaves it out"
    for left_out in (".git", ".venv", "engine/web/ui/node_modules", "engine/web/ui/dist", "runs", "tests/artifacts",
                     ".env", "diagrams/shop/__pycache__"):
        assert dockerignored(left_out), f".dockerignore leaves out {left_out}"

    # The package: the extras `diagrama api` on Celery and PostgreSQL needs, and the studio's bundle not built again.
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    installs = [extra for _, rest in build for extra in re.findall(r'pip install "\.\[([\w,]+)\]"', rest)]
    assert installs and all(name in extras for extra in installs for name in extra.split(","))
    assert {"web", "celery", "postgres"} <= set(installs[0].split(","))
    assert any("psycopg" in requirement for requirement in extras["postgres"])
    env = " ".join(rest for keyword, rest in build if keyword == "ENV")
    assert "DIAGRAMA_SKIP_UI=1" in env and "DIAGRAMA_SKIP_UI" in (ROOT / "hatch_build.py").read_text(encoding="utf-8")
    assert Path(engine.web.__file__).parent / "ui" / "dist" == STUDIO_BUILD, \
        "the Dockerfile puts the bundle beside engine/web, where the server looks for it"
    assert any('engine.web.__file__).parent / "ui"' in rest and '"$ui/dist"' in rest for _, rest in build)

    # What runs: a user without privileges, port 8080, the health check on /health, `diagrama` as the entrypoint.
    user = [rest for keyword, rest in final if keyword == "USER"]
    assert user and user[-1] not in ("root", "0"), "runs as a user without privileges"
    assert ("EXPOSE", "8080") in final
    health = [rest for keyword, rest in final if keyword == "HEALTHCHECK"]
    assert len(health) == 1 and "http://127.0.0.1:8080/health" in health[0]
    assert ("ENTRYPOINT", '["diagrama"]') in final


def test_the_dockerfile_runs_only_diagrama_commands_that_exist() -> None:
    final = stages()[-1][1]
    command = [json.loads(rest) for keyword, rest in final if keyword == "CMD"]
    assert len(command) == 1
    ctx = parse_diagrama(command[0])
    assert ctx.info_name == "api" and ctx.params["port"] == 8080 and ctx.params["host"] == "0.0.0.0"
    assert str(ctx.params["folder"]) == "/robots"
    assert any(keyword == "COPY" and rest.split() == ["diagrams", "/robots"] for keyword, rest in final)
    invoked = 0
    runs = [rest for _, instructions in stages() for keyword, rest in instructions if keyword == "RUN"]
    for step in (step for rest in runs for step in shell_steps(rest)):
        if step and Path(step[0]).name == "diagrama":
            try:
                parse_diagrama(step[1:])
            except click.exceptions.Exit as exc:  # --help
                assert exc.exit_code == 0, f"RUN {step}"
            invoked += 1
    assert invoked >= 1, "the build checks that `diagrama` runs"


def shell_steps(line: str) -> list[list[str]]:
    """A shell line's simple commands (split at &&, ||, ; and |), each as its words, redirections left out."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    steps: list[list[str]] = [[]]
    redirect = False
    for token in lexer:
        if token in ("&&", "||", ";", "|"):
            steps.append([])
        elif token in (">", ">>", "<", "2>", "&>"):
            redirect = True
        elif redirect:
            redirect = False
        else:
            steps[-1].append(token)
    return steps


# --- the image, where a container runtime answers ----------------------------------------------------------------------

def container_runtime() -> tuple[str | None, str]:
    """(docker or podman's path, "") when one answers; else (None, why not)."""
    reasons = []
    for name in ("docker", "podman"):
        path = shutil.which(name)
        if path is None:
            continue
        try:
            answer = subprocess.run([path, "version"], capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            reasons.append(f"{name} is on PATH ({path}) but `{name} version` did not answer within 60 s")
            continue
        if answer.returncode == 0:
            return path, ""
        said = [line for line in (answer.stderr or answer.stdout).splitlines() if line.strip()]
        reasons.append(f"{name} is on PATH ({path}) but its daemon does not answer: {said[-1] if said else answer.returncode}")
    return None, "; ".join(reasons) or "neither docker nor podman is on PATH"


def _run(command: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def runtime() -> str:
    path, reason = container_runtime()
    if path is None:
        pytest.skip(f"no container runtime: {reason}")
    return path


@pytest.fixture(scope="module")
def image(runtime: str) -> Iterator[str]:
    """The image built from this checkout (tagged TAG), removed afterwards."""
    bases = {"NODE_IMAGE": os.environ.get("DIAGRAMA_TEST_NODE_IMAGE"),
             "PYTHON_IMAGE": os.environ.get("DIAGRAMA_TEST_PYTHON_IMAGE")}
    defaults = [stages()[0][0], stages()[1][0]]
    for base in [value or default for value, default in zip(bases.values(), defaults, strict=True)]:
        if _run([runtime, "image", "inspect", base], 60).returncode != 0:
            pulled = _run([runtime, "pull", base], 900)
            if pulled.returncode != 0:
                said = [line for line in pulled.stderr.splitlines() if line.strip()] or ["(nothing said)"]
                pytest.skip(f"{Path(runtime).name} answers, but the base image {base} is neither here nor pullable: "
                            f"{said[-1]} (DIAGRAMA_TEST_NODE_IMAGE / DIAGRAMA_TEST_PYTHON_IMAGE name others)")
    command = [runtime, "build", "-t", TAG]
    command += [f"--build-arg={name}={value}" for name, value in bases.items() if value]
    if os.environ.get("DIAGRAMA_TEST_BUILD_NETWORK"):
        command.append(f"--network={os.environ['DIAGRAMA_TEST_BUILD_NETWORK']}")
    started = time.monotonic()
    built = _run([*command, str(ROOT)], 1800)
    assert built.returncode == 0, f"{' '.join(command)} failed:\n{(built.stdout + built.stderr)[-6000:]}"
    print(f"built {TAG} in {time.monotonic() - started:.0f} s")
    try:
        yield TAG
    finally:
        _run([runtime, "rmi", "-f", TAG], 120)


@pytest.mark.slow
def test_the_image_answers_help_and_is_configured(runtime: str, image: str) -> None:
    helped = _run([runtime, "run", "--rm", "--network=none", image, "--help"], 120)
    assert helped.returncode == 0, helped.stderr
    assert all(f"  {name} " in helped.stdout for name in ("api", "worker", "serve", "api-key")), helped.stdout
    for name in ("api", "worker"):
        sub = _run([runtime, "run", "--rm", "--network=none", image, name, "--help"], 120)
        assert sub.returncode == 0 and "--broker" in sub.stdout, sub.stdout + sub.stderr
    config = json.loads(_run([runtime, "image", "inspect", "--format", "{{json .Config}}", image], 60).stdout)
    assert config["Entrypoint"] == ["diagrama"]
    assert "8080/tcp" in config["ExposedPorts"]
    assert "/health" in " ".join(config["Healthcheck"]["Test"])
    who = _run([runtime, "run", "--rm", "--network=none", "--entrypoint", "id", image, "-u"], 120)
    assert who.returncode == 0 and who.stdout.strip() not in ("", "0"), "runs as a user without privileges"


# Run inside the container (no network): `diagrama api` on the example robots, a robot run through it, then the
# image's own health check against it; one line of JSON on stdout.
SERVE = r"""
import json, os, subprocess, time, urllib.request
key = os.environ["DIAGRAMA_API_KEYS"].split("=", 1)[1]
server = subprocess.Popen(["diagrama", "api", "/robots", "--host", "127.0.0.1", "--port", "8080", "--offline"])
def call(path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request("http://127.0.0.1:8080" + path, data=data,
                                     headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.load(answer)
try:
    for _ in range(300):
        try:
            robots = call("/v1/robots")
            break
        except OSError:
            time.sleep(0.1)
    else:
        raise SystemExit("diagrama api did not answer within 30 s")
    run = call("/v1/robots/greeting_counter/runs", {"inputs": {"name": "Bea", "times": 2}})
    test = json.loads(os.environ["HEALTHCHECK"])
    health = subprocess.run(test[1:] if test[0] == "CMD" else ["sh", "-c", test[1]], capture_output=True, text=True)
    print(json.dumps({"robots": [robot["name"] for robot in robots["robots"]], "run": run,
                      "health": health.returncode, "health_said": health.stderr[-800:]}))
finally:
    server.terminate()
    server.wait(10)
"""


@pytest.mark.slow
def test_the_image_serves_a_robot_with_no_network(runtime: str, image: str) -> None:
    config = json.loads(_run([runtime, "image", "inspect", "--format", "{{json .Config}}", image], 60).stdout)
    served = _run([runtime, "run", "--rm", "--network=none", "--entrypoint", "python",
                   "-e", "DIAGRAMA_API_KEYS=test=dgk_deploy_test_key_0123456789",
                   "-e", f"HEALTHCHECK={json.dumps(config['Healthcheck']['Test'])}",
                   image, "-c", SERVE], 300)
    assert served.returncode == 0, served.stdout + served.stderr[-6000:]
    answer = json.loads(served.stdout.strip().splitlines()[-1])
    assert "greeting_counter" in answer["robots"]
    assert answer["run"]["status"] == "succeeded", answer["run"]
    assert answer["run"]["variables"]["greeting"] == "Olá, Bea! Counted to 2."
    assert answer["health"] == 0, f"the image's HEALTHCHECK fails against `diagrama api`: {answer['health_said']}"
