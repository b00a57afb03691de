"""Checkers for lesson 04, Cross-attention.

Each exercise is declared (number, title, points) right above its checker; EXERCISES and ORDERINGS,
at the end, list them.
"""

import copy

import numpy as np

from .. import attention
from ..attention import MultiHeadAttention, merge_heads, split_heads
from ..mistakes import CATALOG
from ..mistakes import lesson04 as _register  # noqa: F401  (fills the catalog)
from .cases import Case
from .catalog import bind_catalog, wrapped
from .core import Checker
from .exercises import Exercise
from .fixtures import generator, length_mask
from .lesson01 import attention_probes
from .lesson02 import mha_model, mha_probes
from .ordering import Ordering, Step
from .probes import HeadsCompared, MaskedKeysZero, NotFinite, Probes, RowsSumToOne, argument
from .rebinding import rebind
from .running import run_student


def _pad_mask(lengths, n, heads_axis=False):
    """The source padding mask of rows with these real lengths, padded to n: shape (B, 1, n), or
    (B, 1, 1, n) with heads_axis (the multi-head layout of padding_mask)."""
    mask = length_mask(lengths, n)
    return mask if heads_axis else mask[:, 0]


def random_mha(d_model, n_heads, seed):
    """A reference MultiHeadAttention with random weights of a realistic scale."""
    return MultiHeadAttention(d_model, n_heads, rng=seed)


# -- Exercise 4.1 ------------------------------------------------------------------------------------------
def cross_attention_cases():
    r = generator(41)

    def qkv(lead, m, n, d_k, d_v, scale=1.0, dtype=np.float64):
        return tuple((r.normal(size=lead + s) * scale).astype(dtype) for s in ((m, d_k), (n, d_k), (n, d_v)))

    row_mask = np.where(np.arange(5) >= 3, -np.inf, 0.0)  # keys 3 and 4 are padding
    return {
        "rect": [Case("unbatched, m=4 target positions, n=6 source positions, d_k=3, d_v=5", qkv((), 4, 6, 3, 5)),
                 Case("more target than source positions: m=7, n=2, d_k=4", qkv((), 7, 2, 4, 3)),
                 Case("a single target position, m=1, n=5", qkv((), 1, 5, 2, 2), hidden=True)],
        "mask": [Case("padding mask of shape (5,) hiding source positions 3 and 4, m=3, d_k=4",
                      qkv((), 3, 5, 4, 2) + (row_mask,)),
                 Case("batch of 2 sources of real lengths 6 and 4, mask (2, 1, 6), m=4, d_k=3, d_v=5",
                      qkv((2,), 4, 6, 3, 5) + (_pad_mask([6, 4], 6),)),
                 Case("multi-head layout (2, 3, m=4, d_k=6), mask (2, 1, 1, 5), more target than real source",
                      qkv((2, 3), 4, 5, 6, 7) + (_pad_mask([2, 5], 5, heads_axis=True),))],
        "robust": [Case("batched (2, m=3, n=5), d_k=4, d_v=6", qkv((2,), 3, 5, 4, 6)),
                   Case("float32 inputs, m=3, n=5", qkv((), 3, 5, 4, 2, dtype=np.float32), float32=True),
                   Case("large scores (entries about 30) with padding", qkv((2,), 5, 4, 8, 3, scale=30.0)
                        + (_pad_mask([4, 2], 4),)),
                   Case("near-zero inputs (1e-8): weights nearly uniform over the real source tokens",
                        qkv((), 3, 6, 4, 2, scale=1e-8) + (np.where(np.arange(6) >= 4, -np.inf, 0.0),), hidden=True)],
    }


CROSS_ATTENTION = Exercise("4.1", "cross_attention", points=3, reference=attention.cross_attention,
                           sizes={"Q": "... m d_k", "K": "... n d_k", "V": "... n d_v"})


