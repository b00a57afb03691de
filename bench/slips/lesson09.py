"""Slips in Lesson 9: greedy decoding, sampling, beam search, the cached decoder step, cached greedy decoding."""

import numpy as np

from encdec import KVCache, decode_step, log_softmax, rms_norm, softmax  # noqa: F401  (the setup cell's)

from . import slip


# -- 9.1 greedy_decode --------------------------------------------------------------------------------------------
def _greedy(model, src, bos_id, eos_id, max_len, *, ban=True, position=-1, pad_finished=True, stop=True):
    src = np.asarray(src)
    single = src.ndim == 1
    if single:
        src = src[None]
    pad, B = model.config.pad_id, src.shape[0]
    H_enc, src_mask = model.encode(src)
    tgt_in = np.full((B, 1), bos_id)
    out = np.zeros((B, 0), dtype=np.int64)
    done = np.zeros(B, dtype=bool)
    for _ in range(max_len):
        logits = model.decode(tgt_in, H_enc, src_mask)[:, position].copy()
        if ban:
            logits[:, [pad, bos_id]] = -np.inf
        token = logits.argmax(axis=-1)
        if pad_finished:
            token = np.where(done, pad, token)
        out = np.concatenate([out, token[:, None]], axis=1)
        done |= token == eos_id
        if stop and done.all():
            break
        tgt_in = np.concatenate([tgt_in, token[:, None]], axis=1)
    return out[0] if single else out


@slip("greedy_decode", "no_ban", "never bans <bos> and <pad> before the argmax",
      expect=("ban", "bos and pad", "<bos> and <pad>", "special token"))
def greedy_decode(model, src, bos_id, eos_id, max_len):
    return _greedy(model, src, bos_id, eos_id, max_len, ban=False)


@slip("greedy_decode", "first_position", "takes the next token from the first position's logits, logits[:, 0]",
      expect=("last", "position"), preserves_shape=False)
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _greedy(model, src, bos_id, eos_id, max_len, position=0)


@slip("greedy_decode", "finished_rows_continue", "stops when every row has ended, but finished rows keep "
      "generating instead of getting pads", expect=("pad", "eos", "ended", "finished"))
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _greedy(model, src, bos_id, eos_id, max_len, pad_finished=False)


@slip("greedy_decode", "never_stops", "pads finished rows but never stops before max_len",
      expect=("stop", "eos"), preserves_shape=False)
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _greedy(model, src, bos_id, eos_id, max_len, stop=False)


@slip("greedy_decode", "bos_kept", "returns the decoder input, <bos> included",
      expect=("<bos>", "bos"), preserves_shape=False)
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    src = np.asarray(src)
    out = _greedy(model, src, bos_id, eos_id, max_len)
    bos = np.full(out.shape[:-1] + (1,), bos_id, dtype=out.dtype)
    return np.concatenate([bos, out], axis=-1)


# -- 9.2 sample_next_token ------------------------------------------------------------------------------------------
def _sample(logits, temperature, top_k, top_p, rng, *, multiply_t=False, k_shift=0, strict_p=False,
            p_first=False, no_renormalise=False):
    rng = np.random.default_rng(rng)
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(z, axis=-1)
    z = z * temperature if multiply_t else z / temperature

    def top_k_filter(z):
        if top_k is None:
            return z
        kth = np.sort(z, axis=-1)[..., -(top_k + k_shift)][..., None]
        return np.where(z >= kth, z, -np.inf)

    def top_p_filter(p):
        if top_p is None:
            return p
        order = np.argsort(-p, axis=-1, kind="stable")
        sorted_p = np.take_along_axis(p, order, axis=-1)
        cum = np.cumsum(sorted_p, axis=-1)
        keep_sorted = cum < top_p if strict_p else (cum - sorted_p) < top_p
        keep_sorted[..., 0] = True
        keep = np.zeros(p.shape, dtype=bool)
        np.put_along_axis(keep, order, keep_sorted, axis=-1)
        p = np.where(keep, p, 0.0)
        return p / p.sum(axis=-1, keepdims=True)

    if p_first:
        p = top_p_filter(softmax(z, axis=-1))
        p = softmax(top_k_filter(np.log(p)), axis=-1)
    else:
        p = top_p_filter(softmax(top_k_filter(z), axis=-1))
    cdf = np.cumsum(p, axis=-1)
    u = rng.random(p.shape[:-1] + (1,))
    if not no_renormalise:
        u = u * cdf[..., -1:]
    return np.minimum(np.sum(cdf <= u, axis=-1), p.shape[-1] - 1)


@slip("sample_next_token", "temperature_multiplied", "multiplies the logits by the temperature instead of dividing",
      expect=("temperature",))
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):
    return _sample(logits, temperature, top_k, top_p, rng, multiply_t=True)


