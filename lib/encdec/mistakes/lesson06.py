"""Lesson 06: shift_right, embed, encode, decode, parameter_count, bpe_merge_step.

The encode and decode mistakes call the reference embedding (`embed_`) and the reference blocks
stored in the model, so each one shows exactly one wrong idea about the assembly.
"""

import numpy as np

from ..attention import create_causal_mask, padding_mask, softmax
from ..layers import rms_norm, sinusoidal_positions
from ..model import Seq2Seq
from . import mistake

embed_ = Seq2Seq.embed  # the reference embedding, used by the encode and decode mistakes


# -- Exercise 6.1 shift_right ---------------------------------------------------------------------------
@mistake("shift_right", "roll_wraps_around",
         "np.roll moves the last token around to position 0 instead of putting BOS there. After "
         "shifting, write bos_id into position 0 (or build [BOS] + targets[..., :-1] directly).")
def shift_right(targets, bos_id):
    return np.roll(targets, 1, axis=-1)


@mistake("shift_right", "last_token_kept",
         "BOS is prepended but the last token is not dropped, so the decoder input is one position "
         "longer than the targets. Drop the last target: [BOS] + targets[..., :-1] has length m.")
def shift_right(targets, bos_id):  # noqa: F811
    bos = np.full(targets.shape[:-1] + (1,), bos_id, dtype=targets.dtype)
    return np.concatenate([bos, targets], axis=-1)


@mistake("shift_right", "first_token_dropped",
         "the first target token is dropped instead of the last: position 1 must read y1, the "
         "token the model predicted at position 0. Keep targets[..., :-1], not targets[..., 1:].")
def shift_right(targets, bos_id):  # noqa: F811
    bos = np.full(targets.shape[:-1] + (1,), bos_id, dtype=targets.dtype)
    return np.concatenate([bos, targets[..., 1:]], axis=-1)


@mistake("shift_right", "shifted_left",
         "the sequence is shifted left (BOS put at the end). Teacher forcing shifts right: "
         "position t of the decoder input holds the target of position t - 1, and position 0 holds BOS.")
def shift_right(targets, bos_id):  # noqa: F811
    bos = np.full(targets.shape[:-1] + (1,), bos_id, dtype=targets.dtype)
    return np.concatenate([targets[..., 1:], bos], axis=-1)


@mistake("shift_right", "unbatched_only",
         "this works for one sequence but not for a batch: targets[:-1] drops the last *row* of a "
         "(B, m) batch, and [bos_id] has one dimension fewer than the batch. Work on the last axis: "
         "targets[..., :-1], and a BOS column of shape targets.shape[:-1] + (1,).")
def shift_right(targets, bos_id):  # noqa: F811
    return np.concatenate([[bos_id], targets[:-1]])


@mistake("shift_right", "float_ids",
         "the result holds floats (np.ones and np.zeros make float64 arrays), but token ids index the "
         "embedding table and must stay integers. Build the BOS column with the targets' own dtype: "
         "np.full(shape, bos_id, dtype=targets.dtype).")
def shift_right(targets, bos_id):  # noqa: F811
    bos = np.ones(targets.shape[:-1] + (1,)) * bos_id
    return np.concatenate([bos, targets[..., :-1]], axis=-1)


@mistake("shift_right", "bos_hardcoded",
         "BOS is written as the number 1 instead of the `bos_id` argument. Use bos_id: vocabularies "
         "differ in where they keep their special tokens.")
def shift_right(targets, bos_id):  # noqa: F811
    bos = np.full(targets.shape[:-1] + (1,), 1, dtype=targets.dtype)
    return np.concatenate([bos, targets[..., :-1]], axis=-1)


# -- Exercise 6.2 embed ----------------------------------------------------------------------------------
@mistake("embed", "no_scale",
         "the embedding rows are not multiplied by sqrt(d_model). E is initialised with variance "
         "1/d_model, so the entries of its rows (RMS 1/sqrt(d_model)) are about sqrt(d_model/2) times "
         "smaller than those of the position encodings (RMS 0.71), which would drown them. "
         "Use E[tokens] * sqrt(d_model) + PE.")
