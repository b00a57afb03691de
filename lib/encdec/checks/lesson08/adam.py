"""Exercise 8.2, adam_update: its cases, the probes of its slips (bias correction, the betas, where eps
sits, the sign, what is returned), the checker, and its part "the inputs are left unchanged"."""

import numpy as np

from ... import optim
from ...mistakes import CATALOG
from .. import inputs
from ..core import Case, Checker, run_student
from ..exercises import Exercise
from ..fixtures import generator
from ..probes import Combos, EachOutput, Probes, Scale


def adam_cases():
    r = generator(82)

    def state(shape, t, scale=1.0, dtype=np.float64, fresh=False):
        param = r.normal(size=shape)
        grad = r.normal(size=shape) * scale
        m = np.zeros(shape) if fresh else r.normal(size=shape) * 0.1 * scale
        v = np.zeros(shape) if fresh else r.uniform(0.1, 2.0, size=shape) * 0.01 * scale**2
        return tuple(a.astype(dtype) for a in (param, grad, m, v)) + (t,)

    return {
        "first": [Case("the first step (t=1, m = v = 0), a (4, 3) parameter", state((4, 3), 1, fresh=True) + (1e-3,)),
                  Case("the first step of a (5,) parameter, lr=0.1", state((5,), 1, fresh=True) + (0.1,), hidden=True)],
        "later": [Case("step t=5 with running averages m, v, a (3, 4) parameter", state((3, 4), 5) + (1e-2,)),
                  Case("step t=2, a (2, 3, 4) parameter", state((2, 3, 4), 2) + (3e-3,)),
                  Case("step t=1000", state((6,), 1000) + (1e-3,), hidden=True)],
        "options": [Case("beta1=0.8, beta2=0.99, t=3, and eps=1e-6 on small gradients (about 1e-6), where eps matters",
                         state((4,), 3, scale=1e-6) + (1e-2,), {"beta1": 0.8, "beta2": 0.99, "eps": 1e-6}),
                    Case("beta1=0.5, beta2=0.9, t=7", state((2, 2), 7) + (0.05,), {"beta1": 0.5, "beta2": 0.9},
                         hidden=True)],
        "robust": [Case("tiny gradients (about 1e-9): where eps sits matters", state((3, 3), 1, scale=1e-9, fresh=True) + (1e-3,)),
                   Case("float32 arrays", state((4, 2), 4, dtype=np.float32) + (1e-2,), float32=True),
                   Case("large gradients (about 1e4), t=3", state((5,), 3, scale=1e4) + (1e-3,), hidden=True)],
    }


def _adam_model(k, param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):
    """adam_update with knobs: correct ("both", "none", "m" only, "v" only), t_shift (t + shift in the
    correction), swap ("none", "m": m averaged with beta2, "v": v with beta1, "both"), eps ("outside",
    "inside": sqrt(v_hat + eps), "raw_v": eps added before the correction), sign, returns ("raw", "hat":
    the corrected moments returned), lr_factor."""
    b_m, b_v = beta1, beta2
    swap = k.get("swap", "none")
    if swap in ("m", "both"):
        b_m = beta2
    if swap in ("v", "both"):
        b_v = beta1
    m = b_m * m + (1.0 - b_m) * grad
    v = b_v * v + (1.0 - b_v) * grad * grad
    tt = t + k.get("t_shift", 0)
    correct = k.get("correct", "both")
    m_hat = m / (1.0 - beta1**tt) if correct in ("both", "m") else m
    v_hat = v / (1.0 - beta2**tt) if correct in ("both", "v") else v
    where = k.get("eps", "outside")
    denom = np.sqrt(v_hat + eps) if where == "inside" else np.sqrt(v_hat) + eps
    new = param - k.get("sign", 1) * k.get("lr_factor", 1.0) * lr * m_hat / denom
    if k.get("returns") == "hat":
        return new, m_hat, v_hat
    return new, m, v


