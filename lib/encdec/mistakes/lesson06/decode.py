"""Exercise 6.4, decode: the mistakes of the decoder stack and the tied output head, each (but one)
calling the reference embedding `embed_`."""

import numpy as np

from ...attention import create_causal_mask, padding_mask, softmax
from ...layers import rms_norm, sinusoidal_positions
from .. import mistake
from .shared import embed_


# -- Exercise 6.4 decode ---------------------------------------------------------------------------------
@mistake("decode", "no_causal_mask",
         "the decoder's self-attention has no causal mask, so position t reads the target tokens after "
         "it: during training it could copy the answer. Add create_causal_mask(m) to the target padding mask.")
def decode(model, tgt_in, H_enc, src_mask):
    x = embed_(model, tgt_in)
    self_mask = padding_mask(tgt_in, model.config.pad_id)
    for block in model.decoder:
        x, _ = block(x, H_enc, self_attn_mask=self_mask, cross_attn_mask=src_mask)
    return rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T


@mistake("decode", "no_target_padding_mask",
         "the decoder's self-attention mask is causal only, so pad positions of the target are attended "
         "(it shows in the outputs at the pad positions). Use the causal mask plus the target padding "
         "mask: create_causal_mask(m) + padding_mask(tgt_in, pad_id).")
def decode(model, tgt_in, H_enc, src_mask):  # noqa: F811
    x = embed_(model, tgt_in)
    self_mask = create_causal_mask(tgt_in.shape[-1])
    for block in model.decoder:
        x, _ = block(x, H_enc, self_attn_mask=self_mask, cross_attn_mask=src_mask)
    return rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T


@mistake("decode", "no_cross_mask",
         "cross-attention gets no mask, so the decoder reads the source's pad positions. Pass the "
         "source padding mask `src_mask` as cross_attn_mask to every decoder block.")
def decode(model, tgt_in, H_enc, src_mask):  # noqa: F811
    x = embed_(model, tgt_in)
    self_mask = create_causal_mask(tgt_in.shape[-1]) + padding_mask(tgt_in, model.config.pad_id)
    for block in model.decoder:
        x, _ = block(x, H_enc, self_attn_mask=self_mask)
    return rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T


@mistake("decode", "no_final_norm",
         "the top decoder state goes to the output head without the final RMSNorm. Normalise it "
         "first: rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ E.T.")
def decode(model, tgt_in, H_enc, src_mask):  # noqa: F811
    x = embed_(model, tgt_in)
    self_mask = create_causal_mask(tgt_in.shape[-1]) + padding_mask(tgt_in, model.config.pad_id)
    for block in model.decoder:
        x, _ = block(x, H_enc, self_attn_mask=self_mask, cross_attn_mask=src_mask)
    return x @ model.embedding.T


@mistake("decode", "encoder_norm_gamma",
         "the decoder's final norm uses the encoder's gain. Each stack has its own final norm: "
         "use model.decoder_norm_gamma here.")
def decode(model, tgt_in, H_enc, src_mask):  # noqa: F811
    x = embed_(model, tgt_in)
    self_mask = create_causal_mask(tgt_in.shape[-1]) + padding_mask(tgt_in, model.config.pad_id)
    for block in model.decoder:
        x, _ = block(x, H_enc, self_attn_mask=self_mask, cross_attn_mask=src_mask)
    return rms_norm(x, model.encoder_norm_gamma, model.config.eps) @ model.embedding.T


@mistake("decode", "scaled_head",
         "the logits are multiplied by sqrt(d_model). That factor belongs to the embedding lookup "
         "only; the tied head is plain h @ E.T.")
def decode(model, tgt_in, H_enc, src_mask):  # noqa: F811
    x = embed_(model, tgt_in)
    self_mask = create_causal_mask(tgt_in.shape[-1]) + padding_mask(tgt_in, model.config.pad_id)
    for block in model.decoder:
        x, _ = block(x, H_enc, self_attn_mask=self_mask, cross_attn_mask=src_mask)
    h = rms_norm(x, model.decoder_norm_gamma, model.config.eps)
    return h @ model.embedding.T * np.sqrt(model.config.d_model)


@mistake("decode", "returns_probabilities",
         "decode returns probabilities (a softmax of the logits). It must return the logits "
         "h @ E.T: the softmax belongs to the loss (Lesson 7) and to decoding (Lesson 9).")
def decode(model, tgt_in, H_enc, src_mask):  # noqa: F811
    x = embed_(model, tgt_in)
    self_mask = create_causal_mask(tgt_in.shape[-1]) + padding_mask(tgt_in, model.config.pad_id)
    for block in model.decoder:
        x, _ = block(x, H_enc, self_attn_mask=self_mask, cross_attn_mask=src_mask)
    return softmax(rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T)


@mistake("decode", "blocks_not_chained",
         "every decoder block reads the target embeddings, so only the last block counts. Each block "
         "must read the previous block's output: x, _ = block(x, H_enc, ...).")
def decode(model, tgt_in, H_enc, src_mask):  # noqa: F811
    x = embed_(model, tgt_in)
    self_mask = create_causal_mask(tgt_in.shape[-1]) + padding_mask(tgt_in, model.config.pad_id)
    for block in model.decoder:
        out, _ = block(x, H_enc, self_attn_mask=self_mask, cross_attn_mask=src_mask)
    return rms_norm(out, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("decode", "no_self_attention_mask",
         "the decoder's self-attention gets no mask at all: positions read the targets after them and "
         "attend to the pads. Use create_causal_mask(m) + padding_mask(tgt_in, pad_id).")
def decode(model, tgt_in, H_enc, src_mask):  # noqa: F811
    x = embed_(model, tgt_in)
    for block in model.decoder:
        x, _ = block(x, H_enc, self_attn_mask=None, cross_attn_mask=src_mask)
    return rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T


@mistake("decode", "embedding_not_scaled",
         "the target embedding rows are not multiplied by sqrt(d_model): embed the target inputs the way "
         "embed does, E[tokens] * sqrt(d_model) + PE (or call embed(model, tgt_in)).")
def decode(model, tgt_in, H_enc, src_mask):  # noqa: F811
    d = model.config.d_model
    x = model.embedding[tgt_in] + sinusoidal_positions(tgt_in.shape[-1], d)
    mask = create_causal_mask(tgt_in.shape[-1]) + padding_mask(tgt_in, model.config.pad_id)
    for block in model.decoder:
        x, _ = block(x, H_enc, self_attn_mask=mask, cross_attn_mask=src_mask)
    return rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T
