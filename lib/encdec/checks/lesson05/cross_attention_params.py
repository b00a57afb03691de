"""Exercise 5.4, cross_attention_params: the parameters cross-attention adds to a decoder block, counted
on real blocks."""

from ...layers import DecoderBlock, EncoderBlock
from ...mistakes import CATALOG
from ..cases import Case
from ..core import Checker
from ..exercises import Exercise


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