def embed(model, tokens):
    d = model.config.d_model
    return model.embedding[tokens] + sinusoidal_positions(tokens.shape[-1], d)


@mistake("embed", "positions_scaled_too",
         "the sum (E[tokens] + PE) is scaled, so the positions are multiplied by sqrt(d_model) too. "
         "Scale the embedding rows only, then add the positions: E[tokens] * sqrt(d_model) + PE.")
def embed(model, tokens):  # noqa: F811
    d = model.config.d_model
    return (model.embedding[tokens] + sinusoidal_positions(tokens.shape[-1], d)) * np.sqrt(d)


@mistake("embed", "divided_by_sqrt_d",
         "the embedding rows are divided by sqrt(d_model) instead of multiplied by it: the "
         "scale brings entries of variance 1/d_model up to unit variance, the same order as the positions.")
def embed(model, tokens):  # noqa: F811
    d = model.config.d_model
    return model.embedding[tokens] / np.sqrt(d) + sinusoidal_positions(tokens.shape[-1], d)


@mistake("embed", "scaled_by_d",
         "the embedding rows are multiplied by d_model instead of sqrt(d_model). Each entry has "
         "standard deviation 1/sqrt(d_model); multiplying by sqrt(d_model) makes it 1.")
def embed(model, tokens):  # noqa: F811
    d = model.config.d_model
    return model.embedding[tokens] * d + sinusoidal_positions(tokens.shape[-1], d)


@mistake("embed", "no_positions",
         "the position encodings are never added, so the model cannot tell a token's place in the "
         "sequence (attention by itself ignores order). Add sinusoidal_positions(T, d_model).")
def embed(model, tokens):  # noqa: F811
    return model.embedding[tokens] * np.sqrt(model.config.d_model)


@mistake("embed", "positions_by_token_id",
         "the position encodings are indexed by the token ids (PE[tokens]). PE is indexed by the "
         "position in the sequence, 0, 1, ..., T-1, whatever the token there: add "
         "sinusoidal_positions(T, d_model) for T = tokens.shape[-1].")
def embed(model, tokens):  # noqa: F811
    d = model.config.d_model
    return model.embedding[tokens] * np.sqrt(d) + sinusoidal_positions(model.config.vocab_size, d)[tokens]


# -- Exercise 6.3 encode ---------------------------------------------------------------------------------
@mistake("encode", "no_final_norm",
         "the encoder's output is not normalised. With pre-norm blocks the residual stream is never "
         "normalised inside the stack, so the encoder ends with one RMSNorm: "
         "rms_norm(x, model.encoder_norm_gamma, model.config.eps) is H_enc.")
def encode(model, src):
    src_mask = padding_mask(src, model.config.pad_id)
    x = embed_(model, src)
    for block in model.encoder:
        x = block(x, mask=src_mask)
    return x, src_mask


@mistake("encode", "no_padding_mask",
         "the encoder blocks get no mask, so real source tokens attend to the pad tokens. Pass the "
         "source padding mask, padding_mask(src, model.config.pad_id), to every encoder block.")
def encode(model, src):  # noqa: F811
    src_mask = padding_mask(src, model.config.pad_id)
    x = embed_(model, src)
    for block in model.encoder:
        x = block(x)
    return rms_norm(x, model.encoder_norm_gamma, model.config.eps), src_mask


@mistake("encode", "causal_encoder",
         "the encoder uses a causal mask. The encoder reads the whole source at once: every source "
         "token may look at every other (only the pads are hidden). Causal masks belong to the decoder.")
def encode(model, src):  # noqa: F811
    src_mask = padding_mask(src, model.config.pad_id)
    x = embed_(model, src)
    for block in model.encoder:
        x = block(x, mask=src_mask + create_causal_mask(src.shape[-1]))
    return rms_norm(x, model.encoder_norm_gamma, model.config.eps), src_mask


