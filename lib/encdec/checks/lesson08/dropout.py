"""Exercise 8.6, dropout: its cases (training mode, eval mode and rate 0, float32, a rate near 1, any
shape) and the checker, which checks every case, exactly, in the convention the answer uses."""

import numpy as np

from ... import layers, training
from ...mistakes import CATALOG
from ..catalog import wrapped
from ..core import Case, Checker
from ..exercises import Exercise
from ..fixtures import generator
from .dropout_draws import _dropout_single_draw, _probe, _seeded
from .dropout_slips import dropout_probes


def dropout_cases():
    r = generator(86)
    return {
        "training": [
            Case("x = 1..12 as a (3, 4) array, rate=0.4, rng=default_rng(0), training left at its default",
                 (np.arange(1.0, 13.0).reshape(3, 4), 0.4, 0)),
            Case("a (2, 3, 5) batch of normal numbers, rate=0.1 (the 2017 rate), rng=default_rng(1)",
                 (r.normal(size=(2, 3, 5)), 0.1, 1)),
            Case("a (7,) vector, rate=0.3, training=True, rng=default_rng(2)",
                 (r.normal(size=7), 0.3, 2), {"training": True}, hidden=True),
            Case("a (2, 2, 3, 4) batch, rate=0.25, rng=default_rng(3)", (r.normal(size=(2, 2, 3, 4)), 0.25, 3),
                 hidden=True),
        ],
        "off": [
            Case("eval mode: training=False, rate=0.5 (x itself, nothing drawn)",
                 (r.normal(size=(3, 4)), 0.5, 4), {"training": False}),
            Case("rate=0 in training mode (x itself, nothing drawn)", (r.normal(size=(2, 5)), 0.0, 5)),
            Case("eval mode on a (2, 3, 4) batch, rate=0.9", (r.normal(size=(2, 3, 4)), 0.9, 6), {"training": False},
                 hidden=True),
        ],
        "robust": [
            Case("float32 input, rate=0.2, rng=default_rng(7)", (r.normal(size=(4, 5)).astype(np.float32), 0.2, 7),
                 float32=True),
            Case("rate=0.95, close to 1: most entries dropped, the rest scaled by 20; rng=default_rng(8)",
                 (r.normal(size=(5, 6)) + 2.0, 0.95, 8)),
            Case("a single number (shape ()), rate=0.5, rng=default_rng(0)", (np.array(3.0), 0.5, 0), hidden=True),
            Case("a (1, 40) row of ones, rate=0.5, rng=default_rng(9)", (np.ones((1, 40)), 0.5, 9), hidden=True),
        ],
    }


DROPOUT = Exercise("8.6", "dropout", points=2, reference=layers.dropout, reads=("rate", "training"))


@DROPOUT.checked_by
def check_dropout(dropout=None, *, points=None, hidden=False):
    """Inverted dropout, u = rng.random(x.shape) drawn once, keep where u >= rate,
    x * keep / (1 - rate); x itself (nothing drawn) with training=False or rate=0.

    keep = u < 1 - rate, the same distribution from the same draw, is accepted as well: the answer is
    then checked, exactly, against that convention.
    """
    c = Checker(DROPOUT, points, hidden)
    fn = c.find(dropout, "dropout")
    forbidden = [layers.dropout, training._dropout]
    flipped, nothing_drawn = _probe(fn) if fn is not None else (False, False)
    if nothing_drawn:
        c.note("in training mode your function draws no numbers from `rng`, yet changes x: draw the mask "
               "from the generator it is given, u = rng.random(x.shape) (not from np.random), so that the "
               "same seed gives the same mask.")
    if flipped:
        c.note("you keep the entries where u < 1 - rate, not where u >= rate: the same distribution from "
               "the same single draw, so it is accepted, and every case is checked against that convention.")
    ref = _seeded(_dropout_single_draw if flipped else layers.dropout)
    catalog = wrapped(CATALOG["dropout"], lambda impl: _seeded(impl, flipped))
    common = dict(catalog=catalog, forbidden=forbidden, probes=dropout_probes(flipped),
                  names=("output", "how many numbers your function drew from rng (-1: not a whole number of "
                                   "rng.random() draws)"))
    cases = dropout_cases()
    c.check_cases("training mode: one draw u, keep where u >= rate, scale by 1 / (1 - rate)", _seeded(fn), ref,
                  cases["training"], **common)
    c.check_cases("eval mode and rate 0: x unchanged, nothing drawn", _seeded(fn), ref, cases["off"], **common)
    c.check_cases("float32, a rate near 1, any shape", _seeded(fn), ref, cases["robust"], **common)
    return c.result()
