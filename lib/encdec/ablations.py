"""The ablation ladder's models: the torch twin with one piece removed or changed.

    Ablation()                              the full model: pre-norm, residuals, positions, 1/sqrt(d_k),
                                            several heads, cross-attention, warm-up, label smoothing
    Ablation("no positions", positions=False)   ... and one change per row of LADDER

An `Ablation` is a [CONFIG] record; `build(ablation, config, seed)` makes the variant. The variant
holds the twin's own parameters (encdec.torch_model's MultiHeadAttention and FeedForward, the same
names and initialisation) and runs its own forward pass, so encdec.torch_model is untouched: its
default path, and its parity with NumPy to 1e-10, stay exactly as they are. With Ablation() the
variant computes what encdec.torch_model.Seq2Seq computes from the same weights (tests/test_ablations.py).

The decoder-only variant (cross=False) has no encoder and no cross-attention: one stack of
n_encoder_layers + n_decoder_layers causal blocks (self-attention and feed-forward) reads the source,
then <bos> as the separator, then the target, and is trained on the target positions only.
Training knobs (warm-up, label smoothing) are read by encdec.ablation_runs, not by the model.
"""

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .layers import sinusoidal_positions
from .torch_model import FeedForward, MultiHeadAttention, _rms, merge_heads, split_heads


@dataclass(frozen=True)
class Ablation:
    """One row of the ladder: what differs from the full model ([CONFIG], never learned)."""

    name: str = "full model"
    positions: bool = True  # sinusoidal positions added to the embeddings
    scale: bool = True  # scores divided by sqrt(d_k)
    residual: bool = True  # x + sublayer(x); False: sublayer(x) alone
    norm: str = "pre"  # "pre": x + f(norm(x)); "post": norm(x + f(x)); "none": x + f(x)
    cross: bool = True  # False: a decoder-only model on source + <bos> + target
    n_heads: int = 0  # 0: the config's number of heads
    warmup: bool = True  # linear warm-up before the cosine decay (False: the cosine decay from step 1)
    label_smoothing: float = 0.1  # of the training loss; every recorded loss is the plain cross-entropy

    def __post_init__(self):
        if self.norm not in ("pre", "post", "none"):
            raise ValueError(f"norm must be 'pre', 'post' or 'none', got {self.norm!r}")

    def to_dict(self):
        return asdict(self)


FULL = Ablation()
LADDER = [
    FULL,
    Ablation("no positions", positions=False),
    Ablation("no 1/sqrt(d_k)", scale=False),
    Ablation("no residuals", residual=False),
    Ablation("no norm", norm="none"),
    Ablation("post-norm", norm="post"),
    Ablation("no warm-up", warmup=False),
    Ablation("no label smoothing", label_smoothing=0.0),
    Ablation("no cross-attention (decoder-only)", cross=False),
    Ablation("one head", n_heads=1),
]
BY_NAME = {a.name: a for a in LADDER}


def _attend(attn, x, kv, mask, scale):
    """encdec.torch_model.MultiHeadAttention's computation, with or without the 1/sqrt(d_k)."""
    h = attn.n_heads
    Q = split_heads(x @ attn.W_q, h)
    K = split_heads(kv @ attn.W_k, h)
    V = split_heads(kv @ attn.W_v, h)
    heads = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask, scale=None if scale else 1.0)
    return merge_heads(heads) @ attn.W_o


class Block(nn.Module):
    """A block of self-attention, optionally cross-attention, and a feed-forward network."""

    def __init__(self, d_model, n_heads, d_ff, generator, ablation, cross):
        super().__init__()
        self.ab = ablation
        self.self_attn = MultiHeadAttention(d_model, n_heads, generator)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, generator) if cross else None
        self.ffn = FeedForward(d_model, d_ff, generator)
        n_norms = 0 if ablation.norm == "none" else 3 if cross else 2
        self.norm_gammas = nn.ParameterList(nn.Parameter(torch.ones(d_model)) for _ in range(n_norms))

    def _sublayer(self, x, f, gamma):
        norm, residual = self.ab.norm, self.ab.residual
        if norm == "pre":
            y = f(_rms(x, gamma))
            return x + y if residual else y
        y = f(x)
        out = x + y if residual else y
        return _rms(out, gamma) if norm == "post" else out

    def forward(self, x, mask, memory=None, memory_mask=None):
        s = self.ab.scale
        gammas = list(self.norm_gammas) or [None] * 3
        x = self._sublayer(x, lambda z: _attend(self.self_attn, z, z, mask, s), gammas.pop(0))
        if self.cross_attn is not None:
            x = self._sublayer(x, lambda z: _attend(self.cross_attn, z, memory, memory_mask, s), gammas.pop(0))
        return self._sublayer(x, self.ffn, gammas.pop(0))