@mistake("encode", "blocks_not_chained",
         "every encoder block reads the embeddings, so only the last block counts. The blocks form "
         "a stack: each one reads the previous block's output (x = block(x, mask=src_mask)).")
def encode(model, src):  # noqa: F811
    src_mask = padding_mask(src, model.config.pad_id)
    x = embed_(model, src)
    for block in model.encoder:
        out = block(x, mask=src_mask)
    return rms_norm(out, model.encoder_norm_gamma, model.config.eps), src_mask


@mistake("encode", "extra_residual",
         "the block's output is added to its input (x = x + block(x)). The blocks already contain "
         "their residual connections, so this counts x twice. Use x = block(x, mask=src_mask).")
def encode(model, src):  # noqa: F811
    src_mask = padding_mask(src, model.config.pad_id)
    x = embed_(model, src)
    for block in model.encoder:
        x = x + block(x, mask=src_mask)
    return rms_norm(x, model.encoder_norm_gamma, model.config.eps), src_mask


@mistake("encode", "decoder_norm_gamma",
         "the encoder's final norm uses the decoder's gain. Each stack has its own final norm: "
         "use model.encoder_norm_gamma here.")
def encode(model, src):  # noqa: F811
    src_mask = padding_mask(src, model.config.pad_id)
    x = embed_(model, src)
    for block in model.encoder:
        x = block(x, mask=src_mask)
    return rms_norm(x, model.decoder_norm_gamma, model.config.eps), src_mask


@mistake("encode", "pad_id_zero",
         "the padding mask assumes the pad id is 0. Use model.config.pad_id: the model says which "
         "id is padding.")
def encode(model, src):  # noqa: F811
    src_mask = padding_mask(src, 0)
    x = embed_(model, src)
    for block in model.encoder:
        x = block(x, mask=src_mask)
    return rms_norm(x, model.encoder_norm_gamma, model.config.eps), src_mask


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


# -- Exercise 6.5 parameter_count ------------------------------------------------------------------------
def _ffn(d, d_ff):
    return 2 * d * d_ff + d_ff + d


@mistake("parameter_count", "embedding_counted_twice",
         "V·d is counted more than once. The source embedding, the target embedding and the output "
         "head are one shared matrix E (V, d): it appears once in the count.")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    V, d = vocab_size, d_model
    enc = 4 * d * d + _ffn(d, d_ff) + 2 * d
    dec = 8 * d * d + _ffn(d, d_ff) + 3 * d
    return 2 * V * d + n_encoder_layers * enc + n_dec * dec + 2 * d


@mistake("parameter_count", "no_cross_attention",
         "the decoder block is counted like an encoder block. It has a third sublayer, cross-attention, "
         "with its own W_q, W_k, W_v, W_o (4d²) and its own norm gain (d).")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    V, d = vocab_size, d_model
    block = 4 * d * d + _ffn(d, d_ff) + 2 * d
    return V * d + (n_encoder_layers + n_dec) * block + 2 * d


@mistake("parameter_count", "no_ffn_biases",
         "the feed-forward biases are missing. FeedForward has W1 (d, d_ff), b1 (d_ff), W2 (d_ff, d) "
         "and b2 (d): 2·d·d_ff + d_ff + d numbers.")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    V, d = vocab_size, d_model
    enc = 4 * d * d + 2 * d * d_ff + 2 * d
    dec = 8 * d * d + 2 * d * d_ff + 3 * d
    return V * d + n_encoder_layers * enc + n_dec * dec + 2 * d


@mistake("parameter_count", "no_norm_gains",
         "the RMSNorm gains are missing. Every norm has a [LEARNED] gain gamma of d numbers: two per "
         "encoder block, three per decoder block, and one final norm for each stack.")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    V, d = vocab_size, d_model
    return V * d + n_encoder_layers * (4 * d * d + _ffn(d, d_ff)) + n_dec * (8 * d * d + _ffn(d, d_ff))


