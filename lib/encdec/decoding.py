"""Generating with the model: greedy decoding (with and without a KV cache), sampling, beam search.

Generated sequences never contain BOS or pad: both are banned at every step. They end at the
first EOS (included) or after max_len tokens.

The KV cache: the encoder output H_enc is fixed while decoding, so each decoder block's
cross-attention K and V are computed once. Decoder self-attention keys and values of past
positions never change either (the causal mask means position t never sees anything after
it), so each step computes K, V for the new token only and appends one row to the cache.

Decoding is inference: it never applies dropout, whatever mode the model is in. greedy_decode and
beam_search run the model in eval mode and give it back in the mode it came in; decode_step and
KVCache use only pieces that never drop anything (embed, rms_norm, project_kv, attend, ffn).
"""

import contextlib

import numpy as np

from .attention import softmax
from .layers import rms_norm
from .loss import log_softmax


@contextlib.contextmanager
def _eval_mode(model):
    """Run the block with the model in eval mode (no dropout), then restore the mode it had."""
    was_training = getattr(model, "training", False)
    if was_training:
        model.eval()
    try:
        yield model
    finally:
        if was_training:
            model.train()


class KVCache:
    """[STATE] of a decoding run. For each decoder block: self_k, self_v (..., h, t, d_k),
    growing by one row per step; cross_k, cross_v (..., h, n, d_k), computed once."""

    def __init__(self, model, H_enc, src_mask):
        self.src_mask = src_mask
        self.self_k = [None] * len(model.decoder)
        self.self_v = [None] * len(model.decoder)
        self.cross_k, self.cross_v = [], []
        for block in model.decoder:
            K, V = block.cross_attn.project_kv(H_enc)
            self.cross_k.append(K)
            self.cross_v.append(V)
        self.length = 0

    def append(self, i, K_new, V_new):
        if self.self_k[i] is None:
            self.self_k[i], self.self_v[i] = K_new, V_new
        else:
            self.self_k[i] = np.concatenate([self.self_k[i], K_new], axis=-2)
            self.self_v[i] = np.concatenate([self.self_v[i], V_new], axis=-2)
        return self.self_k[i], self.self_v[i]


def decode_step(model, tokens, cache):
    """Feed one new token per sequence at position cache.length; returns its logits (..., V)."""
    x = model.embed(np.asarray(tokens)[..., None], offset=cache.length)  # (..., 1, d_model)
    for i, block in enumerate(model.decoder):
        normed = rms_norm(x, block.norm1_gamma, block.eps)
        K_new, V_new = block.self_attn.project_kv(normed)  # (..., h, 1, d_k)
        K, V = cache.append(i, K_new, V_new)  # (..., h, t + 1, d_k): only the past, no mask needed
        out, _ = block.self_attn.attend(normed, K, V)
        x = x + out
        out, _ = block.cross_attn.attend(rms_norm(x, block.norm2_gamma, block.eps), cache.cross_k[i],
                                         cache.cross_v[i], cache.src_mask)
        x = x + out
        x = x + block.ffn(rms_norm(x, block.norm3_gamma, block.eps))
    cache.length += 1
    h = rms_norm(x, model.decoder_norm_gamma, model.config.eps)
    return (h @ model.embedding.T)[..., 0, :]


def _ban(logits, banned):
    logits = np.array(logits, dtype=np.float64)
    logits[..., list(banned)] = -np.inf
    return logits


def greedy_decode(model, src, bos_id, eos_id, max_len, use_cache=True):
    """Pick the most probable token at every step.

    Inputs:  src (n,) or (B, n) ids; max_len the most tokens to generate.
    Returns: (L,) or (B, L) generated ids without BOS, each row ending at its first EOS and
             padded with pad_id after it; L <= max_len is the longest row.
    """
    src = model.check_tokens(src, "src")
    single = src.ndim == 1
    src2 = src[None] if single else src
    if src2.ndim != 2:
        raise ValueError(f"src must have shape (n,) or (B, n), got {src.shape}")
    pad = model.config.pad_id
    banned = {pad, bos_id}
    B = src2.shape[0]
    generated = np.full((B, 0), pad, dtype=np.int64)
    done = np.zeros(B, dtype=bool)
    tgt_in = np.full((B, 1), bos_id, dtype=np.int64)
    with _eval_mode(model):
        H_enc, src_mask = model.encode(src2)
        cache = KVCache(model, H_enc, src_mask) if use_cache else None
        for _ in range(max_len):
            if use_cache:
                logits = decode_step(model, tgt_in[:, -1], cache)
            else:
                logits = model.decode(tgt_in, H_enc, src_mask)[:, -1]
            nxt = np.argmax(_ban(logits, banned), axis=-1)
            nxt = np.where(done, pad, nxt)
            generated = np.concatenate([generated, nxt[:, None]], axis=1)
            done |= nxt == eos_id
            if done.all():
                break
            tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
    return generated[0] if single else generated


