"""Slips in Lesson 5: the pre-norm decoder block, the post-norm block, the cross-attention parameter count."""

from encdec import rms_norm  # noqa: F401  (the setup cell's)

from . import slip


# -- 5.2 DecoderBlock.__call__ -----------------------------------------------------------------------------------
@slip("DecoderBlock", "norm2_norm3_swapped", "normalises with norm3_gamma before cross-attention and norm2_gamma "
      "before the FFN", expect=("norm2_gamma", "norm3_gamma"))
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
    x = x + out
    out, cross_weights = self.cross_attn(rms_norm(x, self.norm3_gamma), encoder_output, mask=cross_attn_mask)
    x = x + out
    return x + self.ffn(rms_norm(x, self.norm2_gamma)), cross_weights


@slip("DecoderBlock", "cross_first", "runs cross-attention before self-attention",
      expect=("order", "before", "first"))
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, cross_weights = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output, mask=cross_attn_mask)
    x = x + out
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
    x = x + out
    return x + self.ffn(rms_norm(x, self.norm3_gamma)), cross_weights


@slip("DecoderBlock", "causal_mask_to_cross", "passes the self-attention (causal) mask to cross-attention too",
      expect=("causal", "cross-attention", "cross attention", "wrong sublayer"), preserves_shape=False)
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
    x = x + out
    out, cross_weights = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output, mask=self_attn_mask)
    x = x + out
    return x + self.ffn(rms_norm(x, self.norm3_gamma)), cross_weights


@slip("DecoderBlock", "encoder_output_normalised", "normalises the encoder output with norm2_gamma before "
      "cross-attention reads it", expect=("encoder", "H_enc"))
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
    x = x + out
    out, cross_weights = self.cross_attn(rms_norm(x, self.norm2_gamma), rms_norm(encoder_output, self.norm2_gamma),
                                         mask=cross_attn_mask)
    x = x + out
    return x + self.ffn(rms_norm(x, self.norm3_gamma)), cross_weights


@slip("DecoderBlock", "no_cross_residual", "replaces x by the cross-attention output instead of adding it",
      expect=("residual",))
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
    x = x + out
    x, cross_weights = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output, mask=cross_attn_mask)
    return x + self.ffn(rms_norm(x, self.norm3_gamma)), cross_weights


@slip("DecoderBlock", "ffn_residual_from_normalised", "adds the FFN output to the normalised x",
      expect=("residual", "normalised", "normalized"))
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
    x = x + out
    out, cross_weights = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output, mask=cross_attn_mask)
    x = x + out
    h = rms_norm(x, self.norm3_gamma)
    return h + self.ffn(h), cross_weights


@slip("DecoderBlock", "cross_mask_dropped", "does not pass the source padding mask to cross-attention",
      expect=("mask", "pad"))
def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
    x = x + out
    out, cross_weights = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output)
    x = x + out
    return x + self.ffn(rms_norm(x, self.norm3_gamma)), cross_weights


# -- 5.3 decoder_block_post_norm ------------------------------------------------------------------------------------
@slip("decoder_block_post_norm", "pre_norm_written", "writes the pre-norm block again",
      expect=("post-norm", "pre-norm", "post norm", "pre norm", "after"))
def decoder_block_post_norm(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
    out, _ = block.self_attn(rms_norm(x, block.norm1_gamma), mask=self_attn_mask)
    x = x + out
    out, cross_weights = block.cross_attn(rms_norm(x, block.norm2_gamma), encoder_output, mask=cross_attn_mask)
    x = x + out
    return x + block.ffn(rms_norm(x, block.norm3_gamma)), cross_weights


@slip("decoder_block_post_norm", "norm1_norm3_swapped", "uses norm3_gamma after self-attention and norm1_gamma "
      "after the FFN", expect=("norm1_gamma", "norm3_gamma"))
def decoder_block_post_norm(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = block.self_attn(x, mask=self_attn_mask)
    x = rms_norm(x + out, block.norm3_gamma)
    out, cross_weights = block.cross_attn(x, encoder_output, mask=cross_attn_mask)
    x = rms_norm(x + out, block.norm2_gamma)
    return rms_norm(x + block.ffn(x), block.norm1_gamma), cross_weights


@slip("decoder_block_post_norm", "norm_on_branch", "normalises the sublayer's output, then adds it: x + Norm(F(x))",
      expect=("residual", "sum", "x + "))
def decoder_block_post_norm(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = block.self_attn(x, mask=self_attn_mask)
    x = x + rms_norm(out, block.norm1_gamma)
    out, cross_weights = block.cross_attn(x, encoder_output, mask=cross_attn_mask)
    x = x + rms_norm(out, block.norm2_gamma)
    return x + rms_norm(block.ffn(x), block.norm3_gamma), cross_weights


@slip("decoder_block_post_norm", "last_norm_forgotten", "forgets the norm after the FFN's residual add",
      expect=("norm3_gamma", "norm"))
def decoder_block_post_norm(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):  # noqa: F811
    out, _ = block.self_attn(x, mask=self_attn_mask)
    x = rms_norm(x + out, block.norm1_gamma)
    out, cross_weights = block.cross_attn(x, encoder_output, mask=cross_attn_mask)
    x = rms_norm(x + out, block.norm2_gamma)
    return x + block.ffn(x), cross_weights


# -- 5.4 cross_attention_params ---------------------------------------------------------------------------------------
@slip("cross_attention_params", "no_norm_gain", "counts the four projections and forgets the norm gain norm2_gamma",
      expect=("norm2_gamma", "gain", "norm"))
def cross_attention_params(d_model):
    return 4 * d_model * d_model


@slip("cross_attention_params", "biases_counted", "adds a bias of d_model to each of the four projections",
      expect=("bias",))
def cross_attention_params(d_model):  # noqa: F811
    return 4 * d_model * d_model + 4 * d_model + d_model


@slip("cross_attention_params", "no_W_o", "counts W_q, W_k and W_v but not W_o",
      expect=("W_o",))
def cross_attention_params(d_model):  # noqa: F811
    return 3 * d_model * d_model + d_model
