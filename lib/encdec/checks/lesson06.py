"""Checkers for lesson 06, Assembling the encoder-decoder model.

Each exercise is declared (number, title, points) right above its checker; EXERCISES and ORDERINGS,
at the end, list them.

The model exercises are functions that take the model as their first argument, like methods:
`embed(model, tokens)`, `encode(model, src)`, `decode(model, tgt_in, H_enc, src_mask)`. The model
they receive is the reference `encdec.Seq2Seq` with randomised weights (no all-ones gains, no zero
biases), so its blocks are the reference blocks and a mistake from Lessons 1-5 is never charged here.
"""

import functools

import numpy as np

from .. import model as model_mod
from .. import subwords
from .. import training
from ..attention import MultiHeadAttention, create_causal_mask, padding_mask
from ..layers import DecoderBlock, EncoderBlock, FeedForward, rms_norm, sinusoidal_positions
from ..mistakes import CATALOG
from ..mistakes import lesson06 as _register  # noqa: F401  (fills the catalog)
from ..model import Seq2Seq
from . import recording
from .core import Case, Checker, rebind, run_student, with_cause
from . import exercises
from .exercises import Exercise
from .probes import Combos, Invariant, Probes, Proportional, Scale
from .fixtures import BOS, EOS, PAD, generator, padded_tokens, random_model
from .ordering import Ordering, Step


# -- Exercise 6.1 ---------------------------------------------------------------------------------------
def shift_right_cases():
    r = generator(61)
    batch = padded_tokens(r, [3, 5, 2], 6, 12)
    batch[np.arange(3), [3, 5, 2]] = EOS
    single = np.array([7, 4, 9, 5, EOS, PAD, PAD])
    deep = padded_tokens(r, [4, 2, 3, 4, 1, 2], 5, 20).reshape(2, 3, 5)
    return {
        "values": [Case("one sequence [7, 4, 9, 5, EOS, PAD, PAD], bos_id=1", (single, BOS)),
                   Case("a batch of 3 right-padded targets, shape (3, 7)", (batch, BOS)),
                   Case("bos_id=5", (batch[:2], 5)),
                   Case("one position only, shape (2, 1)", (np.array([[EOS], [8]]), BOS), hidden=True),
                   Case("leading shape (2, 3), m=5", (deep, BOS), hidden=True)],
    }


def _is_integer(value):
    return np.asarray(value).dtype.kind in "iu"


def _shift_model(k, targets, bos_id):
    """shift_right with knobs: axis (the axis shifted), by (positions shifted, -1 to the left), fill
    (what goes in the freed places: "bos", "pad" (0), "eos", "copy" (the first target kept))."""
    targets = np.asarray(targets)
    axis = k.get("axis", -1)
    by = k.get("by", 1)
    if targets.ndim == 0 or targets.shape[axis] < abs(by):
        raise ValueError("nothing to shift")
    moved = np.moveaxis(targets, axis, -1)
    fill = {"bos": bos_id, "pad": PAD, "eos": EOS}.get(k.get("fill", "bos"))
    out = np.empty_like(moved)
    if by > 0:
        out[..., by:] = moved[..., :-by]
        out[..., :by] = moved[..., :by] if fill is None else fill
    else:
        out[..., :by] = moved[..., -by:]
        out[..., by:] = moved[..., by:] if fill is None else fill
    return np.moveaxis(out, -1, axis)


SHIFT_PROBES = Probes(_shift_model, Combos("shift", [
    ("axis", [(-1, "", ""), (0, "axis0", "the shift runs along the first axis (the batch), not the last (the positions)")]),
    ("by", [(1, "", ""), (2, "by2", "the targets move two places, not one"),
            (-1, "left", "the targets move left (targets[..., 1:] first), not right")]),
    ("fill", [("bos", "", ""), ("pad", "pad_first", "the freed place holds the pad id 0, not bos_id"),
              ("eos", "eos_first", "the freed place holds EOS, not bos_id"),
              ("copy", "first_kept", "the freed place keeps the old token instead of bos_id")]),
], "The decoder input is [bos_id] + targets[..., :-1], along the last axis."))


SHIFT_RIGHT = Exercise("6.1", "shift_right", points=2, reference=model_mod.shift_right, sizes={"targets": "... m"},
                       reads=("bos_id",), weights={"BOS first, last token dropped, any batch shape": 3})


@SHIFT_RIGHT.checked_by
def check_shift_right(shift_right=None, *, points=None, hidden=False):
    """[BOS] + targets[..., :-1] along the last axis."""
    c = Checker(SHIFT_RIGHT, points, hidden)
    fn = c.find(shift_right, "shift_right")
    cases = shift_right_cases()["values"]
    common = dict(catalog=CATALOG["shift_right"], forbidden=[model_mod.shift_right])
    ref = model_mod.shift_right
    c.check_cases("BOS first, last token dropped, any batch shape", fn, ref, cases, probes=SHIFT_PROBES, **common)
    c.check_cases("the ids keep an integer dtype", fn, ref, cases, postprocess=_is_integer, **common)
    return c.result()


# -- Exercise 6.2 --------------------------------------------------------------------------------------
def embed_cases():
    r = generator(62)
    small = random_model(620, vocab_size=13, n_layers=2)
    wide = random_model(621, vocab_size=20, d_model=12, n_heads=3, n_layers=2)
    odd = random_model(622, vocab_size=9, d_model=7, n_heads=1, n_layers=2)
    return {
        "values": [Case("one sequence of 5 tokens, d_model=8", (small, np.array([3, 1, 7, 7, 12]))),
                   Case("a batch (2, 6) with padding, d_model=12", (wide, padded_tokens(r, [6, 3], 6, 20))),
                   Case("odd width d_model=7", (odd, np.array([[4, 5, 6]])), hidden=True),
                   Case("leading shape (2, 2, 3)", (small, r.integers(0, 13, size=(2, 2, 3))), hidden=True)],
    }