@slip("sample_next_token", "top_k_plus_one", "keeps the k + 1 largest logits (indexes the sorted row at -(k + 1))",
      expect=("top-k", "top_k", "k-th", "k largest", "k tokens"))
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    return _sample(logits, temperature, top_k, top_p, rng, k_shift=1)


@slip("sample_next_token", "nucleus_drops_crossing_token", "keeps the tokens whose cumulative probability is below p, "
      "dropping the one that reaches p", expect=("top-p", "top_p", "nucleus", "reaches", "cross"))
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    return _sample(logits, temperature, top_k, top_p, rng, strict_p=True)


@slip("sample_next_token", "top_p_before_top_k", "filters with top-p first, then top-k",
      expect=("order", "top-k", "before"))
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    return _sample(logits, temperature, top_k, top_p, rng, p_first=True)


@slip("sample_next_token", "unnormalised_cdf", "draws u in [0, 1) against the CDF of the filtered but not "
      "renormalised probabilities: the excess lands on the last token",
      expect=("renormal", "normalis", "normaliz", "sum to 1"))
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(z, axis=-1)
    p = softmax(z / temperature, axis=-1)
    if top_k is not None:
        kth = np.sort(p, axis=-1)[..., -top_k][..., None]
        p = np.where(p >= kth, p, 0.0)
    if top_p is not None:
        order = np.argsort(-p, axis=-1, kind="stable")
        sorted_p = np.take_along_axis(p, order, axis=-1)
        keep = np.zeros(p.shape, dtype=bool)
        np.put_along_axis(keep, order, (np.cumsum(sorted_p, axis=-1) - sorted_p) < top_p, axis=-1)
        p = np.where(keep, p, 0.0)
    cdf = np.cumsum(p, axis=-1)
    u = rng.random(p.shape[:-1] + (1,))
    return np.minimum(np.sum(cdf <= u, axis=-1), p.shape[-1] - 1)


# -- 9.3 beam_search ------------------------------------------------------------------------------------------------
def _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, *, normalise=True, ban=True, ban_after=False,
          rank_check=True, finished_take_slot=False, length_without_eos=False):
    banned = [model.config.pad_id, bos_id]
    H_enc, src_mask = model.encode(np.asarray(src)[None])
    live, finished = [((), 0.0)], []
    for _ in range(max_len):
        tgt_in = np.array([(bos_id,) + toks for toks, _ in live])
        logits = model.decode(tgt_in, H_enc, src_mask)[:, -1].copy()
        if ban and not ban_after:
            logits[:, banned] = -np.inf
        logp = log_softmax(logits)
        if ban and ban_after:
            logp[:, banned] = -np.inf
        total = np.array([s for _, s in live])[:, None] + logp
        new_live, taken = [], 0
        for rank, flat in enumerate(np.argsort(-total, axis=None, kind="stable")):
            b, tok = divmod(int(flat), total.shape[1])
            if not np.isfinite(total[b, tok]):
                break
            hyp = (live[b][0] + (tok,), float(total[b, tok]))
            if tok == eos_id:
                if rank < beam_width or not rank_check:
                    finished.append(hyp)
                    taken += finished_take_slot
            else:
                new_live.append(hyp)
            if len(new_live) + taken >= beam_width:
                break
        live = new_live
        if len(finished) >= beam_width or not live:
            break

    def score(hyp):
        if not normalise:
            return hyp[1]
        length = len(hyp[0]) - (1 if length_without_eos and hyp[0] and hyp[0][-1] == eos_id else 0)
        return hyp[1] / max(length, 1) ** alpha

    best = sorted(finished, key=score, reverse=True)[:beam_width]
    best += sorted(live, key=score, reverse=True)[: beam_width - len(best)]
    return [(np.array(toks), score((toks, s))) for toks, s in best]


@slip("beam_search", "no_length_normalisation", "ranks and scores by the raw total log-probability",
      expect=("length", "normalis", "normaliz", "alpha"), preserves_shape=False)
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, normalise=False)


@slip("beam_search", "length_without_eos", "does not count <eos> in the length |y|",
      expect=("length", "<eos>", "eos"))
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, length_without_eos=True)


@slip("beam_search", "ban_after_log_softmax", "bans <bos> and <pad> after log_softmax, so the allowed tokens' "
      "probabilities no longer sum to 1", expect=("ban", "before", "log_softmax", "sum to 1"))
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, ban_after=True)


@slip("beam_search", "eos_any_rank", "lets an <eos> candidate finish at any rank, not only below beam_width",
      expect=("rank", "beam_width"), preserves_shape=False)
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, rank_check=False)


@slip("beam_search", "finished_take_a_slot", "counts a finished hypothesis against the beam's beam_width slots",
      expect=("slot", "finished", "beam_width"))
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, finished_take_slot=True)


