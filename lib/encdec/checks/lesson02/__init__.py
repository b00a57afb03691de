"""Checkers for lesson 02, The encoder stack.

Each exercise is declared (number, title, points) right above its checker; EXERCISES and ORDERINGS,
at the end, list them.

Class exercises: the checker builds the student's object with the student's own constructor, then
copies randomised reference weights into it by attribute name (no all-ones gains, no zero
biases), so the student's method and the reference run on identical parameters.

The modules, one job each (the test cells and the notebooks import everything from this package):

    building              what the class exercises share: the earlier exercises run as the reference
                          (EARLIER), random reference layers, the student's object given their weights
    rms_norm              Exercise 2.1, rms_norm (its model with knobs, probes, cases)
    gelu                  Exercise 2.2, gelu (its model with knobs, probes, cases)
    padding_mask          Exercise 2.3, padding_mask (its probes and cases)
    attention_slips       Exercise 2.4's diagnoses: MultiHeadAttention with knobs (mha_model), its slips,
                          mha_probes (which Lesson 4's checks use too)
    multi_head_attention  Exercise 2.4, MultiHeadAttention (its cases, one random layer per part)
    feed_forward          Exercise 2.5, FeedForward (its model with knobs, probes, cases)
    encoder_block         Exercise 2.6, EncoderBlock (its model with knobs, probes, cases)
    step_order            Exercise 2.7, the steps of a pre-norm encoder block, in order
"""

from ... import attention  # noqa: F401  (tests read encdec.checks.lesson02.attention)
from ...mistakes import lesson02 as _register  # noqa: F401  (fills the catalog)
# What the notebooks, the tests and Lesson 4's checks read from encdec.checks.lesson02, re-exported:
from .attention_slips import (HEADS_AXES, MERGE_BARE, MERGE_REVERSED, MHA_ROLES, SPLIT_AND_MERGE_BARE,  # noqa: F401
                              SPLIT_BARE, mha_model, mha_probes, mha_scales)
from .building import EARLIER, build_student, random_layer  # noqa: F401
from .encoder_block import (BLOCK_ATTRIBUTES, BLOCK_PARTS, ENCODER_BLOCK, check_encoder_block,  # noqa: F401
                            encoder_block_model, encoder_block_parts, encoder_block_probes)
from .feed_forward import (FEED_FORWARD, FFN_ATTRIBUTES, check_feed_forward, ffn_model, ffn_parts,  # noqa: F401
                           ffn_probes)
from .gelu import GELU, GELU_PROBES, check_gelu, gelu_cases, gelu_model  # noqa: F401
from .multi_head_attention import (MHA_ATTRIBUTES, MULTI_HEAD_ATTENTION, check_multi_head_attention,  # noqa: F401
                                   mha_parts)
from .padding_mask import PADDING_MASK, PADDING_MASK_PROBES, check_padding_mask, padding_mask_cases  # noqa: F401
from .rms_norm import RMS_NORM, RMS_NORM_PROBES, check_rms_norm, rms_norm_cases, rms_norm_model  # noqa: F401
from .step_order import ENCODER_BLOCK_ORDER, check_encoder_block_order  # noqa: F401

EXERCISES = [RMS_NORM, GELU, PADDING_MASK, MULTI_HEAD_ATTENTION, FEED_FORWARD, ENCODER_BLOCK]
ORDERINGS = [ENCODER_BLOCK_ORDER]

for _graded in [*EXERCISES, *ORDERINGS]:  # the test cells import the checkers from this package
    _graded.checker.__module__ = __name__
del _graded


# The concept checks before and after the lesson (encdec.checks.concepts): Exercise 2.0, and the one
# numbered after the last exercise above.
from ..concepts import concept_checks  # noqa: E402

CONCEPTS = concept_checks(2, after=[*EXERCISES, *ORDERINGS])
check_concepts_before, check_concepts_after = (check.checker for check in CONCEPTS)