def _positions(kind, n, d):
    """PE for n positions, the course's (kind "right") or a slip's."""
    if kind == "from1":
        return sinusoidal_positions(n + 1, d)[1:]
    if kind in ("swap", "halves", "i_over_d"):
        pos = np.arange(n, dtype=np.float64)[:, None]
        i = np.arange(0, d, 2, dtype=np.float64)
        angles = pos / np.power(10000.0, (i / 2 if kind == "i_over_d" else i) / d)
        if kind == "halves":
            return np.concatenate([np.sin(angles), np.cos(angles)], axis=-1)[:, :d]
        pe = np.zeros((n, d))
        first, second = (np.cos, np.sin) if kind == "swap" else (np.sin, np.cos)
        pe[:, 0::2] = first(angles)
        pe[:, 1::2] = second(angles[:, : d // 2])
        return pe
    return sinusoidal_positions(n, d)


def _embed_model(k, model, tokens):
    """Seq2Seq.embed with knobs: scale (what multiplies E's rows), pos (which positions are added),
    factor (a number in place of sqrt(d_model), for Scale)."""
    tokens = np.asarray(tokens)
    d = model.config.d_model
    scale = {"sqrt": np.sqrt(d), "one": 1.0, "d": float(d), "inv": 1 / np.sqrt(d)}[k.get("scale", "sqrt")]
    scale = k.get("factor", scale)
    rows = model.embedding[tokens] * scale
    pos = k.get("pos", "right")
    T = tokens.shape[-1]
    if pos == "none":
        return rows
    if pos == "by_id":
        return rows + sinusoidal_positions(model.config.vocab_size, d)[tokens]
    pe = _positions(pos, T, d)
    if pos == "double":
        pe = 2 * pe
    if pos == "scaled":
        return (model.embedding[tokens] + pe) * scale
    return rows + pe


_EMBED_RIGHT = "embed(tokens) = E[tokens] * sqrt(d_model) + PE[0 .. T-1], PE[pos, 2i] = sin, PE[pos, 2i+1] = cos."
EMBED_PROBES = Probes(
    _embed_model,
    Combos("embed", [
        ("scale", [("sqrt", "", ""), ("one", "no_scale", "E's rows are not multiplied by sqrt(d_model)"),
                   ("d", "scaled_by_d", "E's rows are multiplied by d_model, not by its square root"),
                   ("inv", "divided", "E's rows are divided by sqrt(d_model) instead of multiplied")]),
        ("pos", [("right", "", ""), ("none", "no_positions", "the position encodings are not added"),
                 ("double", "positions_twice", "the position encodings are added twice"),
                 ("scaled", "positions_scaled", "the positions are multiplied by sqrt(d_model) too (only E's rows are)"),
                 ("by_id", "positions_by_id", "the position encodings are looked up by token id, not by position"),
                 ("from1", "positions_from_1", "the positions count from 1, not from 0"),
                 ("swap", "sin_cos_swapped", "the even columns hold cosines and the odd ones sines: the other way round"),
                 ("halves", "sin_cos_halves", "the sines fill the first half of the columns and the cosines the second, "
                                              "instead of alternating (sine in column 2i, cosine in 2i+1)"),
                 ("i_over_d", "exponent_i", "the frequencies use 10000^(i/d) with i the column pair, not 10000^(2i/d)")]),
    ], _EMBED_RIGHT),
    Scale(lambda model, tokens: [("sqrt(d_model)", float(np.sqrt(model.config.d_model)), None)],
          what="E's rows", knob="factor"))


EMBED = Exercise("6.2", "embed", points=2, reference=Seq2Seq.embed,
                 sizes={"tokens": "... m", "self.config.d_model": "d_model", "self.config.vocab_size": "V"})


@EMBED.checked_by
def check_embed(embed=None, *, points=None, hidden=False):
    """E[tokens] * sqrt(d_model) + PE[0 .. T-1]."""
    c = Checker(EMBED, points, hidden)
    fn = c.find(embed, "embed")
    common = dict(catalog=CATALOG["embed"], forbidden=[Seq2Seq.embed])
    c.check_cases("scaled embedding rows plus positions", fn, Seq2Seq.embed, embed_cases()["values"],
                  probes=EMBED_PROBES, **common)
    return c.result()


# -- Exercise 6.3 and 6.4: the forward pass --------------------------------------------------------------
def model_inputs(model, seed, src_lengths, n, tgt_lengths, m):
    """Right-padded src (B, n) and teacher-forced tgt_in (B, m) for `model`, BOS first."""
    r = generator(seed)
    V, pad = model.config.vocab_size, model.config.pad_id
    src = padded_tokens(r, src_lengths, n, V, pad)
    tgt_in = padded_tokens(r, tgt_lengths, m, V, pad, first=BOS)
    return src, tgt_in


def forward_setups():
    """(label, model, src, tgt_in, hidden): the models and batches both checks use."""
    base = random_model(630, vocab_size=13, n_layers=2)
    pad3 = random_model(631, vocab_size=11, d_model=12, n_heads=3, d_ff=10, n_layers=1, pad_id=3, eps=0.05)
    deep = random_model(632, vocab_size=15, d_model=8, n_heads=4, d_ff=16, n_layers=3, n_decoder_layers=2)
    tiny = random_model(633, vocab_size=13, n_layers=2, embedding_scale=1e-4)
    large = random_model(634, vocab_size=13, n_layers=2, embedding_scale=30.0)
    setups = []
    src, tgt_in = model_inputs(base, 1, [6, 4, 5], 6, [5, 3, 4], 5)
    setups.append(("a batch of 3, n=6 source and m=5 target positions, padded, 2+2 layers", base, src, tgt_in, False))
    src, tgt_in = model_inputs(base, 2, [4], 4, [3], 3)
    setups.append(("one unbatched pair, n=4, m=3", base, src[0], tgt_in[0], False))
    src, tgt_in = model_inputs(pad3, 3, [5, 2, 4, 3], 5, [4, 4, 2, 5], 6)
    setups.append(("pad_id=3, eps=0.05, d_model=12, 3 heads, 1+1 layers, a batch of 4, n=5, m=6", pad3, src, tgt_in,
                   False))
    src, tgt_in = model_inputs(deep, 4, [3, 7], 7, [6, 2], 6)
    setups.append(("3 encoder and 2 decoder layers, 4 heads", deep, src, tgt_in, True))
    src, tgt_in = model_inputs(base, 5, [5, 3, 2, 4], 5, [4, 2, 3, 4], 4)
    setups.append(("leading shape (2, 2)", base, src.reshape(2, 2, 5), tgt_in.reshape(2, 2, 4), True))
    src, tgt_in = model_inputs(tiny, 6, [4, 3], 4, [3, 3], 3)
    setups.append(("near-zero embeddings (1e-4)", tiny, src, tgt_in, True))
    src, tgt_in = model_inputs(large, 7, [4, 2], 4, [3, 2], 3)
    setups.append(("large embeddings (about 30)", large, src, tgt_in, True))
    return setups


def encode_cases():
    return [Case(label, (model, src), hidden=hidden) for label, model, src, _, hidden in forward_setups()]


def decode_cases():
    cases = []
    for label, model, src, tgt_in, hidden in forward_setups():
        H_enc, src_mask = model.encode(src)
        cases.append(Case(label, (model, tgt_in, H_enc, src_mask), hidden=hidden))
    return cases


_FORWARD = [Seq2Seq.encode, Seq2Seq.decode, Seq2Seq.__call__, training.forward_with_cache]


def _encode_model(k, model, src):
    """Seq2Seq.encode with knobs: mask ("pad", "none", "causal" (causal and padding), "pad0" (pad id 0)),
    norm ("enc", "none", "dec" (the decoder's gamma)), chain (False: every block reads the embedding)."""
    src = np.asarray(src)
    pad = 0 if k.get("mask") == "pad0" else model.config.pad_id
    src_mask = padding_mask(src, pad)
    used = {"pad": src_mask, "pad0": src_mask, "none": None,
            "causal": src_mask + create_causal_mask(src.shape[-1])}[k.get("mask", "pad")]
    x0 = x = model.embed(src)
    for block in model.encoder:
        x = block(x if k.get("chain", True) else x0, mask=used)
    gamma = {"enc": model.encoder_norm_gamma, "dec": model.decoder_norm_gamma, "none": None}[k.get("norm", "enc")]
    return (x if gamma is None else rms_norm(x, gamma, model.config.eps)), src_mask


def _real(src, model):
    return np.asarray(src) != model.config.pad_id


def _append_pad(args, kwargs):
    model, src = args[0], np.asarray(args[1])
    pad = np.full(src.shape[:-1] + (1,), model.config.pad_id, dtype=src.dtype)
    return (model, np.concatenate([src, pad], axis=-1)), kwargs


def _real_rows(value, args, kwargs):
    """H_enc at the real (non-pad) source positions, in order."""
    return np.asarray(value[0])[_real(args[1], args[0])]


def _other_last(tokens, model):
    """tokens with the last column changed to another real id wherever it is not the pad id; None if
    every row ends in padding."""
    tokens = np.array(tokens, copy=True)
    last = tokens[..., -1]
    real = last != model.config.pad_id
    if not np.any(real):
        return None
    V, avoid = model.config.vocab_size, {model.config.pad_id, BOS}
    new = (last + 1) % V
    while any(int(t) in avoid for t in np.ravel(new[real])):
        new = np.where(np.isin(new, list(avoid)), (new + 1) % V, new)
    tokens[..., -1] = np.where(real, new, last)
    return tokens


def _edit_last_source(args, kwargs):
    src = _other_last(args[1], args[0])
    return None if src is None else ((args[0], src), kwargs)


def _earlier_real_rows(value, args, kwargs):
    H = np.asarray(value[0])[..., :-1, :]
    return H[_real(np.asarray(args[1])[..., :-1], args[0])]


ENCODE_PROBES = Probes(
    _encode_model,
    Combos("encode", [
        ("mask", [("pad", "", ""), ("none", "no_padding_mask", "the blocks get no padding mask, so real tokens attend to pads"),
                  ("causal", "causal", "the blocks get a causal mask: the encoder reads the whole source, both ways"),
                  ("pad0", "pad_id_zero", "the padding mask hides the id 0 instead of model.config.pad_id")]),
        ("norm", [("enc", "", ""), ("none", "no_final_norm", "the final RMSNorm (encoder_norm_gamma) is missing"),
                  ("dec", "decoder_gamma", "the final norm uses decoder_norm_gamma instead of encoder_norm_gamma")]),
        ("chain", [(True, "", ""), (False, "not_chained", "every block reads the embedding instead of the previous block's output")]),
    ], "H_enc = RMSNorm(block_N(... block_1(embed(src), src_mask) ...), encoder_norm_gamma)."),
    Invariant("pad_changes_real_positions", _append_pad, _real_rows, (
        "one more pad at the end of the source changed H_enc at the real positions: the real tokens attend to "
        "the pads. Pass the padding mask, padding_mask(src, model.config.pad_id), to every encoder block."),
        kind="padding"),
    Invariant("encoder_is_causal", _edit_last_source, _earlier_real_rows, (
        "changing the last source token changed no earlier position of H_enc: the earlier positions never "
        "read it. The encoder is bidirectional: only the padding mask, no causal mask."), change=True, kind="causal"))


ENCODE = Exercise("6.3", "encode", points=3, reference=Seq2Seq.encode,
                  sizes={"src": "... n", "self.config.d_model": "d_model", "self.config.n_heads": "h",
                         "self.config.d_ff": "d_ff", "self.config.vocab_size": "V"},
                  reads=("self.config.pad_id", "self.config.eps"))


@ENCODE.checked_by
def check_encode(encode=None, *, points=None, hidden=False):
    """Embed, N encoder blocks with the source padding mask, final RMSNorm.

    Your `embed` is replaced by the reference while this runs, so a mistake in Exercise 6.2 is not
    charged again here.
    """
    c = Checker(ENCODE, points, hidden)
    fn = c.find(encode, "encode")
    fn = rebind(fn, embed=Seq2Seq.embed)
    cases = encode_cases()
    common = dict(catalog=CATALOG["encode"], forbidden=_FORWARD, names=("H_enc", "src_mask"))
    c.check_cases("H_enc and the source padding mask", fn, Seq2Seq.encode, cases, probes=ENCODE_PROBES, **common)
    return c.result()


def _decode_model(k, model, tgt_in, H_enc, src_mask):
    """Seq2Seq.decode with knobs: self ("both" masks, "causal" only, "pad" only, "none"), cross ("src",
    "none"), norm ("dec", "none", "enc"), head (a factor on the logits)."""
    tgt_in = np.asarray(tgt_in)
    causal, pad = create_causal_mask(tgt_in.shape[-1]), padding_mask(tgt_in, model.config.pad_id)
    on_queries = np.swapaxes(pad, -1, -2)  # (..., 1, m, 1): the pad positions' rows hidden, not their columns
    self_mask = {"both": causal + pad, "causal": causal, "pad": pad, "none": None, "queries": causal + on_queries,
                 "queries_only": on_queries}[k.get("self_mask", "both")]
    cross = src_mask if k.get("cross", "src") == "src" else None
    x = model.embed(tgt_in)
    for block in model.decoder:
        x, _ = block(x, H_enc, self_attn_mask=self_mask, cross_attn_mask=cross)
    gamma = {"dec": model.decoder_norm_gamma, "enc": model.encoder_norm_gamma, "none": None}[k.get("norm", "dec")]
    h = x if gamma is None else rms_norm(x, gamma, model.config.eps)
    return k.get("head", 1.0) * (h @ model.embedding.T)


def _edit_last_target(args, kwargs):
    tgt = _other_last(args[1], args[0])
    return None if tgt is None else ((args[0], tgt) + tuple(args[2:]), kwargs)


def _earlier_logits(value, args, kwargs):
    return np.asarray(value)[..., :-1, :]


def _masked_source_row(args, kwargs):
    """One more source row in H_enc, hidden by src_mask: the logits must not change."""
    model, tgt_in, H_enc, src_mask = args
    H_enc = np.asarray(H_enc)
    extra = generator(64).normal(size=H_enc.shape[:-2] + (1, H_enc.shape[-1])) * 3.0
    hidden = np.full(np.shape(src_mask)[:-1] + (1,), -np.inf)
    return (model, tgt_in, np.concatenate([H_enc, extra], axis=-2),
            np.concatenate([np.asarray(src_mask, dtype=np.float64), hidden], axis=-1)), kwargs


def _all_logits(value, args, kwargs):
    return value


DECODE_PROBES = Probes(
    _decode_model,
    Combos("decode", [
        ("self_mask", [("both", "", ""), ("causal", "no_target_padding_mask", "the self-attention mask is causal only: the target padding is not hidden"),
                  ("pad", "no_causal_mask", "the self-attention mask hides the target pads but is not causal"),
                  ("none", "no_self_mask", "the self-attention gets no mask at all (neither causal nor padding)"),
                  ("queries", "padding_on_queries", "the target padding mask hides the pad positions' rows (their "
                                                    "queries), so they attend to nothing: padding masks keys only, "
                                                    "padding_mask's (..., 1, 1, m), one entry per key, added as it is"),
                  ("queries_only", "padding_on_queries_not_causal",
                   "the self-attention mask is the target padding on the query rows, (..., 1, m, 1), and not causal: "
                   "it must be causal, plus padding_mask's (..., 1, 1, m) hiding pad keys")]),
        ("cross", [("src", "", ""), ("none", "no_cross_mask", "the cross-attention gets no mask: the source pads are visible")]),
        ("norm", [("dec", "", ""), ("none", "no_final_norm", "the final RMSNorm (decoder_norm_gamma) is missing"),
                  ("enc", "encoder_gamma", "the final norm uses encoder_norm_gamma instead of decoder_norm_gamma")]),
    ], "The decoder: embed(tgt_in); each block with the causal mask plus the target padding mask, and src_mask "
       "in cross-attention; RMSNorm with decoder_norm_gamma; then @ E.T."),
    Proportional("the logits", lambda model, *rest: [
        ("sqrt(d_model)", float(np.sqrt(model.config.d_model)),
         "the logits are multiplied by sqrt(d_model): the tied head is h @ E.T, unscaled (only the embedding's "
         "rows are scaled on the way in)."),
        ("1/sqrt(d_model)", float(1 / np.sqrt(model.config.d_model)),
         "the logits are divided by sqrt(d_model): the tied head is h @ E.T, unscaled.")]),
    Invariant("future_visible", _edit_last_target, _earlier_logits, (
        "changing only the last target input changed the logits at earlier positions: a position reads the "
        "positions after it. The self-attention mask must hide every key j > i: add the causal mask, "
        "create_causal_mask(m), to the target padding mask."), kind="causal"),
    Invariant("source_pads_visible", _masked_source_row, _all_logits, (
        "one more source position, hidden by src_mask, changed your logits: the cross-attention does not use "
        "src_mask. Pass src_mask as every decoder block's cross-attention mask."), kind="padding"))


DECODE = Exercise("6.4", "decode", points=4, reference=Seq2Seq.decode,
                  sizes={"tgt_in": "... m", "H_enc": "... n d_model", "self.config.n_heads": "h",
                         "self.config.d_ff": "d_ff", "self.config.vocab_size": "V"},
                  reads=("self.config.pad_id", "self.config.eps"))


@DECODE.checked_by
def check_decode(decode=None, *, points=None, hidden=False):
    """Embed, N decoder blocks (causal + padding self-mask, source cross-mask),
    final RMSNorm, tied head h @ E.T.

    Your `embed` is replaced by the reference while this runs, and H_enc comes from the reference
    encoder, so mistakes in Exercises 6.2 and 6.3 are not charged again here.
    """
    c = Checker(DECODE, points, hidden)
    fn = c.find(decode, "decode")
    fn = rebind(fn, embed=Seq2Seq.embed)
    cases = decode_cases()
    common = dict(catalog=CATALOG["decode"], forbidden=_FORWARD, probes=DECODE_PROBES)
    c.check_cases("logits (..., m, V) from the target inputs and H_enc", fn, Seq2Seq.decode, cases[:2], **common)
    c.check_cases("another pad id, width and depth; batch shapes; extreme embeddings", fn, Seq2Seq.decode,
                  cases[2:], **common)
    return c.result()


# -- Exercise 6.5 ----------------------------------------------------------------------------------------
def _counted_by_the_model(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):
    """The number of entries in a real model's parameters(), for the same sizes."""
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    model = Seq2Seq(vocab_size=vocab_size, d_model=d_model, n_heads=1, d_ff=d_ff,
                    n_encoder_layers=n_encoder_layers, n_decoder_layers=n_dec, rng=0)
    return model.num_parameters()


def parameter_count_cases():
    return {
        "formula": [Case("V=17, d=16, d_ff=24, N=2 (n_decoder_layers not given)", (17, 16, 24, 2)),
                    Case("V=100, d=32, d_ff=128, 3 encoder and 1 decoder layers", (100, 32, 128, 3, 1)),
                    Case("V=32000, d=512, d_ff=2048, N=6 (a base-sized model)", (32000, 512, 2048, 6)),
                    Case("V=7, d=4, d_ff=3, 1 encoder and 4 decoder layers", (7, 4, 3, 1, 4), hidden=True),
                    Case("n_decoder_layers=0 (no decoder blocks; 0 is not None)", (11, 6, 10, 2, 0))],
        "model": [Case("V=13, d=8, d_ff=12, 2 encoder and 3 decoder layers", (13, 8, 12, 2, 3)),
                  Case("V=50, d=6, d_ff=20, N=1", (50, 6, 20, 1), hidden=True)],
    }


_COUNTERS = [model_mod.parameter_count, Seq2Seq.num_parameters, Seq2Seq.parameters, EncoderBlock.parameters,
             DecoderBlock.parameters, MultiHeadAttention.parameters, FeedForward.parameters]


_COUNT_TERMS = [  # (knob, what it counts, in the course's words)
    ("embedding", "the embedding E (V d)"),
    ("self_attention", "the self-attention weights W_q, W_k, W_v, W_o of every block (4 d^2 each)"),
    ("cross_attention", "the cross-attention weights of every decoder block (4 d^2 each)"),
    ("ffn_weights", "the feed-forward matrices W1 and W2 of every block (2 d d_ff)"),
    ("ffn_biases", "the feed-forward biases b1 and b2 of every block (d_ff + d)"),
    ("block_norms", "the blocks' RMSNorm gains (2 d per encoder block, 3 d per decoder block)"),
    ("final_norms", "the two final RMSNorm gains (2 d)"),
]


def _count_model(k, vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):
    """parameter_count as a sum of terms, each with a knob: its multiplicity (1 right, 0 left out, 2
    counted twice); extra terms head (an untied output head, V d) and attention_biases (4 d per
    attention); nd_is_n (n_decoder_layers ignored); zero_as_none (n_decoder_layers=0 read as None)."""
    V, d, dff, N = vocab_size, d_model, d_ff, n_encoder_layers
    Nd = N if (n_decoder_layers is None or k.get("nd_is_n") or (k.get("zero_as_none") and not n_decoder_layers)) \
        else n_decoder_layers
    terms = {"embedding": V * d, "self_attention": 4 * d * d * (N + Nd), "cross_attention": 4 * d * d * Nd,
             "ffn_weights": 2 * d * dff * (N + Nd), "ffn_biases": (dff + d) * (N + Nd),
             "block_norms": 2 * d * N + 3 * d * Nd, "final_norms": 2 * d}
    total = sum(k.get(name, 1) * value for name, value in terms.items())
    return total + k.get("head", 0) * V * d + k.get("attention_biases", 0) * 4 * d * (N + 2 * Nd)


def _count_choices():
    choices = [(name, [(1, "", ""), (0, f"no_{name}", f"{words} is left out"),
                       (2, f"twice_{name}", f"{words} is counted twice")]) for name, words in _COUNT_TERMS]
    choices.append(("head", [(0, "", ""), (1, "untied_head", "an output head of V d is counted, but the head is E itself (tied)")]))
    choices.append(("attention_biases", [(0, "", ""), (1, "attention_biases",
                                                       "biases are counted for the attention projections, which have none")]))
    choices.append(("nd_is_n", [(False, "", ""), (True, "ignores_n_decoder_layers",
                                                  "n_decoder_layers is ignored: the decoder gets n_encoder_layers blocks")]))
    choices.append(("zero_as_none", [(False, "", ""), (True, "zero_decoder_layers_as_none",
                                                       "n_decoder_layers=0 is read as None (as `n_decoder_layers or "
                                                       "n_encoder_layers` reads it): 0 means no decoder block, and only "
                                                       "None means as many as the encoder; test `is None`")]))
    return choices


COUNT_PROBES = Probes(_count_model, Combos("count", _count_choices(),
                                            "Count every [LEARNED] array once: the embedding E; in each block its "
                                            "attention projections, its feed-forward matrices and biases, and its "
                                            "norm gains; and the two final norm gains (the table above the "
                                            "exercise)."))


PARAMETER_COUNT = Exercise("6.5", "parameter_count", points=3, reference=model_mod.parameter_count,
                           reads=("vocab_size", "d_model", "d_ff", "n_encoder_layers", "n_decoder_layers"),
                           weights={"the formula": 2})


@PARAMETER_COUNT.checked_by
def check_parameter_count(parameter_count=None, *, points=None, hidden=False):
    """The number of [LEARNED] numbers as a formula in V, d, d_ff and the layer counts."""
    c = Checker(PARAMETER_COUNT, points, hidden)
    fn = c.find(parameter_count, "parameter_count")
    cases = parameter_count_cases()
    common = dict(catalog=CATALOG["parameter_count"], forbidden=_COUNTERS)
    c.check_cases("the formula", fn, model_mod.parameter_count, cases["formula"], probes=COUNT_PROBES, **common)
    c.check_cases("agrees with the arrays of a real Seq2Seq", fn, _counted_by_the_model, cases["model"],
                  probes=COUNT_PROBES, **common)
    return c.result()


# -- Exercise 6.6 ----------------------------------------------------------------------------------------
FORWARD_ORDER = Ordering(
    "6.6", "the forward pass, from token ids to logits", "forward_order", points=1,
    steps=[
        Step("look up each source token's row of E and multiply it by sqrt(d_model)",
             "Everything starts from the source token ids: their rows of E are the first vectors there are."),
        Step("add the sinusoidal position encodings",
             "The positions are added to the already scaled rows: the sqrt(d_model) factor is for E alone, "
             "and attention needs the positions before any block runs."),
        Step("run the N encoder blocks, each on the previous block's output",
             "The encoder blocks read position-aware vectors, so the embedding and the positions come first."),
        Step("apply the encoder's final RMSNorm: the result is H_enc",
             "The final norm closes the encoder stack: it normalises the output of the last encoder block."),
        Step("embed the target inputs the same way (rows of E times sqrt(d_model), plus the positions), and run "
             "the N decoder blocks on them; each cross-attends to H_enc",
             "Every decoder block reads H_enc in its cross-attention, so the whole encoder, final norm "
             "included, must be finished first (the target inputs may be embedded at any time before)."),
        Step("apply the decoder's final RMSNorm",
             "The decoder's final norm normalises the output of the last decoder block, so the whole "
             "decoder stack (which needs the finished encoder) comes first."),
        Step("multiply by E transposed (the tied output head): logits over the vocabulary",
             "The head turns normalised top decoder states into logits: it is the very last step, after "
             "the decoder's final norm."),
    ],
    shown=[3, 6, 1, 4, 0, 5, 2],
)


@FORWARD_ORDER.checked_by
def check_forward_order(forward_order=None, *, points=None):
    """All or nothing."""
    return FORWARD_ORDER.check(forward_order, points)


# -- Exercise 6.7 ----------------------------------------------------------------------------------------
# One BPE merge step on a corpus {tuple of symbols: count}. The answer returns (pair, new corpus), which
# core.compare (arrays) cannot read, so this check runs its cases itself: each part observes the answer
# (`observe(fn, case)`), compares what it saw with the reference's, and on a difference names the catalog
# mistake that behaves the same way on the case (told apart on the part's other cases when several do).
SENNRICH = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3  # Sennrich et al. (2016)'s example


def _after_merges(texts, k):
    """The corpus of `texts` after k merge steps of the reference: a state a real BPE run passes through."""
    words = subwords.word_counts(texts)
    for _ in range(k):
        words = subwords.bpe_merge_step(words)[1]
    return words


def _german(numbers):
    from .. import number_words
    return [number_words.german(n) for n in numbers]


@functools.cache
def bpe_cases():
    """{"pair": cases whose pair is compared, "corpus": cases whose whole result is, "library": (texts, k)
    cases run k steps and compared with the merges of Hugging Face tokenizers trained on the texts}."""
    sennrich = {("l", "o", "w"): 5, ("l", "o", "w", "e", "r"): 2, ("n", "e", "w", "e", "s", "t"): 6,
                ("w", "i", "d", "e", "s", "t"): 3}
    return {
        "pair": [
            Case("counts that matter: ('l', 'o') 20 times in one word, ('e', 'w') once in each of three",
                 ({("l", "o", "w"): 20, ("n", "e", "w"): 1, ("f", "e", "w"): 1, ("d", "e", "w"): 1},)),
            Case("a tie: ('e', 's') and ('s', 't') both 9 times", (sennrich,)),
            Case("a tie of every pair (3 times each): the first in the order is not the first seen",
                 ({("s", "t", "o", "p"): 3, ("a", "b", "l", "e"): 3},)),
            Case("a character against a merged symbol: ('▁', 'lo') and ('lo', 'w') both 7 times",
                 (_after_merges(SENNRICH, 3),)),
            Case("a word's last pair counts: ('b', 'c') ends both words, 5 times in all",
                 ({("a", "b", "c"): 3, ("x", "b", "c"): 2},)),
            Case("overlapping pairs: ('a', 'a', 'a') holds ('a', 'a') twice",
                 ({("a", "a", "a"): 3, ("a", "b", "c"): 5},)),
            Case("a pair twice in one word: ('x', 'y', 'x', 'y')", ({("x", "y", "x", "y"): 1, ("a", "b"): 1},),
                 hidden=True),
            Case("German number words after 4 merges (ties among 'ch', 'ie', 'ei')",
                 (_after_merges(_german(range(20, 100)), 4),), hidden=True),
        ],
        "corpus": [
            Case("every occurrence merged, counts kept (Sennrich's corpus, merging ('e', 's'))", (sennrich,)),
            Case("overlapping: ('a', 'a', 'a') -> ('aa', 'a'), ('a', 'a', 'a', 'a') -> ('aa', 'aa')",
                 ({("a", "a", "a"): 3, ("a", "a", "a", "a"): 2, ("b", "a", "a"): 1},)),
            Case("the pair twice in one word: ('h', 'a', 'h', 'a') -> ('ha', 'ha')",
                 ({("h", "a", "h", "a"): 4, ("h", "a", "t"): 1, ("t", "a"): 2},)),
            Case("symbols that only contain the pair's: merging ('x', 'a') leaves ('x', 'ab') and ('zx', 'a') as they are",
                 ({("x", "a"): 5, ("x", "ab"): 2, ("zx", "a"): 2},)),
            Case("five a's in a row: ('a', 'a', 'a', 'a', 'a') -> ('aa', 'aa', 'a')",
                 ({("a", "a", "a", "a", "a"): 2, ("b", "a"): 1},), hidden=True),
            Case("German number words after 6 merges", (_after_merges(_german(range(20, 100)), 6),), hidden=True),
        ],
        "library": [
            Case("Sennrich's corpus ('low' 5, 'lower' 2, 'newest' 6, 'widest' 3), 5 merges", (SENNRICH, 5)),
            Case("Sennrich's corpus, every merge until each word is one symbol (15)", (SENNRICH, 15), hidden=True),
            Case("the German words for 20 to 99, 8 merges", (_german(range(20, 100)), 8), hidden=True),
        ],
    }


class _Malformed(Exception):
    """The answer's result cannot be read as (pair, corpus); the message says why."""


def _as_pair(value):
    if not isinstance(value, (tuple, list)) or len(value) != 2 or not all(isinstance(s, str) for s in value):
        raise _Malformed(f"the pair should be a tuple of two symbols (strings), like ('e', 's'); got {value!r:.80}")
    return tuple(value)


def _as_result(value):
    """(pair, corpus as a dict {tuple of str: int}) from an answer's return value, or _Malformed."""
    if value is None:
        raise _Malformed("your function returned None (did you forget `return`?)")
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise _Malformed(f"expected a tuple (pair, new corpus), got {type(value).__name__}")
    pair, corpus = value
    pair = _as_pair(pair)
    if not isinstance(corpus, dict):
        raise _Malformed(f"the new corpus should be a dict {{tuple of symbols: count}}, got {type(corpus).__name__}")
    for word in corpus:
        if not isinstance(word, tuple) or not all(isinstance(s, str) for s in word):
            raise _Malformed(f"the new corpus's words should be tuples of strings, one string a symbol, like "
                             f"('lo', 'w'); got {word!r:.80}")
    return pair, dict(corpus)


def _copy_words(words):
    return {tuple(w): n for w, n in words.items()}


def _observe_pair(fn, case):
    value = fn(_copy_words(case.args[0]))
    if value is None:
        raise _Malformed("your function returned None (did you forget `return`?)")
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise _Malformed(f"expected a tuple (pair, new corpus), got {type(value).__name__}")
    return _as_pair(value[0])


def _observe_corpus(fn, case):
    words = _copy_words(case.args[0])
    pair, corpus = _as_result(fn(words))
    return pair, corpus, words == case.args[0]


def _observe_merges(fn, case):
    texts, k = case.args
    words, pairs = subwords.word_counts(texts), []
    for _ in range(k):
        pair, words = _as_result(fn(words))
        pairs.append(pair)
    return pairs


def _library_merges(case):
    """The first k merges of Hugging Face tokenizers' BPE trained on the case's texts."""
    texts, k = case.args
    return _trained_merges(tuple(texts))[:k]


@functools.cache
def _trained_merges(texts):
    return subwords.merges(subwords.train(list(texts), 400))


def _pair_words(words, pair):
    counts = subwords.pair_counts(words)
    return f"{pair} occurs {counts.get(pair, 0)} times"


def _say_pair(got, expected, case):
    words = case.args[0]
    said = (f"the pair merged: expected {expected}, got {got} ({_pair_words(words, expected)} in the corpus, "
            f"{_pair_words(words, got)})")
    if got != _most_frequent(words, last=True) and got == _most_frequent(words, last=False) \
            and got != _most_frequent(words, last=True, once=True):  # a set of each word's pairs: another slip
        said += (": it is the most frequent pair when each word's last pair is not counted. A word of k symbols "
                 "has k - 1 adjacent pairs, at i, i + 1 for i in range(len(word) - 1) (or zip(word, word[1:]))")
    return said


def _most_frequent(words, last, once=False):
    """The pair the stated rule merges, its pairs counted with (last=True) or without each word's last pair;
    once=True: each pair once per word."""
    counts = {}
    for word, n in words.items():
        pairs = [(word[i], word[i + 1]) for i in range(len(word) - (1 if last else 2))]
        for pair in (dict.fromkeys(pairs) if once else pairs):
            counts[pair] = counts.get(pair, 0) + n
    if not counts:
        return None
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    return min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))