@CROSS_ATTENTION.checked_by
def check_cross_attention(cross_attention=None, *, points=None, hidden=False):
    """softmax(Q K^T / sqrt(d_k) + mask) V with decoder queries and encoder keys/values.

    Your `softmax` (if you use one) is replaced by the reference while this runs.
    """
    c = Checker(CROSS_ATTENTION, points, hidden)
    fn = c.find(cross_attention, "cross_attention")
    fn = rebind(fn, softmax=attention.softmax)
    cases = cross_attention_cases()
    common = dict(catalog=CATALOG["cross_attention"], names=("output", "weights"),
                  forbidden=[attention.cross_attention, attention.scaled_dot_product_attention],
                  probes=attention_probes(queries="target positions", keys="source positions"))
    ref = attention.cross_attention
    c.check_cases("rectangular weights (m != n), rows summing to 1", fn, ref, cases["rect"], **common)
    c.check_cases("the encoder padding mask", fn, ref, cases["mask"], **common)
    c.check_cases("batched, float32 and extreme inputs", fn, ref, cases["robust"], **common)
    return c.result()


# -- Exercise 4.2 ------------------------------------------------------------------------------------------
REFERENCE_LIBRARY = {"cross_attention": attention.cross_attention,
                     "scaled_dot_product_attention": attention.scaled_dot_product_attention,
                     "softmax": attention.softmax, "split_heads": split_heads, "merge_heads": merge_heads}


def _student_object(cls, source):
    """An instance of the student's class carrying `source`'s weights (copied by attribute name)."""
    obj = cls(source.d_model, source.n_heads)
    for name in ("W_q", "W_k", "W_v", "W_o"):
        setattr(obj, name, getattr(source, name).copy())
    obj.d_model, obj.n_heads, obj.d_k = source.d_model, source.n_heads, source.d_k
    return obj


