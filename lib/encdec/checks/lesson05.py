"""Checkers for lesson 05, Block ordering.

Each exercise is declared (number, title, points) right above its checker; EXERCISES and ORDERINGS,
at the end, list them.
"""

import copy

import numpy as np

from .. import layers
from ..attention import create_causal_mask
from ..layers import DecoderBlock, EncoderBlock
from ..mistakes import CATALOG
from ..mistakes import lesson05 as _register  # noqa: F401  (fills the catalog)
from .catalog import bind_catalog
from .core import Case, Checker, rebind, run_student
from .exercises import Exercise
from .fixtures import generator, length_mask, randomize
from .ordering import Ordering, Step


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
    return [
        ("one sentence: causal mask, m=5 target and n=7 source positions", (8, 2, 16, 520),
         [Case("x (5, 8), H_enc (7, 8)", _inputs(r, (), 5, 7, 8)),
          Case("a single target position, m=1, n=3", _inputs(r, (), 1, 3, 8), hidden=True)], False),
        ("a batch with target and source padding", (12, 3, 20, 521),
         [Case("B=2, m=4, n=6, real target lengths 4 and 3, real source lengths 6 and 2",
               _inputs(r, (2,), 4, 6, 12, [4, 3], [6, 2])),
          Case("float32 inputs, B=2, m=3, n=5", _inputs(r, (2,), 3, 5, 12, None, [5, 4], np.float32),
               float32=True, hidden=True)], False),
        ("more target than source positions, 4 heads", (16, 4, 32, 522),
         [Case("B=2, m=6, n=3, real source lengths 3 and 1", _inputs(r, (2,), 6, 3, 16, None, [3, 1]))], True),
    ]


def _student_block(cls, source):
    """An instance of the student's class carrying `source`'s sublayers and norm gains (by attribute name)."""
    obj = cls(source.d_model, source.self_attn.n_heads, source.ffn.d_ff)
    for name in ("self_attn", "cross_attn", "ffn"):
        setattr(obj, name, copy.deepcopy(getattr(source, name)))
    for name in ("norm1_gamma", "norm2_gamma", "norm3_gamma"):
        setattr(obj, name, getattr(source, name).copy())
    return obj


DECODER_BLOCK = Exercise("5.2", "DecoderBlock", points=4, reference=layers.DecoderBlock, method="__call__")


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
        c.check_cases(label, built.value, lambda *a, s=source: layers.DecoderBlock.__call__(s, *a), cases,
                      catalog=bind_catalog(CATALOG["DecoderBlock"], source), forbidden=forbidden,
                      names=("output", "cross_weights"))
    _causality_part(c, cls, forbidden)
    return c.result()


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
        c.part(label, False, c._explain_error(outcome))
        return
    ok = outcome.value is not None and float(outcome.value) < 1e-9
    c.part(label, ok, "" if ok else (
        f"changing the last target position moved earlier outputs by up to {float(outcome.value):.3g}. "
        + c.misconception(CATALOG.find("DecoderBlock", "no_causal_mask"))))


# -- Exercise 5.3 ------------------------------------------------------------------------------------------
DECODER_BLOCK_POST_NORM = Exercise("5.3", "decoder_block_post_norm", points=2,
                                   reference=layers.decoder_block_post_norm)


@DECODER_BLOCK_POST_NORM.checked_by
def check_decoder_block_post_norm(decoder_block_post_norm=None, *, points=None, hidden=False):
    """The post-norm block x = Norm(x + Sublayer(x)), with a DecoderBlock's weights."""
    c = Checker(DECODER_BLOCK_POST_NORM, points, hidden)
    fn = c.find(decoder_block_post_norm, "decoder_block_post_norm")
    fn = rebind(fn, rms_norm=layers.rms_norm)
    forbidden = [layers.decoder_block_post_norm, layers.DecoderBlock.__call__]
    catalog = CATALOG["decoder_block_post_norm"]
    for label, (d_model, n_heads, d_ff, seed), cases, hidden_only in block_configs():
        if c.stopped or (hidden_only and not hidden):
            continue
        block = random_block(d_model, n_heads, d_ff, seed + 10)
        with_block = [Case(k.label, (block,) + k.args, hidden=k.hidden, float32=k.float32) for k in cases]
        c.check_cases(label, fn, layers.decoder_block_post_norm, with_block, catalog=catalog,
                      forbidden=forbidden, names=("output", "cross_weights"))
    return c.result()