def _say_corpus(got, expected, case):
    (g_pair, g_corpus, untouched), (e_pair, e_corpus, _) = got, expected
    if g_pair != e_pair:
        return _say_pair(g_pair, e_pair, case)
    if g_corpus == case.args[0] and g_corpus != e_corpus:
        return f"after merging {e_pair} your corpus is the corpus you were given: no word was merged"
    if g_corpus != e_corpus:
        missing = [w for w in e_corpus if w not in g_corpus]
        extra = [w for w in g_corpus if w not in e_corpus]
        if _replaced_in_text(case.args[0], e_pair) == g_corpus:
            return (f"your corpus is what a text replace of '{' '.join(e_pair)}' by '{''.join(e_pair)}' makes: it also "
                    "joins where the left symbol only ends with "
                    f"'{e_pair[0]}' or the right one only starts with '{e_pair[1]}' (('x', 'ab') becomes ('xab',) when "
                    "('x', 'a') is merged). Compare whole symbols: walk each word's tuple, and merge where "
                    "word[i] == left and word[i + 1] == right")
        if missing:
            text = f"after merging {e_pair} the new corpus should hold {missing[0]} (count {e_corpus[missing[0]]})"
            return text + (f"; yours holds {extra[0]} (count {g_corpus[extra[0]]})" if extra else "; yours does not")
        if extra:
            return f"your new corpus holds {extra[0]}, which merging {e_pair} does not make"
        word = next(w for w in e_corpus if e_corpus[w] != g_corpus[w])
        return f"the count of {word}: expected {e_corpus[word]}, got {g_corpus[word]}"
    if not untouched:
        return "your function changed `words`, the corpus it was given: build a new dict and leave the old one as it is"
    return ""


