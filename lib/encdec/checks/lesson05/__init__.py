"""Checkers for lesson 05, Block ordering.

Each exercise is declared (number, title, points) right above its checker; EXERCISES and ORDERINGS,
at the end, list them.

The modules, one job each (the test cells and the notebooks import everything from this package):

    blocks                   the test blocks (random gains and biases), the cases of each block size, and
                             the student's DecoderBlock class given the test block's weights
    block_probes             the probes of Exercises 5.2 and 5.3: the kinds of slip a block's answer may show
    decoder_block            Exercise 5.2, DecoderBlock (the block's wiring, and causality)
    decoder_block_post_norm  Exercise 5.3, decoder_block_post_norm
    cross_attention_params   Exercise 5.4, cross_attention_params (counted on real blocks)
    block_order              Exercise 5.1, what a token meets in one decoder block, in order
"""

from ...mistakes import lesson05 as _register  # noqa: F401  (fills the catalog)
# What the notebooks, the tests and the tools read from encdec.checks.lesson05, re-exported:
from ... import layers  # noqa: F401  (lesson05.layers, in the tests)
from ...attention import create_causal_mask  # noqa: F401  (lesson05.create_causal_mask, in the tests)
from ..cases import Case  # noqa: F401  (lesson05.Case, in the tests)
from .block_order import BLOCK_ORDER, check_block_order  # noqa: F401
from .block_probes import decoder_block_probes  # noqa: F401
from .blocks import _student_block, random_block  # noqa: F401
from .cross_attention_params import CROSS_ATTENTION_PARAMS, check_cross_attention_params  # noqa: F401
from .decoder_block import DECODER_BLOCK, check_decoder_block  # noqa: F401
from .decoder_block_post_norm import DECODER_BLOCK_POST_NORM, check_decoder_block_post_norm  # noqa: F401

EXERCISES = [DECODER_BLOCK, DECODER_BLOCK_POST_NORM, CROSS_ATTENTION_PARAMS]
ORDERINGS = [BLOCK_ORDER]

for _graded in [*EXERCISES, *ORDERINGS]:  # the test cells import the checkers from this package
    _graded.checker.__module__ = __name__
del _graded


# The concept checks before and after the lesson (encdec.checks.concepts): Exercise 5.0, and the one
# numbered after the last exercise above.
from ..concepts import concept_checks  # noqa: E402

CONCEPTS = concept_checks(5, after=[*EXERCISES, *ORDERINGS])
check_concepts_before, check_concepts_after = (check.checker for check in CONCEPTS)
