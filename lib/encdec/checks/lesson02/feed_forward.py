"""Exercise 2.5, FeedForward: its model with knobs, probes, cases and checker."""

import numpy as np

from ... import layers
from ...mistakes import CATALOG
from ..cases import Case
from ..catalog import bind_catalog
from ..core import Checker
from ..exercises import Exercise
from ..fixtures import generator
from ..probes import Activation, Missing, NotFinite, Probes, Swapped, Transposed
from ..rebinding import rebind
from .building import EARLIER, build_student, random_layer


# -- probes: the kinds of slip the answer may show (encdec.checks.probes) -------------------------------------
def ffn_model(k, x):
    """gelu(x @ W1 + b1) @ W2 + b2 with knobs: activation, without={"b1", "b2"}."""
    o = k.obj
    hidden = np.asarray(x, dtype=np.float64) @ o.W1 + (0.0 if k.drops("b1") else o.b1)
    return k.get("activation", layers.gelu)(hidden) @ o.W2 + (0.0 if k.drops("b2") else o.b2)


def ffn_probes(layer):
    return Probes(ffn_model,
                  Activation("GELU (tanh form), through `gelu`"),
                  Missing({"b1": ("the first bias b1", "hidden = gelu(x @ W1 + b1)."),
                           "b2": ("the second bias b2", "The output is hidden @ W2 + b2.")}),
                  Transposed(), Swapped(),
                  NotFinite(), obj=layer, params=("W1", "b1", "W2", "b2"),
                  roles={"W1": "d_model -> d_ff", "W2": "d_ff -> d_model"})


# -- Exercise 2.5 -------------------------------------------------------------------------------------
FFN_ATTRIBUTES = ("W1", "b1", "W2", "b2", "d_model", "d_ff")


def ffn_parts():
    r = generator(25)
    return [
        ("one sentence (T=5, d_model=8, d_ff=12)", 8, 12,
         [Case("x of shape (5, 8)", (r.normal(size=(5, 8)),)),
          Case("x of shape (1, 8)", (r.normal(size=(1, 8)),), hidden=True)]),
        ("batched, float32 and large inputs (d_model=6, d_ff=24)", 6, 24,
         [Case("x of shape (2, 3, 6)", (r.normal(size=(2, 3, 6)),)),
          Case("float32 x", (r.normal(size=(4, 6)).astype(np.float32),), float32=True),
          Case("large inputs (entries about 20)", (r.normal(size=(3, 6)) * 20,), hidden=True),
          Case("near-zero inputs (entries about 1e-7)", (r.normal(size=(2, 6)) * 1e-7,), hidden=True)]),
    ]


FEED_FORWARD = Exercise("2.5", "FeedForward", points=2, reference=layers.FeedForward, method="__call__",
                        cell="feed_forward", sizes={"x": "... m d_model", "self.d_ff": "d_ff"})


@FEED_FORWARD.checked_by
def check_feed_forward(FeedForward=None, *, points=None, hidden=False):
    """gelu(x @ W1 + b1) @ W2 + b2; `gelu` runs as the reference while this is checked."""
    c = Checker(FEED_FORWARD, points, hidden)
    cls = c.find(FeedForward, "FeedForward", kind="class")
    if cls is not None:
        cls = rebind(cls, **EARLIER)
    for seed, (label, d_model, d_ff, cases) in enumerate(ffn_parts()):
        if c.stopped:
            break
        ref = random_layer(layers.FeedForward(d_model, d_ff), 250 + seed)
        student = build_student(c, cls, (d_model, d_ff), ref, FFN_ATTRIBUTES, label)
        if student is None:
            continue
        c.check_cases(label, student, ref, cases, catalog=bind_catalog(CATALOG["FeedForward"], ref),
                      forbidden=[layers.FeedForward.__call__], probes=ffn_probes(ref))
    return c.result()
