"""Exercise 6.2, embed: its cases, the position encodings of the slips, the knob model of its slips
(EMBED_PROBES) and the checker."""

import numpy as np

from ...layers import sinusoidal_positions
from ...mistakes import CATALOG
from ...model import Seq2Seq
from ..core import Case, Checker
from ..exercises import Exercise
from ..fixtures import generator, padded_tokens, random_model
from ..probes import Combos, Probes, Scale


def embed_cases():
    r = generator(62)
    small = random_model(620, vocab_size=13, n_layers=2)
    wide = random_model(621, vocab_size=20, d_model=12, n_heads=3, n_layers=2)
    odd = random_model(622, vocab_size=9, d_model=7, n_heads=1, n_layers=2)
    return {
        "values": [Case("one sequence of 5 tokens, d_model=8", (small, np.array([3, 1, 7, 7, 12]))),
                   Case("a batch (2, 6) with padding, d_model=12", (wide, padded_tokens(r, [6, 3], 6, 20))),
                   Case("odd width d_model=7", (odd, np.array([[4, 5, 6]])), hidden=True),
                   Case("leading shape (2, 2, 3)", (small, r.integers(0, 13, size=(2, 2, 3))), hidden=True)],
    }


def _positions(kind, n, d):
    """PE for n positions, the course's (kind "right") or a slip's."""
    if kind == "from1":
        return sinusoidal_positions(n + 1, d)[1:]
    if kind in ("swap", "halves", "i_over_d"):
        pos = np.arange(n, dtype=np.float64)[:, None]
        i = np.arange(0, d, 2, dtype=np.float64)
        angles = pos / np.power(10000.0, (i / 2 if kind == "i_over_d" else i) / d)
        if kind == "halves":
            return np.concatenate([np.sin(angles), np.cos(angles)], axis=-1)[:, :d]
        pe = np.zeros((n, d))
        first, second = (np.cos, np.sin) if kind == "swap" else (np.sin, np.cos)
        pe[:, 0::2] = first(angles)
        pe[:, 1::2] = second(angles[:, : d // 2])
        return pe
    return sinusoidal_positions(n, d)


def _embed_model(k, model, tokens):
    """Seq2Seq.embed with knobs: scale (what multiplies E's rows), pos (which positions are added),
    factor (a number in place of sqrt(d_model), for Scale)."""
    tokens = np.asarray(tokens)
    d = model.config.d_model
    scale = {"sqrt": np.sqrt(d), "one": 1.0, "d": float(d), "inv": 1 / np.sqrt(d)}[k.get("scale", "sqrt")]
    scale = k.get("factor", scale)
    rows = model.embedding[tokens] * scale
    pos = k.get("pos", "right")
    T = tokens.shape[-1]
    if pos == "none":
        return rows
    if pos == "by_id":
        return rows + sinusoidal_positions(model.config.vocab_size, d)[tokens]
    pe = _positions(pos, T, d)
    if pos == "double":
        pe = 2 * pe
    if pos == "scaled":
        return (model.embedding[tokens] + pe) * scale
    return rows + pe


_EMBED_RIGHT = "embed(tokens) = E[tokens] * sqrt(d_model) + PE[0 .. T-1], PE[pos, 2i] = sin, PE[pos, 2i+1] = cos."
EMBED_PROBES = Probes(
    _embed_model,
    Combos("embed", [
        ("scale", [("sqrt", "", ""), ("one", "no_scale", "E's rows are not multiplied by sqrt(d_model)"),
                   ("d", "scaled_by_d", "E's rows are multiplied by d_model, not by its square root"),
                   ("inv", "divided", "E's rows are divided by sqrt(d_model) instead of multiplied")]),
        ("pos", [("right", "", ""), ("none", "no_positions", "the position encodings are not added"),
                 ("double", "positions_twice", "the position encodings are added twice"),
                 ("scaled", "positions_scaled", "the positions are multiplied by sqrt(d_model) too (only E's rows are)"),
                 ("by_id", "positions_by_id", "the position encodings are looked up by token id, not by position"),
                 ("from1", "positions_from_1", "the positions count from 1, not from 0"),
                 ("swap", "sin_cos_swapped", "the even columns hold cosines and the odd ones sines: the other way round"),
                 ("halves", "sin_cos_halves", "the sines fill the first half of the columns and the cosines the second, "
                                              "instead of alternating (sine in column 2i, cosine in 2i+1)"),
                 ("i_over_d", "exponent_i", "the frequencies use 10000^(i/d) with i the column pair, not 10000^(2i/d)")]),
    ], _EMBED_RIGHT),
    Scale(lambda model, tokens: [("sqrt(d_model)", float(np.sqrt(model.config.d_model)), None)],
          what="E's rows", knob="factor"))


EMBED = Exercise("6.2", "embed", points=2, reference=Seq2Seq.embed,
                 sizes={"tokens": "... m", "self.config.d_model": "d_model", "self.config.vocab_size": "V"})


@EMBED.checked_by
def check_embed(embed=None, *, points=None, hidden=False):
    """E[tokens] * sqrt(d_model) + PE[0 .. T-1]."""
    c = Checker(EMBED, points, hidden)
    fn = c.find(embed, "embed")
    common = dict(catalog=CATALOG["embed"], forbidden=[Seq2Seq.embed])
    c.check_cases("scaled embedding rows plus positions", fn, Seq2Seq.embed, embed_cases()["values"],
                  probes=EMBED_PROBES, **common)
    return c.result()
