"""Exercise 6.7, bpe_merge_step: one BPE merge step on a corpus {tuple of symbols: count}, checked
in three observed parts (observed_parts): the pair, the new corpus, and k steps against Hugging
Face tokenizers."""

from ... import subwords
from ...mistakes import CATALOG
from ..exercises import Exercise
from .bpe_cases import bpe_cases
from .bpe_messages import _say_corpus, _say_merges, _say_pair
from .bpe_observers import _library_merges, _observe_corpus, _observe_merges, _observe_pair
from .observed_parts import _PlainChecker, _check_observed


BPE_MERGE_STEP = Exercise("6.7", "bpe_merge_step", points=3, reference=subwords.bpe_merge_step)
_BPE_FORBIDDEN = [subwords.bpe_merge_step, subwords.bpe_merges, subwords.pair_counts, subwords.merge_pair,
                  subwords.merge_trace]


@BPE_MERGE_STEP.checked_by
def check_bpe_merge_step(bpe_merge_step=None, *, points=None, hidden=False):
    """The most frequent adjacent pair (ties: rank(s) = (len(s) > 1, s), left then right), merged left to
    right in every word; a new corpus, the counts kept."""
    c = _PlainChecker(BPE_MERGE_STEP, points, hidden)
    fn = c.find(bpe_merge_step, "bpe_merge_step")
    cases = bpe_cases()
    catalog = CATALOG["bpe_merge_step"]
    reference = subwords.bpe_merge_step
    if fn is not None:
        _check_observed(c, "the most frequent pair, counted over the corpus, ties by the stated order", fn,
                        cases["pair"], _observe_pair, lambda case: _observe_pair(reference, case), _say_pair,
                        catalog, _BPE_FORBIDDEN)
        _check_observed(c, "the new corpus: every occurrence merged left to right, counts kept, `words` unchanged",
                        fn, cases["corpus"], _observe_corpus, lambda case: _observe_corpus(reference, case),
                        _say_corpus, catalog, _BPE_FORBIDDEN)
        _check_observed(c, "step after step, the merges of Hugging Face tokenizers", fn, cases["library"],
                        _observe_merges, _library_merges, _say_merges, catalog, _BPE_FORBIDDEN)
    return c.result()
