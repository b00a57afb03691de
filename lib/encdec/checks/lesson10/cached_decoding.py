"""Exercise 10.6, greedy_decode_cached: the tokens of greedy decoding without a cache (the NumPy
reference, same weights) on random and trained models, and the cache's use observed by counting
the rows each watched weight multiplies (count_weight_rows)."""

import functools

import numpy as np

from ... import decoding
from ...mistakes import CATALOG
from ..cases import Case
from ..catalog import wrapped
from ..exercises import Exercise, Later
from ..fixtures import BOS, EOS, PAD, generator, padded_tokens, random_model
from ..probes import Combos, DecodedRows, Probes
from ..running import run_student
from .torch_checker import TorchChecker, _check_parts, _one_thread, _plain, _to_numpy
from .torch_references import references


OTHER_IDS = {"pad": 3, "bos": 4, "eos": 5}  # the "other-ids" model's pad id, and the ids it decodes with


def _ids(model_name):
    """(bos_id, eos_id) a case decodes `model_name` with."""
    return (OTHER_IDS["bos"], OTHER_IDS["eos"]) if model_name == "other-ids" else (BOS, EOS)


def _source(model_name, np_model, sources):
    """The case's source batch for `np_model`, padded with the model's own pad id."""
    seed, lengths = sources
    avoid = (PAD, BOS, EOS, *OTHER_IDS.values()) if model_name == "other-ids" else (PAD, BOS, EOS)
    return padded_tokens(generator(seed), lengths, max(lengths), np_model.config.vocab_size,
                         np_model.config.pad_id, avoid=avoid)


@functools.cache
def decode_models():
    """The NumPy models the decoding checks use (their torch twins hold the same weights). A random model
    rarely says <eos>; a larger <eos> embedding row makes these end some rows, at different steps."""
    def ending(seed, boost, **sizes):
        model = random_model(seed, embedding_scale=0.3, scale=3.0, fan_in=True, **sizes)
        model.embedding[EOS] *= boost
        return model

    likes_specials = random_model(61, embedding_scale=0.3, scale=3.0, fan_in=True)
    likes_specials.embedding[[PAD, BOS]] *= 2.0
    other_ids = random_model(256, embedding_scale=0.3, scale=3.0, fan_in=True, pad_id=OTHER_IDS["pad"], eps=0.05)
    other_ids.embedding[OTHER_IDS["eos"]] *= 1.5  # rows end at steps 2, 4 and 2; 2 is a plain token; eps 0.05 matters
    return {
        "wild": ending(236, 1.5),
        "other-ids": other_ids,
        "two-blocks": ending(337, 2.0, vocab_size=11, d_model=12, n_heads=3, n_layers=2),
        "likes-specials": likes_specials,
        "counted": random_model(53, n_layers=2, embedding_scale=0.6),
    }


def _dates_model():
    R = references()
    model, _ = R.capstone.load_weights(dtype=R.torch.float64)
    return model


def decode_cases():
    return {
        "batch": [
            Case("3 padded sources (lengths 4, 2, 5), a random model: two rows end at different steps, "
                 "one runs to max_len 8", ("wild", (236, [4, 2, 5]), 8)),
            Case("4 sources, two blocks each side, max_len 6: two rows end, two are cut by max_len",
                 ("two-blocks", (337, [2, 6, 4, 1]), 6)),
            Case("one source, max_len 1", ("wild", (3, [5]), 1), hidden=True)],
        "specials": [
            Case("2 sources, a random model that favours <bos> and <pad> (both must be banned)",
                 ("likes-specials", (8, [4, 3]), 6)),
            Case("a model whose pad id is 3 (model.config.pad_id) and RMSNorm eps 0.05 (model.config.eps), decoding "
                 "with <bos> 4 and <eos> 5: 3 padded sources",
                 ("other-ids", (9, [4, 2, 3]), 7))],
        "float32": [
            Case("the model of the first case in float32", ("wild", (236, [4, 2, 5]), 8, "float32"))],
        "dates": [
            Case("the trained capstone model: 4 dates in different formats",
                 ("dates", ["2 Dec 2026", "Wednesday, 2 December 2026", "1999/03/11", "the 1st of march, 2001"], 11))],
    }


