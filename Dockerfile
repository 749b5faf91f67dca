# diagrama as a container: `diagrama api` (and `diagrama worker`, `diagrama serve`, …) with the web, Celery and
# PostgreSQL extras. README, "Deploy"; compose.yaml starts Redis, PostgreSQL, two API processes and two workers.
#
#   docker build -t diagrama .
#   docker run --rm -p 127.0.0.1:8080:8080 -e DIAGRAMA_API_KEYS="me=$KEY" diagrama api /robots --host 0.0.0.0 --offline
#
# Three stages: the studio's bundle is built with Node from the committed lockfile; the package is installed into a
# virtual environment with that bundle dropped in (the build hook is told to skip npm: DIAGRAMA_SKIP_UI=1); the last
# stage is a slim Python with only that environment and the example robots, run as a user without privileges. It
# fetches nothing at run time.

ARG NODE_IMAGE=node:20-bookworm-slim
ARG PYTHON_IMAGE=python:3.11-slim

# --- 1. the studio's front-end bundle (engine/web/ui/dist) ---------------------------------------------------------
FROM ${NODE_IMAGE} AS studio
WORKDIR /src/engine/web/ui
COPY engine/web/ui/package.json engine/web/ui/package-lock.json ./
# Exactly the committed lockfile, in its own layer: it is reused until the lockfile changes.
RUN npm ci --no-audit --no-fund
COPY engine/web/ui/ ./
# `npm run build` first writes src/api/types.ts from the server's answers' JSON Schema (../api.schema.json).
COPY engine/web/api.schema.json /src/engine/web/api.schema.json
RUN npm run build

# --- 2. the package and its extras in /opt/diagrama ------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 DIAGRAMA_SKIP_UI=1
RUN python -m venv /opt/diagrama
WORKDIR /src
# The dependencies first, from pyproject.toml alone (empty packages stand in for the code), so that a change to the
# code reinstalls only diagrama itself.
COPY pyproject.toml README.md hatch_build.py ./
RUN mkdir engine blocks && touch engine/__init__.py blocks/__init__.py \
 && /opt/diagrama/bin/pip install ".[web,celery,postgres]" \
 && /opt/diagrama/bin/pip uninstall --yes diagrama \
 && rm -rf engine blocks
COPY engine ./engine
COPY blocks ./blocks
RUN /opt/diagrama/bin/pip install --no-deps . && rm -rf /src/engine /src/blocks
# The bundle built in stage 1, where the installed package looks for it (engine/web/ui/dist beside engine/web/app.py);
# then pip and setuptools leave the environment (an image built FROM this one installs with `pip --python`).
COPY --from=studio /src/engine/web/ui/dist /tmp/studio-dist
RUN ui="$(/opt/diagrama/bin/python -c 'import engine.web, pathlib; print(pathlib.Path(engine.web.__file__).parent / "ui")')" \
 && mkdir -p "$ui" && cp -r /tmp/studio-dist "$ui/dist" && test -f "$ui/dist/index.html" \
 && /opt/diagrama/bin/diagrama --help > /dev/null \
 && /opt/diagrama/bin/python -m pip uninstall --yes --quiet pip setuptools

# --- 3. what runs ----------------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}
RUN groupadd --gid 10001 diagrama \
 && useradd --uid 10001 --gid diagrama --home-dir /home/diagrama --create-home --shell /usr/sbin/nologin diagrama \
 && mkdir -p /runs /robots && chown diagrama:diagrama /runs
COPY --from=build /opt/diagrama /opt/diagrama
# The example robots; compose.yaml mounts ./diagrams (or $DIAGRAMA_ROBOTS) over them.
COPY diagrams /robots
ENV PATH=/opt/diagrama/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    DIAGRAMA_RUNS_DIR=/runs
USER diagrama
WORKDIR /runs
EXPOSE 8080
# Liveness: `GET /health` answers without a key. Only `diagrama api` serves it; compose.yaml turns it off for workers.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8080/health', timeout=4).status != 200)"]
ENTRYPOINT ["diagrama"]
CMD ["api", "/robots", "--host", "0.0.0.0", "--port", "8080", "--offline"]
