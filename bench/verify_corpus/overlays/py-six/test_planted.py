"""Planted by sandlot's verify corpus: parametrized failures and lint/type findings."""
import os

import pytest

import six


@pytest.mark.parametrize("value", ["text", b"bytes", 3])
def test_ensure_text(value):
    assert isinstance(six.ensure_text(value), six.text_type)


def test_integer_types() -> None:
    count: int = "three"
    assert count in six.integer_types
