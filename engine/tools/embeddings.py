"""Text embeddings for tool selection and knowledge: a local dense one, hashed n-grams, both, an endpoint, a cache.

The dense one (`WordLlamaEmbedder`, knowledge's default) averages WordLlama's 256-dimension token embeddings
(l2_supercat: Llama 2's token table distilled for sentence similarity, MIT), which its
wheel ships — 16 MB of weights and the tokenizer — so it needs no download: they are read
from the installed package's own files with safetensors and tokenizers, and nothing of
WordLlama's loader (which looks for the tokenizer under another folder and then downloads)
runs. `HashedNgramEmbedder` (`{type: hashed-ngrams}`) hashes character n-grams of
accent-folded words; `HttpEmbedder` (`{type: http}`) asks an OpenAI-compatible endpoint.
A registry's default (`{type: local}`, `CombinedEmbedder`) is the n-grams and WordLlama
side by side: ranking.py compares each part alone and averages the two cosines, which
ranked tools better on benchmarks/tool_selection_quality.py's tuning parts than either.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import os
import re
import tempfile
import unicodedata
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import orjson

if TYPE_CHECKING:
    import httpx
    import numpy as np

__all__ = ["EMBEDDERS", "CombinedEmbedder", "Embedder", "EmbeddingCache", "HashedNgramEmbedder", "HttpEmbedder",
           "WordLlamaEmbedder", "default_embedder", "make_embedder"]


class Embedder(Protocol):
    """Turns texts into unit vectors; `name` identifies the model in cache keys."""

    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


_WORD = re.compile(r"[a-z0-9]+")


def _fold(text: str) -> str:
    plain = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in plain if not unicodedata.combining(c))


class HashedNgramEmbedder:
    """Hashed character 3- to 5-grams plus whole words, signed, log-weighted, normalised."""

    def __init__(self, dimension: int = 1024) -> None:
        self.dimension = dimension
        self.name = f"hashed-ngrams-v1-{dimension}"

    def _features(self, text: str) -> list[str]:
        features = []
        for word in _WORD.findall(_fold(text)):
            features.append(f"w:{word}")
            padded = f"#{word}#"
            for size in (3, 4, 5):
                features += [padded[i:i + size] for i in range(max(1, len(padded) - size + 1))]
        return features

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np  # numpy and httpx load when a run embeds, not when a diagram is checked

        matrix = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            counts: dict[int, float] = {}
            for feature in self._features(text):
                hashed = zlib.crc32(feature.encode())
                index = hashed % self.dimension
                sign = 1.0 if hashed & 0x80000000 else -1.0
                counts[index] = counts.get(index, 0.0) + sign
            for index, value in counts.items():
                matrix[row, index] = np.sign(value) * np.log1p(abs(value))
            norm = float(np.linalg.norm(matrix[row]))
            if norm:
                matrix[row] /= norm
        return matrix


class WordLlamaEmbedder:
    """WordLlama's l2_supercat token embeddings, as its wheel ships them, mean-pooled and L2-normalised.

    Loaded at the first `embed` (about 0.3 s: 32,000 tokens x 256 float16 values and the
    tokenizer), from files inside the installed `wordllama` package, which is located
    without being imported: importing it configures the root logger and loads requests.
    """

    FILES = ("weights/l2_supercat_256.safetensors", "tokenizers/l2_supercat_tokenizer_config.json")
    BATCH = 256
    """Texts tokenized at a time (the tokenizer works through a batch on every core)."""
    ROWS = 4096
    """Token rows gathered at a time into one reused buffer (4 MB: kept in cache, no page faults)."""

    def __init__(self, dimension: int = 256) -> None:
        if not 1 <= dimension <= 256:
            raise ValueError("WordLlama's embeddings have at most 256 dimensions (fewer: the first ones, Matryoshka)")
        self.dimension = dimension
        self.name = f"wordllama-l2-supercat-{dimension}"
        self._table: np.ndarray | None = None
        self._tokenizer: Any = None  # tokenizers ships no type hints

    def _load(self) -> tuple[np.ndarray, Any]:
        if self._table is None:
            import numpy as np
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer

            spec = importlib.util.find_spec("wordllama")  # finds the folder without running its __init__
            if spec is None or not spec.submodule_search_locations:
                raise RuntimeError("the wordllama package is not installed (pip install wordllama)")
            folder = Path(next(iter(spec.submodule_search_locations)))
            weights, tokenizer = (folder / name for name in self.FILES)
            table = load_file(str(weights))["embedding.weight"][:, :self.dimension]
            self._tokenizer = Tokenizer.from_file(str(tokenizer))
            self._tokenizer.no_padding()
            self._tokenizer.no_truncation()
            self._table = np.ascontiguousarray(table, dtype=np.float32)
        return self._table, self._tokenizer

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        table, tokenizer = self._load()
        matrix = np.zeros((len(texts), self.dimension), dtype=np.float32)
        rows = np.empty((self.ROWS, self.dimension), dtype=np.float32)  # reused: a fresh array per batch costs twice the time
        for start in range(0, len(texts), self.BATCH):
            encoded = tokenizer.encode_batch(list(texts[start:start + self.BATCH]), add_special_tokens=False)
            for at, item in enumerate(encoded, start):
                ids = item.ids
                for offset in range(0, len(ids), self.ROWS):
                    part = ids[offset:offset + self.ROWS]
                    matrix[at] += np.take(table, part, axis=0, out=rows[:len(part)]).sum(axis=0)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)  # the mean's direction is the sum's
        norms[norms == 0] = 1
        return np.asarray(matrix / norms, dtype=np.float32)


@functools.cache
def default_embedder() -> WordLlamaEmbedder:
    """The local dense embedder, loaded once per process (its table is 32 MB as float32)."""
    return WordLlamaEmbedder()



class CombinedEmbedder:
    """Several local embedders' unit vectors side by side, one row per text; `blocks` gives each part's width.

    A ranking reads the parts apart (ranking.py's Ranker: each block's cosine, then their
    mean); a plain cosine of two such rows is the mean of the parts' cosines as well.
    """

    def __init__(self, parts: Sequence[HashedNgramEmbedder | WordLlamaEmbedder] | None = None) -> None:
        self.parts = tuple(parts) if parts else (HashedNgramEmbedder(), default_embedder())
        self.name = "+".join(part.name for part in self.parts)
        self.blocks = tuple(part.dimension for part in self.parts)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        joined = np.hstack([part.embed(texts) for part in self.parts])
        return np.asarray(joined / np.sqrt(len(self.parts)), dtype=np.float32)


class HttpEmbedder:
    """An OpenAI-compatible `/v1/embeddings` endpoint (many providers and local servers speak it)."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.name = f"http-{model}"
        self._url = base_url.rstrip("/") + "/v1/embeddings"
        self._model = model
        self._headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        import httpx

        self._client = httpx.Client(transport=transport, timeout=30)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        response = self._client.post(self._url, json={"model": self._model, "input": list(texts)},
                                     headers=self._headers)
        response.raise_for_status()
        data = sorted(response.json()["data"], key=lambda item: item["index"])
        import numpy as np

        matrix = np.asarray([item["embedding"] for item in data], dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1
        return np.asarray(matrix / norms, dtype=np.float32)


@functools.cache
def _local() -> CombinedEmbedder:
    """A registry's default embedder, one per process."""
    return CombinedEmbedder()


EMBEDDERS: dict[str, Any] = {"local": CombinedEmbedder, "wordllama": WordLlamaEmbedder,
                              "hashed-ngrams": HashedNgramEmbedder, "http": HttpEmbedder}
"""Embedder kinds a registry may name (`embedder: {type: …}`); a local model can be added here by name."""


def make_embedder(spec: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None) -> Embedder:
    """The embedder a registry's `embedder:` names; hashed n-grams and WordLlama together when it names none."""
    options = dict(spec or {})
    kind = options.pop("type", "local")
    if kind == "wordllama" and not options:
        return default_embedder()
    if kind == "local" and not options:
        return _local()
    if kind == "http":
        key_variable = options.pop("api_key_env", None)
        environ = environ if environ is not None else os.environ
        options["api_key"] = environ.get(key_variable) if key_variable else None
    embedder: Embedder = EMBEDDERS[kind](**options)
    return embedder


class EmbeddingCache:
    """Tool embeddings stored beside a registry, keyed by (function, version, embedder).

    An entry also holds what was embedded (`metadata["embedded"]`: which of the tool's texts,
    ranking.py's `EmbeddedText`) and the tool's words as the lexical index reads them (its
    document, with the form they were worked out in), so that a registry's first ranked
    selection stems nothing. Raising a tool's version refreshes all of it.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: dict[str, dict[str, Any]] = {}
        self._dirty = False
        if path.is_file():
            try:
                self._entries = orjson.loads(path.read_bytes())
            except orjson.JSONDecodeError:
                self._entries = {}  # a damaged cache is rebuilt, never trusted

    @staticmethod
    def key(function: str, version: int, embedder: str) -> str:
        return f"{function}@{version}@{embedder}"

    def has(self, key: str, embedded: str) -> bool:
        """A non-empty vector of the text `embedded` names is stored under `key` (checked without numpy)."""
        entry = self._entries.get(key)
        if not (entry and entry.get("vector")):
            return False
        # Entries written before the text was named embedded the description and examples.
        return bool((entry.get("metadata") or {}).get("embedded", "description") == embedded)

    def document(self, key: str, form: int) -> dict[str, list[str]] | None:
        """The tool's words per field stored under `key`, if they were worked out in `form`."""
        stored = (self._entries.get(key) or {}).get("document")
        if not isinstance(stored, dict) or stored.get("form") != form or not isinstance(stored.get("fields"), dict):
            return None
        fields: dict[str, list[str]] = stored["fields"]
        return fields if all(isinstance(terms, list) for terms in fields.values()) else None

    def put_document(self, key: str, fields: Mapping[str, Sequence[str]], form: int) -> None:
        """Store a tool's words per field beside its embedding (which `put` has stored under `key`)."""
        self._entries[key]["document"] = {"form": form, "fields": {name: list(terms) for name, terms in fields.items()}}
        self._dirty = True

    def vector_bytes(self, key: str) -> bytes | None:
        """The vector stored under `key`, as float32 bytes (a registry's ranking stacks them into one matrix)."""
        entry = self._entries.get(key)
        return None if entry is None else base64.b64decode(entry["vector"])

    def metadata(self, key: str) -> dict[str, Any] | None:
        entry = self._entries.get(key)
        return entry.get("metadata") if entry else None

    def put(self, key: str, vector: np.ndarray, metadata: Mapping[str, Any]) -> None:
        function = key.split("@", 1)[0]
        for stale in [k for k in self._entries if k.split("@", 1)[0] == function and k.rsplit("@", 1)[1] == key.rsplit("@", 1)[1]]:
            del self._entries[stale]  # an older version of this tool for this embedder
        import numpy as np

        self._entries[key] = {"vector": base64.b64encode(vector.astype(np.float32).tobytes()).decode(),
                              "metadata": dict(metadata),
                              "text_sha256": hashlib.sha256(str(metadata.get("text", "")).encode()).hexdigest()}
        self._dirty = True

    def save(self) -> None:
        if not self._dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("wb", dir=self.path.parent, delete=False, suffix=".tmp") as handle:
                handle.write(orjson.dumps(self._entries, option=orjson.OPT_SORT_KEYS))
            os.replace(handle.name, self.path)
            self._dirty = False
        except OSError:
            pass  # a read-only folder only costs recomputing next time
