"""The PyTorch twin of the NumPy model: the same architecture, parameter names and shapes.

Every parameter is stored exactly as in NumPy (W used as x @ W, gammas of shape (d_model,)),
so `state_dict()` keys equal `encdec.Seq2Seq.parameters()` keys and weights move between the
two without loss in float64 (`from_numpy`, `to_numpy`). The torch side is the fast path: fused
kernels (F.scaled_dot_product_attention, bias added inside the matmul with F.linear), RMSNorm with
a closed-form backward, any device, autograd.

Dropout (config.dropout [CONFIG]) in the same three places as in NumPy, in training mode only
(module.train(), the default, as for every nn.Module): on the embeddings plus positions, on each
sublayer's output before its residual add, and on the attention weights (the fused kernel's
dropout_p; with need_weights, the manual path drops the weights itself and returns them undropped).
Each module's `dropout` is a plain float [CONFIG], 0.0 unless given: with it, or in eval mode, the
twin computes exactly what it computes without dropout. Dropout has no parameters, so weight
transfer is unchanged; the masks come from torch's random generator (torch.manual_seed).
"""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .layers import sinusoidal_positions
from .model import ModelConfig
from .model import Seq2Seq as NumpySeq2Seq


def _matrix(d_in, d_out, generator=None):
    w = torch.empty(d_in, d_out)
    nn.init.normal_(w, 0.0, 1.0 / math.sqrt(d_in), generator=generator)
    return nn.Parameter(w)


def split_heads(x, n_heads):
    *lead, T, d = x.shape
    return x.reshape(*lead, T, n_heads, d // n_heads).transpose(-2, -3)  # (..., h, T, d_k)


def merge_heads(x):
    x = x.transpose(-2, -3)  # (..., T, h, d_k)
    return x.reshape(*x.shape[:-2], x.shape[-2] * x.shape[-1])


def _dropout(module, x):
    """Residual or embedding dropout at module.dropout, in training mode only."""
    if module.training and module.dropout:
        return F.dropout(x, module.dropout, training=True)
    return x


class MultiHeadAttention(nn.Module):
    dropout = 0.0  # [CONFIG] attention dropout; a class default, so subclasses that skip __init__ have it

    def __init__(self, d_model, n_heads, generator=None, dropout=0.0):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"n_heads={n_heads} must divide d_model={d_model}")
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.dropout = dropout
        self.W_q = _matrix(d_model, d_model, generator)
        self.W_k = _matrix(d_model, d_model, generator)
        self.W_v = _matrix(d_model, d_model, generator)
        self.W_o = _matrix(d_model, d_model, generator)

    def forward(self, query_input, key_value_input=None, mask=None, need_weights=False):
        """query_input (..., m, d), key_value_input (..., n, d) or None (self-attention),
        additive mask broadcastable to (..., h, m, n). Returns (output, weights or None): the
        weights before attention dropout."""
        h = self.n_heads
        if key_value_input is None:  # one fused projection for Q, K and V
            qkv = query_input @ torch.cat([self.W_q, self.W_k, self.W_v], dim=1)
            Q, K, V = (split_heads(t, h) for t in qkv.split(self.d_model, dim=-1))
        else:
            Q = split_heads(query_input @ self.W_q, h)
            kv = key_value_input @ torch.cat([self.W_k, self.W_v], dim=1)
            K, V = (split_heads(t, h) for t in kv.split(self.d_model, dim=-1))
        p = self.dropout if self.training else 0.0
        if need_weights:
            scores = Q @ K.transpose(-1, -2) / math.sqrt(self.d_k)
            if mask is not None:
                scores = scores + mask
            weights = torch.softmax(scores, dim=-1)
            heads = (F.dropout(weights, p, training=True) if p else weights) @ V
        else:
            weights = None
            heads = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask, dropout_p=p)
        return merge_heads(heads) @ self.W_o, weights


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, generator=None):
        super().__init__()
        self.W1 = _matrix(d_model, d_ff, generator)
        self.b1 = nn.Parameter(torch.zeros(d_ff))
        self.W2 = _matrix(d_ff, d_model, generator)
        self.b2 = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        hidden = F.gelu(F.linear(x, self.W1.T, self.b1), approximate="tanh")  # bias added inside the matmul
        return F.linear(hidden, self.W2.T, self.b2)


