"""The words lexical ranking compares: identifiers split, stop words dropped, Snowball stems, accents folded.

A text's language (Portuguese, Italian or English) is guessed from the stop words it
uses, never declared: a request is short, and its function words are what tell
"Dov'è il mio ordine?" from "Onde está o meu pedido?". Each word is stemmed in that
language (PyStemmer's Snowball stemmers) before its accents are folded, since the
Portuguese and Italian suffix rules read accented endings (-ção, -ità).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

__all__ = ["LANGUAGES", "STOP_WORDS", "fold", "guess_language", "identifier_words", "request_words", "stem", "words"]

LANGUAGES = ("english", "portuguese", "italian")
"""The languages tool texts and requests are read in; the first is the default when nothing tells them apart."""

# Function words and request fillers only, from Snowball's stop lists: content words such as
# "order", "date", "find" or "valor" stay, since a tool's name and description are made of them,
# and so do question words ("where", "onde", "dove"): "where is my order" asks for a status.
_STOP = {
    "english": """a about after again against all am an and any are as at be because been before being below between
        both but by can could did do does doing down during each few for from further had has have having he
        her here hers herself him himself his i if in into is it its itself just me more most my myself no
        nor not now of off on once only or other our ours ourselves out over own please same she should so
        some such than that the their theirs them themselves then there these they this those through to too
        under until up very was we were while will with would you your yours yourself yourselves i'm let me
        us want wants need needs like kindly hi hello""",
    "portuguese": """a ao aos aquela aquelas aquele aqueles aquilo as ate com da das de dela delas dele deles depois do
        dos e ela elas ele eles em entre era eram essa essas esse esses esta estas este estes eu foi for ha
        isso isto ja lhe lhes mais mas me mesmo meu meus minha minhas muito na nas nao nem no nos nossa
        nossas nosso nossos num numa o os ou para pela pelas pelo pelos por que se sem ser seu seus so sua
        suas tambem te tem ter teu teus tu tua tuas um uma umas uns voce voces vos esta estao sao queria
        quero gostaria favor pode podes poderia preciso ola obrigado""",
    "italian": """a ad agli ai al alla alle allo anche c che ci con da dagli dai dal dalla dalle dallo degli dei del
        della delle dello di e ed gli ha hai hanno ho i il in io l la le lei li lo loro lui ma me mi mia mie
        miei mio ne negli nei nel nella nelle nello noi non nostra nostre nostri nostro o per perche piu
        quella quelle quelli quello questa queste questi questo se si sia sono su sua sue suo suoi sul sulla
        ti tra tu tua tue tuo tuoi un una uno vi voi vorrei voglio potresti puoi favore grazie ciao mio e'
        sta""",
}
STOP_WORDS: dict[str, frozenset[str]] = {language: frozenset(text.split()) for language, text in _STOP.items()}
_ALL_STOP = frozenset().union(*STOP_WORDS.values())
# Words in one language's list only tell that language apart; "a", "e", "me" say nothing.
_TELLING = {language: stop - frozenset().union(*(other for name, other in STOP_WORDS.items() if name != language))
            for language, stop in STOP_WORDS.items()}

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[^\W_]+")


def fold(word: str) -> str:
    """Lower case without accents: "Está" and "esta" are one word to a request typed in a hurry."""
    plain = unicodedata.normalize("NFKD", word.lower())
    return "".join(c for c in plain if not unicodedata.combining(c))


def _raw_words(text: str) -> list[str]:
    """Lower-cased words, camelCase, snake_case, kebab-case and dotted names split apart."""
    return [word.lower() for word in _WORD.findall(_CAMEL.sub(" ", text))]


def identifier_words(name: str) -> list[str]:
    """`getOrderStatus`, `get_order_status`, `orders.get-status` → their words, folded."""
    return [fold(word) for word in _raw_words(name)]


def guess_language(folded: Iterable[str]) -> str:
    """The language whose own stop words the text uses most; English when none tells."""
    counts = dict.fromkeys(LANGUAGES, 0)
    for word in folded:
        for language in LANGUAGES:
            if word in _TELLING[language]:
                counts[language] += 1
    best = max(LANGUAGES, key=lambda language: counts[language])  # ties keep the earlier, English first
    return best if counts[best] else LANGUAGES[0]


@functools.cache
def _stemmer(language: str) -> Any:  # PyStemmer ships no type hints
    import Stemmer  # Snowball's C stemmers, loaded when a registry first ranks by words

    return Stemmer.Stemmer(language)


@functools.lru_cache(maxsize=65536)
def stem(word: str, language: str) -> str:
    """`word` (lower case, accents kept) stemmed in `language`, then folded."""
    stemmer = _stemmer(language)
    return fold(str(stemmer.stemWord(word)))


def _keep(folded: str) -> bool:
    return len(folded) > 1 and not folded.isdigit() and folded not in _ALL_STOP


def words(text: str, language: str | None = None) -> tuple[list[str], str]:
    """The stems of `text`'s content words, and the language they were stemmed in (guessed unless given)."""
    raw = _raw_words(text)
    folded = [fold(word) for word in raw]
    language = language or guess_language(folded)
    return [stem(word, language) for word, plain in zip(raw, folded, strict=True) if _keep(plain)], language


def request_words(text: str) -> list[tuple[str, ...]]:
    """Each content word of a request as the forms to look it up by, best first.

    Its stem in the request's guessed language comes first; then its stems in the other
    languages and the word itself, for a word the guess got wrong ("rimborso" in a request
    with no Italian function word in it).
    """
    raw = _raw_words(text)
    folded = [fold(word) for word in raw]
    language = guess_language(folded)
    others = [other for other in LANGUAGES if other != language]
    forms = []
    for word, plain in zip(raw, folded, strict=True):
        if _keep(plain):
            candidates = [stem(word, language), *(stem(word, other) for other in others), plain]
            forms.append(tuple(dict.fromkeys(candidates)))
    return forms
