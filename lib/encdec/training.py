"""Backpropagation through the whole NumPy model, and one teacher-forced training step.

`forward_with_cache` runs the same computation as `Seq2Seq.__call__` and keeps what the
backward pass needs; `backward` walks the layers in reverse with the building blocks of
`encdec.backward` and returns a gradient for every entry of `model.parameters()`.
All m target positions are trained in one pass: the causal mask makes position t see only
the inputs up to t, so one forward pass computes every position's prediction at once.

Dropout: in training mode (model.training, config.dropout > 0) the forward pass draws its masks from
model.dropout_rng in the same places and the same order as model(src, tgt_in), and keeps them in the
cache; the backward pass sends each gradient through the same mask, with the same 1 / (1 - rate).
In eval mode nothing is drawn and the masks are None.
"""

import numpy as np

from .attention import merge_heads, padding_mask, scaled_dot_product_attention, split_heads
from .backward import (attention_backward, dropout_backward, gelu_backward, linear_backward, rms_norm_backward,
                       softmax_backward)
from .layers import gelu, rms_norm
from .loss import softmax_cross_entropy, token_accuracy
from .model import shift_right


# -- forward with caches ------------------------------------------------------------------------
def _dropout(x, drop):
    """Inverted dropout that keeps its mask: (x * keep / (1 - rate), keep), or (x, None) when off.

    drop = (rate, rng); the draw is encdec.layers.dropout's: keep = rng.random(x.shape) >= rate.
    """
    rate, rng = drop
    if rate == 0:
        return x, None
    keep = rng.random(x.shape) >= rate
    return x * keep / (1.0 - rate), keep


def _mha_forward(attn, q_in, kv_in, mask, drop):
    h = attn.n_heads
    Qh = split_heads(q_in @ attn.W_q, h)  # (..., h, m, d_k)
    Kh = split_heads(kv_in @ attn.W_k, h)  # (..., h, n, d_k)
    Vh = split_heads(kv_in @ attn.W_v, h)
    heads, weights = scaled_dot_product_attention(Qh, Kh, Vh, mask)
    dropped, keep = _dropout(weights, drop)  # attention dropout, after the softmax
    if keep is not None:
        heads = dropped @ Vh  # (..., h, m, d_k)
    merged = merge_heads(heads)  # (..., m, d_model)
    cache = dict(q_in=q_in, kv_in=kv_in, Qh=Qh, Kh=Kh, Vh=Vh, weights=weights, dropped=dropped, keep=keep,
                 merged=merged)
    return merged @ attn.W_o, weights, cache


def _ffn_forward(ffn, x):
    hidden = x @ ffn.W1 + ffn.b1
    act = gelu(hidden)
    return act @ ffn.W2 + ffn.b2, dict(x=x, hidden=hidden, act=act)


def _encoder_block_forward(block, x, mask, drop):
    n1 = rms_norm(x, block.norm1_gamma, block.eps)
    a, _, c_attn = _mha_forward(block.self_attn, n1, n1, mask, drop)
    a, keep_attn = _dropout(a, drop)  # residual dropout
    x1 = x + a
    n2 = rms_norm(x1, block.norm2_gamma, block.eps)
    f, c_ffn = _ffn_forward(block.ffn, n2)
    f, keep_ffn = _dropout(f, drop)
    return x1 + f, dict(x=x, x1=x1, attn=c_attn, ffn=c_ffn, keep=[keep_attn, keep_ffn])


def _decoder_block_forward(block, x, H_enc, self_mask, cross_mask, drop):
    n1 = rms_norm(x, block.norm1_gamma, block.eps)
    a, _, c_self = _mha_forward(block.self_attn, n1, n1, self_mask, drop)
    a, keep_self = _dropout(a, drop)  # residual dropout, after each sublayer
    x1 = x + a
    n2 = rms_norm(x1, block.norm2_gamma, block.eps)
    c, cross_weights, c_cross = _mha_forward(block.cross_attn, n2, H_enc, cross_mask, drop)
    c, keep_cross = _dropout(c, drop)
    x2 = x1 + c
    n3 = rms_norm(x2, block.norm3_gamma, block.eps)
    f, c_ffn = _ffn_forward(block.ffn, n3)
    f, keep_ffn = _dropout(f, drop)
    cache = dict(x=x, x1=x1, x2=x2, self_attn=c_self, cross_attn=c_cross, ffn=c_ffn,
                 keep=[keep_self, keep_cross, keep_ffn])
    return x2 + f, cross_weights, cache


