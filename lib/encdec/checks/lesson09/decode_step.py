"""Exercise 9.4, decode_step: one cached decoder step run step by step into a fresh cache (_steps), the
knob model of its slips, the property of a cache that is not extended, and the checker."""

import numpy as np

from ... import decoding
from ...layers import rms_norm
from ...mistakes import CATALOG
from ..cases import Case
from ..catalog import wrapped
from ..core import Checker
from ..exercises import Exercise
from ..fixtures import BOS, generator, source_batch
from ..probes import Combos, Probes, Property
from .models import decoding_model


def _steps(decode_step):
    """Feed `tokens[:, t]` one step at a time into a fresh cache; collect what the checks compare."""
    def run(seed, src_lengths, n_steps, n_layers=1, vocab_size=9, d_model=8, n_heads=2, single=False, eps=1e-6):
        model = decoding_model(seed, vocab_size=vocab_size, d_model=d_model, n_heads=n_heads, n_layers=n_layers, eps=eps)
        src = source_batch(seed + 1, src_lengths, vocab_size=vocab_size)
        tokens = np.concatenate([np.full((len(src_lengths), 1), BOS),
                                 generator(seed + 2).integers(3, vocab_size, size=(len(src_lengths), n_steps - 1))], axis=1)
        if single:
            src, tokens = src[0], tokens[0]
        H_enc, src_mask = model.encode(src)
        cache = decoding.KVCache(model, H_enc, src_mask)
        logits, rows = [], []
        for t in range(n_steps):
            out = decode_step(model, tokens[..., t], cache)
            if out is None:
                raise TypeError("decode_step returned None (did you forget `return`?)")
            logits.append(np.asarray(out))
            k = cache.self_k[0]
            rows.append(-1 if k is None else np.shape(k)[-2])
        shapes = {np.shape(x) for x in logits}
        stacked = np.stack(logits, axis=-2) if len(shapes) == 1 else np.array([np.nan])
        return stacked, np.array(rows), np.array(cache.length)
    return run


def decode_step_cases():
    return {
        "one": [Case("one source (n=4), 3 steps", (41, [4], 3, 1, 9, 8, 2, True)),
                Case("one source (n=6), 5 steps, two layers", (42, [6], 5, 2, 11, 12, 3, True), hidden=True)],
        "batch": [Case("a batch of 2 sources (lengths 5 and 2, padded), 4 steps, V=11, d_model=12, 3 heads, "
                       "eps=0.05 (model.config.eps)", (43, [5, 2], 4, 1, 11, 12, 3, False, 0.05)),
                  Case("a batch of 3 padded sources, 6 steps, two layers", (44, [3, 6, 1], 6, 2, 11, 12, 4),
                       hidden=True)],
    }


def _decode_step_knobbed(k):
    """decode_step with knobs: position ("length", "zero", "ahead": length + 1), cache ("extend";
    "own": attends only to the new row, though it is appended), cross_norm (False: the cross-attention
    query not normalised), cross_mask (False: src_mask not passed), final_norm (False), advance (False:
    cache.length not advanced)."""
    def step(model, tokens, cache):
        offset = {"length": cache.length, "zero": 0, "ahead": cache.length + 1}[k.get("position", "length")]
        x = model.embed(np.asarray(tokens)[..., None], offset=offset)
        for i, block in enumerate(model.decoder):
            normed = rms_norm(x, block.norm1_gamma, block.eps)
            self_norm = k.get("self_norm", "both")
            K_new, V_new = block.self_attn.project_kv(normed if self_norm == "both" else x)
            K, V = cache.append(i, K_new, V_new)
            if k.get("cache", "extend") == "own":
                K, V = K_new, V_new
            out, _ = block.self_attn.attend(x if self_norm == "none" else normed, K, V)
            x = x + out
            q = rms_norm(x, block.norm2_gamma, block.eps) if k.get("cross_norm", True) else x
            out, _ = block.cross_attn.attend(q, cache.cross_k[i], cache.cross_v[i],
                                             cache.src_mask if k.get("cross_mask", True) else None)
            x = x + out
            x = x + block.ffn(rms_norm(x, block.norm3_gamma, block.eps))
        if k.get("advance", True):
            cache.length += 1
        h = rms_norm(x, model.decoder_norm_gamma, model.config.eps) if k.get("final_norm", True) else x
        return (h @ model.embedding.T)[..., 0, :]
    return step


