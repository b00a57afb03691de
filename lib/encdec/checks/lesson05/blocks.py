"""The blocks and inputs of Exercises 5.2 and 5.3: a reference DecoderBlock whose gains and biases are
random, the cases (x, H_enc, self_attn_mask, cross_attn_mask) of each block size, and the student's
DecoderBlock class given the test block's weights."""

import copy

import numpy as np

from ...attention import create_causal_mask
from ...layers import DecoderBlock
from ..cases import Case
from ..fixtures import generator, length_mask, randomize


def random_block(d_model, n_heads, d_ff, seed):
    """A reference DecoderBlock whose every gain and bias is random (its matrices as initialised):
    distinct norm gains, non-zero biases, so that a shared norm or a dropped bias shows in the output."""
    return randomize(DecoderBlock(d_model, n_heads, d_ff, rng=seed), generator(seed + 1), scale=None)


def _inputs(r, lead, m, n, d, tgt_lengths=None, src_lengths=None, dtype=np.float64):
    """(x, H_enc, self_attn_mask, cross_attn_mask) in the layouts the model uses: the causal mask,
    plus target padding as (B, 1, m, m) when tgt_lengths are given; the source padding mask (B, 1, 1, n)."""
    x, H_enc = r.normal(size=lead + (m, d)).astype(dtype), r.normal(size=lead + (n, d)).astype(dtype)
    self_mask = create_causal_mask(m)
    if tgt_lengths is not None:
        self_mask = self_mask + length_mask(tgt_lengths, m)  # (B, 1, m, m)
    cross_mask = None
    if src_lengths is not None:
        cross_mask = length_mask(src_lengths, n)  # (B, 1, 1, n)
    return x, H_enc, self_mask, cross_mask


def block_configs():
    """(label, (d_model, n_heads, d_ff, seed), cases with args (x, H_enc, self_mask, cross_mask), hidden only)."""
    r = generator(52)
    configs = [
        ("one sentence: causal mask, m=5 target and n=7 source positions", (8, 2, 16, 520),
         [Case("x (5, 8), H_enc (7, 8)", _inputs(r, (), 5, 7, 8)),
          Case("a single target position, m=1, n=3", _inputs(r, (), 1, 3, 8), hidden=True)], False),
        ("a batch with target and source padding", (12, 3, 20, 521),
         [Case("B=2, m=4, n=6, real target lengths 4 and 3, real source lengths 6 and 2",
               _inputs(r, (2,), 4, 6, 12, [4, 3], [6, 2])),
          Case("float32 inputs, B=2, m=3, n=5", _inputs(r, (2,), 3, 5, 12, None, [5, 4], np.float32),
               float32=True, hidden=True)], False),
        ("more target than source positions, 4 heads", (16, 4, 32, 522),
         [Case("B=2, m=6, n=3, real source lengths 3 and 1", _inputs(r, (2,), 6, 3, 16, None, [3, 1]))], False),
    ]
    for _, (d_model, n_heads, d_ff, _), cases, _ in configs:
        for case in cases:  # the block the check builds: its sizes are read by the answer
            case.given = {"h": n_heads, "d_ff": d_ff}
    return configs


def _student_block(cls, source):
    """An instance of the student's class carrying `source`'s sublayers and norm gains (by attribute name)."""
    obj = cls(source.d_model, source.self_attn.n_heads, source.ffn.d_ff)
    for name in ("self_attn", "cross_attn", "ffn"):
        setattr(obj, name, copy.deepcopy(getattr(source, name)))
    for name in ("norm1_gamma", "norm2_gamma", "norm3_gamma"):
        setattr(obj, name, getattr(source, name).copy())
    return obj
