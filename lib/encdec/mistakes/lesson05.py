"""Lesson 05: the decoder block (pre-norm), its post-norm variant, the parameters of cross-attention."""

from ..layers import rms_norm
from . import mistake


# -- Exercise 5.2 DecoderBlock.__call__ --------------------------------------------------------------------
@mistake("DecoderBlock", "cross_before_self",
         "cross-attention runs before self-attention. This block follows the standard order (2017, T5, BART): "
         "self-attention, then cross-attention, then the feed-forward network, so that each position carries "
         "its target context when it asks the source.")
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
    out, cross_weights = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output, cross_attn_mask)
    x = x + out
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
    x = x + out
    return x + self.ffn(rms_norm(x, self.norm3_gamma)), cross_weights


@mistake("DecoderBlock", "post_norm",
         "this is post-norm, x = Norm(x + Sublayer(x)), the 2017 arrangement. This block is pre-norm: "
         "each sublayer reads the normalised x and its result is added to the un-normalised x, "
         "x = x + Sublayer(Norm(x)), which keeps a clean identity path through the residuals.")
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = self.self_attn(x, mask=self_attn_mask)
    x = rms_norm(x + out, self.norm1_gamma)
    out, cross_weights = self.cross_attn(x, encoder_output, cross_attn_mask)
    x = rms_norm(x + out, self.norm2_gamma)
    return rms_norm(x + self.ffn(x), self.norm3_gamma), cross_weights


@mistake("DecoderBlock", "no_residual_self",
         "the self-attention sublayer has no residual: its output replaces x instead of being added to it. "
         "Each of the three sublayers adds to the stream: x = x + self_attn(Norm1(x)).")
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    x, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
    out, cross_weights = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output, cross_attn_mask)
    x = x + out
    return x + self.ffn(rms_norm(x, self.norm3_gamma)), cross_weights


@mistake("DecoderBlock", "no_residual_cross",
         "the cross-attention sublayer has no residual: its output replaces x, which throws away everything "
         "self-attention built. Add it: x = x + cross_attn(Norm2(x), H_enc).")
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
    x = x + out
    x, cross_weights = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output, cross_attn_mask)
    return x + self.ffn(rms_norm(x, self.norm3_gamma)), cross_weights


@mistake("DecoderBlock", "no_residual_ffn",
         "the feed-forward sublayer has no residual: the block returns ffn(Norm3(x)) instead of "
         "x + ffn(Norm3(x)).")
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
    x = x + out
    out, cross_weights = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output, cross_attn_mask)
    x = x + out
    return self.ffn(rms_norm(x, self.norm3_gamma)), cross_weights


@mistake("DecoderBlock", "shared_norm",
         "one norm (norm1_gamma) is used before all three sublayers. Each sublayer has its own RMSNorm "
         "gain [LEARNED]: norm1_gamma before self-attention, norm2_gamma before cross-attention, "
         "norm3_gamma before the feed-forward network.")
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
    x = x + out
    out, cross_weights = self.cross_attn(rms_norm(x, self.norm1_gamma), encoder_output, cross_attn_mask)
    x = x + out
    return x + self.ffn(rms_norm(x, self.norm1_gamma)), cross_weights


@mistake("DecoderBlock", "no_causal_mask",
         "self-attention runs without its mask (self_attn_mask is never passed), so every target position "
         "sees the positions after it: the model can copy the answer during training. Pass "
         "mask=self_attn_mask to self_attn.")
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma))
    x = x + out
    out, cross_weights = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output, cross_attn_mask)
    x = x + out
    return x + self.ffn(rms_norm(x, self.norm3_gamma)), cross_weights


@mistake("DecoderBlock", "encoder_output_normalized",
         "the encoder output is normalised again inside the block (with norm2_gamma) before cross-attention. "
         "H_enc was normalised once, at the end of the encoder, and is used as it is: only the decoder "
         "side, the queries' input, goes through norm2.")
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
    x = x + out
    out, cross_weights = self.cross_attn(rms_norm(x, self.norm2_gamma), rms_norm(encoder_output, self.norm2_gamma),
                                         cross_attn_mask)
    x = x + out
    return x + self.ffn(rms_norm(x, self.norm3_gamma)), cross_weights