def _replaced_in_text(words, pair):
    """The corpus a merge by text replacement makes (symbols joined by spaces, the pair's text replaced)."""
    left, right = pair
    merged = {}
    for word, count in words.items():
        key = tuple(" ".join(word).replace(f"{left} {right}", left + right).split(" "))
        merged[key] = merged.get(key, 0) + count
    return merged


def _say_merges(got, expected, case):
    i = next((i for i, (g, e) in enumerate(zip(got, expected)) if g != e), None)
    if i is None:
        return f"{len(got)} merges, expected {len(expected)}"
    agree = "" if i == 0 else " (merge 1 agrees)" if i == 1 else f" (merges 1 to {i} agree)"
    return f"merge {i + 1}: Hugging Face tokenizers merged {expected[i]}, your step {got[i]}{agree}"


def _observed(observe, fn, case):
    """What `observe` sees of fn on the case: its value, or ("unreadable", why) for a result of another form."""
    try:
        return observe(fn, case)
    except _Malformed as exc:
        return ("unreadable", str(exc))


def _run_observed(observe, fn, case, forbidden):
    """(value, outcome): what `observe` saw of the answer on the case, run safely; value None when it raised."""
    outcome = run_student(lambda: _observed(observe, fn, case), forbidden=forbidden)
    return outcome.value if outcome.error is None else None, outcome


