import unittest

from wordcount import count_words, top


class WordCountTest(unittest.TestCase):
    def test_counts_case_folded_words(self) -> None:
        self.assertEqual(count_words("The cat. the CAT!")["cat"], 2)

    def test_ignores_punctuation_only_tokens(self) -> None:
        self.assertEqual(sum(count_words("a -- b ...").values()), 3)

    def test_top(self) -> None:
        self.assertEqual(top("b a b c b a", 2), [("b", 3), ("a", 2)])


if __name__ == "__main__":
    unittest.main()