@mistake("DecoderBlock", "cross_mask_ignored",
         "cross-attention runs without the source padding mask (cross_attn_mask is never passed), so pad "
         "tokens of the source get weight. Pass mask=cross_attn_mask to cross_attn.")
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
    x = x + out
    out, cross_weights = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output)
    x = x + out
    return x + self.ffn(rms_norm(x, self.norm3_gamma)), cross_weights


@mistake("DecoderBlock", "residual_from_normed",
         "the residual adds the sublayer's output to the normalised x (h = Norm(x); x = h + Sublayer(h)), "
         "so every sublayer rescales the stream. Keep the un-normalised x on the residual path: "
         "x = x + Sublayer(Norm(x)).")
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    h = rms_norm(x, self.norm1_gamma)
    out, _ = self.self_attn(h, mask=self_attn_mask)
    x = h + out
    h = rms_norm(x, self.norm2_gamma)
    out, cross_weights = self.cross_attn(h, encoder_output, cross_attn_mask)
    x = h + out
    h = rms_norm(x, self.norm3_gamma)
    return h + self.ffn(h), cross_weights


@mistake("DecoderBlock", "self_weights_returned",
         "the block returns the self-attention weights (..., h, m, m). It must return the cross-attention "
         "weights (..., h, m, n): they are the ones later lessons draw as alignments.")
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, self_weights = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
    x = x + out
    out, _ = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output, cross_attn_mask)
    x = x + out
    return x + self.ffn(rms_norm(x, self.norm3_gamma)), self_weights


@mistake("DecoderBlock", "norms_2_3_swapped",
         "norm2_gamma and norm3_gamma are swapped: norm3_gamma before cross-attention, norm2_gamma before the "
         "feed-forward network. Each sublayer has its own gain, in order: norm1_gamma before self-attention, "
         "norm2_gamma before cross-attention, norm3_gamma before the feed-forward network.")
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
    x = x + out
    out, cross_weights = self.cross_attn(rms_norm(x, self.norm3_gamma), encoder_output, cross_attn_mask)
    x = x + out
    return x + self.ffn(rms_norm(x, self.norm2_gamma)), cross_weights


@mistake("DecoderBlock", "encoder_output_ignored",
         "cross-attention is called without encoder_output, so its keys and values come from the decoder "
         "itself: a second self-attention, and the source is never read. Pass it: "
         "self.cross_attn(rms_norm(x, norm2_gamma), encoder_output, cross_attn_mask).")
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
    x = x + out
    out, cross_weights = self.cross_attn(rms_norm(x, self.norm2_gamma), mask=cross_attn_mask)
    x = x + out
    return x + self.ffn(rms_norm(x, self.norm3_gamma)), cross_weights


@mistake("DecoderBlock", "causal_mask_to_cross",
         "the causal mask (self_attn_mask) is passed to cross-attention: the causal mask sent to the wrong "
         "sublayer. Cross-attention scores target positions against source positions, (..., h, m, n), and "
         "every target position may read the whole source: pass mask=cross_attn_mask to cross_attn.")
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
    x = x + out
    out, cross_weights = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output, self_attn_mask)
    x = x + out
    return x + self.ffn(rms_norm(x, self.norm3_gamma)), cross_weights


# -- Exercise 5.3 decoder_block_post_norm ------------------------------------------------------------------
@mistake("decoder_block_post_norm", "pre_norm",
         "this is the pre-norm block, x = x + Sublayer(Norm(x)). Post-norm moves each norm after the "
         "residual add: x = Norm(x + Sublayer(x)), and the sublayers read the un-normalised x.")
