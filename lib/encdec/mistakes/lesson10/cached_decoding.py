"""Exercise 10.6, greedy_decode_cached: the mistakes of greedy decoding with a KV cache in torch (and
`_cross_kv`, `_blocks`, `_banned_argmax`, `_cached_greedy_`, the decoder written out around the cache)."""

import math

from .. import mistake
from .given import attend_, embed_at_, merge_heads_, rms_norm_, split_heads_


# -- Exercise 10.6 greedy_decode_cached ----------------------------------------------------------------------------
def _cross_kv(model, H_enc, normed=False):
    """Every decoder block's cross-attention keys and values, (B, h, n, d_k) each (`normed`: made, wrongly, from
    rms_norm(H_enc, norm2_gamma))."""
    h, eps = model.config.n_heads, model.config.eps
    source = [rms_norm_(H_enc, b.norm2_gamma, eps) if normed else H_enc for b in model.decoder]
    return [(split_heads_(s @ b.cross_attn.W_k, h), split_heads_(s @ b.cross_attn.W_v, h))
            for s, b in zip(source, model.decoder)]


def _blocks(model, x, cache, cross, src_mask, keep_past=True):
    """Every decoder block on the newest position x (B, 1, d_model); cache[i] holds block i's self-attention
    [K, V] (B, h, t, d_k). Returns the logits of the new position, (B, V)."""
    import torch
    h, eps = model.config.n_heads, model.config.eps
    for i, b in enumerate(model.decoder):
        a = rms_norm_(x, b.norm1_gamma, eps)
        K, V = split_heads_(a @ b.self_attn.W_k, h), split_heads_(a @ b.self_attn.W_v, h)
        if keep_past and cache[i] is not None:
            K, V = torch.cat([cache[i][0], K], dim=-2), torch.cat([cache[i][1], V], dim=-2)
        cache[i] = (K, V)
        x = x + merge_heads_(attend_(split_heads_(a @ b.self_attn.W_q, h), K, V)) @ b.self_attn.W_o
        a = rms_norm_(x, b.norm2_gamma, eps)
        x = x + merge_heads_(attend_(split_heads_(a @ b.cross_attn.W_q, h), *cross[i], src_mask)) @ b.cross_attn.W_o
        x = x + b.ffn(rms_norm_(x, b.norm3_gamma, eps))
    return (rms_norm_(x, model.decoder_norm_gamma, eps) @ model.embedding.T)[:, 0]


def _banned_argmax(logits, ids):
    logits = logits.clone()
    logits[:, ids] = float("-inf")
    return logits.argmax(dim=-1)


@mistake("greedy_decode_cached", "recompute_prefix",
         "the decoder runs over the whole prefix at every step (model.decode on <bos> y1 ... y_t), so "
         "nothing is cached: step t pushes t positions through every block, about L^2/2 in all. Feed "
         "only the newest token, at its position, and keep each block's self-attention K and V in a "
         "cache that grows by one row per step.")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):
    import torch
    pad, B = model.config.pad_id, src.shape[0]
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        tgt_in = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out = []
        for _ in range(max_len):
            token = _banned_argmax(model.decode(tgt_in, H_enc, src_mask)[:, -1], [pad, bos_id])
            token = torch.where(done, pad, token)
            out.append(token)
            done = done | (token == eos_id)
            if bool(done.all()):
                break
            tgt_in = torch.cat([tgt_in, token[:, None]], dim=1)
        return torch.stack(out, dim=1)


@mistake("greedy_decode_cached", "cross_kv_every_step",
         "cross-attention's keys and values are computed again at every step, from an encoder output "
         "that never changes while decoding. Compute H_enc @ W_k and H_enc @ W_v of every decoder "
         "block once, before the loop, and reuse them at every step.")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    import torch
    pad, B = model.config.pad_id, src.shape[0]
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        cache = [None] * len(model.decoder)
        token = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out = []
        for t in range(max_len):
            logits = _blocks(model, embed_at_(model, token, t), cache, _cross_kv(model, H_enc), src_mask)
            token = torch.where(done, pad, _banned_argmax(logits, [pad, bos_id]))
            out.append(token)
            done = done | (token == eos_id)
            if bool(done.all()):
                break
        return torch.stack(out, dim=1)


