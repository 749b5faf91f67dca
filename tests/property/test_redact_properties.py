"""The trace's byte scrubber against the text scrubber: the same result on random text built of key parts.

`Redactor.encoded` (trace batches) first asks one Aho-Corasick pass whether anything in the batch
could need scrubbing and returns the batch untouched when not; `Redactor.text` (values, console
lines) has no such pass. Texts made of secrets, vendor key prefixes, masks and ordinary words must
come out of both the same, so the pass can never let through what the text scrubber would catch.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.format.redact import Redactor
from tests.property import budget

pytestmark = pytest.mark.slow  # property searches

SECRETS = ["sk-ant-api03-PropKey0123456789abcdEFGH", "gsk_PropKey0123456789groqWXYZ", "plain-token-7c1e9b52d4"]
PIECES = [
    *SECRETS,
    *(s[:n] for s in SECRETS for n in (4, 7, 12)),
    *(s[-4:] for s in SECRETS),
    "sk-ant-", "gsk_", "AIza", "AIzaSyA0123456789abcdefXYZ", "**", "****", "...", "..", "…", " ", "\n", '"', ",",
    "a", "z", "key", "é", "{", "}", "_", "-", "0123456789",
]


@budget(max_examples=300)
@given(parts=st.lists(st.sampled_from(PIECES), max_size=30), registered=st.sampled_from([SECRETS, [], SECRETS[2:]]))
def test_bytes_and_text_are_scrubbed_alike(parts: list[str], registered: list[str]) -> None:
    redactor = Redactor(registered)
    text = "".join(parts)
    assert bytes(redactor.encoded(bytearray(text.encode()))) == redactor.text(text).encode()


def test_a_batch_with_nothing_to_scrub_is_returned_as_it_is() -> None:
    batch = bytearray(b'{"block":"count","event":"block_finished","note":"etc... a**b"}\n' * 200)
    assert Redactor([]).encoded(batch) is batch  # no copy for the common case
    assert Redactor(SECRETS).encoded(b"a**b") == b"a**b"  # a mask near no key stays
