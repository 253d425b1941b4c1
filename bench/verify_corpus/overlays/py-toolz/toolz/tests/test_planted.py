"""Planted by sandlot's verify corpus: an error in a fixture, a failure, and findings."""
import json

import pytest

from toolz import frequencies, partition


@pytest.fixture
def words():
    raise RuntimeError("the fixture could not load its words")


def test_frequencies_of_words(words):
    assert frequencies(words)


def test_partition_pads():
    assert list(partition(2, [1, 2, 3])) == [(1, 2), (3,)]


def count(items: list) -> int:
    return "many"
