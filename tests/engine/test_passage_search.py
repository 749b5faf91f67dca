"""The local dense embedder (WordLlama, from its wheel's own files) and hybrid passage search."""

from __future__ import annotations

import socket
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from engine.tools.embeddings import CombinedEmbedder, WordLlamaEmbedder, default_embedder, make_embedder
from engine.tools.knowledge.search import Hit, PassageIndex
from engine.tools.ranking import Ranker, Ranking

PASSAGES = [
    "O reembolso é feito em até 10 dias úteis depois de recebermos a devolução do produto.",
    "Il rimborso viene accreditato entro 10 giorni lavorativi dalla restituzione del prodotto.",
    "Shipping takes three to five business days within Europe; tracking codes come by email.",
    "Our support office is open Monday to Friday from 9:00 to 18:00, closed on public holidays.",
    "Para mudar a morada de entrega, contacte o apoio antes de a encomenda ser expedida.",
    "La garanzia copre i difetti di fabbricazione per due anni dalla data di acquisto.",
    "Passwords must be at least twelve characters long and are changed from the account page.",
]


@pytest.fixture
def no_socket(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Stricter than conftest's no_network: any connection or name lookup at all fails, loopback included."""
    tried: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        tried.append(args)
        raise RuntimeError(f"a socket was used: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return tried


def test_wordllama_loads_from_its_package_with_no_socket(no_socket: list[Any]) -> None:
    embedder = WordLlamaEmbedder()  # not the process's shared one: this one loads here, under the guard
    vectors = embedder.embed(["Onde está o meu pedido?", "Dov'è il mio ordine?", "Where is my order?"])
    assert vectors.shape == (3, 256) and vectors.dtype == np.float32
    assert no_socket == []


def test_loading_runs_none_of_wordllamas_downloading_code() -> None:
    code = ("import sys; from engine.tools.embeddings import WordLlamaEmbedder; WordLlamaEmbedder().embed(['x']); "
            "print(sorted(m for m in ('wordllama', 'requests', 'huggingface_hub') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"HF_HUB_OFFLINE": "1", "PATH": ""}).stdout
    assert out.strip() == "[]"


def test_embeddings_are_deterministic_unit_vectors_and_empty_text_is_zero() -> None:
    first = WordLlamaEmbedder().embed(["Quanto costa la spedizione?", "", "refund policy"])
    again = default_embedder().embed(["Quanto costa la spedizione?", "", "refund policy"])
    assert np.array_equal(first, again)
    assert np.allclose(np.linalg.norm(first[[0, 2]], axis=1), 1.0, atol=1e-5)
    assert not first[1].any()


def test_a_long_text_is_pooled_in_parts_as_if_whole() -> None:
    embedder = WordLlamaEmbedder()
    embedder.ROWS = 7  # several parts per text
    long = " ".join(PASSAGES)
    assert np.allclose(embedder.embed([long]), default_embedder().embed([long]), atol=1e-5)


def test_the_registry_names_the_embedders() -> None:
    assert make_embedder({"type": "wordllama"}) is default_embedder()
    assert make_embedder({"type": "wordllama", "dimension": 64}).embed(["a b"]).shape == (1, 64)
    assert make_embedder({"type": "hashed-ngrams"}).name.startswith("hashed-ngrams")


def test_a_registrys_default_embedder_is_the_ngrams_and_wordllama_side_by_side() -> None:
    embedder = make_embedder(None)
    assert isinstance(embedder, CombinedEmbedder) and embedder is make_embedder({"type": "local"})
    assert embedder.blocks == (1024, 256) and embedder.name == "hashed-ngrams-v1-1024+wordllama-l2-supercat-256"
    vectors = embedder.embed(["Onde está o meu pedido?", "Where is my order?"])
    assert vectors.shape == (2, 1280) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_a_tools_embedding_score_is_the_mean_of_its_blocks_cosines_each_clipped() -> None:
    tools = np.array([[1, 0, 0.6, 0.8], [1, 0, -1, 0]], dtype=np.float32)  # two blocks of two dimensions
    documents = [{"name": ["a"]}, {"name": ["b"]}]
    ranker = Ranker(documents, tools, Ranking(hubs="none"), blocks=(2, 2))
    embedding = ranker.scores("", np.array([1, 0, 1, 0], dtype=np.float32))[2]
    assert np.allclose(embedding, [(1 + 0.6) / 2, (1 + 0) / 2])  # the second tool's -1 counts as 0, not against its 1
    whole = Ranker(documents, tools, Ranking(hubs="none")).scores("", np.array([1, 0, 1, 0], dtype=np.float32))[2]
    assert np.allclose(whole, [0.8, 0.0])  # without blocks: one cosine over the whole row


@pytest.mark.parametrize(("query", "expected"), [
    ("Quanto tempo demora o reembolso?", 0),
    ("Quando arriva il rimborso?", 1),
    ("How long does delivery take?", 2),
    ("When are you open?", 3),
    ("Posso alterar o endereço de entrega da encomenda?", 4),
    ("Per quanto tempo vale la garanzia?", 5),
    ("how do I change my password", 6),
])
def test_the_relevant_passage_comes_first_in_portuguese_italian_and_english(query: str, expected: int) -> None:
    hits = PassageIndex(PASSAGES, default_embedder()).search(query, top_k=3)
    assert hits[0].index == expected, hits
    assert all(0.0 <= hit.score <= 1.0 and 0.0 <= hit.lexical <= 1.0 and -1.0 <= hit.embedding <= 1.0 for hit in hits)
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)


def test_among_restricts_the_passages_searched() -> None:
    index = PassageIndex(PASSAGES, default_embedder())
    hits = index.search("rimborso reembolso refund", top_k=5, among=[2, 3, 6])
    assert {hit.index for hit in hits} == {2, 3, 6}
    assert index.search("rimborso", top_k=5, among=[]) == []


def test_vectors_round_trip_through_a_store() -> None:
    first = PassageIndex(PASSAGES, default_embedder())
    stored = first.vectors.tobytes()
    again = PassageIndex(PASSAGES, default_embedder(),
                         np.frombuffer(stored, dtype=np.float32).reshape(len(PASSAGES), -1))
    assert again.search("garanzia prodotto", 3) == first.search("garanzia prodotto", 3)
    with pytest.raises(ValueError, match="vectors of shape"):
        PassageIndex(PASSAGES, default_embedder(), first.vectors[:2])


def test_an_empty_index_finds_nothing() -> None:
    assert PassageIndex([], default_embedder()).search("anything") == []
    [hit] = PassageIndex(["one passage"], default_embedder()).search("one passage", 5)
    assert isinstance(hit, Hit) and hit.index == 0 and hit.lexical > 0.5 and hit.embedding > 0.99
