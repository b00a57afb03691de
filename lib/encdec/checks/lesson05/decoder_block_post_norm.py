"""Exercise 5.3, decoder_block_post_norm: the post-norm block, with a DecoderBlock's weights."""

from ... import layers
from ...mistakes import CATALOG
from ..cases import Case
from ..core import Checker
from ..exercises import Exercise
from ..rebinding import rebind
from .block_probes import decoder_block_probes
from .blocks import block_configs, random_block


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
