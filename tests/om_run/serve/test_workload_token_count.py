"""token_count.py's stand-in for a tokenizer: Qwen's pre-tokenizer split, a piece per CJK character; stable ids."""
import pytest

from om_run.serve.workload.token_count import count_tokens, pieces, token_ids


@pytest.mark.parametrize("text, expected", [
    ("Hello, world!", ["Hello", ",", " world", "!"]),
    ("don't stop", ["don", "'t", " stop"]),
    ("foo_bar(x)", ["foo", "_bar", "(x", ")"]),
    ("in 2024", ["in", " ", "2", "0", "2", "4"]),                 # digits one by one, as Qwen
    ("你好世界", ["你", "好", "世", "界"]),                           # one piece per character, not one per run
    ("a.\n\n  b", ["a", ".\n\n", " ", " b"]),                      # line breaks ride on the punctuation before
    ("", []),
])
def test_pieces(text, expected):
    assert pieces(text) == expected
    assert count_tokens(text) == len(expected)


def test_pieces_cover_the_text():
    text = "Line one:\n\tdef f(x_1):  return x_1 ** 2  # 한국어 テスト ไทย\r\n¿Qué? 3.14"
    assert "".join(pieces(text)) == text


def test_ids_are_stable_per_piece_and_within_the_vocabulary():
    a = "The cat sat on the mat."
    ids = token_ids(a, 1000)
    assert len(ids) == count_tokens(a) and all(0 <= t < 1000 for t in ids)
    assert token_ids(a, 1000) == ids                               # deterministic (not Python's salted hash)
    assert token_ids(a + " And then it slept.", 1000)[:len(ids)] == ids   # a shared prefix shares its ids
    assert ids[1] == token_ids("a cat", 1000)[1]                   # " cat" is " cat" wherever it is
