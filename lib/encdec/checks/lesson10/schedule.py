"""Exercise 10.2, lr_at: linear warm-up then cosine decay, checked step by step and over the capstone's
whole schedule, with the knob model of its slips (LR_PROBES)."""

import math

import numpy as np

from ... import optim
from ...mistakes import CATALOG
from ..cases import Case
from ..catalog import wrapped
from ..exercises import Exercise, Later
from ..probes import Combos, Probes
from .torch_checker import TorchChecker, _one_thread
from .torch_references import references


CAPSTONE_SCHEDULE = (2e-3, 100, 800, 4e-5)  # peak_lr, warmup_steps, total_steps, min_lr: encdec.capstone.DEFAULT


def _curve(fn):
    """The rates of steps 1..total_steps as one array (index i is step i + 1)."""
    def run(peak_lr, warmup_steps, total_steps, min_lr):
        return np.array([float(fn(s, peak_lr, warmup_steps, total_steps, min_lr)) for s in range(1, total_steps + 1)])
    return run


def _as_float(fn):
    def run(*args):
        value = fn(*args)
        torch = references().torch
        return float(value) if isinstance(value, (int, float, np.number, torch.Tensor)) else value
    return run


def _lr_model(k, step, peak_lr, warmup_steps, total_steps, min_lr=0.0):
    """lr_at with knobs: warm_shift (step + shift in the warm-up), decay_shift (step + shift in the decay's
    progress), span ("decay": progress over total_steps - warmup_steps; "total": over total_steps), half
    (False: cos alone, without 0.5 (1 + ...)), floor (False: min_lr ignored), height ("peak": the cosine's
    height is peak_lr, with min_lr added on top), clamp (False: no clamp after total_steps)."""
    if step <= warmup_steps:
        return float(peak_lr * (step + k.get("warm_shift", 0)) / warmup_steps)
    span = total_steps - warmup_steps if k.get("span", "decay") == "decay" else total_steps
    progress = (step + k.get("decay_shift", 0) - warmup_steps) / max(span, 1)
    if k.get("clamp", True):
        progress = min(progress, 1.0)
    low = min_lr if k.get("floor", True) else 0.0
    wave = 0.5 * (1.0 + math.cos(math.pi * progress)) if k.get("half", True) else math.cos(math.pi * progress)
    height = peak_lr - low if k.get("height", "span") == "span" else peak_lr
    return float(low + height * wave)


LR_PROBES = Probes(_lr_model, Combos("lr", [
    ("warm_shift", [(0, "", ""), (1, "warmup_one_step_early", "the warm-up runs one step early (step + 1)"),
                    (-1, "warmup_one_step_late", "the warm-up runs one step late (step - 1): step 1 gets a rate of 0")]),
    ("decay_shift", [(0, "", ""), (-1, "decay_one_step_late", "the decay's progress counts one step late "
                                                              "(step - 1 - warmup_steps)"),
                     (1, "decay_one_step_early", "the decay's progress counts one step early (step + 1 - warmup_steps)")]),
    ("span", [("decay", "", ""), ("total", "progress_over_total", "the progress is divided by total_steps, not by the "
                                                                  "length of the decay, total_steps - warmup_steps")]),
    ("half", [(True, "", ""), (False, "cosine_without_half", "the decay uses cos(pi progress) alone, not "
                                                             "0.5 (1 + cos(pi progress))")]),
    ("floor", [(True, "", ""), (False, "min_lr_ignored", "min_lr is ignored: the decay goes to 0")]),
    ("height", [("span", "", ""), ("peak", "cosine_height_ignores_min_lr",
                                   "the cosine's height is peak_lr where it is peak_lr - min_lr: with min_lr added "
                                   "on top, the decay starts at peak_lr + min_lr, above the peak")]),
    ("clamp", [(True, "", ""), (False, "no_clamp", "after total_steps the cosine goes on instead of staying at min_lr")]),
], "lr = peak_lr step / warmup_steps for step <= warmup_steps; then min_lr + 0.5 (peak_lr - min_lr) (1 + cos(pi p)) with "
   "p = min((step - warmup_steps) / (total_steps - warmup_steps), 1)."))


def _lr_curve_model(k, *args):
    return _curve(lambda *a: _lr_model(k, *a))(*args)


LR_CURVE_PROBES = Probes(_lr_curve_model, *LR_PROBES.probes)


LR_AT = Exercise("10.2", "lr_at", points=2, reference=Later(lambda: references().lr_at),
                 reads=("peak_lr", "warmup_steps", "total_steps", "min_lr"))


@LR_AT.checked_by
@_one_thread
def check_lr_at(lr_at=None, *, points=None, hidden=False):
    """Linear warm-up to peak_lr over warmup_steps, then cosine decay to min_lr at total_steps,
    min_lr after it; steps count from 1."""
    c = TorchChecker(LR_AT, points, hidden)
    fn = c.find(lr_at, "lr_at")
    R = references()
    forbidden = [optim.warmup_cosine_schedule, R.capstone.learning_rate, R.lr_at]
    catalog = CATALOG["lr_at"]
    common = dict(catalog=wrapped(catalog, _as_float),
                  forbidden=forbidden, probes=LR_PROBES)
    student = _as_float(fn) if fn is not None else None
    c.check_cases("the warm-up (peak_lr 1e-3, 10 warm-up steps of 100, min_lr 1e-5)", student, R.lr_at, [
        Case("step 1: the first step already learns, peak_lr / 10", (1, 1e-3, 10, 100, 1e-5)),
        Case("step 4", (4, 1e-3, 10, 100, 1e-5)),
        Case("step 10, the last warm-up step: peak_lr", (10, 1e-3, 10, 100, 1e-5)),
        Case("a warm-up of 3 steps, step 2", (2, 0.5, 3, 20, 0.0), hidden=True)], **common)
    c.check_cases("the cosine decay (the same schedule)", student, R.lr_at, [
        Case("step 55, half way through the decay: (peak_lr + min_lr) / 2", (55, 1e-3, 10, 100, 1e-5)),
        Case("step 11, the first step after the warm-up", (11, 1e-3, 10, 100, 1e-5)),
        Case("step 100, the last: min_lr", (100, 1e-3, 10, 100, 1e-5)),
        Case("step 83 of a schedule decaying to 0", (83, 3e-4, 20, 120, 0.0), hidden=True)], **common)
    c.check_cases("after total_steps the rate stays at min_lr", student, R.lr_at, [
        Case("step 130 of 100", (130, 1e-3, 10, 100, 1e-5)),
        Case("step 250 of 100", (250, 1e-3, 10, 100, 1e-5), hidden=True)], **common)
    curve = dict(common, catalog=wrapped(catalog, _curve), probes=LR_CURVE_PROBES)
    c.check_cases("the capstone's whole schedule", _curve(fn) if fn is not None else None, _curve(R.lr_at), [
        Case("steps 1 to 800 (index i is step i + 1): peak 2e-3, 100 warm-up steps, min_lr 4e-5",
             CAPSTONE_SCHEDULE)], **curve)
    return c.result()
