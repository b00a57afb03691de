"""Exercise 5.2, DecoderBlock: the pre-norm block's wiring, on each block size and for causality."""

import numpy as np

from ... import layers
from ...attention import create_causal_mask
from ...mistakes import CATALOG
from ..cases import Attempt, Case
from ..catalog import bind_catalog
from ..causes import with_cause
from ..core import Checker
from ..exercises import Exercise
from ..fixtures import generator
from ..matching import diagnose_error
from ..probes import find_slip
from ..rebinding import rebind
from ..running import run_student
from .block_probes import decoder_block_probes
from .blocks import _student_block, block_configs, random_block


DECODER_BLOCK = Exercise("5.2", "DecoderBlock", points=4, reference=layers.DecoderBlock, method="__call__",
                         sizes={"x": "... m d_model", "encoder_output": "... n d_model"})


@DECODER_BLOCK.checked_by
def check_decoder_block(DecoderBlock=None, *, points=None, hidden=False):
    """Pre-norm DecoderBlock.__call__: self-attention, cross-attention, FFN, each with a residual.

    The sublayers (MultiHeadAttention, FeedForward) are the reference ones with random weights, the
    three norm gains are random and different, and your `rms_norm` is the reference while this runs,
    so only the block's wiring is graded here.
    """
    c = Checker(DECODER_BLOCK, points, hidden)
    cls = c.find(DecoderBlock, "DecoderBlock", kind="class")
    if cls is None:
        return c.result()
    cls = rebind(cls, rms_norm=layers.rms_norm)
    forbidden = [layers.DecoderBlock.__call__, layers.decoder_block_post_norm]
    for label, (d_model, n_heads, d_ff, seed), cases, hidden_only in block_configs():
        if c.stopped or (hidden_only and not hidden):
            continue
        source = random_block(d_model, n_heads, d_ff, seed)
        built = run_student(_student_block, (cls, source))
        if built.error is not None:
            c.part(label, False, f"could not build DecoderBlock({d_model}, {n_heads}, {d_ff}) and give it "
                   f"the test's weights: {built.error_text}")
            continue
        c.check_cases(label, built.value, _bound_call(source), cases,
                      catalog=bind_catalog(CATALOG["DecoderBlock"], source), forbidden=forbidden,
                      names=("output", "cross_weights"), probes=decoder_block_probes(source))
    _causality_part(c, cls, forbidden)
    return c.result()


def _bound_call(source):
    """The reference block's __call__ on the case args."""
    def call(x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
        return layers.DecoderBlock.__call__(source, x, encoder_output, self_attn_mask, cross_attn_mask)
    return call


def _causality_part(c, cls, forbidden):
    """Editing the last target token changes no earlier output (with the causal mask passed in)."""
    label = "causal: editing the last target position leaves the earlier outputs unchanged"
    if c.stopped:
        return
    r = generator(53)
    source = random_block(8, 2, 16, 530)
    x, H_enc = r.normal(size=(5, 8)), r.normal(size=(4, 8))
    edited = x.copy()
    edited[-1] = r.normal(size=8)

    def both():
        block = _student_block(cls, source)
        a, _ = block(x, H_enc, create_causal_mask(5))
        b, _ = block(edited, H_enc, create_causal_mask(5))
        return np.max(np.abs(np.asarray(a)[:-1] - np.asarray(b)[:-1]))

    outcome = run_student(both, forbidden=forbidden)
    if outcome.error is not None:
        case = Case(label, (x, H_enc, create_causal_mask(5)))
        attempt = Attempt(c.name, case, error=outcome.error, student=run_student(_student_block, (cls, source)).value,
                          forbidden=tuple(forbidden))
        cause = c.likely_cause(diagnose_error(outcome.error, bind_catalog(CATALOG["DecoderBlock"], source), case)
                               or find_slip(decoder_block_probes(source), attempt))
        c.part(label, False, with_cause(c._explain_error(outcome), cause))
        return
    ok = outcome.value is not None and float(outcome.value) < 1e-9
    c.part(label, ok, "" if ok else (
        f"changing the last target position moved earlier outputs by up to {float(outcome.value):.3g}. "
        + c.misconception(CATALOG.find("DecoderBlock", "no_causal_mask"))))
