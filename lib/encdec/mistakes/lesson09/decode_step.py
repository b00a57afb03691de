"""Exercise 9.4, decode_step: the mistakes of one cached decoder step (and `_ffn_residual`, the
feed-forward sublayer they all keep right)."""

import numpy as np

from ...layers import rms_norm
from .. import mistake


# -- Exercise 9.4 decode_step ------------------------------------------------------------------------------
def _ffn_residual(model, block, x):
    return x + block.ffn(rms_norm(x, block.norm3_gamma, block.eps))


@mistake("decode_step", "position_always_zero",
         "every new token is embedded at position 0. The token fed at step t sits at position t = "
         "cache.length (the number of tokens already cached): model.embed(tokens[..., None], "
         "offset=cache.length).")
def decode_step(model, tokens, cache):
    x = model.embed(np.asarray(tokens)[..., None])
    for i, block in enumerate(model.decoder):
        normed = rms_norm(x, block.norm1_gamma, block.eps)
        K, V = cache.append(i, *block.self_attn.project_kv(normed))
        x = x + block.self_attn.attend(normed, K, V)[0]
        x = x + block.cross_attn.attend(rms_norm(x, block.norm2_gamma, block.eps), cache.cross_k[i], cache.cross_v[i],
                                        cache.src_mask)[0]
        x = _ffn_residual(model, block, x)
    cache.length += 1
    return (rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T)[..., 0, :]


@mistake("decode_step", "position_one_ahead",
         "the new token is embedded one position too far: offset=cache.length + 1. Positions count "
         "from 0, so BOS (the first token fed) sits at position 0 = cache.length at that moment.")
def decode_step(model, tokens, cache):  # noqa: F811
    x = model.embed(np.asarray(tokens)[..., None], offset=cache.length + 1)
    for i, block in enumerate(model.decoder):
        normed = rms_norm(x, block.norm1_gamma, block.eps)
        K, V = cache.append(i, *block.self_attn.project_kv(normed))
        x = x + block.self_attn.attend(normed, K, V)[0]
        x = x + block.cross_attn.attend(rms_norm(x, block.norm2_gamma, block.eps), cache.cross_k[i], cache.cross_v[i],
                                        cache.src_mask)[0]
        x = _ffn_residual(model, block, x)
    cache.length += 1
    return (rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T)[..., 0, :]


@mistake("decode_step", "attends_to_itself_only",
         "the new token's query attends only to its own key and value, not to the cached ones, so "
         "the decoder forgets what it wrote before. Attend over the K, V that cache.append returns: "
         "all t + 1 rows.")
def decode_step(model, tokens, cache):  # noqa: F811
    x = model.embed(np.asarray(tokens)[..., None], offset=cache.length)
    for i, block in enumerate(model.decoder):
        normed = rms_norm(x, block.norm1_gamma, block.eps)
        K_new, V_new = block.self_attn.project_kv(normed)
        cache.append(i, K_new, V_new)
        x = x + block.self_attn.attend(normed, K_new, V_new)[0]
        x = x + block.cross_attn.attend(rms_norm(x, block.norm2_gamma, block.eps), cache.cross_k[i], cache.cross_v[i],
                                        cache.src_mask)[0]
        x = _ffn_residual(model, block, x)
    cache.length += 1
    return (rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T)[..., 0, :]


@mistake("decode_step", "length_not_advanced",
         "cache.length is never increased, so every later token is embedded at position 0 again. "
         "After the blocks, add 1 to cache.length: one more token is cached.")
def decode_step(model, tokens, cache):  # noqa: F811
    x = model.embed(np.asarray(tokens)[..., None], offset=cache.length)
    for i, block in enumerate(model.decoder):
        normed = rms_norm(x, block.norm1_gamma, block.eps)
        K, V = cache.append(i, *block.self_attn.project_kv(normed))
        x = x + block.self_attn.attend(normed, K, V)[0]
        x = x + block.cross_attn.attend(rms_norm(x, block.norm2_gamma, block.eps), cache.cross_k[i], cache.cross_v[i],
                                        cache.src_mask)[0]
        x = _ffn_residual(model, block, x)
    return (rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T)[..., 0, :]


@mistake("decode_step", "source_padding_visible",
         "cross-attention runs without the source padding mask, so the new token reads the pad "
         "positions of the source. Pass cache.src_mask to the cross-attention.")
def decode_step(model, tokens, cache):  # noqa: F811
    x = model.embed(np.asarray(tokens)[..., None], offset=cache.length)
    for i, block in enumerate(model.decoder):
        normed = rms_norm(x, block.norm1_gamma, block.eps)
        K, V = cache.append(i, *block.self_attn.project_kv(normed))
        x = x + block.self_attn.attend(normed, K, V)[0]
        x = x + block.cross_attn.attend(rms_norm(x, block.norm2_gamma, block.eps), cache.cross_k[i], cache.cross_v[i])[0]
        x = _ffn_residual(model, block, x)
    cache.length += 1
    return (rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T)[..., 0, :]


