"""Exercise 8.6's diagnoses: dropout with knobs (the keep test, the scale, eval mode), the catalog
of its slips, the properties that see a mask not drawn from `rng` (_NotFromRng) or drawn by another
method of `rng` (_OtherDraw), and dropout_probes, the probes in the convention the answer uses."""

import numpy as np

from ..probes import Combos, Probes, Property
from .dropout_draws import _seeded


def _dropout_knobbed(k):
    """dropout with knobs: keep ("ge": u >= rate; "lt": u < rate, keeping with probability rate),
    scale ("inv_keep": 1/(1 - rate); "none"; "inv_rate": 1/rate; "keep": times 1 - rate), off ("x": x
    itself in eval mode; "scaled": x * (1 - rate) in eval mode; "dropped": dropout applied in eval mode too)."""
    def dropout(x, rate, rng, training=True):
        off = k.get("off", "x")
        if rate == 0 or (not training and off == "x"):
            return x
        if not training and off == "scaled":
            return x * (1.0 - rate)
        u = rng.random(np.shape(x))
        keep = u >= rate if k.get("keep", "ge") == "ge" else u < rate
        scale = {"inv_keep": 1.0 / (1.0 - rate), "none": 1.0, "inv_rate": 1.0 / rate,
                 "keep": 1.0 - rate}[k.get("scale", "inv_keep")]
        return np.asarray(x) * keep * scale
    return dropout


_DROPOUT_CHOICES = [
    ("keep", [("ge", "", ""), ("lt", "keeps_with_probability_rate", "an entry is kept where u < rate, so it survives "
                                                                    "with probability rate instead of 1 - rate")]),
    ("scale", [("inv_keep", "", ""), ("none", "no_rescale", "the kept entries are not rescaled by 1 / (1 - rate)"),
               ("inv_rate", "scaled_by_one_over_rate", "the kept entries are scaled by 1 / rate, not 1 / (1 - rate)"),
               ("keep", "scaled_by_keep_probability", "the kept entries are multiplied by 1 - rate instead of divided")]),
    ("off", [("x", "", ""), ("scaled", "scaled_at_evaluation", "in eval mode x is multiplied by 1 - rate: with inverted "
                                                               "dropout, eval mode returns x itself"),
             ("dropped", "applied_in_eval_mode", "dropout is applied in eval mode (training=False) too")]),
]
_DROPOUT_RIGHT = ("Inverted dropout: u = rng.random(x.shape), keep where u >= rate, x * keep / (1 - rate); x itself "
                  "with training=False or rate=0.")


class _NotFromRng(Property):
    """Training mode, where the right answer draws from `rng`: the answer drew nothing from it, yet
    changed x, so its randomness came from elsewhere (np.random's global generator, a new default_rng())."""

    kind = "rng"

    def inspect(self, attempt, probes):
        got, expected = attempt.got, attempt.expected
        if not (isinstance(got, tuple) and len(got) == 2 and isinstance(expected, tuple)):
            return None
        if int(np.asarray(got[1])) != 0 or int(np.asarray(expected[1])) <= 0:
            return None
        x = np.asarray(attempt.args()[0], dtype=np.float64)
        out = np.asarray(got[0], dtype=np.float64)
        if out.shape != x.shape or np.array_equal(out, x):
            return None
        return self.finding(attempt, "not_from_rng", (
            "your mask is not drawn from `rng`: your function drew no number from the generator it is given, yet "
            "changed x, so its randomness comes from elsewhere (np.random's global generator, or a new "
            "default_rng()). Draw u = rng.random(x.shape) from the `rng` argument: the same seed must give the "
            "same mask."))


class _OtherDraw(Property):
    """The mask drawn by another method of `rng` than random() (rng.binomial, rng.uniform, rng.choice): the
    same keep probability, another mask for the same seed. Read from the answer's source."""

    kind = "rng"

    def inspect(self, attempt, probes):
        import ast
        from ..probes.repair import answer_function
        if attempt.right():
            return None  # rng.uniform(size=...) draws as random() does: right, and nothing to say
        fdef = answer_function(attempt.student)
        if fdef is None or len(fdef.args.args) < 3:
            return None
        rng = fdef.args.args[2].arg
        calls = [n for n in ast.walk(fdef) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and isinstance(n.func.value, ast.Name) and n.func.value.id == rng and n.func.attr != "random"]
        if not calls:
            return None
        call = min(calls, key=lambda n: n.lineno)
        return self.finding(attempt, f"other_draw:{call.func.attr}", (
            f"your mask comes from `{ast.unparse(call)}` (line {call.lineno}), not from u = {rng}.random(x.shape): "
            f"{rng}.{call.func.attr} draws its own way, so the same seed gives another mask (and leaves the "
            f"generator elsewhere), even where its keep probability is right. Draw u = {rng}.random(x.shape) once "
            "and keep the entries where u >= rate."))


def dropout_probes(flipped):
    """The dropout probes, in the convention the answer uses (see _probe)."""
    def model(k, x, rate, seed, **kwargs):
        return _seeded(_dropout_knobbed(k), flipped)(x, rate, seed, **kwargs)
    return Probes(model, Combos("dropout", _DROPOUT_CHOICES, _DROPOUT_RIGHT), _NotFromRng(), _OtherDraw())
