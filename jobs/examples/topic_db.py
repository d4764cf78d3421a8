"""The precomputed topic database of the topics example: the topic of every known word.

Pure data, shared by the application (``jobs/examples/topics.py``) and the capture generator.
A word the database does not know has the topic ``UNKNOWN``.
"""

from __future__ import annotations

UNKNOWN = "unknown"

WORDS_BY_TOPIC: dict[str, tuple[str, ...]] = {
    "astronomy": ("comet", "galaxy", "nebula", "orbit", "planet", "pulsar", "quasar", "star"),
    "cooking": ("bake", "broth", "flour", "garlic", "oven", "recipe", "simmer", "spice"),
    "finance": ("asset", "bond", "credit", "dividend", "equity", "loan", "market", "yield"),
    "music": ("chord", "melody", "octave", "piano", "rhythm", "tempo", "tune", "violin"),
    "sailing": ("anchor", "hull", "keel", "mast", "port", "rudder", "sail", "tack"),
    "sports": ("goal", "league", "match", "medal", "race", "referee", "score", "team"),
}

TOPIC_OF: dict[str, str] = {
    word: topic for topic, words in WORDS_BY_TOPIC.items() for word in words
}


def topic_of(word: str | None) -> str:
    return TOPIC_OF.get(word or "", UNKNOWN)