@slip("beam_search", "no_ban", "never bans <bos> and <pad>",
      expect=("ban", "bos and pad", "<bos> and <pad>", "special token"), preserves_shape=False)
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, ban=False)


# -- 9.4 decode_step ---------------------------------------------------------------------------------------------------
def _step(model, tokens, cache, *, extend=True, offset=True, count=True, cross_mask=True, norm_first=True):
    x = model.embed(np.asarray(tokens)[..., None], offset=cache.length if offset else 0)
    for i, block in enumerate(model.decoder):
        h = rms_norm(x, block.norm1_gamma, block.eps)
        K_new, V_new = block.self_attn.project_kv(h if norm_first else x)
        if extend:
            K, V = cache.append(i, K_new, V_new)
        else:
            K, V = K_new, V_new
            cache.self_k[i], cache.self_v[i] = K, V
        x = x + block.self_attn.attend(h, K, V)[0]
        h = rms_norm(x, block.norm2_gamma, block.eps)
        x = x + block.cross_attn.attend(h, cache.cross_k[i], cache.cross_v[i],
                                        cache.src_mask if cross_mask else None)[0]
        x = x + block.ffn(rms_norm(x, block.norm3_gamma, block.eps))
    if count:
        cache.length += 1
    h = rms_norm(x, model.decoder_norm_gamma, model.config.eps)
    return (h @ model.embedding.T)[..., 0, :]


@slip("decode_step", "cache_not_extended", "replaces the self-attention cache with the new row instead of appending it",
      expect=("cache", "append", "extend", "grow"))
def decode_step(model, tokens, cache):  # noqa: F811
    return _step(model, tokens, cache, extend=False)


@slip("decode_step", "position_0", "embeds every new token at position 0",
      expect=("position", "offset"))
def decode_step(model, tokens, cache):  # noqa: F811
    return _step(model, tokens, cache, offset=False)


@slip("decode_step", "length_not_counted", "never increments cache.length",
      expect=("length",))
def decode_step(model, tokens, cache):  # noqa: F811
    return _step(model, tokens, cache, count=False)


@slip("decode_step", "cross_mask_dropped", "attends to the source without cache.src_mask",
      expect=("mask", "pad"))
def decode_step(model, tokens, cache):  # noqa: F811
    return _step(model, tokens, cache, cross_mask=False)


@slip("decode_step", "kv_from_unnormalised", "projects the new keys and values from x, not from its RMSNorm",
      expect=("norm", "norm1_gamma"))
def decode_step(model, tokens, cache):  # noqa: F811
    return _step(model, tokens, cache, norm_first=False)


from encdec import decode_step  # noqa: E402,F811  (the right one again, for Exercise 9.5)


# -- 9.5 cached_greedy_decode ----------------------------------------------------------------------------------------
def _cached(model, src, bos_id, eos_id, max_len, *, ban=True, feed_new=True, pad_finished=True, stop=True):
    src = np.asarray(src)
    single = src.ndim == 1
    if single:
        src = src[None]
    pad, B = model.config.pad_id, src.shape[0]
    H_enc, src_mask = model.encode(src)
    cache = KVCache(model, H_enc, src_mask)
    token = np.full(B, bos_id)
    fed = token
    out = np.zeros((B, 0), dtype=np.int64)
    done = np.zeros(B, dtype=bool)
    for _ in range(max_len):
        logits = decode_step(model, fed, cache).copy()
        if ban:
            logits[:, [pad, bos_id]] = -np.inf
        token = logits.argmax(axis=-1)
        if pad_finished:
            token = np.where(done, pad, token)
        out = np.concatenate([out, token[:, None]], axis=1)
        done |= token == eos_id
        if stop and done.all():
            break
        if feed_new:
            fed = token
    return out[0] if single else out


@slip("cached_greedy_decode", "no_ban", "never bans <bos> and <pad>",
      expect=("ban", "bos and pad", "<bos> and <pad>", "special token"))
def cached_greedy_decode(model, src, bos_id, eos_id, max_len):
    return _cached(model, src, bos_id, eos_id, max_len, ban=False)


@slip("cached_greedy_decode", "feeds_bos_every_step", "feeds <bos> at every step instead of the token just chosen",
      expect=("newest", "token just", "chosen", "feed"), preserves_shape=False)
def cached_greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _cached(model, src, bos_id, eos_id, max_len, feed_new=False)


@slip("cached_greedy_decode", "finished_rows_continue", "lets finished rows keep generating instead of padding them",
      expect=("pad", "eos", "ended", "finished"))
def cached_greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _cached(model, src, bos_id, eos_id, max_len, pad_finished=False)


@slip("cached_greedy_decode", "never_stops", "never stops before max_len",
      expect=("stop", "eos"), preserves_shape=False)
def cached_greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _cached(model, src, bos_id, eos_id, max_len, stop=False)