class RMSNormFunction(torch.autograd.Function):
    """RMSNorm with a hand-written backward: y = x * r * gamma with r = 1 / sqrt(mean(x^2) + eps).

    On the CPU, F.rms_norm's gradient is assembled from a chain of elementwise autograd nodes; this
    backward is the closed form of Lesson 7 (encdec.rms_norm_backward), with x_hat = x * r and
    g' = g * gamma, and trains the capstone model a few percent faster:

        dx = r * (g' - x_hat * mean(g' * x_hat)),    dgamma = sum over positions of g * x_hat
    """

    @staticmethod
    def forward(ctx, x, gamma, eps):
        r = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)  # (..., 1)
        ctx.save_for_backward(x, r, gamma)
        return x * r * gamma

    @staticmethod
    def backward(ctx, g):
        x, r, gamma = ctx.saved_tensors
        x_hat = x * r
        g_gamma = g * gamma
        dx = r * (g_gamma - x_hat * (g_gamma * x_hat).mean(dim=-1, keepdim=True))
        dgamma = (g * x_hat).reshape(-1, g.shape[-1]).sum(dim=0)
        return dx, dgamma, None


def _rms(x, gamma, eps=1e-6):
    return RMSNormFunction.apply(x, gamma, eps)


class EncoderBlock(nn.Module):
    dropout = 0.0  # [CONFIG] residual dropout (its attention has its own, the same in Seq2Seq)
    eps = 1e-6  # [CONFIG] the RMSNorms' constant (Seq2Seq passes ModelConfig.eps)

    def __init__(self, d_model, n_heads, d_ff, generator=None, dropout=0.0, eps=1e-6):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, generator, dropout)
        self.ffn = FeedForward(d_model, d_ff, generator)
        self.norm1_gamma = nn.Parameter(torch.ones(d_model))
        self.norm2_gamma = nn.Parameter(torch.ones(d_model))
        self.dropout, self.eps = dropout, eps

    def forward(self, x, mask=None):
        x = x + _dropout(self, self.self_attn(_rms(x, self.norm1_gamma, self.eps), mask=mask)[0])
        return x + _dropout(self, self.ffn(_rms(x, self.norm2_gamma, self.eps)))


class DecoderBlock(nn.Module):
    dropout = 0.0  # [CONFIG] residual dropout; a class default, so subclasses that skip __init__ have it
    eps = 1e-6  # [CONFIG] the RMSNorms' constant (Seq2Seq passes ModelConfig.eps)

    def __init__(self, d_model, n_heads, d_ff, generator=None, dropout=0.0, eps=1e-6):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, generator, dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, generator, dropout)
        self.ffn = FeedForward(d_model, d_ff, generator)
        self.norm1_gamma = nn.Parameter(torch.ones(d_model))
        self.norm2_gamma = nn.Parameter(torch.ones(d_model))
        self.norm3_gamma = nn.Parameter(torch.ones(d_model))
        self.dropout, self.eps = dropout, eps

    def forward(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None, need_weights=False):
        """Returns (output, cross_weights or None): self -> cross -> FFN, pre-norm, residuals."""
        x = x + _dropout(self, self.self_attn(_rms(x, self.norm1_gamma, self.eps), mask=self_attn_mask)[0])
        out, weights = self.cross_attn(_rms(x, self.norm2_gamma, self.eps), encoder_output,
                                       mask=cross_attn_mask, need_weights=need_weights)
        x = x + _dropout(self, out)
        return x + _dropout(self, self.ffn(_rms(x, self.norm3_gamma, self.eps))), weights