def _same_as(mistake, observe, case, value):
    """Whether a catalog mistake, observed the same way, gives `value` on the case."""
    try:
        return _observed(observe, mistake.impl, case) == value
    except Exception:
        return False


def _diagnose_observed(observe, fn, case, value, catalog, others, forbidden):
    """The catalog mistake whose observation equals the answer's on the case; several are told apart on
    the part's other cases."""
    matching = [m for m in catalog if _same_as(m, observe, case, value)]
    for other in others:
        if len(matching) <= 1:
            break
        mine, outcome = _run_observed(observe, fn, other, forbidden)
        if outcome.error is not None:
            break
        agreeing = [m for m in matching if _same_as(m, observe, other, mine)]
        matching = agreeing or matching
    return matching[0] if matching else None


def _unreadable(value):
    return isinstance(value, tuple) and len(value) == 2 and value[0] == "unreadable"


def _check_observed(c, label, fn, cases, observe, expect, say, catalog, forbidden):
    """One part: every case's observation of the answer must equal `expect(case)`."""
    if c.stopped:
        return False
    every, cases = list(cases), c.to_run(cases)
    for case in cases:
        recording.saw(c.exercise, label, case, subwords.bpe_merge_step)
        value, outcome = _run_observed(observe, fn, case, forbidden)
        c._absorb(outcome, case.label)
        others = [o for o in every if o is not case]
        if outcome.error is not None:
            if outcome.delegated or isinstance(outcome.error, NotImplementedError):
                c._explain_error(outcome)
                return c.part(label, False, c.stopped, cases=cases, failed=case)
            return c.part(label, False, f"[{case.label}] {c._explain_error(outcome)}", cases=cases, failed=case)
        expected = expect(case)
        if value != expected:
            problem = value[1] if _unreadable(value) else say(value, expected, case)
            found = _diagnose_observed(observe, fn, case, value, catalog, others, forbidden)
            return c.part(label, False, with_cause(f"[{case.label}] {problem}", c.likely_cause(found)),
                          cases=cases, failed=case)
    return c.part(label, True, cases=cases)


class _PlainChecker(Checker):
    """A Checker whose messages speak of plain Python: this exercise needs no NumPy."""

    def _explain_error(self, outcome):
        text = super()._explain_error(outcome)
        if outcome.delegated:
            self.stopped = text = text.replace("Write it yourself with NumPy.", "Write it yourself, in plain Python.")
        return text


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


EXERCISES = [SHIFT_RIGHT, EMBED, ENCODE, DECODE, PARAMETER_COUNT, BPE_MERGE_STEP]
ORDERINGS = [FORWARD_ORDER]


# -- for the notebook's demonstrations ----------------------------------------------------------------
def yours_or_ours(number, answer):
    """The student's answer to exercise `number` when its visible test passes, else the course's
    reference (with a note), so that a demonstration runs before the exercise is done. Grades nothing."""
    return exercises.yours_or_ours(EXERCISES, number, answer)


# The concept checks before and after the lesson (encdec.checks.concepts): Exercise 6.0, and the one
# numbered after the last exercise above.
from .concepts import concept_checks  # noqa: E402

CONCEPTS = concept_checks(6, after=[*EXERCISES, *ORDERINGS])
check_concepts_before, check_concepts_after = (check.checker for check in CONCEPTS)