class Variant(nn.Module):
    """The model of one ablation. forward(src, tgt_in) -> logits (B, m, V) over the target positions."""

    def __init__(self, config, ablation=FULL, seed=0):
        super().__init__()
        self.config, self.ab = config, ablation
        c, g = config, torch.Generator().manual_seed(seed)
        heads = ablation.n_heads or c.n_heads
        emb = torch.empty(c.vocab_size, c.d_model)
        nn.init.normal_(emb, 0.0, 1.0 / math.sqrt(c.d_model), generator=g)
        self.embedding = nn.Parameter(emb)
        if ablation.cross:
            self.encoder = nn.ModuleList(Block(c.d_model, heads, c.d_ff, g, ablation, False)
                                         for _ in range(c.n_encoder_layers))
            n_dec = c.n_decoder_layers
        else:
            self.encoder, n_dec = nn.ModuleList(), c.n_encoder_layers + c.n_decoder_layers
        self.decoder = nn.ModuleList(Block(c.d_model, heads, c.d_ff, g, ablation, ablation.cross)
                                     for _ in range(n_dec))
        if ablation.norm == "pre":  # post-norm blocks end normalised; "none" has no norm at all
            self.encoder_norm_gamma = nn.Parameter(torch.ones(c.d_model)) if ablation.cross else None
            self.decoder_norm_gamma = nn.Parameter(torch.ones(c.d_model))

    def embed(self, tokens):
        x = F.embedding(tokens, self.embedding) * math.sqrt(self.config.d_model)
        if self.ab.positions:
            x = x + torch.from_numpy(sinusoidal_positions(tokens.shape[-1], self.config.d_model)).to(x)
        return x

    def _final(self, x, which):
        return _rms(x, getattr(self, which)) if self.ab.norm == "pre" else x

    def _pad_mask(self, tokens, dtype):
        zero, ninf = torch.zeros((), dtype=dtype), torch.full((), float("-inf"), dtype=dtype)
        return torch.where(tokens == self.config.pad_id, ninf, zero)[..., None, None, :]

    def _causal(self, tokens, dtype):
        m = tokens.shape[-1]
        return torch.triu(torch.full((m, m), float("-inf"), dtype=dtype), 1) + self._pad_mask(tokens, dtype)

    def forward(self, src, tgt_in):
        dtype = self.embedding.dtype
        if not self.ab.cross:  # one causal stack over source, <bos>, target
            seq = torch.cat([src, tgt_in], dim=1)
            x, mask = self.embed(seq), self._causal(seq, dtype)
            for block in self.decoder:
                x = block(x, mask)
            return self._final(x, "decoder_norm_gamma")[:, src.shape[1]:] @ self.embedding.T
        src_mask = self._pad_mask(src, dtype)
        h = self.embed(src)
        for block in self.encoder:
            h = block(h, src_mask)
        h = self._final(h, "encoder_norm_gamma")
        x = self.embed(tgt_in)
        mask = self._causal(tgt_in, dtype)
        for block in self.decoder:
            x = block(x, mask, h, src_mask)
        return self._final(x, "decoder_norm_gamma") @ self.embedding.T

    @torch.no_grad()
    def greedy_decode(self, src, bos_id, eos_id, max_len):
        """(B, n) -> (B, L) ids, pad after each row's first EOS (recomputes the prefix at each step)."""
        pad = self.config.pad_id
        B = src.shape[0]
        tgt_in = torch.full((B, 1), bos_id, dtype=torch.long)
        done = torch.zeros(B, dtype=torch.bool)
        out = []
        for _ in range(max_len):
            logits = self(src, tgt_in)[:, -1]
            logits[:, [pad, bos_id]] = float("-inf")
            nxt = torch.where(done, torch.full_like(done, pad, dtype=torch.long), logits.argmax(-1))
            out.append(nxt)
            done |= nxt == eos_id
            if bool(done.all()):
                break
            tgt_in = torch.cat([tgt_in, nxt[:, None]], dim=1)
        return torch.stack(out, dim=1)


def build(ablation, config, seed=0):
    """The variant of `ablation` for a ModelConfig, initialised from `seed`, in float32 and train mode."""
    return Variant(config, ablation, seed)
