"""Exercise 9.5, cached_greedy_decode: the tokens of greedy decoding, with the reference decode_step and
KVCache in place of the notebook's, and the cache's use observed on a model whose decoder counts
how it is used."""

import numpy as np

from ... import decoding
from ...attention import MultiHeadAttention
from ...mistakes import CATALOG
from ...model import Seq2Seq
from ..cases import Case
from ..core import Checker
from ..exercises import Exercise
from ..fixtures import BOS, EOS, PAD, source_batch
from ..rebinding import rebind
from ..running import run_student
from .greedy import GREEDY_PROBES
from .models import decoding_model, other_ids_model, trained_reverser, wild_model


class _WatchedAttention(MultiHeadAttention):
    """Counts the rows projected to keys and values, and every read of W_k."""

    @property
    def W_k(self):
        self.__dict__["k_reads"] = self.__dict__.get("k_reads", 0) + 1
        return self.__dict__["W_k"]

    @W_k.setter
    def W_k(self, value):
        self.__dict__["W_k"] = value

    def project_kv(self, key_value_input):
        kv = np.asarray(key_value_input)
        self.__dict__["kv_rows"] = self.__dict__.get("kv_rows", 0) + int(np.prod(kv.shape[:-1]))
        return super().project_kv(key_value_input)


class _WatchedModel(Seq2Seq):
    """Counts full decoder passes (decode, or the whole model called)."""

    def decode(self, *args, **kwargs):
        self.__dict__["full_passes"] = self.__dict__.get("full_passes", 0) + 1
        return super().decode(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        self.__dict__["full_passes"] = self.__dict__.get("full_passes", 0) + 1
        return super().__call__(*args, **kwargs)


def _watched(model):
    """A copy of `model` whose decoder reports how it is used."""
    copy = _WatchedModel(model.config, rng=0)
    copy.load_parameters(model.parameters())
    for block in copy.decoder:
        for name in ("self_attn", "cross_attn"):
            getattr(block, name).__class__ = _WatchedAttention
    return copy


def _reference_cached(model, src, bos_id, eos_id, max_len):
    return decoding.greedy_decode(model, src, bos_id, eos_id, max_len, use_cache=True)


def cached_cases():
    other, other_src = other_ids_model(256, scripted=False)
    wild = wild_model(55)
    wild2 = wild_model(56, vocab_size=11, d_model=12, n_heads=3, n_layers=2)
    likes_specials = wild_model(61)
    likes_specials.embedding[[PAD, BOS]] *= 2.0
    return {
        "one": [Case("one source (n=4), a random model, max_len=6", (wild, source_batch(1, [4])[0], BOS, EOS, 6)),
                Case("one source, the briefly trained reverser (it stops at EOS)",
                     (trained_reverser(), source_batch(2, [3])[0], BOS, EOS, 8)),
                Case("one source, two layers each side, max_len=9", (wild2, source_batch(3, [5], vocab_size=11)[0], BOS, EOS, 9),
                     hidden=True)],
        "batch": [Case("a batch of 3 padded sources, the briefly trained reverser",
                       (trained_reverser(), source_batch(4, [2, 5, 3]), BOS, EOS, 8)),
                  Case("a batch of 2 sources, a random model that favours BOS and pad (both must be banned)",
                       (likes_specials, source_batch(8, [4, 3]), BOS, EOS, 6)),
                  Case("a model whose pad id is 3 (model.config.pad_id), with <bos> 4 and <eos> 5: 3 padded sources",
                       (other, other_src, 4, 5, 8)),
                  Case("a batch of 4 sources, two layers each side", (wild2, source_batch(6, [2, 6, 4, 1], vocab_size=11), BOS, EOS, 7),
                       hidden=True)],
    }


CACHED_GREEDY_DECODE = Exercise("9.5", "cached_greedy_decode", points=2, reference=decoding.greedy_decode,
                                sizes={"src": "... n"}, reads=("bos_id", "eos_id", "max_len", "model.config.pad_id"))


@CACHED_GREEDY_DECODE.checked_by
def check_cached_greedy_decode(cached_greedy_decode=None, *, points=None, hidden=False):
    """Greedy decoding with a KV cache; exactly the tokens of greedy decoding.

    Your `decode_step` and `KVCache` are replaced by the reference while this runs, so a mistake in
    Exercise 9.4 is not charged again here.
    """
    c = Checker(CACHED_GREEDY_DECODE, points, hidden)
    fn = c.find(cached_greedy_decode, "cached_greedy_decode")
    fn = rebind(fn, decode_step=decoding.decode_step, KVCache=decoding.KVCache)
    cases = cached_cases()
    common = dict(catalog=CATALOG["cached_greedy_decode"], forbidden=[decoding.greedy_decode], probes=GREEDY_PROBES)
    c.check_cases("one source: the same tokens as greedy decoding", fn, _reference_cached, cases["one"], **common)
    c.check_cases("a batch: the same tokens as greedy decoding", fn, _reference_cached, cases["batch"], **common)
    if not c.stopped:
        _check_cache_use(c, fn)
    return c.result()


def _check_cache_use(c, fn):
    """One new token per step through the decoder; a hint when cross-attention K/V are recomputed."""
    model = _watched(decoding_model(53, n_layers=2))
    src = source_batch(7, [4, 2])
    max_len = 6
    out = run_student(fn, (model, src, BOS, EOS, max_len), {}, [decoding.greedy_decode])
    if out.error is not None:
        return c.part("decodes with the cache: one new token per step", False,
                      f"[a batch of 2 sources, max_len={max_len}] {c._explain_error(out)}")
    steps = np.shape(out.value)[-1] if np.ndim(out.value) else max_len
    B = src.shape[0]
    full = model.__dict__.get("full_passes", 0)
    self_rows = max(b.self_attn.__dict__.get("kv_rows", 0) for b in model.decoder)
    if full:
        return c.part("decodes with the cache: one new token per step", False,
                      f"your code runs the whole decoder over the prefix ({full} calls of model.decode or "
                      "model(...)): that is decoding without a cache. Feed only the newest token through "
                      "decode_step(model, tokens, cache).")
    if self_rows > B * (steps + 1):
        return c.part("decodes with the cache: one new token per step", False,
                      f"the self-attention keys and values were computed for {self_rows} positions per block "
                      f"while generating {steps} tokens for {B} sequences ({B * steps} would do): each step "
                      "must feed only the newest token; the cache keeps the rest.")
    c.part("decodes with the cache: one new token per step", True)
    k_reads = max(b.cross_attn.__dict__.get("k_reads", 0) for b in model.decoder)
    if k_reads > B and k_reads >= steps:
        c.note(f"speed hint (no points lost): cross-attention's W_k was used {k_reads} times per block while "
               f"generating {steps} tokens. The encoder output H_enc does not change during decoding, so its "
               "keys and values can be computed once, before the first step (KVCache does this), and reused: "
               "recomputing them at every step gives the same tokens, only slower.")
