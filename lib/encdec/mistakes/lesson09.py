"""Lesson 09: greedy decoding, sampling the next token, beam search, one cached decoder step and
greedy decoding with the KV cache.

The decoding mistakes call the reference model's own encode and decode (and, for the cached ones,
the reference KVCache and decode_step: `KVCache_`, `decode_step_`), so each one shows exactly one
wrong idea about decoding.
"""

import numpy as np

from ..decoding import KVCache as KVCache_
from ..decoding import decode_step as decode_step_
from ..layers import rms_norm
from ..loss import log_softmax
from . import mistake


def _banned(logits, ids):
    logits = np.array(logits, dtype=np.float64)
    logits[..., list(ids)] = -np.inf
    return logits


# -- Exercise 9.1 greedy_decode ----------------------------------------------------------------------------
@mistake("greedy_decode", "never_stops_at_eos",
         "decoding does not stop at EOS: it always runs max_len steps, so the output goes on after "
         "the sentence has ended. Stop a row at its first EOS (pad it from there on) and stop the "
         "loop once every row has produced EOS.")
def greedy_decode(model, src, bos_id, eos_id, max_len):
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    H_enc, src_mask = model.encode(src2)
    tgt_in = np.full((src2.shape[0], 1), bos_id)
    for _ in range(max_len):
        logits = _banned(model.decode(tgt_in, H_enc, src_mask)[:, -1], [model.config.pad_id, bos_id])
        tgt_in = np.concatenate([tgt_in, np.argmax(logits, axis=-1)[:, None]], axis=1)
    out = tgt_in[:, 1:]
    return out[0] if single else out