@mistake("decode_step", "cross_query_not_normalised",
         "the cross-attention query is the raw residual stream x. The block is pre-norm: the query "
         "is rms_norm(x, block.norm2_gamma, block.eps), exactly as in the full decoder.")
def decode_step(model, tokens, cache):  # noqa: F811
    x = model.embed(np.asarray(tokens)[..., None], offset=cache.length)
    for i, block in enumerate(model.decoder):
        normed = rms_norm(x, block.norm1_gamma, block.eps)
        K, V = cache.append(i, *block.self_attn.project_kv(normed))
        x = x + block.self_attn.attend(normed, K, V)[0]
        x = x + block.cross_attn.attend(x, cache.cross_k[i], cache.cross_v[i], cache.src_mask)[0]
        x = _ffn_residual(model, block, x)
    cache.length += 1
    return (rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T)[..., 0, :]


@mistake("decode_step", "no_final_norm",
         "the final RMSNorm before the output head is skipped. The full decoder normalises its last "
         "hidden state with model.decoder_norm_gamma (and model.config.eps) before h @ E.T; the "
         "cached step must do the same.")
def decode_step(model, tokens, cache):  # noqa: F811
    x = model.embed(np.asarray(tokens)[..., None], offset=cache.length)
    for i, block in enumerate(model.decoder):
        normed = rms_norm(x, block.norm1_gamma, block.eps)
        K, V = cache.append(i, *block.self_attn.project_kv(normed))
        x = x + block.self_attn.attend(normed, K, V)[0]
        x = x + block.cross_attn.attend(rms_norm(x, block.norm2_gamma, block.eps), cache.cross_k[i], cache.cross_v[i],
                                        cache.src_mask)[0]
        x = _ffn_residual(model, block, x)
    cache.length += 1
    return (x @ model.embedding.T)[..., 0, :]


@mistake("decode_step", "position_axis_kept",
         "the logits keep the length-1 position axis: shape (..., 1, V). Return the logits of the "
         "one new position, (..., V): index [..., 0, :] (or [..., -1, :]).")
def decode_step(model, tokens, cache):  # noqa: F811
    x = model.embed(np.asarray(tokens)[..., None], offset=cache.length)
    for i, block in enumerate(model.decoder):
        normed = rms_norm(x, block.norm1_gamma, block.eps)
        K, V = cache.append(i, *block.self_attn.project_kv(normed))
        x = x + block.self_attn.attend(normed, K, V)[0]
        x = x + block.cross_attn.attend(rms_norm(x, block.norm2_gamma, block.eps), cache.cross_k[i], cache.cross_v[i],
                                        cache.src_mask)[0]
        x = _ffn_residual(model, block, x)
    cache.length += 1
    return rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("decode_step", "self_attention_not_normalised",
         "self-attention reads the raw residual stream: the block normalises first (pre-norm), "
         "rms_norm(x, block.norm1_gamma, block.eps), and computes the new key, value and query from that "
         "normalised x, not from x itself.")
def decode_step(model, tokens, cache):  # noqa: F811
    x = model.embed(np.asarray(tokens)[..., None], offset=cache.length)
    for i, block in enumerate(model.decoder):
        K, V = cache.append(i, *block.self_attn.project_kv(x))
        x = x + block.self_attn.attend(x, K, V)[0]
        x = x + block.cross_attn.attend(rms_norm(x, block.norm2_gamma, block.eps), cache.cross_k[i], cache.cross_v[i],
                                        cache.src_mask)[0]
        x = _ffn_residual(model, block, x)
    cache.length += 1
    return (rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T)[..., 0, :]


@mistake("decode_step", "ffn_not_normalised",
         "the feed-forward sublayer reads the raw residual stream: x + ffn(rms_norm(x, block.norm3_gamma, block.eps)), "
         "as in the block's own forward pass.")
def decode_step(model, tokens, cache):  # noqa: F811
    x = model.embed(np.asarray(tokens)[..., None], offset=cache.length)
    for i, block in enumerate(model.decoder):
        normed = rms_norm(x, block.norm1_gamma, block.eps)
        K, V = cache.append(i, *block.self_attn.project_kv(normed))
        x = x + block.self_attn.attend(normed, K, V)[0]
        x = x + block.cross_attn.attend(rms_norm(x, block.norm2_gamma, block.eps), cache.cross_k[i], cache.cross_v[i],
                                        cache.src_mask)[0]
        x = x + block.ffn(x)
    cache.length += 1
    return (rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T)[..., 0, :]