class Seq2Seq(nn.Module):
    """Same [CONFIG] (ModelConfig, dropout included) and [LEARNED] names as encdec.Seq2Seq."""

    def __init__(self, config, seed=None):
        super().__init__()
        self.config = c = config
        g = None if seed is None else torch.Generator().manual_seed(seed)
        emb = torch.empty(c.vocab_size, c.d_model)
        nn.init.normal_(emb, 0.0, 1.0 / math.sqrt(c.d_model), generator=g)
        self.embedding = nn.Parameter(emb)
        self.encoder = nn.ModuleList(
            EncoderBlock(c.d_model, c.n_heads, c.d_ff, g, c.dropout, c.eps) for _ in range(c.n_encoder_layers))
        self.decoder = nn.ModuleList(
            DecoderBlock(c.d_model, c.n_heads, c.d_ff, g, c.dropout, c.eps) for _ in range(c.n_decoder_layers))
        self.dropout = c.dropout  # on the embeddings plus positions
        self.encoder_norm_gamma = nn.Parameter(torch.ones(c.d_model))
        self.decoder_norm_gamma = nn.Parameter(torch.ones(c.d_model))
        self.register_buffer("positions", torch.from_numpy(sinusoidal_positions(512, c.d_model)).float(),
                             persistent=False)

    def _positions(self, T, dtype):
        if T > self.positions.shape[0]:
            pe = torch.from_numpy(sinusoidal_positions(T, self.config.d_model))
            return pe.to(device=self.positions.device, dtype=dtype)
        if dtype == torch.float64:  # exact float64 positions, as NumPy computes them
            return torch.from_numpy(sinusoidal_positions(T, self.config.d_model)).to(self.positions.device)
        return self.positions[:T].to(dtype)

    def embed(self, tokens):
        x = F.embedding(tokens, self.embedding) * math.sqrt(self.config.d_model)
        return x + self._positions(tokens.shape[-1], x.dtype)

    def padding_mask(self, tokens, dtype):
        """(..., n) -> (..., 1, 1, n) additive mask, -inf at pad keys."""
        zero = torch.zeros((), dtype=dtype, device=tokens.device)
        ninf = torch.full((), float("-inf"), dtype=dtype, device=tokens.device)
        return torch.where(tokens == self.config.pad_id, ninf, zero)[..., None, None, :]

    def encode(self, src):
        mask = self.padding_mask(src, self.embedding.dtype)
        x = _dropout(self, self.embed(src))
        for block in self.encoder:
            x = block(x, mask)
        return _rms(x, self.encoder_norm_gamma, self.config.eps), mask

    def decode(self, tgt_in, H_enc, src_mask, return_attention=False):
        m = tgt_in.shape[-1]
        causal = torch.triu(torch.full((m, m), float("-inf"), dtype=H_enc.dtype, device=H_enc.device), 1)
        self_mask = causal + self.padding_mask(tgt_in, H_enc.dtype)
        x = _dropout(self, self.embed(tgt_in))
        cross = []
        for block in self.decoder:
            x, w = block(x, H_enc, self_mask, src_mask, need_weights=return_attention)
            cross.append(w)
        logits = _rms(x, self.decoder_norm_gamma, self.config.eps) @ self.embedding.T
        return (logits, cross) if return_attention else logits

    def forward(self, src, tgt_in):
        H_enc, src_mask = self.encode(src)
        return self.decode(tgt_in, H_enc, src_mask)

    @torch.no_grad()
    def greedy_decode(self, src, bos_id, eos_id, max_len):
        """Batched greedy decoding (src (B, n)) -> (B, L) ids, pad after each row's first EOS.

        Decoding is inference: it runs in eval mode (no dropout) and restores the module's mode after."""
        training = self.training
        self.eval()
        try:
            return self._greedy_decode(src, bos_id, eos_id, max_len)
        finally:
            self.train(training)

    def _greedy_decode(self, src, bos_id, eos_id, max_len):
        pad = self.config.pad_id
        H_enc, src_mask = self.encode(src)
        B = src.shape[0]
        tgt_in = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out = []
        for _ in range(max_len):
            logits = self.decode(tgt_in, H_enc, src_mask)[:, -1]
            logits[:, [pad, bos_id]] = float("-inf")
            nxt = torch.where(done, torch.full_like(done, pad, dtype=torch.long), logits.argmax(-1))
            out.append(nxt)
            done |= nxt == eos_id
            if bool(done.all()):
                break
            tgt_in = torch.cat([tgt_in, nxt[:, None]], dim=1)
        return torch.stack(out, dim=1)


# -- weight transfer -----------------------------------------------------------------------------
def load_numpy_parameters(module, params):
    """Copy a dict of NumPy arrays (encdec names) into a torch module, keeping its dtype/device."""
    own = dict(module.named_parameters())
    missing, extra = set(own) - set(params), set(params) - set(own)
    if missing or extra:
        raise ValueError(f"parameter names differ: missing {sorted(missing)}, unexpected {sorted(extra)}")
    with torch.no_grad():
        for name, p in own.items():
            value = np.asarray(params[name])
            if tuple(p.shape) != value.shape:
                raise ValueError(f"{name}: torch shape {tuple(p.shape)} vs NumPy shape {value.shape}")
            p.copy_(torch.from_numpy(value).to(dtype=p.dtype, device=p.device))
    return module


def from_numpy(np_model, dtype=torch.float64, device="cpu"):
    """A torch twin holding exactly the NumPy model's weights (lossless in float64), in its mode."""
    model = Seq2Seq(np_model.config).to(dtype=dtype, device=device).train(np_model.training)
    return load_numpy_parameters(model, np_model.parameters())


def numpy_parameters(module):
    """The torch module's parameters as float64 NumPy arrays, by encdec name."""
    return {name: p.detach().to("cpu", torch.float64).numpy().copy() for name, p in module.named_parameters()}


def to_numpy(module):
    """A NumPy encdec.Seq2Seq with exactly the torch model's weights, in its mode."""
    return NumpySeq2Seq(module.config, rng=0).load_parameters(numpy_parameters(module)).train(module.training)
