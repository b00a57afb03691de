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
from .cases import Attempt, Case
from .catalog import bind_catalog
from .causes import with_cause
from .core import Checker
from .exercises import Exercise
from .fixtures import generator, length_mask, randomize
from .matching import diagnose_error
from .ordering import Ordering, Step
from .probes import Calls, Causal, Missing, NotFinite, Probes, Swapped, Variants, find_slip
from .rebinding import rebind
from .running import run_student


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


# -- probes: the kinds of slip each exercise's answer may show (encdec.checks.probes) -------------------------
def decoder_block_model(k, x, encoder_output, self_attn_mask=None, cross_attn_mask=None, *, post_norm=False):
    """DecoderBlock.__call__ (or decoder_block_post_norm) with knobs: without={"norm1", "norm2", "norm3",
    "residual_self", "residual_cross", "residual_ffn"}; residual_from_norm (pre-norm: the residual named
    adds the sublayer's output to the normalised input instead of to x); output_norm (pre-norm: the output
    normalised again, with the gain named, or "none" for a gain of ones). k.obj is the block (norm gains changed by the probe)."""
    b = k.obj
    x = np.asarray(x, dtype=np.float64)

    def norm(v, which):
        return v if k.drops(which) else layers.rms_norm(v, getattr(b, which + "_gamma"), b.eps)

    def sublayer(x, which, residual, run):
        if post_norm:
            out = run(x)
            return norm(out if k.drops(residual) else x + out, which)
        h = norm(x, which)
        out = run(h)
        return out if k.drops(residual) else (h if k.get("residual_from_norm") == residual else x) + out

    cross = {}

    def cross_attention(h):
        out, cross["weights"] = b.cross_attn(h, key_value_input=encoder_output, mask=cross_attn_mask)
        return out

    x = sublayer(x, "norm1", "residual_self", lambda h: b.self_attn(h, mask=self_attn_mask)[0])
    x = sublayer(x, "norm2", "residual_cross", cross_attention)
    x = sublayer(x, "norm3", "residual_ffn", b.ffn)
    if k.get("output_norm"):  # a norm the block does not have, applied to its output
        gain = np.ones(b.d_model) if k["output_norm"] == "none" else getattr(b, k["output_norm"] + "_gamma")
        x = layers.rms_norm(x, gain, b.eps)
    return x, cross["weights"]


def _post_norm_model(k, block, *args):
    return decoder_block_model(k, *args, post_norm=True)


def _same(a, b):
    if a is None or b is None:
        return False
    if a is b:
        return True
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


def _mask_of(call):
    args, kwargs = call
    return kwargs["mask"] if "mask" in kwargs else (args[2] if len(args) > 2 else None)


CAUSAL_TO_CROSS = (
    "the causal mask (self_attn_mask) is passed to cross-attention: the causal mask sent to the wrong sublayer. "
    "Cross-attention scores target positions against source positions, (..., h, m, n), and every target "
    "position may read the whole source: pass mask=cross_attn_mask (the source padding mask) to cross_attn, "
    "and keep self_attn_mask for self_attn.")
ONE_LAYER = (
    "one attention layer, %s, does the work of both: self-attention and cross-attention each have their own "
    "weights [LEARNED] (W_q, W_k, W_v, W_o). Self-attention is self.self_attn(rms_norm(x, norm1_gamma), "
    "mask=self_attn_mask); cross-attention is self.cross_attn(rms_norm(x, norm2_gamma), encoder_output, "
    "mask=cross_attn_mask). The layer %s is never used.")
CROSS_TO_SELF = (
    "the source padding mask (cross_attn_mask) is passed to self-attention, so the target positions are not "
    "hidden from the ones before them. Self-attention takes self_attn_mask (the causal mask, plus target "
    "padding); cross-attention takes cross_attn_mask.")


def mask_judge(offset):
    """What the block's sublayers received, judged: the causal mask sent to cross-attention, or the source
    padding mask to self-attention. offset: where x sits among the case args (1 when the block comes first)."""
    def judge(calls, args, kwargs):
        inputs = list(args[offset:offset + 4]) + [None] * 4
        self_mask = kwargs.get("self_attn_mask", inputs[2])
        cross_mask = kwargs.get("cross_attn_mask", inputs[3])
        n_self, n_cross = len(calls["self_attn"]), len(calls["cross_attn"])
        if n_self == 0 and n_cross >= 2:
            return ("one_layer_for_both", ONE_LAYER % ("cross_attn", "self_attn"),
                    f"cross_attn was called {n_cross} times and self_attn never.")
        if n_cross == 0 and n_self >= 2:
            return ("one_layer_for_both", ONE_LAYER % ("self_attn", "cross_attn"),
                    f"self_attn was called {n_self} times and cross_attn never.")
        if calls["cross_attn"]:
            got = _mask_of(calls["cross_attn"][0])
            if _same(got, self_mask) and not _same(got, cross_mask):
                return ("causal_to_cross", CAUSAL_TO_CROSS,
                        f"cross_attn received a mask of shape {np.shape(got)}, self_attn_mask itself.")
        if calls["self_attn"]:
            got = _mask_of(calls["self_attn"][0])
            if _same(got, cross_mask) and not _same(got, self_mask):
                return ("cross_to_self", CROSS_TO_SELF,
                        f"self_attn received a mask of shape {np.shape(got)}, cross_attn_mask itself.")
        return None
    return judge


