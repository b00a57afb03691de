"""Checkers for lesson 06, Assembling the encoder-decoder model.

Each exercise is declared (number, title, points) right above its checker; EXERCISES and ORDERINGS,
at the end, list them.

The model exercises are functions that take the model as their first argument, like methods:
`embed(model, tokens)`, `encode(model, src)`, `decode(model, tgt_in, H_enc, src_mask)`. The model
they receive is the reference `encdec.Seq2Seq` with randomised weights (no all-ones gains, no zero
biases), so its blocks are the reference blocks and a mistake from Lessons 1-5 is never charged here.
"""

import numpy as np

from .. import model as model_mod
from .. import training
from ..attention import MultiHeadAttention
from ..layers import DecoderBlock, EncoderBlock, FeedForward
from ..mistakes import CATALOG
from ..mistakes import lesson06 as _register  # noqa: F401  (fills the catalog)
from ..model import Seq2Seq
from .core import Case, Checker, rebind
from .exercises import Exercise
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


SHIFT_RIGHT = Exercise("6.1", "shift_right", points=2, reference=model_mod.shift_right)


@SHIFT_RIGHT.checked_by
def check_shift_right(shift_right=None, *, points=None, hidden=False):
    """[BOS] + targets[..., :-1] along the last axis."""
    c = Checker(SHIFT_RIGHT, points, hidden)
    fn = c.find(shift_right, "shift_right")
    cases = shift_right_cases()["values"]
    common = dict(catalog=CATALOG["shift_right"], forbidden=[model_mod.shift_right])
    ref = model_mod.shift_right
    c.check_cases("BOS first, last token dropped, any batch shape", fn, ref, cases, weight=3, **common)
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


EMBED = Exercise("6.2", "embed", points=2, reference=Seq2Seq.embed)


@EMBED.checked_by
def check_embed(embed=None, *, points=None, hidden=False):
    """E[tokens] * sqrt(d_model) + PE[0 .. T-1]."""
    c = Checker(EMBED, points, hidden)
    fn = c.find(embed, "embed")
    common = dict(catalog=CATALOG["embed"], forbidden=[Seq2Seq.embed])
    c.check_cases("scaled embedding rows plus positions", fn, Seq2Seq.embed, embed_cases()["values"], **common)
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
    pad3 = random_model(631, vocab_size=11, d_model=12, n_heads=3, d_ff=10, n_layers=1, pad_id=3)
    deep = random_model(632, vocab_size=15, d_model=8, n_heads=4, d_ff=16, n_layers=3, n_decoder_layers=2)
    tiny = random_model(633, vocab_size=13, n_layers=2, embedding_scale=1e-4)
    large = random_model(634, vocab_size=13, n_layers=2, embedding_scale=30.0)
    setups = []
    src, tgt_in = model_inputs(base, 1, [6, 4], 6, [5, 3], 5)
    setups.append(("a batch of 2, n=6 source and m=5 target positions, both padded, 2+2 layers", base, src, tgt_in, False))
    src, tgt_in = model_inputs(base, 2, [4], 4, [3], 3)
    setups.append(("one unbatched pair, n=4, m=3", base, src[0], tgt_in[0], False))
    src, tgt_in = model_inputs(pad3, 3, [5, 2, 4], 5, [4, 4, 2], 6)
    setups.append(("pad_id=3, d_model=12, 3 heads, 1+1 layers, n=5, m=6", pad3, src, tgt_in, False))
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


ENCODE = Exercise("6.3", "encode", points=3, reference=Seq2Seq.encode)


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
    c.check_cases("H_enc and the source padding mask", fn, Seq2Seq.encode, cases, **common)
    return c.result()


DECODE = Exercise("6.4", "decode", points=4, reference=Seq2Seq.decode)


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
    common = dict(catalog=CATALOG["decode"], forbidden=_FORWARD)
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
                    Case("n_decoder_layers=0 (no decoder blocks; 0 is not None)", (11, 6, 10, 2, 0), hidden=True)],
        "model": [Case("V=13, d=8, d_ff=12, 2 encoder and 3 decoder layers", (13, 8, 12, 2, 3)),
                  Case("V=50, d=6, d_ff=20, N=1", (50, 6, 20, 1), hidden=True)],
    }


_COUNTERS = [model_mod.parameter_count, Seq2Seq.num_parameters, Seq2Seq.parameters, EncoderBlock.parameters,
             DecoderBlock.parameters, MultiHeadAttention.parameters, FeedForward.parameters]


PARAMETER_COUNT = Exercise("6.5", "parameter_count", points=3, reference=model_mod.parameter_count)


@PARAMETER_COUNT.checked_by
def check_parameter_count(parameter_count=None, *, points=None, hidden=False):
    """The number of [LEARNED] numbers as a formula in V, d, d_ff and the layer counts."""
    c = Checker(PARAMETER_COUNT, points, hidden)
    fn = c.find(parameter_count, "parameter_count")
    cases = parameter_count_cases()
    common = dict(catalog=CATALOG["parameter_count"], forbidden=_COUNTERS)
    c.check_cases("the formula", fn, model_mod.parameter_count, cases["formula"], weight=2, **common)
    c.check_cases("agrees with the arrays of a real Seq2Seq", fn, _counted_by_the_model, cases["model"], **common)
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
        Step("run the N decoder blocks on the embedded target inputs; each cross-attends to H_enc",
             "Every decoder block reads H_enc in its cross-attention, so the whole encoder, final norm "
             "included, must be finished first."),
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


EXERCISES = [SHIFT_RIGHT, EMBED, ENCODE, DECODE, PARAMETER_COUNT]
ORDERINGS = [FORWARD_ORDER]