@mistake("greedy_decode", "first_position_logits",
         "the next token is read from the logits of the first position (logits[:, 0]) instead of the "
         "last. Position t predicts token t + 1, so after feeding BOS y1 ... y_t the prediction for "
         "the next token sits at the last position: logits[:, -1].")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    tgt_in = np.full((src2.shape[0], 1), bos_id)
    out = np.zeros((src2.shape[0], 0), dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        logits = _banned(model.decode(tgt_in, H_enc, src_mask)[:, 0], [pad, bos_id])
        nxt = np.where(done, pad, np.argmax(logits, axis=-1))
        out = np.concatenate([out, nxt[:, None]], axis=1)
        done = done | (nxt == eos_id)
        if done.all():
            break
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
    return out[0] if single else out


@mistake("greedy_decode", "bos_in_output",
         "the output starts with BOS. BOS is only the decoder's first input, never a generated "
         "token: return the tokens generated after it.")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    tgt_in = np.full((src2.shape[0], 1), bos_id)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        logits = _banned(model.decode(tgt_in, H_enc, src_mask)[:, -1], [pad, bos_id])
        nxt = np.where(done, pad, np.argmax(logits, axis=-1))
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
        done = done | (nxt == eos_id)
        if done.all():
            break
    return tgt_in[0] if single else tgt_in


@mistake("greedy_decode", "pad_not_banned",
         "the pad id is allowed as an output; only BOS is banned. The pad is never a real next token: set "
         "the logits of both model.config.pad_id and bos_id to -inf before taking the argmax.")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _greedy_banning(model, src, bos_id, eos_id, max_len, lambda pad: [bos_id])


@mistake("greedy_decode", "bos_not_banned",
         "BOS is allowed as an output; only the pad id is banned. BOS is only the decoder's first input, never "
         "a next token: set the logits of both bos_id and model.config.pad_id to -inf before the argmax.")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _greedy_banning(model, src, bos_id, eos_id, max_len, lambda pad: [pad])


def _greedy_banning(model, src, bos_id, eos_id, max_len, banned):
    """Greedy decoding (no cache) with the ids banned(pad_id) set to -inf at every step."""
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    tgt_in = np.full((src2.shape[0], 1), bos_id)
    out = np.zeros((src2.shape[0], 0), dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        logits = np.array(model.decode(tgt_in, H_enc, src_mask)[:, -1], dtype=np.float64)
        logits[:, banned(pad)] = -np.inf
        nxt = np.where(done, pad, np.argmax(logits, axis=-1))
        out = np.concatenate([out, nxt[:, None]], axis=1)
        done = done | (nxt == eos_id)
        if done.all():
            break
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
    return out[0] if single else out


@mistake("greedy_decode", "special_tokens_not_banned",
         "BOS and pad are allowed as outputs. Neither is ever a real next token: set their logits to "
         "-inf before taking the argmax.")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _greedy_banning(model, src, bos_id, eos_id, max_len, lambda pad: [])


@mistake("greedy_decode", "eos_left_out",
         "the final EOS is left out of the output. Keep it: it is a generated token, and it is how "
         "the caller (and the loss) knows the sentence ended rather than ran out of max_len.")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    tgt_in = np.full((src2.shape[0], 1), bos_id)
    out = np.zeros((src2.shape[0], 0), dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        logits = _banned(model.decode(tgt_in, H_enc, src_mask)[:, -1], [pad, bos_id])
        nxt = np.where(done, pad, np.argmax(logits, axis=-1))
        done = done | (nxt == eos_id)
        out = np.concatenate([out, np.where(nxt == eos_id, pad, nxt)[:, None]], axis=1)
        if done.all():
            break
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
    keep = max(int(np.max(np.sum(out != pad, axis=1))), 1)
    out = out[:, :keep]
    return out[0] if single else out


@mistake("greedy_decode", "finished_rows_keep_writing",
         "a row that has produced EOS keeps generating tokens while the other rows finish. After its "
         "first EOS a row must hold pad_id only: np.where(done, pad_id, next_token).")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    tgt_in = np.full((src2.shape[0], 1), bos_id)
    out = np.zeros((src2.shape[0], 0), dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        logits = _banned(model.decode(tgt_in, H_enc, src_mask)[:, -1], [pad, bos_id])
        nxt = np.argmax(logits, axis=-1)
        out = np.concatenate([out, nxt[:, None]], axis=1)
        done = done | (nxt == eos_id)
        if done.all():
            break
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
    return out[0] if single else out


@mistake("greedy_decode", "stops_when_one_row_ends",
         "the loop stops as soon as one row produces EOS, cutting the other rows short. Stop when "
         "every row is done: done.all(), not done.any().")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    tgt_in = np.full((src2.shape[0], 1), bos_id)
    out = np.zeros((src2.shape[0], 0), dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        logits = _banned(model.decode(tgt_in, H_enc, src_mask)[:, -1], [pad, bos_id])
        nxt = np.where(done, pad, np.argmax(logits, axis=-1))
        out = np.concatenate([out, nxt[:, None]], axis=1)
        done = done | (nxt == eos_id)
        if done.any():
            break
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
    return out[0] if single else out


@mistake("greedy_decode", "only_newest_token_fed",
         "only the newest token is fed to the decoder at each step, so it forgets everything it "
         "wrote before (and reads every token at position 0). Without a KV cache the decoder must "
         "see the whole prefix BOS y1 ... y_t at every step.")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    last = np.full((src2.shape[0], 1), bos_id)
    out = np.zeros((src2.shape[0], 0), dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        logits = _banned(model.decode(last, H_enc, src_mask)[:, -1], [pad, bos_id])
        nxt = np.where(done, pad, np.argmax(logits, axis=-1))
        out = np.concatenate([out, nxt[:, None]], axis=1)
        done = done | (nxt == eos_id)
        if done.all():
            break
        last = nxt[:, None]
    return out[0] if single else out


@mistake("greedy_decode", "padded_to_max_len",
         "the output always has max_len columns, padded after every row has ended. Return only the "
         "steps that were taken: L is the step at which the last row produced EOS (or max_len).")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    tgt_in = np.full((src2.shape[0], 1), bos_id)
    out = np.full((src2.shape[0], max_len), pad, dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for t in range(max_len):
        logits = _banned(model.decode(tgt_in, H_enc, src_mask)[:, -1], [pad, bos_id])
        nxt = np.where(done, pad, np.argmax(logits, axis=-1))
        out[:, t] = nxt
        done = done | (nxt == eos_id)
        if done.all():
            break
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
    return out[0] if single else out


# -- Exercise 9.2 sample_next_token ------------------------------------------------------------------------
def _probs(z):
    z = z - np.max(z, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=-1, keepdims=True)


def _draw(probs, rng):
    """One id per row by the inverse CDF: the first index whose cumulative probability passes u."""
    cdf = np.cumsum(probs, axis=-1)
    u = rng.random(probs.shape[:-1] + (1,)) * cdf[..., -1:]
    return np.minimum(np.sum(cdf <= u, axis=-1), probs.shape[-1] - 1)


def _top_k(z, top_k):
    if top_k is None:
        return z
    kth = np.sort(z, axis=-1)[..., -top_k][..., None]
    return np.where(z >= kth, z, -np.inf)


def _nucleus(z, top_p):
    if top_p is None:
        return z
    p = _probs(z)
    order = np.argsort(-p, axis=-1, kind="stable")
    sorted_p = np.take_along_axis(p, order, axis=-1)
    keep_sorted = np.cumsum(sorted_p, axis=-1) - sorted_p < top_p
    keep = np.zeros_like(keep_sorted)
    np.put_along_axis(keep, order, keep_sorted, axis=-1)
    return np.where(keep, z, -np.inf)


@mistake("sample_next_token", "always_the_argmax",
         "the most probable token is returned every time: that is greedy decoding, not sampling. "
         "Draw a token at random with the probabilities softmax(logits / temperature), e.g. with "
         "rng.random() and the cumulative sum.")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):
    return np.argmax(logits, axis=-1)


@mistake("sample_next_token", "temperature_multiplies",
         "the logits are multiplied by the temperature instead of divided by it, so T > 1 sharpens "
         "and T < 1 flattens: the opposite of what temperature means. Use softmax(logits / T).")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    logits = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(logits, axis=-1)
    z = _nucleus(_top_k(logits * temperature, top_k), top_p)
    return _draw(_probs(z), rng)


@mistake("sample_next_token", "temperature_ignored",
         "the temperature has no effect on the draws. Divide the logits by it before the softmax: "
         "p = softmax(logits / T). (Dividing the probabilities by T changes nothing once they are "
         "renormalised.)")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    logits = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(logits, axis=-1)
    z = _nucleus(_top_k(logits, top_k), top_p)
    return _draw(_probs(z), rng)


@mistake("sample_next_token", "top_k_one_short",
         "top-k keeps only k - 1 tokens: the k-th largest logit is the threshold and must itself be "
         "kept (z >= kth, not z > kth).")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(z, axis=-1)
    z = z / temperature
    if top_k is not None:
        kth = np.sort(z, axis=-1)[..., -top_k][..., None]
        z = np.where(z > kth, z, -np.inf)
    return _draw(_probs(_nucleus(z, top_p)), rng)


@mistake("sample_next_token", "nucleus_without_the_crossing_token",
         "top-p keeps the wrong set: only the tokens whose running total stays below p, so the "
         "token that carries the total over p is dropped (and with one dominant token nothing is "
         "left). The nucleus is the smallest set of most probable tokens whose probability reaches "
         "p: keep a token when the mass ranked above it is still below p.")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(z, axis=-1)
    z = _top_k(z / temperature, top_k)
    if top_p is not None:
        p = _probs(z)
        order = np.argsort(-p, axis=-1, kind="stable")
        sorted_p = np.take_along_axis(p, order, axis=-1)
        keep_sorted = np.cumsum(sorted_p, axis=-1) < top_p
        keep_sorted[..., 0] = True
        keep = np.zeros_like(keep_sorted)
        np.put_along_axis(keep, order, keep_sorted, axis=-1)
        z = np.where(keep, z, -np.inf)
    return _draw(_probs(z), rng)


@mistake("sample_next_token", "nucleus_before_top_k",
         "top-p is applied before top-k. This course, like the common libraries, keeps the k most "
         "probable tokens first, renormalises, and then takes the nucleus of that smaller "
         "distribution.")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(z, axis=-1)
    z = _top_k(_nucleus(z / temperature, top_p), top_k)
    return _draw(_probs(z), rng)


@mistake("sample_next_token", "nucleus_from_the_least_probable",
         "top-p keeps the wrong set: the tokens are ranked from least to most probable, so the "
         "nucleus collects the unlikely tail. Sort by decreasing probability (np.argsort(-p)) and "
         "keep the most probable tokens.")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(z, axis=-1)
    z = _top_k(z / temperature, top_k)
    if top_p is not None:
        p = _probs(z)
        order = np.argsort(p, axis=-1, kind="stable")
        sorted_p = np.take_along_axis(p, order, axis=-1)
        keep_sorted = np.cumsum(sorted_p, axis=-1) - sorted_p < top_p
        keep = np.zeros_like(keep_sorted)
        np.put_along_axis(keep, order, keep_sorted, axis=-1)
        z = np.where(keep, z, -np.inf)
    return _draw(_probs(z), rng)


@mistake("sample_next_token", "nucleus_before_temperature",
         "top-p keeps the wrong set: the nucleus is chosen from softmax(logits), before the "
         "temperature. Apply the temperature first and choose the nucleus from "
         "softmax(logits / T): that is the distribution you sample from.")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(z, axis=-1)
    z = _nucleus(_top_k(z, top_k), top_p)
    return _draw(_probs(z / temperature), rng)


@mistake("sample_next_token", "not_renormalised",
         "after top-k or top-p the kept probabilities are not renormalised, so they no longer sum "
         "to 1 (rng.choice refuses them). Divide the kept probabilities by their sum, or set the "
         "dropped logits to -inf and take the softmax again.")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(z, axis=-1)
    p = _probs(z / temperature)
    kept = _probs(_nucleus(_top_k(z / temperature, top_k), top_p)) > 0
    p = np.where(kept, p, 0.0)
    flat = p.reshape(-1, p.shape[-1])
    ids = [rng.choice(p.shape[-1], p=row) for row in flat]
    return np.array(ids, dtype=np.int64).reshape(p.shape[:-1])


# -- Exercise 9.3 beam_search ------------------------------------------------------------------------------
def _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, final=None, add=None, eos_ends=True,
          enough=None, ban_after=False):
    """A beam search with pluggable parts, so each mistake below changes exactly one of them."""
    banned = [model.config.pad_id, bos_id]
    H_enc, src_mask = model.encode(np.asarray(src)[None])
    live, finished = [((), 0.0)], []
    for _ in range(max_len):
        tgt_in = np.array([(bos_id,) + toks for toks, _ in live])
        logits = model.decode(tgt_in, np.broadcast_to(H_enc, (len(live),) + H_enc.shape[1:]), src_mask)[:, -1]
        logp = _banned(log_softmax(logits, axis=-1), banned) if ban_after else log_softmax(_banned(logits, banned), axis=-1)
        total = np.array([s for _, s in live])[:, None] + (logp if add is None else add(logp))
        new_live = []
        for rank, idx in enumerate(np.argsort(-total, axis=None, kind="stable")):
            b, tok = divmod(int(idx), logp.shape[1])
            if not np.isfinite(total[b, tok]):
                break
            toks = live[b][0] + (tok,)
            if tok == eos_id and eos_ends:
                if rank < beam_width:
                    finished.append((toks, float(total[b, tok])))
            else:
                new_live.append((toks, float(total[b, tok])))
            if len(new_live) == beam_width:
                break
        live = new_live
        if len(finished) >= (beam_width if enough is None else enough) or not live:
            break

    def score(hyp):
        toks, s = hyp
        return s / len(toks) ** alpha if final is None else final(toks, s, alpha, eos_id)

    results = sorted(finished, key=score, reverse=True)[:beam_width]
    if len(results) < beam_width:
        results += sorted(live, key=score, reverse=True)[: beam_width - len(results)]
    return [(np.array(toks, dtype=np.int64), score((toks, s))) for toks, s in results]


def _raw_sum(toks, s, alpha, eos_id):
    return s


def _length_without_eos(toks, s, alpha, eos_id):
    n = len(toks) - (1 if toks and toks[-1] == eos_id else 0)
    return s / max(n, 1) ** alpha


def _length_not_powered(toks, s, alpha, eos_id):
    return s / len(toks)


def _probabilities(logp):
    return np.exp(logp)


@mistake("beam_search", "no_length_normalisation",
         "hypotheses are ranked by their total log-probability. Every token adds a log-probability "
         "of at most 0 (negative unless the model is certain), so the total favours short outputs; "
         "rank the finished hypotheses by sum(log p) / len(y)^alpha.")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, final=_raw_sum)


@mistake("beam_search", "length_without_eos",
         "the length used for normalisation leaves out the EOS token. EOS is generated and scored "
         "like any other token, so len(y) counts it.")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, final=_length_without_eos)


@mistake("beam_search", "alpha_ignored",
         "alpha is ignored: the score is divided by len(y), not len(y)^alpha. alpha tunes how much "
         "length is forgiven (0: not at all, 1: a plain mean).")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, final=_length_not_powered)


@mistake("beam_search", "eos_does_not_finish",
         "a hypothesis that produced EOS stays in the beam and keeps growing. EOS ends it: move it "
         "to the finished list, and stop once beam_width hypotheses have finished.")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, eos_ends=False)


@mistake("beam_search", "probabilities_added",
         "probabilities are added along a hypothesis instead of log-probabilities. The probability "
         "of a sequence is the product of its tokens' probabilities, so its log is the sum of the "
         "log-probabilities: add log_softmax(logits).")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, add=_probabilities)