@mistake("greedy_decode_cached", "positions_not_offset",
         "every new token is embedded at position 0 (model.embed(token[:, None]) puts a sequence of "
         "one token at position 0), so the decoder cannot tell the steps apart. The newest token sits "
         "at position t, the number of tokens fed before it: embed_at(model, token, t).")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    import torch
    pad, B = model.config.pad_id, src.shape[0]
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        cross, cache = _cross_kv(model, H_enc), [None] * len(model.decoder)
        token = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out = []
        for _ in range(max_len):
            logits = _blocks(model, model.embed(token[:, None]), cache, cross, src_mask)
            token = torch.where(done, pad, _banned_argmax(logits, [pad, bos_id]))
            out.append(token)
            done = done | (token == eos_id)
            if bool(done.all()):
                break
        return torch.stack(out, dim=1)


@mistake("greedy_decode_cached", "cache_not_extended",
         "the self-attention cache is overwritten with the newest token's K and V instead of growing, "
         "so the new token attends to itself alone and forgets everything generated before. Append "
         "the new row: K = torch.cat([K_cache, K_new], dim=-2), and the same for V.")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    import torch
    pad, B = model.config.pad_id, src.shape[0]
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        cross, cache = _cross_kv(model, H_enc), [None] * len(model.decoder)
        token = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out = []
        for t in range(max_len):
            logits = _blocks(model, embed_at_(model, token, t), cache, cross, src_mask, keep_past=False)
            token = torch.where(done, pad, _banned_argmax(logits, [pad, bos_id]))
            out.append(token)
            done = done | (token == eos_id)
            if bool(done.all()):
                break
        return torch.stack(out, dim=1)


@mistake("greedy_decode_cached", "stops_at_first_eos",
         "the whole batch stops as soon as one sequence says <eos>, cutting the others short. A "
         "finished row only gets pads from then on; stop the loop when every row has finished "
         "(every row has said <eos>), or after max_len steps.")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    import torch
    pad, B = model.config.pad_id, src.shape[0]
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        cross, cache = _cross_kv(model, H_enc), [None] * len(model.decoder)
        token = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
        out = []
        for t in range(max_len):
            token = _banned_argmax(_blocks(model, embed_at_(model, token, t), cache, cross, src_mask), [pad, bos_id])
            out.append(token)
            if bool((token == eos_id).any()):
                break
        return torch.stack(out, dim=1)


@mistake("greedy_decode_cached", "finished_not_padded",
         "a row that has said <eos> keeps generating: the tokens after its <eos> are whatever the model "
         "says next, not pads. Remember per row whether it has finished (a boolean tensor of shape (B,)) "
         "and write the pad id for finished rows: torch.where(finished, pad_id, token).")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    import torch
    pad, B = model.config.pad_id, src.shape[0]
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        cross, cache = _cross_kv(model, H_enc), [None] * len(model.decoder)
        token = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out = []
        for t in range(max_len):
            token = _banned_argmax(_blocks(model, embed_at_(model, token, t), cache, cross, src_mask), [pad, bos_id])
            out.append(token)
            done = done | (token == eos_id)
            if bool(done.all()):
                break
        return torch.stack(out, dim=1)