@mistake("parameter_count", "no_final_norms",
         "the two final norms are missing: the encoder ends with one RMSNorm (its output is H_enc) and "
         "the decoder ends with another before the head, each with d gains: + 2d.")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    V, d = vocab_size, d_model
    enc = 4 * d * d + _ffn(d, d_ff) + 2 * d
    dec = 8 * d * d + _ffn(d, d_ff) + 3 * d
    return V * d + n_encoder_layers * enc + n_dec * dec


@mistake("parameter_count", "attention_biases",
         "attention biases are counted. The course's projections W_q, W_k, W_v, W_o have no biases: "
         "an attention sublayer holds exactly 4d² numbers.")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    V, d = vocab_size, d_model
    enc = 4 * d * d + 4 * d + _ffn(d, d_ff) + 2 * d
    dec = 8 * d * d + 8 * d + _ffn(d, d_ff) + 3 * d
    return V * d + n_encoder_layers * enc + n_dec * dec + 2 * d


@mistake("parameter_count", "zero_decoder_layers_as_none",
         "n_decoder_layers=0 is read as None (as `n_decoder_layers or n_encoder_layers`, or `if not "
         "n_decoder_layers:`, reads it): 0 means a model with no decoder block, and only None means as many "
         "decoder blocks as encoder blocks. Test `if n_decoder_layers is None:`.")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    n_decoder_layers = n_decoder_layers or n_encoder_layers
    V, d = vocab_size, d_model
    enc = 4 * d * d + _ffn(d, d_ff) + 2 * d
    dec = 8 * d * d + _ffn(d, d_ff) + 3 * d
    return V * d + n_encoder_layers * enc + n_decoder_layers * dec + 2 * d


@mistake("parameter_count", "ignores_n_decoder_layers",
         "n_decoder_layers is ignored: the decoder is always given n_encoder_layers blocks. Use "
         "n_decoder_layers when it is given, and n_encoder_layers only when it is None.")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    V, d = vocab_size, d_model
    enc = 4 * d * d + _ffn(d, d_ff) + 2 * d
    dec = 8 * d * d + _ffn(d, d_ff) + 3 * d
    return V * d + n_encoder_layers * (enc + dec) + 2 * d


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("shift_right", "shifted_by_two",
         "the targets move two places, not one: position t must hold y_(t-1), the token just before the one "
         "it predicts. Prepend one BOS and drop one token: [bos_id] + targets[..., :-1].")
def shift_right(targets, bos_id):  # noqa: F811
    out = np.full_like(targets, bos_id)
    out[..., 2:] = targets[..., :-2]
    return out


@mistake("shift_right", "shifted_along_the_batch",
         "the shift runs along the first axis (the batch), not the last (the positions): each sequence is "
         "replaced by the one before it. Shift along axis -1: targets[..., :-1].")
def shift_right(targets, bos_id):  # noqa: F811
    targets = np.asarray(targets)
    out = np.empty_like(targets)
    out[0] = bos_id
    out[1:] = targets[:-1]
    return out


@mistake("embed", "sin_cos_swapped",
         "the even columns of the position encodings hold cosines and the odd ones sines: the other way "
         "round. PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(...).")