def forward_with_cache(model, src, tgt_in):
    """Same as model(src, tgt_in), also returning the cache `backward` needs.

    In training mode with config.dropout > 0 it draws the same dropout masks as model(src, tgt_in)
    would from the same model.dropout_rng state, and keeps them in the cache.
    Returns: (logits (..., m, V), cache).
    """
    src = model.check_tokens(src, "src")
    tgt_in = model.check_tokens(tgt_in, "tgt_in")
    drop = (model.dropout_rate(), model.dropout_rng)
    src_mask = padding_mask(src, model.config.pad_id)
    x, keep_src = _dropout(model.embed(src), drop)
    enc_caches = []
    for block in model.encoder:
        x, cache = _encoder_block_forward(block, x, src_mask, drop)
        enc_caches.append(cache)
    enc_top = x
    H_enc = rms_norm(enc_top, model.encoder_norm_gamma, model.config.eps)
    y, keep_tgt = _dropout(model.embed(tgt_in), drop)
    self_mask = model.decoder_mask(tgt_in)
    dec_caches = []
    for block in model.decoder:
        y, _, cache = _decoder_block_forward(block, y, H_enc, self_mask, src_mask, drop)
        dec_caches.append(cache)
    dec_top = y
    h = rms_norm(dec_top, model.decoder_norm_gamma, model.config.eps)
    logits = h @ model.embedding.T
    cache = dict(src=src, tgt_in=tgt_in, enc=enc_caches, dec=dec_caches, enc_top=enc_top, H_enc=H_enc,
                 dec_top=dec_top, h=h, rate=drop[0], keep_src=keep_src, keep_tgt=keep_tgt)
    return logits, cache


# -- backward -----------------------------------------------------------------------------------
def _attention_backward(dheads, c, rate):
    """attention_backward, through the attention-dropout mask when the forward pass drew one."""
    if c["keep"] is None:
        return attention_backward(dheads, c["Qh"], c["Kh"], c["Vh"], c["weights"])
    Qh, Kh, Vh = c["Qh"], c["Kh"], c["Vh"]
    dVh = np.swapaxes(c["dropped"], -1, -2) @ dheads  # heads = dropped @ V
    ddropped = dheads @ np.swapaxes(Vh, -1, -2)  # (..., h, m, n)
    dscores = softmax_backward(dropout_backward(ddropped, c["keep"], rate), c["weights"]) / np.sqrt(Qh.shape[-1])
    return dscores @ Kh, np.swapaxes(dscores, -1, -2) @ Qh, dVh


def _mha_backward(attn, dout, c, grads, prefix, rate):
    """Returns (d query_input, d key_value_input)."""
    dmerged, grads[prefix + "W_o"], _ = linear_backward(dout, c["merged"], attn.W_o)
    dQh, dKh, dVh = _attention_backward(split_heads(dmerged, attn.n_heads), c, rate)
    dq_in, grads[prefix + "W_q"], _ = linear_backward(merge_heads(dQh), c["q_in"], attn.W_q)
    dkv_k, grads[prefix + "W_k"], _ = linear_backward(merge_heads(dKh), c["kv_in"], attn.W_k)
    dkv_v, grads[prefix + "W_v"], _ = linear_backward(merge_heads(dVh), c["kv_in"], attn.W_v)
    return dq_in, dkv_k + dkv_v


def _ffn_backward(ffn, dout, c, grads, prefix):
    dact, grads[prefix + "W2"], grads[prefix + "b2"] = linear_backward(dout, c["act"], ffn.W2)
    dhidden = gelu_backward(dact, c["hidden"])
    dx, grads[prefix + "W1"], grads[prefix + "b1"] = linear_backward(dhidden, c["x"], ffn.W1)
    return dx


