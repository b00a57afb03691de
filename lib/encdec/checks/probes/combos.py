"""Variants in combination, for gradients, training and decoding: each lesson names its choices (knob,
values) and the probe tries them one and two at a time, and on each output alone."""

import itertools

import numpy as np

from .base import Variant, informative, replaced
from .variants import Variants


# -- kinds for gradients, training and decoding ------------------------------------------------------------
# Lessons 6-10 add: Combos (every combination of a few knob choices, so that two slips together are
# named too), EachOutput (the variants compared output by output: dK named even when dQ is wrong in
# another way), Invariant (the student's code run again on an input whose answer must not change, or
# must change), DecodedRows (what a decoded batch of token ids must look like: EOS ends a row,
# pads after it, no BOS or pad chosen, no column past the last EOS), and, at the end, FailedProduct (a
# failing `a @ b` named by what its operands are, where two slips fail with one message).
def combos(choices, right=None):
    """Every combination of knob choices but the right one, fewest changes first: a list of
    (name, knobs, diagnosis) for Variants.

    choices: [(knob, [(value, name, words), ...]), ...], the first value of each knob the right one
    (its words unused); the diagnosis joins the words of every knob changed, then `right` (what to do)."""
    knobs = [k for k, _ in choices]
    options = [opts for _, opts in choices]
    out = []
    for pick in itertools.product(*[range(len(o)) for o in options]):
        changed = [i for i, p in enumerate(pick) if p]
        if not changed:
            continue
        name = "+".join(options[i][pick[i]][1] for i in changed)
        words = [options[i][pick[i]][2] for i in changed]
        if len(words) == 1:
            text = words[0][0].upper() + words[0][1:]
        else:
            text = "Two slips together: " + "; and ".join(words) if len(words) == 2 else \
                f"{len(words)} slips together: " + "; ".join(words)
        text = text.rstrip(".") + "." + (f" {right}" if right else "")
        out.append((len(changed), name, {knobs[i]: options[i][pick[i]][0] for i in range(len(knobs))}, text))
    out.sort(key=lambda o: o[0])
    return [(name, knobs_, text) for _, name, knobs_, text in out]


class Combos(Variants):
    """Variants over every combination of a few knobs (see `combos`): a single slip is tried first,
    then two together, so that an answer with two slips is named by both. Key: probe:<kind>:<a+b>."""

    def __init__(self, kind, choices, right=None, most=2, weak=()):
        options = [o for o in combos(choices, right) if o[0].count("+") < most]
        super().__init__(kind, options)
        self.weak = frozenset(weak)


class EachOutput(Variant):
    """The variants of `inner` (any Variant) compared with one output of a tuple at a time, e.g. dK of
    (dQ, dK, dV): the slip in that output is named even when another output is wrong in another way.
    Reports the first output (in order) whose value one variant gives. Key: probe:<kind>:<output>:<detail>."""

    def __init__(self, inner, names):
        self.inner, self.names = inner, tuple(names)
        self.kind = inner.kind

    def find(self, attempt, probes):
        got, expected = attempt.got, attempt.expected
        if probes.model is None or attempt.error is not None or attempt.postprocess is not None:
            return None
        if not isinstance(got, (tuple, list)) or not isinstance(expected, tuple) or len(got) != len(expected):
            return None
        variants = []
        for detail, diagnosis, knobs in self.inner.variants(attempt, probes):
            value, error = probes.run(attempt, knobs)
            if error is None and isinstance(value, tuple) and len(value) == len(expected):
                variants.append((detail, diagnosis, value))
        for i, name in enumerate(self.names):
            if attempt.is_expected(_with(expected, i, got[i])):
                continue  # this output is right
            for detail, diagnosis, value in variants:
                if not attempt.is_expected(_with(expected, i, value[i])) and attempt.matches(_with(got, i, value[i])) \
                        and informative(value[i], expected[i]):
                    return self.finding(attempt, f"{name}:{detail}", f"in `{name}`: {diagnosis}")
        return None


def _with(values, i, item):
    """The tuple `values` with item i replaced."""
    return tuple(item if j == i else v for j, v in enumerate(values))