# -- Exercise 5.4 ------------------------------------------------------------------------------------------
def reference_cross_attention_params(d_model):
    """The reference for Exercise 5.4, counted on real blocks: a DecoderBlock's parameters minus an
    EncoderBlock's of the same size (the decoder block is the encoder block plus cross-attention)."""
    decoder, encoder = DecoderBlock(d_model, 1, 1, rng=0), EncoderBlock(d_model, 1, 1, rng=0)
    return int(sum(p.size for p in decoder.parameters().values())
               - sum(p.size for p in encoder.parameters().values()))


def _sublayer_count(d_model, n_heads, d_ff):
    """The cross-attention sublayer's own arrays in a real DecoderBlock: cross_attn.* and norm2_gamma."""
    block = DecoderBlock(d_model, n_heads, d_ff, rng=0)
    return int(sum(p.size for name, p in block.parameters().items()
                   if name.startswith("cross_attn.") or name == "norm2_gamma"))


CROSS_ATTENTION_PARAMS = Exercise("5.4", "cross_attention_params", points=2,
                                  reference=reference_cross_attention_params)


@CROSS_ATTENTION_PARAMS.checked_by
def check_cross_attention_params(cross_attention_params=None, *, points=None, hidden=False):
    """The number of [LEARNED] numbers cross-attention adds to a decoder block."""
    c = Checker(CROSS_ATTENTION_PARAMS, points, hidden)
    fn = c.find(cross_attention_params, "cross_attention_params")
    common = dict(catalog=CATALOG["cross_attention_params"], forbidden=[reference_cross_attention_params])
    c.check_cases("a DecoderBlock minus an EncoderBlock of the same width", fn, reference_cross_attention_params,
                  [Case("d_model=8", (8,)), Case("d_model=64", (64,)), Case("d_model=512", (512,)),
                   Case("d_model=1", (1,), hidden=True), Case("d_model=3", (3,), hidden=True),
                   Case("d_model=768", (768,), hidden=True)], **common)
    configs = [(16, 4, 64), (12, 3, 7), (32, 8, 128)]
    c.check_cases("the cross_attn arrays and norm2_gamma of real blocks, any n_heads and d_ff",
                  fn, lambda d: _sublayer_count(*next(k for k in configs if k[0] == d)),
                  [Case(f"d_model={d}, n_heads={h}, d_ff={f}", (d,)) for d, h, f in configs], **common)
    return c.result()


# -- Exercise 5.1 ------------------------------------------------------------------------------------------
BLOCK_ORDER = Ordering(
    "5.1", "what a token meets in one decoder block, in order", "block_order", points=1,
    steps=[
        Step("the decoder hidden states arrive from the previous block (or from the embeddings, in block 1)",
             "Every sublayer reads the hidden states, so nothing in the block can happen before they arrive."),
        Step("masked causal self-attention over the decoder positions, plus residual add",
             "Self-attention reads the incoming states and mixes in what the decoder has already written, so "
             "that in the standard block each position knows its context before it asks the source."),
        Step("cross-attention: queries from the decoder, keys and values from the encoder output, plus residual add",
             "Cross-attention asks the source with queries made from the decoder's states; in the standard "
             "block those states already carry the context of the target written so far, which self-attention "
             "has just put in."),
        Step("position-wise feed-forward network, plus residual add",
             "The feed-forward network works on each position alone; in the standard block it comes last and "
             "processes what the two attentions gathered, from the target and from the source."),
        Step("the result passes on to the next decoder block",
             "The next block takes the finished result, after all three sublayers have added their part."),
    ],
    shown=[2, 4, 0, 3, 1],
)


@BLOCK_ORDER.checked_by
def check_block_order(block_order=None, *, points=None):
    """All or nothing."""
    return BLOCK_ORDER.check(block_order, points)


EXERCISES = [DECODER_BLOCK, DECODER_BLOCK_POST_NORM, CROSS_ATTENTION_PARAMS]
ORDERINGS = [BLOCK_ORDER]
