"""Planted by sandlot's verify corpus: unittest-style classes run by pytest."""
from unittest import TestCase

import more_itertools as mi


class ChunkedPlantedTests(TestCase):
    def test_chunked_sizes(self):
        self.assertEqual(list(mi.chunked([1, 2, 3], 2)), [[1, 2], [3, 4]])

    def test_first_default(self):
        self.assertEqual(mi.first([], default=None), None)


class WindowPlantedTests(TestCase):
    def test_window_count(self):
        self.assertEqual(len(list(mi.windowed(range(5), 3))), 4)
