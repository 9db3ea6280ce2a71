"""What counts as a question: it must hold words (letters or digits, in any script).

An empty question, or one of only punctuation, symbols or spaces ("?!", "...", "—"), matches every
passage a little and none for a reason: answering it would cite unrelated sources as support.
"""

from __future__ import annotations


def check_question(query: object) -> str:
    """`query` if it asks something in words; else ValueError saying why it was refused."""
    if not isinstance(query, str) or not query.strip():
        raise ValueError("the question is empty")
    if not any(ch.isalnum() for ch in query):
        raise ValueError("the question has no words, only punctuation or symbols: ask it in words")
    return query
