"""Exercise 5.4, cross_attention_params: the parameters cross-attention adds to a decoder block, counted
on real blocks."""

from ...layers import DecoderBlock, EncoderBlock
from ...mistakes import CATALOG
from ..cases import Case
from ..core import Checker
from ..exercises import Exercise
from ..probes import Combos, Probes


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


def _count_model(k, d_model):
    """The sublayer's count with knobs: how many d x d projections, how many gains of d, biases of d for
    each projection (the course's have none)."""
    d = d_model
    return k.get("projections", 4) * d * d + k.get("gains", 1) * d + k.get("biases", 0) * k.get("projections", 4) * d


COUNT_PROBES = Probes(_count_model, Combos("count", [
    ("projections", [(4, "", ""),
                     (3, "three_projections", "three d x d projections are counted, but cross-attention has four: "
                                              "W_q, W_k, W_v and the output projection W_o"),
                     (2, "two_projections", "two d x d projections are counted (the encoder's W_k and W_v?), but "
                                            "the sublayer owns four: W_q, W_k, W_v and W_o")]),
    ("gains", [(1, "", ""),
               (0, "no_gain", "the sublayer's norm gain (norm2_gamma, d numbers) is left out"),
               (2, "two_gains", "two norm gains are counted; RMSNorm has one gain of d and no shift")]),
    ("biases", [(0, "", ""),
                (1, "projection_biases", "a bias of d is counted for each projection, which has none here "
                                         "(the course's attention projections are plain matrices)")]),
], "Count W_q, W_k, W_v, W_o (d x d each) and norm2_gamma (d): 4 d^2 + d."))


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
                   Case("d_model=768", (768,), hidden=True)], probes=COUNT_PROBES, **common)
    configs = [(16, 4, 64), (12, 3, 7), (32, 8, 128)]
    c.check_cases("the cross_attn arrays and norm2_gamma of real blocks, any n_heads and d_ff",
                  fn, lambda d: _sublayer_count(*next(k for k in configs if k[0] == d)),
                  [Case(f"d_model={d}, n_heads={h}, d_ff={f}", (d,)) for d, h, f in configs], **common)
    return c.result()