def _decode_inputs(model_name, sources, max_len, dtype="float64"):
    """(NumPy model, torch twin, src (B, n) ids, max_len)."""
    R = references()
    if model_name == "dates":
        from ... import dates
        twin = _dates_model()
        src = dates.pad_batch([dates.encode(s) for s in sources])
        return R.tm.to_numpy(twin), twin, src, max_len
    np_model = decode_models()[model_name]
    twin = R.tm.from_numpy(np_model, dtype=getattr(R.torch, dtype)).eval()
    return np_model, twin, _source(model_name, np_model, sources), max_len


def _decoded(fn):
    """Run a greedy_decode_cached answer on one case: its tokens as a NumPy array."""
    def run(model_name, sources, max_len, dtype="float64"):
        R = references()
        _, twin, src, max_len = _decode_inputs(model_name, sources, max_len, dtype)
        return fn(twin, R.torch.from_numpy(src), *_ids(model_name), max_len)
    return run


def _reference_decoded(model_name, sources, max_len, dtype="float64"):
    np_model, _, src, max_len = _decode_inputs(model_name, sources, max_len)
    return decoding.greedy_decode(np_model, src, *_ids(model_name), max_len, use_cache=False)


def _decode_forbidden():
    R = references()
    return [_plain(R.tm.Seq2Seq.greedy_decode), decoding.greedy_decode, decoding.decode_step,
            _plain(R.capstone.predict), R.greedy_decode_cached, R.cached_logits, R.decoder_step]


def count_weight_rows(fn, model_name="counted", sources=(7, [4, 2, 5]), max_len=6):
    """Run a decoder on the torch twin of `model_name` while counting the rows each watched weight
    multiplies. Returns (outcome, counts {label: rows}, B, n, steps generated)."""
    R = references()
    _, twin, src, max_len = _decode_inputs(model_name, sources, max_len)
    weights = {("encoder", 0, "W_q"): twin.encoder[0].self_attn.W_q}
    for i, block in enumerate(twin.decoder):
        weights[("self", i, "W_q")] = block.self_attn.W_q
        weights[("self", i, "W_k")] = block.self_attn.W_k
        weights[("cross", i, "W_k")] = block.cross_attn.W_k
        weights[("cross", i, "W_v")] = block.cross_attn.W_v
    counter = R.WeightRows(weights, twin.config.d_model)
    with counter:
        outcome = run_student(fn, (twin, R.torch.from_numpy(src), BOS, EOS, max_len), forbidden=_decode_forbidden())
    value = _to_numpy(outcome.value)
    steps = np.shape(value)[-1] if outcome.error is None and np.ndim(value) == 2 else max_len
    return outcome, counter.rows, src.shape[0], src.shape[1], steps


def _observe_cache(fn, what):
    """Parts 5 and 6: (summary, problem, outcome) from the rows the watched weights multiplied."""
    outcome, rows, B, n, steps = count_weight_rows(fn)
    if outcome.error is not None:
        return ("error", type(outcome.error).__name__, str(outcome.error)), None, outcome
    blocks = sorted({i for kind, i, _ in rows if kind != "encoder"})
    self_q = max(rows[("self", i, "W_q")] for i in blocks)
    self_k = max(rows[("self", i, "W_k")] for i in blocks)
    cross_k = max(rows[("cross", i, "W_k")] for i in blocks)
    cross_v = max(rows[("cross", i, "W_v")] for i in blocks)
    encoder = rows[("encoder", 0, "W_q")]
    tokens = f"while generating {steps} tokens for {B} sequences"
    if what == "self":
        summary = ("self", self_q > B * (steps + 1), self_k > B * (steps + 1))
        if self_q > B * (steps + 1):
            return summary, (f"a decoder block's self-attention computed queries for {self_q} positions {tokens}: "
                             f"with the cache, each step feeds one new position per sequence ({B * steps} in all)"), outcome
        if self_k > B * (steps + 1) and self_k - B * steps == B * n and cross_k == 0:
            return summary, (f"a decoder block's self-attention weights made keys for {self_k} positions {tokens}: "
                             f"{B * steps} for the tokens and {B * n} more, as many as the sources' positions ({B} of "
                             f"{n}), and cross-attention's W_k made none. The encoder's keys and values are made with "
                             "the self-attention's weights where cross-attention's belong (b.cross_attn.W_k, "
                             "b.cross_attn.W_v)."), outcome
        if self_k > B * (steps + 1):
            return summary, (f"a decoder block's self-attention computed keys for {self_k} positions {tokens} "
                             f"({B * steps} would do): the keys and values of past positions are recomputed at "
                             "every step. Keep them in the cache: each step computes K and V for the new token "
                             "only and appends them."), outcome
        if self_q == 0:
            return summary, "the decoder blocks' self-attention weights were never used", outcome
        return ("ok",), "", outcome
    summary = ("once", encoder > B * n, cross_k > B * n, self_q > B * (steps + 1))  # the last tells the causes apart
    if encoder > B * n:
        return summary, (f"the encoder processed {encoder} source positions {tokens} ({B} sources of {n} positions: "
                         f"{B * n} once would do). Encode once, before the loop."), outcome
    if cross_k == 2 * B * n and cross_v == 0:
        return summary + ("values_with_W_k",), (
            f"cross-attention's W_k multiplied the encoder output twice ({cross_k} rows per block {tokens}, "
            f"{B * n} for the keys and {B * n} more) and its W_v never: the values are made with W_k. "
            "V = H_enc @ b.cross_attn.W_v (split into heads), once, before the loop."), outcome
    if cross_k > B * n:
        return summary, (f"cross-attention's keys were computed for {cross_k} encoder positions per block {tokens} "
                         f"({B} sources of {n} positions: {B * n} once would do)"), outcome
    return ("ok",), "", outcome