def next_token_distribution(logits, temperature=1.0, top_k=None, top_p=None):
    """The distribution sample_next_token draws from.

    softmax(logits / temperature), restricted to the top_k most probable tokens and then to
    the smallest set of most probable tokens whose probability reaches top_p (the top token is
    always kept), renormalised. temperature=0 puts all the mass on the argmax.
    Inputs: logits (..., V). Returns: probabilities (..., V).
    """
    logits = np.asarray(logits, dtype=np.float64)
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    V = logits.shape[-1]
    if temperature == 0:
        return np.eye(V)[np.argmax(logits, axis=-1)]
    z = logits / temperature
    if top_k is not None:
        if not 1 <= top_k <= V:
            raise ValueError(f"top_k must lie in [1, {V}] for logits of shape {logits.shape}, got {top_k}")
        kth = np.sort(z, axis=-1)[..., V - top_k][..., None]
        z = np.where(z >= kth, z, -np.inf)
    probs = softmax(z, axis=-1)
    if top_p is not None:
        if not 0 < top_p <= 1:
            raise ValueError(f"top_p must lie in (0, 1], got {top_p}")
        order = np.argsort(-probs, axis=-1, kind="stable")
        sorted_p = np.take_along_axis(probs, order, axis=-1)
        before = np.cumsum(sorted_p, axis=-1) - sorted_p  # mass of the tokens ranked above
        keep_sorted = before < top_p
        keep = np.zeros_like(keep_sorted)
        np.put_along_axis(keep, order, keep_sorted, axis=-1)
        probs = softmax(np.where(keep, z, -np.inf), axis=-1)
    return probs


def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):
    """Draw one token id per row from next_token_distribution(logits, ...).

    Inputs:  logits (..., V); rng a numpy Generator (or seed) for reproducible draws.
    Returns: integer ids of shape (...).
    """
    rng = np.random.default_rng(rng)
    probs = next_token_distribution(logits, temperature, top_k, top_p)
    cdf = np.cumsum(probs, axis=-1)
    u = rng.random(probs.shape[:-1] + (1,)) * cdf[..., -1:]
    return np.minimum(np.sum(cdf <= u, axis=-1), probs.shape[-1] - 1).astype(np.int64)


def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):
    """Keep the beam_width best partial outputs at every step; rank by length-normalised score.

    score(y) = sum_t log p(y_t | y_<t, x) / len(y)^alpha, len counting EOS.
    Inputs:  src (n,) one source sequence.
    Returns: a list of at most beam_width (tokens (L,), normalised score), best first: the
             finished hypotheses (ending in EOS); unfinished ones follow only when fewer than
             beam_width finished. With beam_width=1 the first entry is exactly greedy_decode's output.
    """
    src = model.check_tokens(src, "src")
    if src.ndim != 1:
        raise ValueError(f"beam_search decodes one source sequence of shape (n,), got {src.shape}")
    if beam_width < 1:
        raise ValueError(f"beam_width must be at least 1, got {beam_width}")
    banned = {model.config.pad_id, bos_id}
    live = [((), 0.0)]  # (tokens, sum of log-probabilities)
    finished = []
    with _eval_mode(model):
        H_enc, src_mask = model.encode(src[None])
        for _ in range(max_len):
            tgt_in = np.array([(bos_id,) + toks for toks, _ in live])
            k = len(live)
            logits = model.decode(tgt_in, np.broadcast_to(H_enc, (k,) + H_enc.shape[1:]), src_mask)[:, -1]
            logp = log_softmax(_ban(logits, banned), axis=-1)  # (k, V)
            total = np.array([s for _, s in live])[:, None] + logp
            flat = np.argsort(-total, axis=None, kind="stable")
            new_live = []
            for rank, idx in enumerate(flat):
                b, tok = divmod(int(idx), logp.shape[1])
                if not np.isfinite(total[b, tok]):
                    break
                toks = live[b][0] + (tok,)
                if tok == eos_id:
                    if rank < beam_width:
                        finished.append((toks, float(total[b, tok])))
                else:
                    new_live.append((toks, float(total[b, tok])))
                if len(new_live) == beam_width:
                    break
            live = new_live
            if len(finished) >= beam_width or not live:
                break

    def normalised(hyp):
        toks, s = hyp
        return s / len(toks) ** alpha

    results = sorted(finished, key=normalised, reverse=True)[:beam_width]  # one step may finish several
    if len(results) < beam_width:
        results += sorted(live, key=normalised, reverse=True)[: beam_width - len(results)]
    return [(np.array(toks, dtype=np.int64), normalised((toks, s))) for toks, s in results]
