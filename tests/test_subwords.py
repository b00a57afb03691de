"""Subword tokens: the library's BPE (Hugging Face tokenizers), the shipped vocabulary of the numbers
task, and the plain-Python merge step that reproduces the library's merges."""

import numpy as np
import pytest

from encdec import dates, subwords
from encdec import number_words as numbers

pytestmark = pytest.mark.lesson10

TOY = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3  # Sennrich et al.'s example


def test_the_shipped_vocabulary_is_what_training_makes_byte_for_byte():
    """Training is deterministic, and the shipped JSON is up to date with the data and the code."""
    trained = subwords.to_json(numbers.train_tokenizer())
    assert trained == numbers.TOKENIZER_PATH.read_text(encoding="utf-8")
    assert numbers.TOKENIZER_PATH.stat().st_size < 20_000


def test_training_twice_gives_the_same_vocabulary_and_merges():
    a, b = subwords.train(TOY * 3, 40), subwords.train(TOY * 3, 40)
    assert subwords.to_json(a) == subwords.to_json(b)


def test_special_ids_are_the_course_ones():
    assert (subwords.PAD, subwords.BOS, subwords.EOS) == (dates.PAD, dates.BOS, dates.EOS) == (0, 1, 2)
    assert numbers.VOCAB[:3] == ["<pad>", "<bos>", "<eos>"] and numbers.VOCAB_SIZE == 128
    tok = subwords.train(TOY, 30)
    assert subwords.vocab(tok)[:3] == subwords.SPECIALS


def test_every_number_round_trips_in_both_languages():
    for n in numbers.all_numbers():
        for text in (numbers.english(n), numbers.german(n)):
            ids = numbers.encode(text, eos=True)
            assert ids[-1] == numbers.EOS and min(ids[:-1]) >= 3
            assert numbers.decode([numbers.BOS] + ids + [numbers.PAD, 7]) == text


def test_encode_batch_pads_like_the_dates_task():
    tok = numbers.tokenizer()
    texts = ["seven", "four hundred and thirty two"]
    batch = subwords.encode_batch(tok, texts, eos=True)
    expected = dates.pad_batch([subwords.encode(tok, t, eos=True) for t in texts])
    assert batch.dtype == np.int64 and np.array_equal(batch, expected)
    assert batch[0, 2:].tolist() == [numbers.PAD] * (batch.shape[1] - 2)  # '▁seven', <eos>, pads
    assert subwords.encode_batch(tok, texts, length=12).shape == (2, 12)


def test_a_character_outside_the_vocabulary_is_refused_by_name():
    with pytest.raises(ValueError, match="'Z'"):
        numbers.encode("Zwölf")


def test_subwords_are_morphemes():
    assert numbers.tokens("four hundred and thirty two") == ["▁four", "▁hundred", "▁and", "▁thi", "rty", "▁two"]
    assert numbers.tokens("vierhundertzweiunddreißig") == ["▁", "vier", "hundert", "zwei", "und", "drei", "ßig"]


# -- the plain-Python merge step ------------------------------------------------------------------
def test_one_merge_step_by_hand():
    words = {("l", "o", "w"): 5, ("l", "o", "w", "e", "r"): 2, ("n", "e", "w"): 1}
    pair, merged = subwords.bpe_merge_step(words)
    assert pair == ("l", "o")  # 7 times, as ("o", "w"): the tie goes to the first symbols
    assert merged == {("lo", "w"): 5, ("lo", "w", "e", "r"): 2, ("n", "e", "w"): 1}
    assert words == {("l", "o", "w"): 5, ("l", "o", "w", "e", "r"): 2, ("n", "e", "w"): 1}  # not changed


def test_overlapping_pairs_count_twice_and_merge_left_to_right():
    pair, merged = subwords.bpe_merge_step({("a", "a", "a"): 1, ("a", "b"): 1})
    assert pair == ("a", "a") and merged == {("aa", "a"): 1, ("a", "b"): 1}
    with pytest.raises(ValueError, match="no pair left"):
        subwords.bpe_merge_step({("abc",): 3})


def test_the_tie_rule_puts_characters_before_merged_symbols_and_follows_order_when_given():
    words = {("b", "c"): 1, ("x", "y"): 1, ("ab", "c"): 1}
    assert subwords.bpe_merge_step(words)[0] == ("b", "c")  # characters first, then alphabetical
    assert subwords.bpe_merge_step({("ab", "c"): 1, ("xy", "z"): 1})[0] == ("ab", "c")
    order = ["c", "z", "xy", "ab"]  # as the library numbers them: xy made before ab
    assert subwords.bpe_merge_step({("ab", "c"): 1, ("xy", "z"): 1}, order)[0] == ("xy", "z")


@pytest.mark.parametrize("k", [1, 3, 15])
def test_repeated_merge_steps_reproduce_the_librarys_first_merges_on_a_toy_corpus(k):
    library = subwords.merges(subwords.train(TOY, 100))
    assert len(library) == 15  # then every word is one symbol
    assert subwords.bpe_merges(subwords.word_counts(TOY), k) == library[:k]


@pytest.mark.slow
def test_with_the_librarys_order_every_merge_of_the_shipped_vocabulary_is_reproduced():
    """The library's rule exactly: ties by ids (characters in code-point order, then merged symbols
    in the order they were made). Without the order the plain rule agrees on the first 19 merges."""
    tok = numbers.tokenizer()
    library = subwords.merges(tok)
    train = numbers.split_numbers()["train"]
    words = subwords.word_counts([numbers.english(n) for n in train] + [numbers.german(n) for n in train])
    n_chars = len({c for w in words for c in w})
    characters = subwords.vocab(tok)[3:3 + n_chars]
    assert characters == sorted(characters) and all(len(c) == 1 for c in characters)
    assert subwords.bpe_merges(words, len(library), characters) == library
    assert subwords.bpe_merges(words, 19) == library[:19]


def test_merge_trace_shows_each_step():
    trace = subwords.merge_trace(TOY, 4, show=["lowest", "newer"])
    assert [pair for pair, _ in trace] == [("e", "s"), ("es", "t"), ("l", "o"), ("▁", "lo")]
    assert trace[0][1] == {"lowest": ["▁", "l", "o", "w", "es", "t"], "newer": ["▁", "n", "e", "w", "e", "r"]}
    assert trace[-1][1]["lowest"] == ["▁lo", "w", "est"]
    assert len(subwords.merge_trace(["ab"], 10)) == 2  # stops when nothing is left to merge
