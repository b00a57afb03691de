"""Checkers for lesson 03, The decoder stack: causal self-attention revisited.

Each exercise is declared (number, title, points) right above its checker; EXERCISES, ORDERINGS and
QUIZZES, at the end, list them. Exercise 3.6 is a quiz of another kind: tag each quantity
[LEARNED], [CONFIG] or [STATE].

The modules, one job each (the test cells and the notebooks import everything from this package):

    references       the references of the lesson's exercises (the library computes them inline), the
                     REF_ aliases the checkers use, and EARLIER (earlier exercises run as the reference)
    masks            Exercises 3.1 and 3.2, create_causal_mask and decoder_mask (and their probes)
    self_attention   Exercise 3.3, causal_self_attention (its knob model, probes and cases)
    output_head      Exercise 3.4, output_logits (its probes)
    attention_order  Exercise 3.5, the steps of masked multi-head self-attention in order
    tag_quiz         the tag quiz, a new kind of check: TAGS, MEANING, Item and TagQuiz
    quantities       Exercise 3.6, the quantities to tag [LEARNED], [CONFIG] or [STATE]
"""

from ...mistakes import lesson03 as _register  # noqa: F401  (fills the catalog)
# What the notebooks, the tests and the tools read from encdec.checks.lesson03, re-exported:
from .attention_order import MASKED_ATTENTION_ORDER, check_masked_attention_order  # noqa: F401
from .masks import CREATE_CAUSAL_MASK, DECODER_MASK, check_create_causal_mask, check_decoder_mask  # noqa: F401
from .output_head import OUTPUT_LOGITS, check_output_logits  # noqa: F401
from .quantities import TAG_QUIZ, check_quantity_tags  # noqa: F401
from .references import REF_CAUSAL_SELF_ATTENTION, causal_self_attention  # noqa: F401
from .self_attention import CAUSAL_ATTENTION_PROBES, CAUSAL_SELF_ATTENTION, check_causal_self_attention  # noqa: F401
from .tag_quiz import MEANING, TAGS  # noqa: F401

EXERCISES = [CREATE_CAUSAL_MASK, DECODER_MASK, CAUSAL_SELF_ATTENTION, OUTPUT_LOGITS]
ORDERINGS = [MASKED_ATTENTION_ORDER]
QUIZZES = [TAG_QUIZ]

for _graded in [*EXERCISES, *ORDERINGS, *QUIZZES]:  # the test cells import the checkers from this package
    _graded.checker.__module__ = __name__
del _graded


# The concept checks before and after the lesson (encdec.checks.concepts): Exercise 3.0, and the one
# numbered after the last exercise above.
from ..concepts import concept_checks  # noqa: E402

CONCEPTS = concept_checks(3, after=[*EXERCISES, *ORDERINGS, *QUIZZES])
check_concepts_before, check_concepts_after = (check.checker for check in CONCEPTS)