def _decoded_model(k, model_name, sources, max_len, dtype="float64"):
    """Greedy decoding with knobs (encdec.checks.lesson09.greedy_model) on the NumPy twin of the case's model."""
    from ..lesson09 import greedy_model
    if model_name == "dates":
        np_model, _, src, max_len = _decode_inputs(model_name, sources, max_len)
    else:  # no torch twin needed: the NumPy model and the source batch alone
        np_model = decode_models()[model_name]
        src = _source(model_name, np_model, sources)
    return greedy_model(k, np_model, src, *_ids(model_name), max_len)


def _decoded_ids(attempt, value):
    return _to_numpy(value)


def _decoded_special(attempt):
    model_name, sources, max_len = attempt.case.args[:3]
    pad = _dates_model().config.pad_id if model_name == "dates" else decode_models()[model_name].config.pad_id
    bos, eos = _ids(model_name)
    return {"bos": bos, "eos": eos, "pad": pad, "max_len": max_len}


def _decode_cached_probes():
    from ..lesson09 import GREEDY_CHOICES, GREEDY_RIGHT
    # the rules of the output first (no decoding needed), then single slips only: each variant decodes again
    return Probes(_decoded_model, DecodedRows(_decoded_ids, _decoded_special),
                  Combos("greedy", GREEDY_CHOICES, GREEDY_RIGHT, most=1))


GREEDY_DECODE_CACHED = Exercise("10.6", "greedy_decode_cached", points=4,
                                reference=Later(lambda: references().greedy_decode_cached),
                                reads=("bos_id", "eos_id", "max_len", "model.config.pad_id", "model.config.eps"))


@GREEDY_DECODE_CACHED.checked_by
@_one_thread
def check_greedy_decode_cached(greedy_decode_cached=None, *, points=None, hidden=False):
    """Batched greedy decoding with a KV cache, in torch: exactly the tokens of greedy decoding
    without a cache (the NumPy reference, same weights); the encoder and cross-attention's keys and
    values computed once; one new position per step through every decoder block."""
    c = TorchChecker(GREEDY_DECODE_CACHED, points, hidden)
    fn = c.find(greedy_decode_cached, "greedy_decode_cached")
    mistakes = CATALOG["greedy_decode_cached"]
    cases = decode_cases()
    common = dict(catalog=wrapped(mistakes, _decoded),
                  forbidden=_decode_forbidden(), postprocess=_to_numpy, probes=_decode_cached_probes())
    student = _decoded(fn) if fn is not None else None
    c.check_cases("a batch: the same tokens as greedy decoding without a cache (float64)", student,
                  _reference_decoded, cases["batch"], **common)
    c.check_cases("<bos> and <pad> are never chosen, whatever their ids", student, _reference_decoded,
                  cases["specials"], **common)
    c.check_cases("a float32 model", student, _reference_decoded, cases["float32"], **common)
    c.check_cases("a trained model", student, _reference_decoded, cases["dates"], **common)
    parts = [("the cache is used: one new position per step through every decoder block (3 sources, 2 blocks, "
              "max_len 6)", _observe_cache, [("self",)]),
             ("the encoder and cross-attention's keys and values computed once, before the first step",
              _observe_cache, [("once",)])]
    if fn is not None and not c.stopped:
        _check_parts(c, fn, parts, mistakes)
    return c.result()