@mistake("beam_search", "stops_at_first_finished",
         "the search stops as soon as one hypothesis produces EOS. A longer hypothesis may still "
         "score better once normalised by its length: keep going until beam_width hypotheses have "
         "finished (or max_len steps have run).")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, enough=1)


@mistake("beam_search", "log_probs_before_banning",
         "the log-probabilities are taken before BOS and pad are banned, so they are normalised over "
         "tokens that can never be generated. Set the banned logits to -inf first, then take "
         "log_softmax: the allowed tokens' probabilities then sum to 1.")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, ban_after=True)


@mistake("beam_search", "bos_in_hypotheses",
         "the returned hypotheses start with <bos>. <bos> is only the decoder's first input: return the "
         "generated tokens, as greedy decoding does.")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return [(np.concatenate([[bos_id], toks]), score)
            for toks, score in _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha)]


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


# -- Exercise 9.5 cached_greedy_decode ---------------------------------------------------------------------
@mistake("cached_greedy_decode", "new_cache_every_step",
         "a new KVCache is made at every step, so the self-attention cache never holds more than "
         "the newest token (and its position restarts at 0). Make the cache once, before the loop, "
         "and keep feeding the same one.")
def cached_greedy_decode(model, src, bos_id, eos_id, max_len):
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    last = np.full(src2.shape[0], bos_id)
    out = np.zeros((src2.shape[0], 0), dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        cache = KVCache_(model, H_enc, src_mask)
        logits = _banned(decode_step_(model, last, cache), [pad, bos_id])
        last = np.where(done, pad, np.argmax(logits, axis=-1))
        out = np.concatenate([out, last[:, None]], axis=1)
        done = done | (last == eos_id)
        if done.all():
            break
    return out[0] if single else out


@mistake("cached_greedy_decode", "whole_prefix_fed_again",
         "the whole prefix is fed through the cache again at every step, so each token is cached "
         "many times and sits at the wrong positions. The cache already holds the past: feed only "
         "the newest token, once.")
def cached_greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    cache = KVCache_(model, H_enc, src_mask)
    tgt_in = np.full((src2.shape[0], 1), bos_id)
    out = np.zeros((src2.shape[0], 0), dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        for t in range(tgt_in.shape[1]):
            logits = decode_step_(model, tgt_in[:, t], cache)
        nxt = np.where(done, pad, np.argmax(_banned(logits, [pad, bos_id]), axis=-1))
        out = np.concatenate([out, nxt[:, None]], axis=1)
        done = done | (nxt == eos_id)
        if done.all():
            break
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
    return out[0] if single else out


@mistake("cached_greedy_decode", "bos_fed_every_step",
         "BOS is fed at every step instead of the token just generated. After the first step the "
         "decoder must read its own last output: feed next_token back in.")
def cached_greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    cache = KVCache_(model, H_enc, src_mask)
    bos = np.full(src2.shape[0], bos_id)
    out = np.zeros((src2.shape[0], 0), dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        logits = _banned(decode_step_(model, bos, cache), [pad, bos_id])
        nxt = np.where(done, pad, np.argmax(logits, axis=-1))
        out = np.concatenate([out, nxt[:, None]], axis=1)
        done = done | (nxt == eos_id)
        if done.all():
            break
    return out[0] if single else out


@mistake("cached_greedy_decode", "never_stops_at_eos",
         "decoding does not stop at EOS: it always runs max_len steps. Stop a row at its first EOS "
         "(pad it from there on) and stop the loop once every row has produced EOS.")
def cached_greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    H_enc, src_mask = model.encode(src2)
    cache = KVCache_(model, H_enc, src_mask)
    last = np.full(src2.shape[0], bos_id)
    out = np.zeros((src2.shape[0], 0), dtype=np.int64)
    for _ in range(max_len):
        last = np.argmax(_banned(decode_step_(model, last, cache), [model.config.pad_id, bos_id]), axis=-1)
        out = np.concatenate([out, last[:, None]], axis=1)
    return out[0] if single else out


@mistake("cached_greedy_decode", "special_tokens_not_banned",
         "BOS and pad are allowed as outputs. Neither is ever a real next token: set their logits to "
         "-inf before taking the argmax.")
def cached_greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    cache = KVCache_(model, H_enc, src_mask)
    last = np.full(src2.shape[0], bos_id)
    out = np.zeros((src2.shape[0], 0), dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        last = np.where(done, pad, np.argmax(decode_step_(model, last, cache), axis=-1))
        out = np.concatenate([out, last[:, None]], axis=1)
        done = done | (last == eos_id)
        if done.all():
            break
    return out[0] if single else out


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
def _greedy_(model, src, bos_id, eos_id, max_len, steps=None, mask=None, cached=False):
    """Greedy decoding as the course writes it, with one part replaceable: the number of steps, the
    source mask given to the decoder."""
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    if mask is not None:
        src_mask = mask(src_mask)
    cache = KVCache_(model, H_enc, src_mask) if cached else None
    tgt_in = np.full((src2.shape[0], 1), bos_id)
    out = np.zeros((src2.shape[0], 0), dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len if steps is None else steps(max_len)):
        logits = decode_step_(model, tgt_in[:, -1], cache) if cached else model.decode(tgt_in, H_enc, src_mask)[:, -1]
        nxt = np.where(done, pad, np.argmax(_banned(logits, [pad, bos_id]), axis=-1))
        out = np.concatenate([out, nxt[:, None]], axis=1)
        done = done | (nxt == eos_id)
        if done.all():
            break
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
    return out[0] if single else out


@mistake("greedy_decode", "one_step_short",
         "the loop runs max_len - 1 times, so a row that needs all max_len tokens is cut one short. Generate "
         "up to max_len tokens: for _ in range(max_len).")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _greedy_(model, src, bos_id, eos_id, max_len, steps=lambda n: n - 1)


@mistake("greedy_decode", "source_padding_ignored",
         "the decoder gets a source mask of zeros, so it attends to the source pads: pass the src_mask that "
         "model.encode returns (-inf at the pad positions) to every decode call.")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _greedy_(model, src, bos_id, eos_id, max_len, mask=np.zeros_like)


@mistake("sample_next_token", "top_k_one_more",
         "one token more than top_k is kept (the k + 1 most probable). Keep exactly the top_k most probable: "
         "the k-th largest scaled logit is the threshold, z >= kth.")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    logits = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(logits, axis=-1)
    z = logits / temperature
    z = _top_k(z, min(top_k + 1, z.shape[-1]) if top_k is not None else None)
    return _draw(_probs(_nucleus(z, top_p)), rng)


@mistake("sample_next_token", "uniform_over_the_allowed_tokens",
         "every allowed token is drawn equally often: top-k and top-p choose which tokens may be drawn, but "
         "each is still drawn with its own (renormalised) probability, softmax(z) over the kept set.")
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):  # noqa: F811
    rng = np.random.default_rng(rng)
    logits = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(logits, axis=-1)
    z = _nucleus(_top_k(logits / temperature, top_k), top_p)
    allowed = np.isfinite(z).astype(np.float64)
    return _draw(allowed / allowed.sum(axis=-1, keepdims=True), rng)


@mistake("beam_search", "length_with_bos",
         "the length that normalises the score counts BOS too (len(y) + 1). BOS is given, not generated: "
         "len(y) counts the generated tokens, EOS included.")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha,
                 final=lambda toks, s, a, e: s / (len(toks) + 1) ** a)


@mistake("beam_search", "square_root_length",
         "the score is divided by sqrt(len(y)) whatever alpha is: the normalisation is len(y)^alpha, with "
         "the alpha passed in (1.0 by default).")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha,
                 final=lambda toks, s, a, e: s / len(toks) ** 0.5)


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


@mistake("cached_greedy_decode", "one_step_short",
         "the loop runs max_len - 1 times, so a row that needs all max_len tokens is cut one short. Generate "
         "up to max_len tokens: for _ in range(max_len).")
def cached_greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _greedy_(model, src, bos_id, eos_id, max_len, steps=lambda n: n - 1, cached=True)


@mistake("cached_greedy_decode", "source_padding_ignored",
         "the cache is built with a source mask of zeros, so cross-attention reads the source pads: build "
         "KVCache(model, H_enc, src_mask) with the src_mask that model.encode returns.")
def cached_greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _greedy_(model, src, bos_id, eos_id, max_len, mask=np.zeros_like, cached=True)
