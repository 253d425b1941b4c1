"""Planted by sandlot's verify corpus: findings for ruff and mypy."""
import sys


def total(values: list[int]) -> str:
    return sum(values)


def unused(values):
    result = [v for v in values if v == None]
    return len(values)