_ADAM_CHOICES = [
    ("correct", [("both", "", ""), ("none", "no_bias_correction", "m and v are not bias-corrected (m̂ = m / (1 - beta1^t), "
                                                                  "v̂ = v / (1 - beta2^t))"),
                 ("m", "v_not_corrected", "v is not bias-corrected (only m is)"),
                 ("v", "m_not_corrected", "m is not bias-corrected (only v is)")]),
    ("t_shift", [(0, "", ""), (1, "t_plus_one", "the bias correction uses t + 1 instead of t (t counts from 1)"),
                 (-1, "t_minus_one", "the bias correction uses t - 1 instead of t")]),
    ("swap", [("none", "", ""), ("m", "m_with_beta2", "m is averaged with beta2 instead of beta1"),
              ("v", "v_with_beta1", "v is averaged with beta1 instead of beta2"),
              ("both", "betas_swapped", "the two betas are swapped: m is averaged with beta2 and v with beta1")]),
    ("eps", [("outside", "", ""), ("inside", "eps_inside_sqrt", "eps sits inside the square root, sqrt(v̂ + eps), not "
                                                               "outside, sqrt(v̂) + eps")]),
    ("sign", [(1, "", ""), (-1, "ascent", "the parameter moves up the gradient: param - lr * m̂ / (sqrt(v̂) + eps)")]),
    ("returns", [("raw", "", ""), ("hat", "returns_corrected", "the corrected m̂ and v̂ are returned as the new state; "
                                                              "keep m and v uncorrected (the correction is recomputed each step)")]),
]
_ADAM_RIGHT = ("m = beta1 m + (1 - beta1) g; v = beta2 v + (1 - beta2) g²; m̂ = m / (1 - beta1^t); v̂ = v / (1 - beta2^t); "
               "param - lr m̂ / (sqrt(v̂) + eps); return the new param, m and v.")


ADAM_PROBES = Probes(
    _adam_model, Combos("adam", _ADAM_CHOICES, _ADAM_RIGHT),
    Scale(lambda param, grad, m, v, t, lr, *a, **kw: [("lr", 1.0, None)], what="the steps", knob="lr_factor"),
    EachOutput(Combos("adam", _ADAM_CHOICES, _ADAM_RIGHT, most=1), ("new_param", "new_m", "new_v")))


ADAM_UPDATE = Exercise("8.2", "adam_update", points=3, reference=optim.adam_update,
                       reads=("t", "lr", "beta1", "beta2", "eps"))


@ADAM_UPDATE.checked_by
def check_adam_update(adam_update=None, *, points=None, hidden=False):
    """One Adam step, returning (new_param, new_m, new_v)."""
    c = Checker(ADAM_UPDATE, points, hidden)
    fn = c.find(adam_update, "adam_update")
    cases = adam_cases()
    ref = optim.adam_update
    common = dict(catalog=CATALOG["adam_update"], names=("new_param", "new_m", "new_v"),
                  forbidden=[ref, optim.Adam.step], probes=ADAM_PROBES, inputs_kept=False)
    c.check_cases("the first step: bias correction", fn, ref, cases["first"], **common)
    c.check_cases("later steps with running averages", fn, ref, cases["later"], **common)
    c.check_cases("beta1, beta2 and eps are respected", fn, ref, cases["options"], **common)
    c.check_cases("tiny gradients and float32", fn, ref, cases["robust"], robust=True, **common)
    _inputs_unchanged_part(c, fn, cases["later"][0])
    return c.result()


def _inputs_unchanged_part(c, fn, case):
    """The statement's rule "do not change the inputs in place", as a part: the answer is called on copies of
    the case's arrays, which must hold the same values afterwards."""
    label = "the inputs are left unchanged (new arrays are returned)"
    if c.stopped:
        return
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    outcome = run_student(fn, tuple(args), dict(case.kwargs))
    if outcome.error is not None:
        c.part(label, False, c._explain_error(outcome), values=False)
        return
    changed = inputs.changed_inputs(fn, args, {}, before, {})
    c.part(label, not changed, values=False, message="" if not changed else (
        f"[{case.label}] your function changed {', '.join(changed)} in place{inputs.line_text(fn, changed[0])}: the caller's arrays no longer hold "
        "what they held. The statement asks for new arrays: write param = param - ..., m = beta1 * m + ..., not "
        "param -= ... or m *= ..., which write into the caller's arrays."))