class _CacheNotExtended(Property):
    """The rows of the self-attention cache after each step (the second output of _steps) must grow by one
    per step (1, 2, 3, ...): rows that stay put (or a cache never written, -1) mean the new keys and values
    were not stored in it, whatever the step attended to."""

    kind = "cache"

    def inspect(self, attempt, probes):
        got, expected = attempt.got, attempt.expected
        if not (isinstance(got, tuple) and len(got) == 3 and isinstance(expected, tuple)):
            return None
        rows, right = np.asarray(got[1]).ravel(), np.asarray(expected[1]).ravel()
        if rows.shape != right.shape or rows.size < 2 or np.array_equal(rows, right):
            return None
        if not np.all(np.diff(right) == 1) or np.all(np.diff(rows) >= 1):
            return None
        return self.finding(attempt, "not_extended", (
            "the self-attention cache is not extended: after each step cache.self_k[i] (and self_v[i]) must hold "
            "one more row, the new token's keys and values, so that the next step attends to every token so far. "
            "Store the concatenation back in the cache (K, V = cache.append(i, K_new, V_new)), not in a local "
            "variable only."), f"rows in the cache after each step: {rows.tolist()} (expected {right.tolist()}).")


def _decode_step_model(k, *args):
    return _steps(_decode_step_knobbed(k))(*args)


DECODE_STEP_PROBES = Probes(_decode_step_model, Combos("decode_step", [
    ("position", [("length", "", ""), ("zero", "position_zero", "the new token is embedded at position 0 every step, not "
                                                                "at position cache.length"),
                  ("ahead", "position_ahead", "the new token is embedded one position ahead (cache.length + 1)")]),
    ("self_norm", [("both", "", ""),
                   ("kv_raw", "kv_from_unnormalised", "the new keys and values are projected from x, not from "
                                                      "rms_norm(x, norm1_gamma): the query and the cached keys and "
                                                      "values all come from the normalised x"),
                   ("none", "self_attention_unnormalised", "self-attention reads x itself: norm1_gamma's RMSNorm is "
                                                           "missing before it (query, keys and values)")]),
    ("cache", [("extend", "", ""), ("own", "attends_to_itself_only", "self-attention reads only the new token's own key "
                                                                     "and value, not the whole cache")]),
    ("cross_norm", [(True, "", ""), (False, "cross_query_not_normalised", "the cross-attention query is not normalised "
                                                                          "(norm2_gamma)")]),
    ("cross_mask", [(True, "", ""), (False, "source_padding_visible", "cross-attention gets no src_mask, so the source pads "
                                                                     "are visible")]),
    ("final_norm", [(True, "", ""), (False, "no_final_norm", "the final RMSNorm (decoder_norm_gamma) is missing")]),
    ("advance", [(True, "", ""), (False, "length_not_advanced", "cache.length is not advanced after the step")]),
], "One step: embed at position cache.length, in each block append the new K, V row and attend over the whole cache, "
   "cross-attend with src_mask; final norm, head; then cache.length += 1."), _CacheNotExtended())


DECODE_STEP = Exercise("9.4", "decode_step", points=3, reference=decoding.decode_step,
                       sizes={"vocab_size": "V", "d_model": "d_model", "n_heads": "h"}, reads=("model.config.eps",))


@DECODE_STEP.checked_by
def check_decode_step(decode_step=None, *, points=None, hidden=False):
    """One cached decoder step; logits (..., V) for the new token, the cache one row longer."""
    c = Checker(DECODE_STEP, points, hidden)
    fn = c.find(decode_step, "decode_step")
    cases = decode_step_cases()
    catalog = wrapped(CATALOG["decode_step"], _steps)
    common = dict(catalog=catalog, forbidden=[decoding.decode_step, decoding.greedy_decode], probes=DECODE_STEP_PROBES,
                  names=("the logits of every step, stacked (..., steps, V)",
                         "rows in the self-attention cache after each step", "cache.length at the end"))
    ref = _steps(decoding.decode_step)
    c.check_cases("one source sequence, step by step", _steps(fn), ref, cases["one"], **common)
    c.check_cases("a padded batch, step by step", _steps(fn), ref, cases["batch"], **common)
    return c.result()
