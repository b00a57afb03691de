"""Exercise 2.4, MultiHeadAttention: its cases and checker (its probes are in attention_slips)."""

import numpy as np

from ... import attention
from ...mistakes import CATALOG
from ..cases import Case
from ..catalog import bind_catalog
from ..core import Checker
from ..exercises import Exercise
from ..fixtures import generator
from ..rebinding import rebind
from .attention_slips import mha_probes
from .building import EARLIER, build_student, random_layer


# -- Exercise 2.4 -------------------------------------------------------------------------------------
MHA_ATTRIBUTES = ("W_q", "W_k", "W_v", "W_o", "n_heads", "d_k", "d_model")


def mha_parts():
    """(label, d_model, n_heads, cases): one reference layer per part."""
    r = generator(24)
    x = r.normal
    tokens = np.array([[4, 8, 2, 0, 0], [3, 3, 6, 1, 7], [5, 2, 0, 0, 0]])
    pad5 = attention.padding_mask(tokens, 0)  # (3, 1, 1, 5)
    pad6 = attention.padding_mask(np.array([[5, 5, 5, 5, 0, 0], [6, 6, 6, 6, 6, 0]]), 0)  # (2, 1, 1, 6)
    return [
        ("self-attention, one sentence (T=5, d_model=8, h=2)", 8, 2,
         [Case("x of shape (5, 8)", (x(size=(5, 8)),)),
          Case("x of shape (3, 8)", (x(size=(3, 8)),), hidden=True)]),
        ("leading batch dimensions (d_model=12, h=3, so d_k=4)", 12, 3,
         [Case("x of shape (2, 5, 12)", (x(size=(2, 5, 12)),)),
          Case("x of shape (2, 3, 4, 12)", (x(size=(2, 3, 4, 12)),), hidden=True)]),
        ("cross-attention: m=5 queries read n=7 keys/values", 12, 3,
         [Case("query_input (5, 12), key_value_input (7, 12)", (x(size=(5, 12)), x(size=(7, 12)))),
          Case("batched: (2, 4, 12) and (2, 6, 12)", (x(size=(2, 4, 12)), x(size=(2, 6, 12))), hidden=True)]),
        ("masks: padding (B, 1, 1, n) and causal (T, T)", 8, 2,
         [Case("a padding mask hiding the pads of 3 sentences", (x(size=(3, 5, 8)),), {"mask": pad5}),
          Case("a causal mask (5, 5)", (x(size=(5, 8)),), {"mask": attention.create_causal_mask(5)}),
          Case("cross-attention with a source padding mask", (x(size=(2, 3, 8)), x(size=(2, 6, 8))),
               {"mask": pad6}, hidden=True)]),
        ("float32 and large inputs (d_model=8, h=4)", 8, 4,
         [Case("float32 x of shape (3, 8)", (x(size=(3, 8)).astype(np.float32),), float32=True),
          Case("large inputs (entries about 10)", (x(size=(2, 4, 8)) * 10,), hidden=True),
          Case("near-zero inputs (entries about 1e-6)", (x(size=(3, 8)) * 1e-6,), hidden=True)]),
        ("one head per feature (d_model=6, h=6, d_k=1)", 6, 6,
         [Case("x of shape (3, 4, 6) (one head per feature: h = d_model)", (x(size=(3, 4, 6)),),
               alike=(("h", "d_model"),))]),
    ]


MULTI_HEAD_ATTENTION = Exercise("2.4", "MultiHeadAttention", points=5, reference=attention.MultiHeadAttention,
                                method="__call__", cell="multi_head_attention",
                                sizes={"query_input": "... m d_model", "key_value_input": "... n d_model",
                                       "self.n_heads": "h", "self.d_k": "d_k"})


@MULTI_HEAD_ATTENTION.checked_by
def check_multi_head_attention(MultiHeadAttention=None, *, points=None, hidden=False):
    """Project, split heads, attend, merge heads, project with W_o.

    Your class is built with your constructor and given the same random weights as the reference.
    `softmax` and `scaled_dot_product_attention` run as the reference while this is checked.
    """
    c = Checker(MULTI_HEAD_ATTENTION, points, hidden)
    cls = c.find(MultiHeadAttention, "MultiHeadAttention", kind="class")
    if cls is not None:
        cls = rebind(cls, **EARLIER)
    forbidden = [attention.MultiHeadAttention.__call__, attention.MultiHeadAttention.attend,
                 attention.MultiHeadAttention.project_kv, attention.split_heads, attention.merge_heads]
    for seed, (label, d_model, n_heads, cases) in enumerate(mha_parts()):
        if c.stopped:
            break
        if not hidden and all(case.hidden for case in cases):
            continue
        ref = random_layer(attention.MultiHeadAttention(d_model, n_heads), 240 + seed)
        student = build_student(c, cls, (d_model, n_heads), ref, MHA_ATTRIBUTES, label)
        if student is None:
            continue
        c.check_cases(label, student, ref, cases, catalog=bind_catalog(CATALOG["MultiHeadAttention"], ref),
                      forbidden=forbidden, names=("output", "weights"), probes=mha_probes(ref),
                      robust=label.startswith("float32 and large"))
    return c.result()
