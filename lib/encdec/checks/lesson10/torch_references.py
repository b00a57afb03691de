"""The torch side of Lesson 10's checks, built on first use: the references the checks compare answers
with (the exercises' own torch functions, and what the notebook gives), the scripted Seq2Seq that
exact_match's check decodes with, and the function mode that counts the rows each weight multiplies.

torch is imported inside `references()`, never with this module (see the package's docstring).
"""

import contextlib
import functools
import math
from types import SimpleNamespace

import numpy as np

from ... import optim
from ...model import ModelConfig
from ..fixtures import BOS, EOS, PAD


@functools.cache
def references():
    """The torch references the checks compare with, and the instruments they observe answers with."""
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode

    from ... import capstone
    from ... import torch_model as tm
    from ...layers import sinusoidal_positions

    # what the notebook gives, for the references' own use
    def rms_norm(x, gamma, eps=1e-6):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * gamma

    def attend(Q, K, V, mask=None):
        scores = Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])
        if mask is not None:
            scores = scores + mask
        return scores.softmax(dim=-1) @ V

    def embed_at(model, tokens, position):
        d = model.config.d_model
        x = F.embedding(tokens[:, None], model.embedding) * math.sqrt(d)
        pe = torch.from_numpy(sinusoidal_positions(position + 1, d)[position])
        return x + pe.to(device=x.device, dtype=x.dtype)

    # the answers
    def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):
        return float(optim.warmup_cosine_schedule(step, peak_lr, warmup_steps, total_steps, min_lr))

    def make_optimizer(model, lr, weight_decay, betas):
        params = list(model.parameters())
        groups = [{"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
                  {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=lr, betas=betas)

    def train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):
        for group in optimizer.param_groups:
            group["lr"] = lr
        tgt_in = torch.cat([torch.full_like(tgt[:, :1], bos_id), tgt[:, :-1]], dim=1)
        logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=model.config.pad_id)
        optimizer.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
        return loss.item(), norm.item()

    def exact_match(model, src, tgt, bos_id, eos_id, max_len):
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                pred = model.greedy_decode(src, bos_id, eos_id, max_len)
        finally:
            model.train(was_training)
        pad = model.config.pad_id
        width = max(pred.shape[1], tgt.shape[1])
        pred = F.pad(pred, (0, width - pred.shape[1]), value=pad)
        target = F.pad(tgt, (0, width - tgt.shape[1]), value=pad)
        is_eos = target == eos_id
        compared = ((is_eos.cumsum(dim=1) - is_eos.long()) == 0) & (target != pad)  # up to the first <eos>
        return ((pred == target) | ~compared).all(dim=1).double().mean().item()

    def start_decoding(model, src):
        """Encode once; every decoder block's cross-attention K, V once; empty self-attention caches."""
        H_enc, src_mask = model.encode(src)
        h = model.config.n_heads
        cross = [(tm.split_heads(H_enc @ b.cross_attn.W_k, h), tm.split_heads(H_enc @ b.cross_attn.W_v, h))
                 for b in model.decoder]
        return {"cross": cross, "src_mask": src_mask, "self": [None] * len(model.decoder), "t": 0}

    def decoder_step(model, state, tokens):
        """Feed tokens (B,) at position state['t']; returns the logits (B, V) of the new position."""
        h, eps = model.config.n_heads, model.config.eps
        x = embed_at(model, tokens, state["t"])  # (B, 1, d_model)
        for i, b in enumerate(model.decoder):
            a = rms_norm(x, b.norm1_gamma, eps)
            K, V = tm.split_heads(a @ b.self_attn.W_k, h), tm.split_heads(a @ b.self_attn.W_v, h)  # (B, h, 1, d_k)
            if state["self"][i] is not None:
                K = torch.cat([state["self"][i][0], K], dim=-2)
                V = torch.cat([state["self"][i][1], V], dim=-2)
            state["self"][i] = (K, V)
            x = x + tm.merge_heads(attend(tm.split_heads(a @ b.self_attn.W_q, h), K, V)) @ b.self_attn.W_o
            a = rms_norm(x, b.norm2_gamma, eps)
            K_c, V_c = state["cross"][i]
            x = x + tm.merge_heads(attend(tm.split_heads(a @ b.cross_attn.W_q, h), K_c, V_c, state["src_mask"])) \
                @ b.cross_attn.W_o
            x = x + b.ffn(rms_norm(x, b.norm3_gamma, eps))
        state["t"] += 1
        return (rms_norm(x, model.decoder_norm_gamma, eps) @ model.embedding.T)[:, 0]

    def greedy_decode_cached(model, src, bos_id, eos_id, max_len):
        pad = model.config.pad_id
        with torch.no_grad():
            state = start_decoding(model, src)
            token = torch.full((src.shape[0],), bos_id, dtype=torch.long, device=src.device)
            done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
            out = []
            for _ in range(max_len):
                logits = decoder_step(model, state, token).clone()
                logits[:, [pad, bos_id]] = float("-inf")
                token = torch.where(done, pad, logits.argmax(dim=-1))
                out.append(token)
                done = done | (token == eos_id)
                if bool(done.all()):
                    break
            return torch.stack(out, dim=1)

    def cached_logits(model, src, tgt_in):
        """Teacher forcing through the cache: tgt_in (B, m) fed one column per step; logits (B, m, V)."""
        with torch.no_grad():
            state = start_decoding(model, src)
            return torch.stack([decoder_step(model, state, tgt_in[:, t]) for t in range(tgt_in.shape[1])], dim=1)

    class ScriptedSeq2Seq(tm.Seq2Seq):
        """A tiny torch Seq2Seq whose decoder follows a script: at position j of the row whose source is
        sources[r], the largest logit is scripts[r][j], whatever the decoder reads. So greedy decoding
        (the model's own, or any loop over decode) returns the scripted outputs. Records, each time it is
        called from outside, whether it is in training mode and whether autograd records (`seen`)."""

        def __init__(self, sources, scripts, vocab_size=12, bos_id=BOS, eos_id=EOS, pad_id=PAD):
            super().__init__(ModelConfig(vocab_size=vocab_size, d_model=8, n_heads=2, d_ff=8, n_encoder_layers=1,
                                         n_decoder_layers=1, pad_id=pad_id), seed=0)
            self.rows = {self._key(s): r for r, s in enumerate(sources)}
            width = 64
            scripted = np.full((len(scripts), width), eos_id, dtype=np.int64)
            for r, s in enumerate(scripts):
                scripted[r, :len(s)] = s
            self.scripts = torch.from_numpy(scripted)
            self.bos_id, self.eos_id = bos_id, eos_id
            self.seen = []
            self.depth = 0

        def _key(self, tokens):
            return tuple(int(t) for t in tokens if int(t) != self.config.pad_id)

        @contextlib.contextmanager
        def _called(self, what):
            if self.depth == 0:
                self.seen.append((what, any(m.training for m in self.modules()), torch.is_grad_enabled()))
            self.depth += 1
            try:
                yield
            finally:
                self.depth -= 1

        def encode(self, src):
            with self._called("encode"):
                rows = torch.tensor([self.rows[self._key(s)] for s in src.reshape(-1, src.shape[-1])])
                H = torch.zeros(*src.shape, self.config.d_model, dtype=self.embedding.dtype)
                H[..., 0, 0] = rows.reshape(src.shape[:-1]).to(H.dtype)  # the row, for decode to read
                return H, self.padding_mask(src, H.dtype)

        def decode(self, tgt_in, H_enc, src_mask, return_attention=False):
            with self._called("decode"):
                rows = H_enc[..., 0, 0].long()  # (B,)
                m = tgt_in.shape[-1]
                script = self.scripts[rows][..., :m].clone()  # (B, m)
                # a decoder started from another token than the script's <bos> says <eos> at once, as a
                # model conditioned on a start token it never saw says something else
                script[tgt_in[..., 0] != self.bos_id] = self.eos_id
                logits = torch.zeros(*script.shape, self.config.vocab_size, dtype=H_enc.dtype)
                logits.scatter_(-1, script[..., None], 8.0)
                return (logits, [None]) if return_attention else logits

        def forward(self, src, tgt_in):
            with self._called("forward"):
                return super().forward(src, tgt_in)

        def greedy_decode(self, src, bos_id, eos_id, max_len):
            with self._called("greedy_decode"):
                return tm.Seq2Seq.greedy_decode(self, src, bos_id, eos_id, max_len)

    matmuls = {torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.Tensor.__rmatmul__, torch.mm,
               torch.Tensor.mm, torch.bmm, torch.Tensor.bmm, F.linear, torch.einsum, torch.addmm, torch.Tensor.addmm,
               torch.baddbmm, torch.Tensor.baddbmm, torch.tensordot, torch.inner, torch.mv, torch.Tensor.mv,
               torch.chain_matmul, torch.linalg.multi_dot}

    def tensors_in(obj):
        if isinstance(obj, torch.Tensor):
            yield obj
        elif isinstance(obj, (list, tuple)):
            for o in obj:
                yield from tensors_in(o)
        elif isinstance(obj, dict):
            for o in obj.values():
                yield from tensors_in(o)

    class WeightRows(TorchFunctionMode):
        """Counts, for each watched weight matrix, the rows (positions) multiplied by it. A tensor made
        from a watched weight (a view, a copy, a concatenation) is watched under the same labels, so
        fused projections (x @ torch.cat([W_q, W_k, W_v], 1)) count for each of their parts."""

        def __init__(self, weights, d_model):
            super().__init__()
            self.labels = {w.untyped_storage().data_ptr(): frozenset([label]) for label, w in weights.items()}
            self.rows = {label: 0 for label in weights}
            self.d_model = d_model
            self.keep = []  # derived watched tensors stay alive, so their memory is never reused

        def _labels(self, t):
            try:
                return self.labels.get(t.untyped_storage().data_ptr(), frozenset())
            except (RuntimeError, NotImplementedError):
                return frozenset()

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            inputs = [(t, self._labels(t)) for t in tensors_in((args, kwargs))]
            hit = frozenset().union(*(labels for _, labels in inputs))
            if not hit:
                return out
            if func in matmuls:
                rows = sum(t.numel() // self.d_model for t, labels in inputs if not labels)
                for label in hit:
                    self.rows[label] += rows
            else:
                for t in tensors_in(out):
                    key = t.untyped_storage().data_ptr()
                    self.labels[key] = self.labels.get(key, frozenset()) | hit
                    self.keep.append(t)
            return out

    for f in (lr_at, make_optimizer, train_step, exact_match, greedy_decode_cached, cached_logits, decoder_step):
        f.__qualname__ = f.__name__  # messages name `lr_at`, not `references.<locals>.lr_at`
    return SimpleNamespace(
        torch=torch, F=F, tm=tm, capstone=capstone, rms_norm=rms_norm, attend=attend, embed_at=embed_at,
        lr_at=lr_at, make_optimizer=make_optimizer, train_step=train_step, exact_match=exact_match,
        greedy_decode_cached=greedy_decode_cached, cached_logits=cached_logits, start_decoding=start_decoding,
        decoder_step=decoder_step, ScriptedSeq2Seq=ScriptedSeq2Seq, WeightRows=WeightRows)
