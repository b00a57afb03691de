"""Exercise 2.6, EncoderBlock.__call__: the mistakes of the pre-norm encoder block (written as methods)."""

from ...attention import create_causal_mask as create_causal_mask_
from ...layers import rms_norm as rms_norm_
from .. import mistake


# -- Exercise 2.6 EncoderBlock.__call__ ----------------------------------------------------------------
@mistake("EncoderBlock", "post_norm",
         "this is the post-norm block of 2017: x = norm(x + sublayer(x)). This course's block is "
         "pre-norm: each sublayer reads norm(x) and its result is added to the un-normalised x, "
         "x = x + sublayer(norm(x)), so the residual path stays a clean identity.")
def __call__(self, x, mask=None):
    attn_out, _ = self.self_attn(x, mask=mask)
    x = rms_norm_(x + attn_out, self.norm1_gamma)
    return rms_norm_(x + self.ffn(x), self.norm2_gamma)


@mistake("EncoderBlock", "causal_mask",
         "a causal mask is applied in the encoder. The encoder reads the whole source at once, so "
         "attention is bidirectional: every token may look at every other (only padding is hidden). "
         "The causal mask belongs to the decoder.")
def __call__(self, x, mask=None):  # noqa: F811
    n = x.shape[-2]
    causal = create_causal_mask_(n) if mask is None else create_causal_mask_(n) + mask
    attn_out, _ = self.self_attn(rms_norm_(x, self.norm1_gamma), mask=causal)
    x = x + attn_out
    return x + self.ffn(rms_norm_(x, self.norm2_gamma))


@mistake("EncoderBlock", "no_residual",
         "the residual connections are missing: the block returns the sublayers' outputs alone. "
         "Add each sublayer's output back to its input: x = x + attention(...), then x = x + ffn(...).")
def __call__(self, x, mask=None):  # noqa: F811
    x, _ = self.self_attn(rms_norm_(x, self.norm1_gamma), mask=mask)
    return self.ffn(rms_norm_(x, self.norm2_gamma))


@mistake("EncoderBlock", "residual_from_normed",
         "the residual adds the sublayer's output to the normalised x. It adds to the original x: "
         "x = x + attention(norm(x)), so the un-normalised signal flows through the block unchanged.")
def __call__(self, x, mask=None):  # noqa: F811
    h = rms_norm_(x, self.norm1_gamma)
    attn_out, _ = self.self_attn(h, mask=mask)
    x = h + attn_out
    h = rms_norm_(x, self.norm2_gamma)
    return h + self.ffn(h)


@mistake("EncoderBlock", "mask_ignored",
         "the padding mask is not passed to the self-attention, so real tokens attend to pads. "
         "Call self.self_attn(..., mask=mask).")
def __call__(self, x, mask=None):  # noqa: F811
    attn_out, _ = self.self_attn(rms_norm_(x, self.norm1_gamma))
    x = x + attn_out
    return x + self.ffn(rms_norm_(x, self.norm2_gamma))


@mistake("EncoderBlock", "one_gamma_twice",
         "both norms use norm1_gamma. Each sublayer has its own [LEARNED] gain: norm1_gamma before "
         "the attention, norm2_gamma before the feed-forward network.")
def __call__(self, x, mask=None):  # noqa: F811
    attn_out, _ = self.self_attn(rms_norm_(x, self.norm1_gamma), mask=mask)
    x = x + attn_out
    return x + self.ffn(rms_norm_(x, self.norm1_gamma))


@mistake("EncoderBlock", "ffn_reads_unnormalised",
         "the feed-forward network reads x without its norm. In a pre-norm block every sublayer "
         "reads a normalised copy: x + ffn(rms_norm(x, norm2_gamma)).")
def __call__(self, x, mask=None):  # noqa: F811
    attn_out, _ = self.self_attn(rms_norm_(x, self.norm1_gamma), mask=mask)
    x = x + attn_out
    return x + self.ffn(x)


@mistake("EncoderBlock", "norms_swapped",
         "the two norms are swapped: norm2_gamma before the attention and norm1_gamma before the "
         "feed-forward network. norm1_gamma belongs to the first sublayer (self-attention), norm2_gamma "
         "to the second.")
def __call__(self, x, mask=None):  # noqa: F811
    attn_out, _ = self.self_attn(rms_norm_(x, self.norm2_gamma), mask=mask)
    x = x + attn_out
    return x + self.ffn(rms_norm_(x, self.norm1_gamma))


@mistake("EncoderBlock", "output_normalised",
         "the block's output is normalised again (with norm2_gamma). A pre-norm block returns the raw "
         "residual stream, x + ffn(rms_norm(x, norm2_gamma)); the encoder normalises once, after its last block.")
def __call__(self, x, mask=None):  # noqa: F811
    attn_out, _ = self.self_attn(rms_norm_(x, self.norm1_gamma), mask=mask)
    x = x + attn_out
    return rms_norm_(x + self.ffn(rms_norm_(x, self.norm2_gamma)), self.norm2_gamma)
