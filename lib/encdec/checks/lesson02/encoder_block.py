"""Exercise 2.6, EncoderBlock: its model with knobs, probes, cases and checker."""

import numpy as np

from ... import attention, layers
from ...mistakes import CATALOG
from ..cases import Case
from ..catalog import bind_catalog
from ..core import Checker
from ..exercises import Exercise
from ..fixtures import generator
from ..probes import Causal, Missing, NotFinite, Probes, Swapped
from ..rebinding import rebind
from .building import EARLIER, build_student, random_layer


# -- probes: the kinds of slip the answer may show (encdec.checks.probes) -------------------------------------
def encoder_block_model(k, x, mask=None):
    """The pre-norm EncoderBlock with knobs: without={"norm1", "norm2", "residual_attn", "residual_ffn",
    "mask"}. k.obj is the block (norm gains changed by the probe)."""
    b = k.obj
    x = np.asarray(x, dtype=np.float64)

    def norm(v, which):
        return v if k.drops(which) else layers.rms_norm(v, getattr(b, which + "_gamma"), b.eps)

    out, _ = b.self_attn(norm(x, "norm1"), mask=None if k.drops("mask") else mask)
    x = out if k.drops("residual_attn") else x + out
    out = b.ffn(norm(x, "norm2"))
    return out if k.drops("residual_ffn") else x + out


BLOCK_PARTS = {
    "norm1": ("the first norm (norm1_gamma, before self-attention)", "Self-attention reads rms_norm(x, norm1_gamma)."),
    "norm2": ("the second norm (norm2_gamma, before the feed-forward network)",
              "The feed-forward network reads rms_norm(x, norm2_gamma)."),
    "residual_attn": ("the residual around self-attention", "x = x + self_attn(rms_norm(x, norm1_gamma), mask=mask)[0]."),
    "residual_ffn": ("the residual around the feed-forward network", "Return x + ffn(rms_norm(x, norm2_gamma))."),
    "mask": ("the padding mask", "Pass mask=mask to self_attn."),
}


def _last_key_visible(x, mask=None):
    return mask is None or not np.any(np.isneginf(np.asarray(mask)[..., -1]))


def encoder_block_probes(block):
    return Probes(encoder_block_model,
                  Swapped(("norm1_gamma", "norm2_gamma")),
                  Missing(BLOCK_PARTS),
                  Causal(edit=(0,), expect=False, what="x", when=_last_key_visible),
                  NotFinite(), obj=block, params=("norm1_gamma", "norm2_gamma"),
                  roles={"norm1_gamma": "the gain of the norm before self-attention",
                         "norm2_gamma": "the gain of the norm before the feed-forward network"})


# -- Exercise 2.6 -------------------------------------------------------------------------------------
BLOCK_ATTRIBUTES = ("self_attn", "ffn", "norm1_gamma", "norm2_gamma", "d_model")


def encoder_block_parts():
    r = generator(26)
    tokens = np.array([[4, 8, 2, 0, 0], [3, 3, 6, 1, 7]])
    return [
        ("one sentence, no padding (n=6, d_model=8, h=2, d_ff=12)", (8, 2, 12),
         [Case("x of shape (6, 8), mask=None", (r.normal(size=(6, 8)),)),
          Case("a single token, x of shape (1, 8)", (r.normal(size=(1, 8)),), hidden=True)]),
        ("a padded batch with its padding mask (d_model=12, h=3, d_ff=16)", (12, 3, 16),
         [Case("x (2, 5, 12) and padding_mask(tokens, 0) of shape (2, 1, 1, 5)",
               (r.normal(size=(2, 5, 12)), attention.padding_mask(tokens, 0))),
          Case("leading shape (2, 2, 4, 12), no mask", (r.normal(size=(2, 2, 4, 12)),), hidden=True)]),
        ("float32 and large inputs (d_model=8, h=4, d_ff=20)", (8, 4, 20),
         [Case("float32 x of shape (5, 8)", (r.normal(size=(5, 8)).astype(np.float32),), float32=True),
          Case("large inputs (entries about 50)", (r.normal(size=(3, 8)) * 50 + 10,)),
          Case("near-zero inputs (entries about 1e-5), where the norms' eps matters",
               (r.normal(size=(2, 3, 8)) * 1e-5,), hidden=True)]),
    ]


ENCODER_BLOCK = Exercise("2.6", "EncoderBlock", points=4, reference=layers.EncoderBlock, method="__call__",
                         cell="encoder_block", sizes={"x": "... n d_model", "self.self_attn.n_heads": "h",
                                                      "self.ffn.d_ff": "d_ff"})


@ENCODER_BLOCK.checked_by
def check_encoder_block(EncoderBlock=None, *, points=None, hidden=False):
    """Pre-norm, bidirectional self-attention with the padding mask, then the FFN.

    The block's self_attn and ffn are reference layers with random weights, and `rms_norm` runs as
    the reference, so only the block's own wiring is checked here.
    """
    c = Checker(ENCODER_BLOCK, points, hidden)
    cls = c.find(EncoderBlock, "EncoderBlock", kind="class")
    if cls is not None:
        cls = rebind(cls, **EARLIER)
    for seed, (label, sizes, cases) in enumerate(encoder_block_parts()):
        if c.stopped:
            break
        ref = random_layer(layers.EncoderBlock(*sizes), 260 + seed)
        student = build_student(c, cls, sizes, ref, BLOCK_ATTRIBUTES, label)
        if student is None:
            continue
        c.check_cases(label, student, ref, cases, catalog=bind_catalog(CATALOG["EncoderBlock"], ref),
                      forbidden=[layers.EncoderBlock.__call__], probes=encoder_block_probes(ref),
                      robust=label.startswith("float32 and large"))
    return c.result()
