"""A secret is redacted in every spelling it can take on the wire, and one too short to redact is refused.

The spellings come from the encoders that write them (urllib's, httpx's own URL building, base64 of a Basic
credential), not from a hand-written list: what the redactor must catch is what these produce.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, quote_plus, urlencode

import httpx
import pytest

from engine.format.redact import REDACTED, Redactor

ROOT = Path(__file__).resolve().parents[2]

SECRETS = ["pa ss+w0rd!x9Q", "pa ss+w0rd!x9Qé", "çà va: 100%", 'a"b\\c d', "s3cr/et?&=#"]


def spellings(secret: str) -> dict[str, str]:
    """How encoders write `secret`: a URL's path and query and userinfo as httpx builds them, urllib's forms in
    both cases of hex digits, a form body's `+` for a space, a Basic credential, and JSON around each."""
    in_path = secret.replace("%", "%25").replace("?", "%3F").replace("#", "%23")  # what would end a path
    url = httpx.URL("http://h.test/p/" + in_path, params={"q": secret})
    with_user = _sent(httpx.URL("http://h.test/").copy_with(username="robot", password=secret))
    forms = {
        "httpx path": url.raw_path.decode().split("?")[0].removeprefix("/p/"),
        "httpx query": url.query.decode().removeprefix("q="),
        "httpx userinfo": str(with_user.url).split("@")[0].split(":")[-1],
        "Basic credential": with_user.headers["authorization"],
        "Basic of the value alone": "Basic " + base64.b64encode(secret.encode()).decode(),
        "quote": quote(secret, safe=""),
        "quote (lower-case hex)": _lower_hex(quote(secret, safe="")),
        "quote_plus": quote_plus(secret),
        "urlencode (lower-case hex)": _lower_hex(urlencode({"p": secret})).removeprefix("p="),
        "plus for a space": secret.replace(" ", "+"),
    }
    forms |= {f"{name} in JSON": json.dumps(text) for name, text in list(forms.items())}
    forms |= {f"{name} in ASCII JSON": json.dumps(text, ensure_ascii=True) for name, text in list(forms.items())}
    return forms


def _sent(url: httpx.URL) -> httpx.Request:
    """The request an httpx client sends for `url` (a URL's user:password becomes a Basic credential there)."""
    sent = []
    with httpx.Client(transport=httpx.MockTransport(lambda request: sent.append(request) or httpx.Response(200))) \
            as client:
        client.get(url)
    return sent[0]


def _lower_hex(text: str) -> str:
    parts = text.split("%")
    return parts[0] + "".join("%" + part[:2].lower() + part[2:] for part in parts[1:])


@pytest.mark.parametrize("secret", SECRETS)
def test_every_spelling_of_a_secret_is_redacted_in_text_and_bytes(secret: str) -> None:
    redactor = Redactor([secret])
    missed = []
    for name, form in spellings(secret).items():
        line = f"GET {form} → 200"
        scrubbed_text = redactor.text(line)
        scrubbed_bytes = bytes(redactor.encoded(line.encode())).decode()
        for how, scrubbed in (("text", scrubbed_text), ("bytes", scrubbed_bytes)):
            if REDACTED not in scrubbed or _what_is_left(secret, form, scrubbed):
                missed.append(f"{name} ({how}): {line!r} → {scrubbed!r}")
    assert not missed, "\n".join(missed)


def _what_is_left(secret: str, form: str, scrubbed: str) -> bool:
    """Whether the scrubbed line still holds the form, the secret, or a base64 credential that decodes to it."""
    if form in scrubbed or secret in scrubbed:
        return True
    for word in scrubbed.split():
        try:
            if secret.encode() in base64.b64decode(word + "=" * (-len(word) % 4), validate=True):
                return True
        except ValueError:
            continue
    return False


def test_the_rest_of_the_text_is_kept() -> None:
    redactor = Redactor(["pa ss+w0rd!x9Q"])
    text = "50% off: pa ss, w0rd! Basic plan; Basic dXNlcjpvdGhlcg== GET /p/pa%20ss/x and 1+1 = 2"
    assert redactor.text(text) == text
    assert redactor.encoded(text.encode()) == text.encode()


def test_a_secret_inside_other_base64_at_any_alignment_is_redacted() -> None:
    secret = "correct horse battery"
    redactor = Redactor([secret])
    for before in ("", "a", "ab", "abc"):
        token = base64.b64encode(f"{before}{secret} and more".encode()).decode()
        assert token[8:-8] not in redactor.text(f"x-token: {token}"), before


def _diagrama(folder: Path, *args: str, **environ: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if name != "DIAGRAMA_STORE"}
    return subprocess.run([sys.executable, "-m", "engine.cli", *args], capture_output=True, text=True, timeout=120,
                          cwd=folder, env={**env, "PYTHONPATH": str(ROOT), **environ})


@pytest.mark.slow
def test_a_short_secret_is_refused_at_load_and_in_a_scenario(write: Callable[..., Path], tmp_path: Path) -> None:
    write("""
        diagram: short
        secrets: [PIN_CODE]
        blocks:
          - id: start
            type: Start
            set: {pin: "{{ secret('PIN_CODE') }}"}
    """, "short.yaml")
    refused = _diagrama(tmp_path, "run", "short.yaml", PIN_CODE="123")
    assert refused.returncode == 2, refused
    assert "PIN_CODE is 3 characters long; secrets must be at least 4 characters" in refused.stderr
    assert "123" not in refused.stderr, refused.stderr
    accepted = _diagrama(tmp_path, "run", "short.yaml", "--output", "json", "-q", PIN_CODE="1234")
    assert accepted.returncode == 0, accepted
    assert json.loads(accepted.stdout)["variables"]["pin"] == REDACTED

    write("scenario: short pin\ndiagram: short.yaml\nsecrets: {PIN_CODE: 'ab'}\n", "short.scenario.yaml")
    scenario = _diagrama(tmp_path, "test", "short.scenario.yaml")
    assert scenario.returncode == 1, scenario  # a scenario that cannot load fails, as diagrama test reports it
    assert "short.scenario.yaml:3: field 'secrets'" in scenario.stdout + scenario.stderr
    assert "PIN_CODE: secrets must be at least 4 characters" in scenario.stdout + scenario.stderr
