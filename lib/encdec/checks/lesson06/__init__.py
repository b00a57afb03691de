"""Checkers for lesson 06, Assembling the encoder-decoder model.

Each exercise is declared (number, title, points) right above its checker; EXERCISES and ORDERINGS,
at the end, list them.

The model exercises are functions that take the model as their first argument, like methods:
`embed(model, tokens)`, `encode(model, src)`, `decode(model, tgt_in, H_enc, src_mask)`. The model
they receive is the reference `encdec.Seq2Seq` with randomised weights (no all-ones gains, no zero
biases), so its blocks are the reference blocks and a mistake from Lessons 1-5 is never charged here.

The modules, one job each (the test cells and the notebooks import everything from this package):

    shift_right      Exercise 6.1, shift_right
    embed            Exercise 6.2, embed (and the position encodings of its slips)
    forward_cases    what 6.3 and 6.4 share: the models and batches of the forward pass, their cases
    encode           Exercise 6.3, encode
    decode           Exercise 6.4, decode
    parameter_count  Exercise 6.5, parameter_count
    forward_order    Exercise 6.6, the forward pass in order
    bpe_cases        Exercise 6.7's cases: Sennrich's corpus, the German number words, the corpus after k merges
    observed_parts   the parts of a check that observes the answer itself (6.7's result is no array)
    bpe_observers    what 6.7's parts observe of an answer, and Hugging Face tokenizers' merges
    bpe_messages     what 6.7's check says when an observation differs
    bpe_merge_step   Exercise 6.7, bpe_merge_step
"""

from ...mistakes import lesson06 as _register  # noqa: F401  (fills the catalog)
from .. import exercises
# What the notebooks, the tests and the tools read from encdec.checks.lesson06, re-exported:
from .bpe_cases import SENNRICH, _after_merges, _german, bpe_cases  # noqa: F401
from .bpe_merge_step import BPE_MERGE_STEP, check_bpe_merge_step  # noqa: F401
from .decode import DECODE, DECODE_PROBES, check_decode  # noqa: F401
from .embed import EMBED, EMBED_PROBES, check_embed, embed_cases  # noqa: F401
from .encode import ENCODE, ENCODE_PROBES, check_encode  # noqa: F401
from .forward_cases import decode_cases, encode_cases  # noqa: F401
from .forward_order import FORWARD_ORDER, check_forward_order  # noqa: F401
from .parameter_count import COUNT_PROBES, PARAMETER_COUNT, check_parameter_count, parameter_count_cases  # noqa: F401
from .shift_right import SHIFT_PROBES, SHIFT_RIGHT, check_shift_right, shift_right_cases  # noqa: F401

EXERCISES = [SHIFT_RIGHT, EMBED, ENCODE, DECODE, PARAMETER_COUNT, BPE_MERGE_STEP]
ORDERINGS = [FORWARD_ORDER]

for _graded in [*EXERCISES, *ORDERINGS]:  # the test cells import the checkers from this package
    _graded.checker.__module__ = __name__
del _graded


# -- for the notebook's demonstrations ----------------------------------------------------------------
def yours_or_ours(number, answer):
    """The student's answer to exercise `number` when its visible test passes, else the course's
    reference (with a note), so that a demonstration runs before the exercise is done. Grades nothing."""
    return exercises.yours_or_ours(EXERCISES, number, answer)


# The concept checks before and after the lesson (encdec.checks.concepts): Exercise 6.0, and the one
# numbered after the last exercise above.
from ..concepts import concept_checks  # noqa: E402

CONCEPTS = concept_checks(6, after=[*EXERCISES, *ORDERINGS])
check_concepts_before, check_concepts_after = (check.checker for check in CONCEPTS)
