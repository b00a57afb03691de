"""The encoder-decoder model: shared embedding, positions, N encoder and N decoder blocks, tied head.

    src (..., n) --embed--> N x EncoderBlock --RMSNorm--> H_enc (..., n, d)   [STATE, computed once per source]
    tgt_in (..., m) --embed--> N x DecoderBlock(H_enc) --RMSNorm--> h (..., m, d)
    logits = h @ E.T  (..., m, V)   (the output head is the embedding matrix, transposed: tied)

Embedding: E[token] * sqrt(d_model) + PE[position]. E is initialised with variance 1/d_model,
so the scaled embedding has unit variance, the same order as the sinusoidal positions (mean square
1/2) it is added to, and the tied head h @ E.T starts with logits of unit scale.

Dropout (ModelConfig.dropout [CONFIG], one rate, as in the 2017 paper) in training mode only: on the
embeddings plus positions of the encoder and of the decoder, on every sublayer's output before its
residual add, and on the attention weights after the softmax. `model.train()` / `model.eval()`
switch modes as in PyTorch; in eval mode, or with rate 0, nothing is dropped.
"""

import numbers
from dataclasses import dataclass, asdict

import numpy as np

from ._shapes import as_tokens
from .attention import create_causal_mask, padding_mask
from .layers import DecoderBlock, EncoderBlock, dropout, rms_norm, sinusoidal_positions


def shift_right(targets, bos_id):
    """Teacher-forcing inputs: prepend BOS and drop the last token.

    Inputs:  targets (..., m) integer ids, e.g. [y1, y2, EOS, PAD].
    Returns: (..., m) ids [BOS, y1, y2, EOS]: with the causal mask, position t reads <bos>, y_1, ..., y_t
             and is trained to predict y_{t+1} (the target at position t).
    """
    targets = as_tokens(targets)
    if targets.shape[-1] < 1:
        raise ValueError(f"targets of shape {targets.shape} need at least one position")
    bos = np.full(targets.shape[:-1] + (1,), bos_id, dtype=targets.dtype)
    return np.concatenate([bos, targets[..., :-1]], axis=-1)


@dataclass(frozen=True)
class ModelConfig:
    """Everything [CONFIG] about a model: set before the run, the same for every input, never learned.

    eps is the constant of every RMSNorm of the model (the blocks' and the two final norms)."""

    vocab_size: int
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 256
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    pad_id: int = 0
    eps: float = 1e-6
    dropout: float = 0.0  # residual, attention and embedding dropout, in training mode only

    def __post_init__(self):
        if self.vocab_size < 2:
            raise ValueError(f"vocab_size must be at least 2, got {self.vocab_size}")
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads={self.n_heads} must divide d_model={self.d_model}")
        if not 0 <= self.pad_id < self.vocab_size:
            raise ValueError(f"pad_id={self.pad_id} must be a token id below vocab_size={self.vocab_size}")
        if not (isinstance(self.dropout, numbers.Real) and 0 <= self.dropout < 1):
            raise ValueError(f"dropout={self.dropout!r} must be a rate in [0, 1)")

    def to_dict(self):
        return asdict(self)


def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):
    """Number of [LEARNED] numbers in Seq2Seq, as a formula.

    V d                                  shared embedding (also the output head: tied)
    + N_enc (4d^2 + 2 d d_ff + d_ff + d + 2d)   self-attention, FFN with biases, two norms
    + N_dec (8d^2 + 2 d d_ff + d_ff + d + 3d)   plus cross-attention (4d^2) and its norm (d)
    + 2d                                 final encoder and decoder norms
    """
    if n_decoder_layers is None:
        n_decoder_layers = n_encoder_layers
    V, d = vocab_size, d_model
    ffn = 2 * d * d_ff + d_ff + d
    encoder_block = 4 * d * d + ffn + 2 * d
    decoder_block = 8 * d * d + ffn + 3 * d
    return V * d + n_encoder_layers * encoder_block + n_decoder_layers * decoder_block + 2 * d


