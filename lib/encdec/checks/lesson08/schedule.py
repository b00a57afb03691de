"""Exercise 8.3, warmup_schedule: the schedule asked one step at a time over a list of steps
(_over_steps), its cases, the probes of its slips (the step counted off by one, the ramp, the decay,
d_model's exponent, min or max, the factor) and the checker."""

import numpy as np

from ... import optim
from ...mistakes import CATALOG
from ..catalog import wrapped
from ..core import Case, Checker
from ..exercises import Exercise
from ..probes import Combos, Probes, Scale


def _over_steps(schedule):
    """The schedule at each step of a list: schedule(step, ...) is asked one step at a time."""
    def run(steps, d_model, warmup_steps, factor=None):
        kwargs = {} if factor is None else {"factor": factor}
        return np.array([float(schedule(int(s), d_model, warmup_steps, **kwargs)) for s in steps])
    return run


def schedule_cases():
    def steps(w):
        return sorted({1, 2, 10, max(w // 2, 1), max(w - 1, 1), w, w + 1, 2 * w, 10 * w, 100 * w})

    def case(d_model, warmup, factor=None, hidden=False, note=""):
        s = steps(warmup)
        label = (f"{note}d_model={d_model}, warmup_steps={warmup}" + (f", factor={factor}" if factor else "")
                 + f"; at steps {s} (index i is the i-th of these, from 0)")
        args = (s, d_model, warmup) + ((factor,) if factor else ())
        return Case(label, args, hidden=hidden)

    return {
        "paper": [case(512, 4000, note="the 2017 setting: "), case(64, 100), case(1024, 1, hidden=True)],
        "factor": [case(256, 50, 2.0), case(32, 7, 0.5, hidden=True)],
    }


def _schedule_model(k, steps, d_model, warmup_steps, factor=None):
    """warmup_schedule over a list of steps, with knobs: shift (the step used is step + shift), rise and
    decay (the exponents of the warm-up and the decay; "flat": the peak kept after the warm-up), d_power (the exponent of d_model), pick ("min",
    "max"), warm_power (the exponent of warmup_steps in the ramp; ("if", p): that ramp while step <=
    warmup_steps, the decay after it, an if in place of the min), factor_power (the factor's exponent: 1 right),
    peak_power (an exponent of warmup_steps multiplying every rate: 0 right; 0.5, each branch divided by the peak)."""
    f = 1.0 if factor is None else factor ** k.get("factor_power", 1.0)
    out = []
    for s in steps:
        s = s + k.get("shift", 0)
        if s <= 0:
            raise ValueError("step 0")
        power = k.get("warm_power", -1.5)
        branch = isinstance(power, tuple)  # ("if", p): the ramp while step <= warmup_steps, then the decay ("if<": <)
        decay = k.get("decay", -0.5)
        a = warmup_steps ** -0.5 if decay == "flat" else s ** decay  # "flat": the peak kept after the warm-up
        b = s * warmup_steps ** (power[1] if branch else power)
        warm = branch and (s < warmup_steps if power[0] == "if<" else s <= warmup_steps)
        picked = (b if warm else a) if branch else min(a, b) if k.get("pick", "min") == "min" else max(a, b)
        out.append(f * d_model ** k.get("d_power", -0.5) * warmup_steps ** k.get("peak_power", 0.0) * picked)
    return np.array(out) * k.get("factor_scale", 1.0)


_SCHEDULE_CHOICES = [
    ("shift", [(0, "", ""), (-1, "one_step_early", "the step is counted from 0 (step - 1 is used): steps count from 1"),
               (1, "one_step_late", "step + 1 is used: the schedule runs one step ahead")]),
    ("warm_power", [(-1.5, "", ""), (-1.0, "ramp_over_warmup", "the ramp is step / warmup_steps, not step * warmup_steps^-1.5"),
                    (-0.5, "ramp_warmup_half", "the ramp uses warmup_steps^-0.5 instead of warmup_steps^-1.5"),
                    (("if", -1.0), "ramp_to_one", "the warm-up branch (step <= warmup_steps) is step / warmup_steps, a "
                     "ramp up to 1 times the other factors, where the formula has step * warmup_steps^-1.5, which "
                     "meets step^-0.5 at step = warmup_steps: your rate jumps there"),
                    (("if<", -1.0), "ramp_to_one_before_peak", "the warm-up branch (step < warmup_steps) is step / warmup_steps, a "
                     "ramp up to 1 times the other factors, where the formula has step * warmup_steps^-1.5, which "
                     "meets step^-0.5 at step = warmup_steps: your rate jumps down there")]),
    ("decay", [(-0.5, "", ""), (-1.0, "decay_one_over_step", "the decay is 1/step, not 1/sqrt(step)"),
               ("flat", "no_decay", "after the warm-up the rate stays at its peak: the decay, step^-0.5, is missing "
                "(min(step, warmup_steps) alone stops the ramp but never decays)")]),
    ("d_power", [(-0.5, "", ""), (0.5, "d_model_sqrt", "d_model^0.5 multiplies instead of d_model^-0.5"),
                 (0.0, "no_d_model", "the d_model^-0.5 factor is missing"),
                 (-1.0, "d_model_inverse", "d_model^-1 is used instead of d_model^-0.5")]),
    ("pick", [("min", "", ""), ("max", "max", "max of the two branches instead of min")]),
    ("factor_power", [(1.0, "", ""), (0.0, "factor_ignored", "the factor argument is ignored"),
                      (-0.5, "factor_under_root", "the factor is under the square root with d_model, "
                       "(factor * d_model)^-0.5, so the rate goes as factor^-0.5: the formula multiplies by factor, "
                       "factor * d_model^-0.5"),
                      (0.5, "factor_root", "the rate goes as factor^0.5 (the square root of the factor): the "
                       "formula multiplies by factor itself")]),
    ("peak_power", [(0.0, "", ""), (0.5, "peak_dropped", "each branch is divided by its value at the peak: the "
                    "ramp rises to 1 (step / warmup_steps) and the decay falls from 1 ((warmup_steps / step)^0.5), so "
                    "every rate is sqrt(warmup_steps) times the formula's. The formula keeps the peak's own size: "
                    "min(step^-0.5, step * warmup_steps^-1.5) is warmup_steps^-0.5 at step = warmup_steps")]),
]
_SCHEDULE_RIGHT = "lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5), with steps counted from 1."


SCHEDULE_PROBES = Probes(
    _schedule_model, Combos("schedule", _SCHEDULE_CHOICES, _SCHEDULE_RIGHT,
                            weak=("factor_under_root", "factor_root")),  # the power, not the line: the repair first
    Scale(lambda steps, d_model, warmup_steps, factor=None: [("1", 1.0, None)], what="your rates", knob="factor_scale"))


WARMUP_SCHEDULE = Exercise("8.3", "warmup_schedule", points=2, reference=optim.warmup_schedule,
                           reads=("d_model", "warmup_steps", "factor"))


@WARMUP_SCHEDULE.checked_by
def check_warmup_schedule(warmup_schedule=None, *, points=None, hidden=False):
    """lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)."""
    c = Checker(WARMUP_SCHEDULE, points, hidden)
    fn = c.find(warmup_schedule, "warmup_schedule")
    cases = schedule_cases()
    catalog = wrapped(CATALOG["warmup_schedule"], _over_steps)
    common = dict(catalog=catalog, forbidden=[optim.warmup_schedule])
    ref = _over_steps(optim.warmup_schedule)
    c.check_cases("the learning rate at each step",
                  _over_steps(fn), ref, cases["paper"], probes=SCHEDULE_PROBES, **common)
    c.check_cases("the factor argument", _over_steps(fn), ref, cases["factor"], probes=SCHEDULE_PROBES, **common)
    return c.result()