@mistake("greedy_decode_cached", "specials_not_banned",
         "<bos> and <pad> are not banned, so the decoder may choose them as the next token. Neither "
         "is ever a real output: set their logits to -inf before the argmax, as greedy decoding does.")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    import torch
    pad, B = model.config.pad_id, src.shape[0]
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        cross, cache = _cross_kv(model, H_enc), [None] * len(model.decoder)
        token = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out = []
        for t in range(max_len):
            token = torch.where(done, pad, _blocks(model, embed_at_(model, token, t), cache, cross, src_mask).argmax(-1))
            out.append(token)
            done = done | (token == eos_id)
            if bool(done.all()):
                break
        return torch.stack(out, dim=1)


@mistake("greedy_decode_cached", "float64_positions",
         "a tensor made in float64 (here the positions: torch.from_numpy or torch.tensor of a NumPy array "
         "is float64) meets the weights of a float32 model, and torch refuses to mix the two in a matrix "
         "product. Make new tensors in the model's own dtype and device: .to(model.embedding.dtype), or "
         "use the given embed_at.")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    import torch
    from encdec.layers import sinusoidal_positions
    pad, B = model.config.pad_id, src.shape[0]
    pe = torch.from_numpy(sinusoidal_positions(max_len, model.config.d_model))  # float64, whatever the model
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        cross, cache = _cross_kv(model, H_enc), [None] * len(model.decoder)
        token = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out = []
        for t in range(max_len):
            x = (model.embedding[token] * math.sqrt(model.config.d_model) + pe[t])[:, None]
            token = torch.where(done, pad, _banned_argmax(_blocks(model, x, cache, cross, src_mask), [pad, bos_id]))
            out.append(token)
            done = done | (token == eos_id)
            if bool(done.all()):
                break
        return torch.stack(out, dim=1)


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
def _cached_greedy_(model, src, bos_id, eos_id, steps, plain_mask=False, first_position=0, cross_normed=False):
    import torch
    pad, B = model.config.pad_id, src.shape[0]
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        if plain_mask:
            src_mask = torch.zeros_like(src_mask)
        cross, cache = _cross_kv(model, H_enc, cross_normed), [None] * len(model.decoder)
        token = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out = []
        for t in range(steps):
            x = embed_at_(model, token, t + first_position)
            token = _banned_argmax(_blocks(model, x, cache, cross, src_mask), [pad, bos_id])
            token = torch.where(done, pad, token)
            out.append(token)
            done = done | (token == eos_id)
            if bool(done.all()):
                break
        return torch.stack(out, dim=1) if out else torch.zeros((B, 0), dtype=torch.long)


@mistake("greedy_decode_cached", "one_step_short",
         "the loop runs max_len - 1 times, so a row that needs all max_len tokens is cut one short. Generate "
         "up to max_len tokens: for t in range(max_len).")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _cached_greedy_(model, src, bos_id, eos_id, max_len - 1)


@mistake("greedy_decode_cached", "source_mask_ignored",
         "cross-attention gets a mask of zeros, so the decoder reads the source pads: use the src_mask that "
         "model.encode returns (-inf at the source pads) in every decoder block.")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _cached_greedy_(model, src, bos_id, eos_id, max_len, plain_mask=True)


@mistake("greedy_decode_cached", "positions_from_one",
         "the positions are counted from 1: <bos> is embedded at position 1 and the token fed at step t at t + 1, "
         "where the model was trained with <bos> at position 0 (model.embed puts the first token of a sequence at "
         "0). The newest token sits at position t, the number of tokens fed before it: embed_at(model, token, t), "
         "with t from 0.")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _cached_greedy_(model, src, bos_id, eos_id, max_len, first_position=1)


@mistake("greedy_decode_cached", "cross_kv_from_normed_encoder_output",
         "cross-attention's keys and values are made from rms_norm(H_enc, norm2_gamma). That norm belongs to the "
         "decoder's side only: it normalises the queries' input, x. The encoder output H_enc has had its own final "
         "norm already and is projected as it is: K = H_enc @ W_k, V = H_enc @ W_v in every decoder block.")
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _cached_greedy_(model, src, bos_id, eos_id, max_len, cross_normed=True)