class Seq2Seq:
    """The encoder-decoder transformer in NumPy, float64.

    Attributes: config (ModelConfig); embedding E (V, d_model) [LEARNED], shared by the source,
    the target and the output head; encoder, decoder (lists of blocks); encoder_norm_gamma,
    decoder_norm_gamma (d_model,) [LEARNED]; training (True in training mode, the default, as in
    PyTorch; see train and eval); dropout_rng [STATE], the numpy Generator that draws every dropout
    mask: spawned from `rng` (which leaves rng's own draws as they were), so the same seed gives the
    same weights and the same masks. Assign a fresh generator to re-seed it.
    """

    def __init__(self, config=None, rng=None, **kwargs):
        if config is None:
            config = ModelConfig(**kwargs)
        elif kwargs:
            raise ValueError(f"pass either a ModelConfig or keyword arguments, not both: {sorted(kwargs)}")
        rng = np.random.default_rng(rng)
        c = self.config = config
        self.embedding = rng.normal(0.0, 1.0 / np.sqrt(c.d_model), size=(c.vocab_size, c.d_model))
        self.encoder = [EncoderBlock(c.d_model, c.n_heads, c.d_ff, rng, c.eps) for _ in range(c.n_encoder_layers)]
        self.decoder = [DecoderBlock(c.d_model, c.n_heads, c.d_ff, rng, c.eps) for _ in range(c.n_decoder_layers)]
        self.encoder_norm_gamma = np.ones(c.d_model)
        self.decoder_norm_gamma = np.ones(c.d_model)
        self.training = True
        self.dropout_rng = rng.spawn(1)[0]

    # -- modes ----------------------------------------------------------------------------------
    def train(self, mode=True):
        """Training mode (mode=True): dropout at config.dropout. Returns the model."""
        self.training = bool(mode)
        return self

    def eval(self):
        """Eval mode: no dropout, the model is a deterministic function. Returns the model."""
        return self.train(False)

    def dropout_rate(self):
        """The rate dropout runs at now: config.dropout in training mode, 0 in eval mode."""
        return self.config.dropout if self.training else 0.0

    # -- the pieces -------------------------------------------------------------------------
    def check_tokens(self, tokens, name):
        tokens = as_tokens(tokens, name)
        if tokens.size and (tokens.min() < 0 or tokens.max() >= self.config.vocab_size):
            raise ValueError(
                f"{name} of shape {tokens.shape} holds ids outside [0, {self.config.vocab_size})"
            )
        return tokens

    def embed(self, tokens, offset=0):
        """(..., T) ids -> (..., T, d_model): E[tokens] * sqrt(d_model) + PE[offset : offset + T]."""
        T = tokens.shape[-1]
        pe = sinusoidal_positions(offset + T, self.config.d_model)[offset:]
        return self.embedding[tokens] * np.sqrt(self.config.d_model) + pe

    def encode(self, src):
        """src (..., n) -> (H_enc (..., n, d_model), src_mask (..., 1, 1, n))."""
        src = self.check_tokens(src, "src")
        src_mask = padding_mask(src, self.config.pad_id)
        rate, rng = self.dropout_rate(), self.dropout_rng
        x = dropout(self.embed(src), rate, rng)
        for block in self.encoder:
            x = block(x, mask=src_mask, dropout_rate=rate, dropout_rng=rng)
        return rms_norm(x, self.encoder_norm_gamma, self.config.eps), src_mask

    def decoder_mask(self, tgt_in):
        """Causal mask plus target padding: (..., 1, m, m)."""
        return create_causal_mask(tgt_in.shape[-1]) + padding_mask(tgt_in, self.config.pad_id)

    def decode(self, tgt_in, H_enc, src_mask, return_attention=False):
        """tgt_in (..., m) -> logits (..., m, V); with return_attention, also the list of each
        decoder block's cross-attention weights (..., h, m, n), before dropout."""
        tgt_in = self.check_tokens(tgt_in, "tgt_in")
        rate, rng = self.dropout_rate(), self.dropout_rng
        x = dropout(self.embed(tgt_in), rate, rng)
        self_mask = self.decoder_mask(tgt_in)
        cross = []
        for block in self.decoder:
            x, weights = block(x, H_enc, self_attn_mask=self_mask, cross_attn_mask=src_mask,
                               dropout_rate=rate, dropout_rng=rng)
            cross.append(weights)
        logits = rms_norm(x, self.decoder_norm_gamma, self.config.eps) @ self.embedding.T
        return (logits, cross) if return_attention else logits

    def __call__(self, src, tgt_in):
        """src (..., n), tgt_in (..., m) -> logits (..., m, V)."""
        H_enc, src_mask = self.encode(src)
        return self.decode(tgt_in, H_enc, src_mask)

    # -- parameters ---------------------------------------------------------------------------
    def parameters(self):
        """Every [LEARNED] array by name (the names the PyTorch twin's state_dict uses)."""
        params = {"embedding": self.embedding}
        for i, block in enumerate(self.encoder):
            params.update({f"encoder.{i}.{k}": v for k, v in block.parameters().items()})
        for i, block in enumerate(self.decoder):
            params.update({f"decoder.{i}.{k}": v for k, v in block.parameters().items()})
        params["encoder_norm_gamma"] = self.encoder_norm_gamma
        params["decoder_norm_gamma"] = self.decoder_norm_gamma
        return params

    def load_parameters(self, params):
        """Copy arrays into this model in place; names and shapes must match exactly."""
        own = self.parameters()
        missing, extra = set(own) - set(params), set(params) - set(own)
        if missing or extra:
            raise ValueError(f"parameter names differ: missing {sorted(missing)}, unexpected {sorted(extra)}")
        for name, target in own.items():
            value = np.asarray(params[name], dtype=np.float64)
            if value.shape != target.shape:
                raise ValueError(f"{name}: expected shape {target.shape}, got {value.shape}")
            target[...] = value
        return self

    def num_parameters(self):
        return sum(p.size for p in self.parameters().values())
