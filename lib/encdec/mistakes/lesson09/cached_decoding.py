"""Exercise 9.5, cached_greedy_decode: the mistakes of greedy decoding with the KV cache, each calling
the reference KVCache and decode_step (`KVCache_`, `decode_step_`)."""

import numpy as np

from ...decoding import KVCache as KVCache_
from ...decoding import decode_step as decode_step_
from .. import mistake
from .shared import _banned, _greedy_


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