DECODER_PARTS = {
    "norm1": ("the first norm (norm1_gamma, before self-attention)", "Self-attention reads rms_norm(x, norm1_gamma)."),
    "norm2": ("the second norm (norm2_gamma, before cross-attention)",
              "Cross-attention's queries come from rms_norm(x, norm2_gamma)."),
    "norm3": ("the third norm (norm3_gamma, before the feed-forward network)",
              "The feed-forward network reads rms_norm(x, norm3_gamma)."),
    "residual_self": ("the residual around self-attention", "x = x + self-attention's output."),
    "residual_cross": ("the residual around cross-attention", "x = x + cross-attention's output."),
    "residual_ffn": ("the residual around the feed-forward network", "x = x + the feed-forward network's output."),
}
POST_NORM_PARTS = {
    "norm1": ("the norm after self-attention (norm1_gamma)", "x = rms_norm(x + self-attention's output, norm1_gamma)."),
    "norm2": ("the norm after cross-attention (norm2_gamma)", "x = rms_norm(x + cross-attention's output, norm2_gamma)."),
    "norm3": ("the norm after the feed-forward network (norm3_gamma)",
              "x = rms_norm(x + ffn(x), norm3_gamma)."),
    "residual_self": ("the residual around self-attention", "Normalise x + self-attention's output."),
    "residual_cross": ("the residual around cross-attention", "Normalise x + cross-attention's output."),
    "residual_ffn": ("the residual around the feed-forward network", "Normalise x + ffn(x)."),
}
NORM_ROLES = {"norm1_gamma": "the gain of the self-attention norm", "norm2_gamma": "the gain of the cross-attention norm",
              "norm3_gamma": "the gain of the feed-forward norm"}


def _causal_case(x, encoder_output, self_attn_mask=None, *rest):
    return self_attn_mask is not None


def decoder_block_probes(block, post_norm=False):
    """The probes of DecoderBlock.__call__ (or of decoder_block_post_norm, whose first argument is the block)."""
    gains = ("norm1_gamma", "norm2_gamma", "norm3_gamma")
    offset = 1 if post_norm else 0
    return Probes(
        _post_norm_model if post_norm else decoder_block_model,
        Calls(("self_attn", "cross_attn"), mask_judge(offset), holder=0 if post_norm else "self", kind="masks"),
        Swapped(gains),
        Missing(POST_NORM_PARTS if post_norm else DECODER_PARTS),
        *([] if post_norm else [Variants("residual_from_norm", [
            (residual, {"residual_from_norm": residual},
             f"{DECODER_PARTS[residual][0]} adds the sublayer's output to its normalised input, "
             f"rms_norm(x, {norm}_gamma) + sublayer(...), instead of to x itself. In a pre-norm block the norm "
             "only feeds the sublayer; the residual stream x goes around it untouched: x = x + sublayer(rms_norm(x)).")
            for norm, residual in (("norm1", "residual_self"), ("norm2", "residual_cross"), ("norm3", "residual_ffn"))]),
            Variants("output_norm", [
                (gain, {"output_norm": gain},
                 "the block's output is normalised again" + ("" if gain == "none" else f" (with {gain}_gamma)")
                 + ". A pre-norm block returns the residual stream as it is, x + ffn(rms_norm(x, norm3_gamma)); the "
                 "one norm after the last block is the decoder's final norm, outside the block.")
                for gain in ("norm3", "norm1", "norm2", "none")])]),
        Causal(edit=(offset,), outputs=lambda v: v[0],
               when=(lambda block, *a: _causal_case(*a)) if post_norm else _causal_case, what="x"),
        NotFinite(),
        obj=block, params=gains, roles=NORM_ROLES)


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


# -- Exercise 5.3 ------------------------------------------------------------------------------------------
DECODER_BLOCK_POST_NORM = Exercise("5.3", "decoder_block_post_norm", points=2,
                                   reference=layers.decoder_block_post_norm,
                                   sizes={"x": "... m d_model", "encoder_output": "... n d_model",
                                          "block.self_attn.n_heads": "h", "block.ffn.d_ff": "d_ff"})


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
                      forbidden=forbidden, names=("output", "cross_weights"),
                      probes=decoder_block_probes(block, post_norm=True))
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


# The concept checks before and after the lesson (encdec.checks.concepts): Exercise 5.0, and the one
# numbered after the last exercise above.
from .concepts import concept_checks  # noqa: E402

CONCEPTS = concept_checks(5, after=[*EXERCISES, *ORDERINGS])
check_concepts_before, check_concepts_after = (check.checker for check in CONCEPTS)
