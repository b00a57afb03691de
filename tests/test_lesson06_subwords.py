"""Lesson 6's section on subword tokens (§6.10) and Exercise 6.7, bpe_merge_step: the cases the check draws
from real BPE runs have the answer Hugging Face tokenizers gives, the tie rule the statement states is the
library's on every corpus the check uses, the demonstration is fast, and the lesson's counts hold."""


import pytest

from encdec import number_words, subwords
from encdec.checks import lesson06 as L

pytestmark = pytest.mark.lesson06


def library_merges(texts):
    return subwords.merges(subwords.train(list(texts), 400))


@pytest.mark.parametrize("texts,k", [(L.SENNRICH, 3), (L._german(range(20, 100)), 4), (L._german(range(20, 100)), 6)])
def test_a_case_taken_from_a_real_bpe_run_has_the_library_s_next_merge(texts, k):
    """The corpus after k merges is where the library stood before its merge k + 1: the stated rule picks it."""
    corpus = L._after_merges(texts, k)
    assert subwords.bpe_merge_step(corpus)[0] == library_merges(texts)[k]
    assert subwords.bpe_merges(subwords.word_counts(texts), k) == library_merges(texts)[:k]


def test_the_cases_from_real_runs_are_the_ones_the_check_uses():
    cases = L.bpe_cases()
    from_runs = [L._after_merges(L.SENNRICH, 3), L._after_merges(L._german(range(20, 100)), 4),
                 L._after_merges(L._german(range(20, 100)), 6)]
    used = [c.args[0] for c in cases["pair"] + cases["corpus"]]
    assert all(any(corpus == u for u in used) for corpus in from_runs)


@pytest.mark.parametrize("texts,k", [(c.args[0], c.args[1]) for c in L.bpe_cases()["library"]],
                         ids=[c.label[:40] for c in L.bpe_cases()["library"]])
def test_the_stated_rule_reproduces_the_library_on_every_library_case(texts, k):
    assert subwords.bpe_merges(subwords.word_counts(texts), k) == library_merges(texts)[:k]


def test_plain_string_order_would_not_be_the_library_s_rule():
    """Why the statement ranks characters before merged symbols: at merge 4 of Sennrich's corpus, ('▁', 'lo')
    and ('lo', 'w') tie at 7, and the library takes the pair with the character '▁'."""
    corpus = L._after_merges(L.SENNRICH, 3)
    counts = subwords.pair_counts(corpus)
    assert counts[("▁", "lo")] == counts[("lo", "w")] == max(counts.values()) == 7
    assert library_merges(L.SENNRICH)[3] == ("▁", "lo") and min(("▁", "lo"), ("lo", "w")) == ("lo", "w")


def test_the_merge_trace_demonstration_merges_und_first():
    words = ["dreiundzwanzig", "vierundzwanzig", "dreiunddreißig", "vierunddreißig", "dreihundert", "vierhundert"]
    trace = subwords.merge_trace(words, 8, show=["dreiundzwanzig", "vierunddreißig"])
    assert [a + b for (a, b), _ in trace][:2] == ["nd", "und"] and trace[-1][1]["vierunddreißig"][:3] == ["▁", "v", "ier"]


def test_the_lesson_s_tokens_and_sizes():
    assert number_words.tokens("siebenhundertsiebenundsiebzig") == ["▁sieben", "hundert", "sieben", "und", "sieb", "zig"]
    assert len("siebenhundertsiebenundsiebzig") == 29 and len("vierhundertzweiunddreißig") == 25
    vocab = number_words.VOCAB
    assert vocab[:3] == ["<pad>", "<bos>", "<eos>"] and len(vocab) == 128


@pytest.mark.slow
def test_a_word_vocabulary_of_the_task_has_10_000_german_and_31_english_words():
    """§6.10's count of a word-level vocabulary: the English words of a few numbers are all of them."""
    english = {w for n in range(10_000) for w in number_words.english(n).split()}
    few = {w for n in [*range(20), *range(20, 100, 10), 101, 1000] for w in number_words.english(n).split()}
    assert english == few and len(english) == 31
    assert len({number_words.german(n) for n in range(10_000)}) == 10_000