def decoder_block_post_norm(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
    out, _ = block.self_attn(rms_norm(x, block.norm1_gamma), mask=self_attn_mask)
    x = x + out
    out, cross_weights = block.cross_attn(rms_norm(x, block.norm2_gamma), encoder_output, cross_attn_mask)
    x = x + out
    return x + block.ffn(rms_norm(x, block.norm3_gamma)), cross_weights


@mistake("decoder_block_post_norm", "norm_inside_residual",
         "the norm is applied to the sublayer's output before the add, x = x + Norm(Sublayer(x)), so the "
         "stream itself is never normalised. Post-norm normalises the sum: x = Norm(x + Sublayer(x)).")
def decoder_block_post_norm(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = block.self_attn(x, mask=self_attn_mask)
    x = x + rms_norm(out, block.norm1_gamma)
    out, cross_weights = block.cross_attn(x, encoder_output, cross_attn_mask)
    x = x + rms_norm(out, block.norm2_gamma)
    return x + rms_norm(block.ffn(x), block.norm3_gamma), cross_weights


@mistake("decoder_block_post_norm", "no_final_norm",
         "the feed-forward sublayer's sum is not normalised. In post-norm every sublayer ends with a norm, "
         "the last one too: x = Norm3(x + ffn(x)).")
def decoder_block_post_norm(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = block.self_attn(x, mask=self_attn_mask)
    x = rms_norm(x + out, block.norm1_gamma)
    out, cross_weights = block.cross_attn(x, encoder_output, cross_attn_mask)
    x = rms_norm(x + out, block.norm2_gamma)
    return x + block.ffn(x), cross_weights


@mistake("decoder_block_post_norm", "cross_before_self",
         "cross-attention runs before self-attention. Post-norm changes where the norms sit, not the order "
         "of the sublayers: self-attention, then cross-attention, then the feed-forward network.")
def decoder_block_post_norm(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, cross_weights = block.cross_attn(x, encoder_output, cross_attn_mask)
    x = rms_norm(x + out, block.norm2_gamma)
    out, _ = block.self_attn(x, mask=self_attn_mask)
    x = rms_norm(x + out, block.norm1_gamma)
    return rms_norm(x + block.ffn(x), block.norm3_gamma), cross_weights


@mistake("decoder_block_post_norm", "shared_norm",
         "one norm (norm1_gamma) follows all three sublayers. Each has its own gain: norm1_gamma after "
         "self-attention, norm2_gamma after cross-attention, norm3_gamma after the feed-forward network.")
def decoder_block_post_norm(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = block.self_attn(x, mask=self_attn_mask)
    x = rms_norm(x + out, block.norm1_gamma)
    out, cross_weights = block.cross_attn(x, encoder_output, cross_attn_mask)
    x = rms_norm(x + out, block.norm1_gamma)
    return rms_norm(x + block.ffn(x), block.norm1_gamma), cross_weights


@mistake("decoder_block_post_norm", "encoder_output_normalized",
         "the encoder output is normalised again before cross-attention. H_enc arrives normalised from the "
         "encoder and is used as it is; the block's norms act on the decoder stream only.")
def decoder_block_post_norm(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = block.self_attn(x, mask=self_attn_mask)
    x = rms_norm(x + out, block.norm1_gamma)
    out, cross_weights = block.cross_attn(x, rms_norm(encoder_output, block.norm2_gamma), cross_attn_mask)
    x = rms_norm(x + out, block.norm2_gamma)
    return rms_norm(x + block.ffn(x), block.norm3_gamma), cross_weights


@mistake("decoder_block_post_norm", "no_causal_mask",
         "self-attention runs without self_attn_mask, so target positions see the future. Moving the norms "
         "changes nothing about masking: pass mask=self_attn_mask to self_attn.")
def decoder_block_post_norm(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = block.self_attn(x)
    x = rms_norm(x + out, block.norm1_gamma)
    out, cross_weights = block.cross_attn(x, encoder_output, cross_attn_mask)
    x = rms_norm(x + out, block.norm2_gamma)
    return rms_norm(x + block.ffn(x), block.norm3_gamma), cross_weights


@mistake("decoder_block_post_norm", "norms_2_3_swapped",
         "norm2_gamma and norm3_gamma are swapped: norm3_gamma after cross-attention, norm2_gamma after the "
         "feed-forward network. The gains follow the sublayers in order: norm1, norm2, norm3.")
def decoder_block_post_norm(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = block.self_attn(x, mask=self_attn_mask)
    x = rms_norm(x + out, block.norm1_gamma)
    out, cross_weights = block.cross_attn(x, encoder_output, cross_attn_mask)
    x = rms_norm(x + out, block.norm3_gamma)
    return rms_norm(x + block.ffn(x), block.norm2_gamma), cross_weights


@mistake("decoder_block_post_norm", "no_residual_cross",
         "the cross-attention sublayer has no residual: x = Norm(cross_attn(x)) throws away what "
         "self-attention built. Post-norm normalises the sum: x = Norm(x + cross_attn(x, H_enc)).")
def decoder_block_post_norm(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = block.self_attn(x, mask=self_attn_mask)
    x = rms_norm(x + out, block.norm1_gamma)
    out, cross_weights = block.cross_attn(x, encoder_output, cross_attn_mask)
    x = rms_norm(out, block.norm2_gamma)
    return rms_norm(x + block.ffn(x), block.norm3_gamma), cross_weights


# -- Exercise 5.4 cross_attention_params -------------------------------------------------------------------
@mistake("cross_attention_params", "no_norm",
         "the count leaves out the sublayer's RMSNorm gain. Cross-attention brings its own norm, "
         "norm2_gamma, with d_model [LEARNED] numbers, on top of the four d_model x d_model matrices.")
def cross_attention_params(d_model):
    return 4 * d_model * d_model


@mistake("cross_attention_params", "missing_output_projection",
         "the count has three matrices (W_q, W_k, W_v) and forgets the output projection W_o, which maps "
         "the merged heads back to d_model: four d_model x d_model matrices in all.")
def cross_attention_params(d_model):  # noqa: F811
    return 3 * d_model * d_model + d_model


@mistake("cross_attention_params", "with_biases",
         "the count includes a bias vector for each of the four projections. The course's attention "
         "projections have no biases (x @ W only): four d_model x d_model matrices and one norm gain.")
def cross_attention_params(d_model):  # noqa: F811
    return 4 * d_model * d_model + 4 * d_model + d_model


@mistake("cross_attention_params", "kv_only",
         "only W_k and W_v are counted, as if cross-attention reused the decoder's other projections. The "
         "cross-attention sublayer has a complete set of its own: W_q, W_k, W_v and W_o, plus its norm gain.")
def cross_attention_params(d_model):  # noqa: F811
    return 2 * d_model * d_model + d_model


@mistake("cross_attention_params", "layer_norm",
         "the norm is counted with 2 d_model numbers: a gain and a bias, as LayerNorm has, or a second gain for "
         "the encoder's side. The sublayer has one RMSNorm, on the queries' side (norm2_gamma: H_enc is used as it "
         "is), and an RMSNorm has a gain only: d_model numbers.")
def cross_attention_params(d_model):  # noqa: F811
    return 4 * d_model * d_model + 2 * d_model


@mistake("cross_attention_params", "matrices_as_vectors",
         "each projection is counted as d_model numbers. W_q, W_k, W_v and W_o are d_model x d_model "
         "matrices: d_model^2 numbers each.")
def cross_attention_params(d_model):  # noqa: F811
    return 4 * d_model + d_model


@mistake("cross_attention_params", "three_norms",
         "the count includes three norm gains (3 d_model), one per sublayer of the block. Cross-attention "
         "adds only its own: norm2_gamma, d_model numbers, on top of its four d_model x d_model matrices.")
def cross_attention_params(d_model):  # noqa: F811
    return 4 * d_model * d_model + 3 * d_model


@mistake("cross_attention_params", "one_matrix",
         "the count has one d_model x d_model matrix for the whole attention. Cross-attention has four, "
         "W_q, W_k, W_v and W_o, each d_model x d_model, plus its norm gain.")
def cross_attention_params(d_model):  # noqa: F811
    return d_model * d_model + d_model