def embed(model, tokens):
    d = model.config.d_model
    pos = np.arange(tokens.shape[-1])[:, None]
    angles = pos / 10000.0 ** (np.arange(0, d, 2) / d)
    pe = np.zeros((tokens.shape[-1], d))
    pe[:, 0::2] = np.cos(angles)
    pe[:, 1::2] = np.sin(angles[:, : d // 2])
    return model.embedding[tokens] * np.sqrt(d) + pe


@mistake("embed", "positions_from_one",
         "the positions count from 1: the first token gets PE[1]. Positions count from 0: add "
         "PE[0 .. T-1], sinusoidal_positions(T, d_model).")
def embed(model, tokens):  # noqa: F811
    d, T = model.config.d_model, tokens.shape[-1]
    return model.embedding[tokens] * np.sqrt(d) + sinusoidal_positions(T + 1, d)[1:]


@mistake("encode", "causal_mask_only",
         "the encoder blocks get a causal mask and no padding mask: the source is read one way only, and "
         "its pads are attended. The encoder's mask is the padding mask alone.")
def encode(model, src):  # noqa: F811
    src_mask = padding_mask(src, model.config.pad_id)
    x = embed_(model, src)
    for block in model.encoder:
        x = block(x, mask=create_causal_mask(src.shape[-1]))
    return rms_norm(x, model.encoder_norm_gamma, model.config.eps), src_mask


@mistake("encode", "norm_before_the_blocks",
         "the final RMSNorm is applied to the embeddings, before the blocks, not to the last block's output. "
         "H_enc = rms_norm(x, encoder_norm_gamma) after the last encoder block.")
def encode(model, src):  # noqa: F811
    src_mask = padding_mask(src, model.config.pad_id)
    x = rms_norm(embed_(model, src), model.encoder_norm_gamma, model.config.eps)
    for block in model.encoder:
        x = block(x, mask=src_mask)
    return x, src_mask


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


@mistake("parameter_count", "no_cross_attention_norm",
         "each decoder block is counted with two RMSNorm gains, not three: the cross-attention sublayer "
         "has its own norm (norm2_gamma), d more numbers per decoder block.")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    V, d = vocab_size, d_model
    ffn = 2 * d * d_ff + d_ff + d
    return V * d + n_encoder_layers * (4 * d * d + ffn + 2 * d) + n_dec * (8 * d * d + ffn + 2 * d) + 2 * d


@mistake("parameter_count", "one_ffn_bias",
         "only the first feed-forward bias (d_ff numbers) is counted: the second linear layer has a bias "
         "too, d numbers, in every block.")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    V, d = vocab_size, d_model
    ffn = 2 * d * d_ff + d_ff
    return V * d + n_encoder_layers * (4 * d * d + ffn + 2 * d) + n_dec * (8 * d * d + ffn + 3 * d) + 2 * d


# -- Exercise 6.7 bpe_merge_step --------------------------------------------------------------------------
# Each entry is the whole step, written as a student would, with one wrong idea in it.
@mistake("bpe_merge_step", "counts_per_word_type",
         "each pair is counted once per distinct word, not weighted by how often the word occurs: a pair in a "
         "word that occurs 20 times counts 20. Add the word's count n for every occurrence of the pair.")
def bpe_merge_step(words):
    counts = {}
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + 1
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    best = min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))
    new_words = {}
    for word, n in words.items():
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
    return best, new_words


@mistake("bpe_merge_step", "repeated_pair_counted_once",
         "a pair is counted once per word however often it stands there: ('a', 'a', 'a') holds ('a', 'a') twice "
         "(overlapping), and each occurrence adds the word's count. Count every position of zip(word, word[1:]), "
         "not a set of the pairs.")
def bpe_merge_step(words):  # noqa: F811
    counts = {}
    for word, n in words.items():
        for pair in set(zip(word, word[1:])):
            counts[pair] = counts.get(pair, 0) + n
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    best = min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))
    new_words = {}
    for word, n in words.items():
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
    return best, new_words


@mistake("bpe_merge_step", "ties_reversed",
         "ties go the wrong way: among pairs of equal count the statement takes the one whose left symbol comes "
         "first, then whose right symbol comes first, the smallest (-count, rank(left), rank(right)); the "
         "largest (count, rank(left), rank(right)) takes the last one.")
def bpe_merge_step(words):  # noqa: F811
    counts = {}
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + n
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    best = max(counts, key=lambda p: (counts[p], rank(p[0]), rank(p[1])))
    new_words = {}
    for word, n in words.items():
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
    return best, new_words


