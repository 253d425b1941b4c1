"""A tiny example project: count words in text."""

from collections import Counter


def count_words(text: str) -> Counter[str]:
    """Count case-folded words, ignoring surrounding punctuation."""
    words = (w.strip(".,;:!?\"'()").casefold() for w in text.split())
    return Counter(w for w in words if w)


def top(text: str, n: int = 3) -> list[tuple[str, int]]:
    """The n most common words, most common first (ties by first appearance)."""
    return count_words(text).most_common(n)