def attend_configs():
    """(label, d_model, n_heads, weight seed, cases with args (query_input, H_enc, mask), hidden only)."""
    r = generator(42)

    def states(lead, m, n, d):
        return r.normal(size=lead + (m, d)), r.normal(size=lead + (n, d))

    configs = [
        ("unbatched and rectangular: m=3 decoder positions, n=5 source positions, d_model=8, 2 heads", 8, 2, 420,
         [Case("m=3, n=5", states((), 3, 5, 8) + (None,)),
          Case("m=6, n=2", states((), 6, 2, 8) + (None,), hidden=True)], False),
        ("batched, with the source padding mask (B, 1, 1, n), d_model=12, 3 heads", 12, 3, 421,
         [Case("B=2, m=5, n=6, real source lengths 6 and 3", states((2,), 5, 6, 12) + (_pad_mask([6, 3], 6, True),)),
          Case("B=3, m=5, n=3, real lengths 1, 2, 3", states((3,), 5, 3, 12) + (_pad_mask([1, 2, 3], 3, True),),
               hidden=True)], False),
        ("a single head, d_model=8", 8, 1, 422,
         [Case("1 head, m=2, n=4 (one head: d_k = d_model)", states((), 2, 4, 8) + (None,),
               alike=(("d_k", "d_model"),))], False),
        ("8 heads of width 2, d_model=16", 16, 8, 423,
         [Case("B=3, m=4, n=7, real lengths 7, 5 and 4", states((3,), 4, 7, 16) + (_pad_mask([7, 5, 4], 7, True),))],
         False),
    ]
    for _, d_model, n_heads, _, cases, _ in configs:
        for case in cases:  # the layer the check builds: its heads are sizes the answer reads
            case.given = {"h": n_heads, "d_k": d_model // n_heads}
    return configs


def attend_model(source):
    """The probes' model of attend on the case args (query_input, H_enc, mask): K and V made by the
    reference project_kv, as the check makes them."""
    def model(k, query_input, H_enc, mask=None):
        K, V = MultiHeadAttention.project_kv(source, H_enc)
        return mha_model(k, query_input, None, mask, K=K, V=V)
    return model


def _kv_first(method, source):
    """A method (self, query_input, K, V, mask) as a function of the case args: K, V = project_kv(H_enc)."""
    def run(query_input, H_enc, mask):
        K, V = MultiHeadAttention.project_kv(source, H_enc)
        return method(query_input, K, V, mask)
    return run


CROSS_ATTENTION_CLASS = Exercise("4.2", "CrossAttention", points=3, reference=MultiHeadAttention, method="attend",
                                 sizes={"query_input": "... m d_model", "H_enc": "... n d_model"})


@CROSS_ATTENTION_CLASS.checked_by
def check_attend(CrossAttention=None, *, points=None, hidden=False):
    """CrossAttention.attend(query_input, K, V, mask) with K, V from project_kv(H_enc).

    The weights W_q, W_k, W_v, W_o are random and copied into your object; K and V are made by
    the reference project_kv, and your `cross_attention`, `split_heads` and `merge_heads` are
    replaced by the reference ones, so only `attend` itself is graded here.
    """
    c = Checker(CROSS_ATTENTION_CLASS, points, hidden)
    cls = c.find(CrossAttention, "CrossAttention", kind="class")
    if cls is None:
        return c.result()
    cls = rebind(cls, **REFERENCE_LIBRARY)
    for label, d_model, n_heads, seed, cases, hidden_only in attend_configs():
        if c.stopped or (hidden_only and not hidden):
            continue
        source = random_mha(d_model, n_heads, seed)
        built = run_student(_student_object, (cls, source))
        if built.error is not None:
            c.part(label, False, f"could not build CrossAttention({d_model}, {n_heads}): {built.error_text}")
            continue
        catalog = wrapped(bind_catalog(CATALOG["CrossAttention"], source), lambda impl: _kv_first(impl, source))
        c.check_cases(label, _kv_first(built.value.attend, source),
                      _kv_first(lambda *a, source=source: MultiHeadAttention.attend(source, *a), source), cases,
                      catalog=catalog, forbidden=[MultiHeadAttention.attend], names=("output", "weights"),
                      probes=mha_probes(source, attend_model(source), attend=True))
    return c.result()


# -- Exercise 4.3 ------------------------------------------------------------------------------------------
def reference_cross_attention_step_by_step(mha, H_enc, H_dec, mask=None):
    """The reference for Exercise 4.3: project K, V once, then one attend per decoder position."""
    K, V = mha.project_kv(H_enc)
    steps = [mha.attend(H_dec[..., t:t + 1, :], K, V, mask) for t in range(H_dec.shape[-2])]
    return (np.concatenate([o for o, _ in steps], axis=-2), np.concatenate([w for _, w in steps], axis=-2))


class _Counting(MultiHeadAttention):
    """A MultiHeadAttention that counts how often each half is called, and with what."""

    def __init__(self, source):
        self.__dict__.update(copy.deepcopy(source.__dict__))
        self.kv_calls, self.attend_lengths = 0, []

    def project_kv(self, key_value_input):
        self.kv_calls += 1
        return MultiHeadAttention.project_kv(self, key_value_input)

    def attend(self, query_input, K, V, mask=None):
        self.attend_lengths.append(np.shape(query_input)[-2] if np.ndim(query_input) >= 2 else None)
        return MultiHeadAttention.attend(self, query_input, K, V, mask)


def step_cases():
    r = generator(43)

    def case(label, d_model, n_heads, lead, m, n, lengths=None, hidden=False, seed=430):
        mha = _Counting(random_mha(d_model, n_heads, seed))
        H_enc, H_dec = r.normal(size=lead + (n, d_model)), r.normal(size=lead + (m, d_model))
        mask = _pad_mask(lengths, n, True) if lengths is not None else None
        return Case(label, (mha, H_enc, H_dec, mask), hidden=hidden)

    return {
        "plain": [case("unbatched, n=5 source positions, m=3 decoder steps, d_model=8, 2 heads", 8, 2, (), 3, 5),
                  case("m=6 steps over n=2 source positions", 8, 4, (), 6, 2, hidden=True, seed=431)],
        "mask": [case("batch of 2, n=6 with real lengths 6 and 2, m=4 steps", 12, 3, (2,), 4, 6, [6, 2], seed=432),
                 case("batch of 3, n=4 with real lengths 4, 1, 3, m=7 steps", 8, 2, (3,), 7, 4, [4, 1, 3],
                      hidden=True, seed=433)],
    }


def _full_reference(mha, H_enc, H_dec, mask=None):
    return MultiHeadAttention.__call__(mha, H_dec, H_enc, mask)


STEP_PROBES = Probes(
    None,
    NotFinite(),
    HeadsCompared(lambda v: [v[1]]),
    RowsSumToOne(weights=lambda v: v[1], what="attention weights", over="the source positions"),
    MaskedKeysZero(argument(3, "mask"), weights=lambda v: v[1]))

CROSS_ATTENTION_STEP_BY_STEP = Exercise("4.3", "cross_attention_step_by_step", points=2,
                                        reference=reference_cross_attention_step_by_step,
                                        sizes={"mha.n_heads": "h", "H_enc": "... n d_model", "H_dec": "... m d_model"})


@CROSS_ATTENTION_STEP_BY_STEP.checked_by
def check_cross_attention_step_by_step(cross_attention_step_by_step=None, *, points=None, hidden=False):
    """K, V = mha.project_kv(H_enc) once; then mha.attend for each decoder position."""
    c = Checker(CROSS_ATTENTION_STEP_BY_STEP, points, hidden)
    fn = c.find(cross_attention_step_by_step, "cross_attention_step_by_step")
    cases = step_cases()
    common = dict(catalog=CATALOG["cross_attention_step_by_step"], names=("output", "weights"),
                  forbidden=[reference_cross_attention_step_by_step], probes=STEP_PROBES)
    c.check_cases("the same result as attending all positions at once", fn, _full_reference, cases["plain"], **common)
    c.check_cases("the source padding mask at every step", fn, _full_reference, cases["mask"], **common)
    label = "K and V projected once; one attend per decoder position"
    if c.stopped:  # the calls are counted whether or not the outputs above are right: they do not depend on them
        return c.result()
    r = generator(434)
    mha = _Counting(random_mha(8, 2, 435))
    H_enc, H_dec = r.normal(size=(2, 5, 8)), r.normal(size=(2, 4, 8))
    outcome = run_student(fn, (mha, H_enc, H_dec, _pad_mask([5, 3], 5, True)), forbidden=common["forbidden"])
    if outcome.error is not None:
        c.part(label, False, c._explain_error(outcome))
    elif mha.kv_calls > 1:
        c.part(label, False, f"project_kv was called {mha.kv_calls} times for 4 decoding steps. "
               + c.misconception(CATALOG.find("cross_attention_step_by_step", "recompute_every_step")))
    elif mha.kv_calls == 0:
        c.part(label, False, "mha.project_kv was never called. Make K and V with K, V = mha.project_kv(H_enc), "
               "once, before the loop over the decoder positions.")
    elif mha.attend_lengths != [1] * 4:
        c.part(label, False, f"mha.attend was called with queries of lengths {mha.attend_lengths}; for 4 decoding "
               "steps it should be called 4 times, each with one position: H_dec[..., t:t+1, :]. That is how "
               "a decoder generates: one new position per step.")
    else:
        c.part(label, True)
    return c.result()


# -- Exercise 4.4 ------------------------------------------------------------------------------------------
QKV_ORDER = Ordering(
    "4.4", "where Q, K and V come from, in order", "qkv_order", points=1,
    steps=[
        Step("the encoder reads the whole source sentence and returns H_enc",
             "H_enc is where the keys and values come from, and the decoder's cross-attention reads "
             "nothing else of the source: it must exist before anything else in this list."),
        Step("before the first decoding step, project H_enc into keys K = H_enc W_k and values "
             "V = H_enc W_v, and keep them for every step",
             "K and V are made from H_enc, so they need the encoder's output; they depend on nothing the "
             "decoder writes, so they are made once, before the first decoding step, and reused by every step."),
        Step("at decoding step t, project the decoder's current state into a query q_t = h_t W_q",
             "The query belongs to one decoding step: it is made from the decoder's state at step t, anew "
             "at every step, after the once-per-sentence K and V already exist."),
        Step("score q_t against every key, add the source padding mask, softmax over the source positions",
             "Scoring needs both sides: the query of this step and the keys of every source position, "
             "so it comes after both are made."),
        Step("mix the values with those weights, project with W_o, add the result to the decoder's residual stream",
             "The values can only be mixed once the weights exist, and the weights come from the scores: "
             "this is the last thing cross-attention does at step t."),
    ],
    shown=[3, 1, 4, 0, 2],
)


@QKV_ORDER.checked_by
def check_qkv_order(qkv_order=None, *, points=None):
    """All or nothing."""
    return QKV_ORDER.check(qkv_order, points)


EXERCISES = [CROSS_ATTENTION, CROSS_ATTENTION_CLASS, CROSS_ATTENTION_STEP_BY_STEP]
ORDERINGS = [QKV_ORDER]


# The concept checks before and after the lesson (encdec.checks.concepts): Exercise 4.0, and the one
# numbered after the last exercise above.
from .concepts import concept_checks  # noqa: E402

CONCEPTS = concept_checks(4, after=[*EXERCISES, *ORDERINGS])
check_concepts_before, check_concepts_after = (check.checker for check in CONCEPTS)