@mistake("bpe_merge_step", "ties_first_seen",
         "ties go to the pair counted first (max and min return the first of equal keys), so the order of the "
         "words in the dict decides. The statement's order decides: among equal counts, the smallest "
         "(rank(left), rank(right)), with rank(s) = (len(s) > 1, s).")
def bpe_merge_step(words):  # noqa: F811
    counts = {}
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + n
    best = max(counts, key=counts.get)
    new_words = {}
    for word, n in words.items():
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
    return best, new_words


@mistake("bpe_merge_step", "ties_in_string_order",
         "ties are broken in plain string order, in which the merged symbol 'lo' comes before the character '▁'. "
         "The vocabulary numbers every single character before any merged symbol: compare rank(s) = "
         "(len(s) > 1, s), not the symbols themselves.")
def bpe_merge_step(words):  # noqa: F811
    counts = {}
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + n
    best = min(counts, key=lambda p: (-counts[p], p))
    new_words = {}
    for word, n in words.items():
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
    return best, new_words


@mistake("bpe_merge_step", "first_occurrence_only",
         "only the first occurrence of the pair in each word is merged: ('h', 'a', 'h', 'a') must become "
         "('ha', 'ha'), and ('a', 'a', 'a', 'a') ('aa', 'aa'). Keep scanning the word after a merge.")
def bpe_merge_step(words):  # noqa: F811
    counts = {}
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + n
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    best = min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))
    new_words = {}
    for word, n in words.items():
        out, i, merged = [], 0, False
        while i < len(word):
            if not merged and i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i, merged = i + 2, True
            else:
                out.append(word[i])
                i += 1
        new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
    return best, new_words


@mistake("bpe_merge_step", "scan_moves_one_after_a_merge",
         "after a merge the scan moves on by one symbol, not two, so the right symbol of the pair is kept a "
         "second time: ('a', 'a', 'a') becomes ('aa', 'aa', 'a') instead of ('aa', 'a'), and ('e', 's', 't') "
         "becomes ('es', 's', 't'). A merged pair uses up both its symbols: skip both.")
def bpe_merge_step(words):  # noqa: F811
    counts = {}
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + n
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    best = min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))
    new_words = {}
    for word, n in words.items():
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i += 1
            else:
                out.append(word[i])
                i += 1
        new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
    return best, new_words


@mistake("bpe_merge_step", "returns_the_old_corpus",
         "the corpus returned is the one given, with no word merged: the merged words are built but not "
         "returned. Return the new dict: (best, new_words).")
def bpe_merge_step(words):  # noqa: F811
    counts = {}
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + n
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    best = min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))
    new_words = {}
    for word, n in words.items():
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
    return best, words


@mistake("bpe_merge_step", "merged_symbol_is_the_pair",
         "the merged symbol is the pair itself, a tuple such as ('e', 's'), not one string: a new symbol is its "
         "two symbols joined, left + right ('es'), so that it can be merged again and looked up in the vocabulary.")
def bpe_merge_step(words):  # noqa: F811
    counts = {}
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + n
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    best = min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))
    new_words = {}
    for word, n in words.items():
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(best)
                i += 2
            else:
                out.append(word[i])
                i += 1
        new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
    return best, new_words


@mistake("bpe_merge_step", "changes_the_corpus_given",
         "the corpus given is changed in place (each word popped and put back merged): the caller's corpus is "
         "lost, so a run that keeps the corpus of each step (to show a trace, to compare) sees only the last one. "
         "Build a new dict and leave `words` as it is.")
def bpe_merge_step(words):  # noqa: F811
    counts = {}
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] = counts.get(pair, 0) + n
    rank = lambda s: (len(s) > 1, s)  # noqa: E731
    best = min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))
    for word in list(words):
        n = words.pop(word)
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        words[tuple(out)] = words.get(tuple(out), 0) + n
    return best, words