def _encoder_block_backward(block, dout, c, grads, prefix, rate):
    keep_attn, keep_ffn = c["keep"]
    dx1 = dout.copy()
    dn2 = _ffn_backward(block.ffn, dropout_backward(dout, keep_ffn, rate), c["ffn"], grads, prefix + "ffn.")
    d, grads[prefix + "norm2_gamma"] = rms_norm_backward(dn2, c["x1"], block.norm2_gamma, block.eps)
    dx1 += d
    dq, dkv = _mha_backward(block.self_attn, dropout_backward(dx1, keep_attn, rate), c["attn"], grads,
                            prefix + "self_attn.", rate)
    d, grads[prefix + "norm1_gamma"] = rms_norm_backward(dq + dkv, c["x"], block.norm1_gamma, block.eps)
    return dx1 + d


def _decoder_block_backward(block, dout, c, grads, prefix, rate):
    """Returns (d x, d H_enc)."""
    keep_self, keep_cross, keep_ffn = c["keep"]
    dx2 = dout.copy()
    dn3 = _ffn_backward(block.ffn, dropout_backward(dout, keep_ffn, rate), c["ffn"], grads, prefix + "ffn.")
    d, grads[prefix + "norm3_gamma"] = rms_norm_backward(dn3, c["x2"], block.norm3_gamma, block.eps)
    dx2 += d
    dq, dH_enc = _mha_backward(block.cross_attn, dropout_backward(dx2, keep_cross, rate), c["cross_attn"], grads,
                               prefix + "cross_attn.", rate)
    d, grads[prefix + "norm2_gamma"] = rms_norm_backward(dq, c["x1"], block.norm2_gamma, block.eps)
    dx1 = dx2 + d
    dq, dkv = _mha_backward(block.self_attn, dropout_backward(dx1, keep_self, rate), c["self_attn"], grads,
                            prefix + "self_attn.", rate)
    d, grads[prefix + "norm1_gamma"] = rms_norm_backward(dq + dkv, c["x"], block.norm1_gamma, block.eps)
    return dx1 + d, dH_enc


def backward(model, dlogits, cache):
    """Gradients of the loss for every parameter, given dloss/dlogits (..., m, V).

    Returns: dict name -> gradient, the same names and shapes as model.parameters().
    """
    grads = {}
    d, eps = model.config.d_model, model.config.eps
    V = model.config.vocab_size
    rate = cache["rate"]
    # tied head: logits = h @ E.T, so E receives a gradient here and from both embeddings
    dE = dlogits.reshape(-1, V).T @ cache["h"].reshape(-1, d)
    dh = dlogits @ model.embedding
    dy, grads["decoder_norm_gamma"] = rms_norm_backward(dh, cache["dec_top"], model.decoder_norm_gamma, eps)
    dH_enc = np.zeros_like(cache["H_enc"])
    for i in reversed(range(len(model.decoder))):
        dy, dH = _decoder_block_backward(model.decoder[i], dy, cache["dec"][i], grads, f"decoder.{i}.", rate)
        dH_enc += dH
    dy = dropout_backward(dy, cache["keep_tgt"], rate)
    np.add.at(dE, cache["tgt_in"], dy * np.sqrt(d))
    dx, grads["encoder_norm_gamma"] = rms_norm_backward(dH_enc, cache["enc_top"], model.encoder_norm_gamma, eps)
    for i in reversed(range(len(model.encoder))):
        dx = _encoder_block_backward(model.encoder[i], dx, cache["enc"][i], grads, f"encoder.{i}.", rate)
    dx = dropout_backward(dx, cache["keep_src"], rate)
    np.add.at(dE, cache["src"], dx * np.sqrt(d))
    grads["embedding"] = dE
    return {name: grads[name] for name in model.parameters()}


def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):
    """One teacher-forced step on a batch: every target position trained in one pass.

    Dropout follows the model's mode: in training mode (the default) at config.dropout.
    Inputs:  src (B, n) and targets (B, m) ids (targets end in EOS, then pads).
    Returns: (loss, token accuracy) before the update.
    """
    pad_id = model.config.pad_id
    tgt_in = shift_right(targets, bos_id)
    logits, cache = forward_with_cache(model, src, tgt_in)
    loss, dlogits = softmax_cross_entropy(logits, targets, pad_id, label_smoothing)
    optimizer.step(backward(model, dlogits, cache), lr=lr)
    return loss, token_accuracy(logits, targets, pad_id)
