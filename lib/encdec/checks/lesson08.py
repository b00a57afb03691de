"""Checkers for lesson 08, Training.

Each exercise is declared (number, title, points) right above its checker; EXERCISES and ORDERINGS,
at the end, list them.

`train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None)` receives the
reference `encdec.Seq2Seq` with randomised weights and the reference `encdec.Adam`, and runs with
the reference loss in place of the student's `sequence_cross_entropy` (and the reference
`adam_update` and `warmup_schedule`, should it call them), so a mistake in Exercises 8.1-8.3 is
never charged again in 8.4.
"""

import functools

import numpy as np

from .. import layers, optim, training
from .. import model as model_mod
from .. import loss as loss_mod
from ..mistakes import CATALOG
from ..mistakes import lesson08 as _register  # noqa: F401  (fills the catalog)
from .catalog import wrapped
from . import inputs
from .core import Case, Checker, rebind, run_student
from .exercises import Exercise
from .fixtures import BOS, EOS, PAD, generator, padded_tokens, random_model
from .ordering import Ordering, Step
from .probes import Combos, EachOutput, Probes, Property, Scale


# -- Exercise 8.1 ---------------------------------------------------------------------------------------
def _padded_targets(r, lengths, width, vocab_size, pad_id=PAD):
    """(B, width) targets: lengths[b] real tokens ending in EOS, then pads."""
    return padded_tokens(r, lengths, width, vocab_size, pad_id, last=EOS)


def loss_cases():
    r = generator(81)
    V = 9
    big = r.normal(size=(2, 4, V)) * 1e3
    t_big = _padded_targets(r, [4, 2], 4, V)
    return {
        "basic": [Case("one sequence, m=5 positions, V=7, no padding", (r.normal(size=(5, 7)), r.integers(0, 7, size=5))),
                  Case("a (2, 3) batch, V=4, no padding", (r.normal(size=(2, 3, 4)) * 2, r.integers(0, 4, size=(2, 3))),
                       hidden=True)],
        "pads": [Case("a padded batch: 3 sequences of lengths 6, 3, 4; pad_id=0",
                      (r.normal(size=(3, 6, V)), _padded_targets(r, [6, 3, 4], 6, V)), {"pad_id": PAD}),
                 Case("pad_id=8 (not 0), lengths 2 and 5",
                      (r.normal(size=(2, 5, V)), _padded_targets(r, [2, 5], 5, V, pad_id=8)), {"pad_id": 8})],
        "smoothing": [Case("label_smoothing=0.1, one sequence, no padding",
                           (r.normal(size=(4, 6)), r.integers(0, 6, size=4)), {"label_smoothing": 0.1}),
                      Case("label_smoothing=0.2 on a padded batch",
                           (r.normal(size=(3, 5, V)), _padded_targets(r, [5, 2, 3], 5, V)),
                           {"pad_id": PAD, "label_smoothing": 0.2}),
                      Case("label_smoothing=0.3, batch (2, 2, 4, V)",
                           (r.normal(size=(2, 2, 4, V)), _padded_targets(r, [4, 1, 3, 4], 4, V).reshape(2, 2, 4)),
                           {"pad_id": PAD, "label_smoothing": 0.3}, hidden=True)],
        "robust": [Case("large logits (about 1000)", (big, t_big), {"pad_id": PAD, "label_smoothing": 0.1}),
                   Case("float32 logits", (r.normal(size=(2, 3, V)).astype(np.float32), _padded_targets(r, [3, 2], 3, V)),
                        {"pad_id": PAD}, float32=True),
                   Case("a batch that is all padding (the loss is 0.0, the gradient all zeros)",
                        (r.normal(size=(2, 3, V)), np.zeros((2, 3), dtype=np.int64)), {"pad_id": PAD})],
    }


def _xent_model(k, *args, **kwargs):
    from .lesson07 import xent_model
    return xent_model(k, *args, **kwargs)


_SMOOTH_CHOICES = [
    ("smooth", [("all", "", ""),
                ("others", "smoothing_over_the_others", "the smoothing mass eps goes to the V - 1 other tokens only "
                                                         "(eps/(V-1) each), not eps/V to every token"),
                ("no_pad", "smoothing_skips_pad", "the smoothing mass skips the pad token (eps/(V-1) on every other "
                                                  "token): the course spreads eps/V over all V tokens"),
                ("added", "target_not_reduced", "the target keeps probability 1 and eps/V is added on top, so q sums "
                                                "to 1 + eps: the target gets 1 - eps + eps/V"),
                ("none", "smoothing_ignored", "label_smoothing is ignored: the targets stay one-hot")]),
    ("pads", [("ignored", "", ""), ("kept", "pads_counted", "pad positions are counted as real targets")]),
    ("grad_pads", [(False, "", ""), (True, "grad_at_pads", "the gradient is not zeroed at pad positions")]),
    ("loss_pads", [(False, "", ""), (True, "pads_in_loss_sum", "the loss sums -log p̂ over every position, pads "
                   "included, and divides by N, the real tokens: leave the pads' terms out of the sum (mask them first)")]),
    ("loss_mean", [("tokens", "", ""), ("positions", "loss_over_positions",
                                        "the loss is divided by every position, pads included, not by N"),
                   ("rows", "mean_of_sequence_means", "the loss is the mean of each sequence's own mean, which weighs a "
                    "short sequence's tokens more than a long one's: take one mean over all N real tokens of the batch "
                    "(the gradient's 1/N is that mean's)")]),
]
_SMOOTH_RIGHT = ("q = (1 - eps) one_hot(target) + eps / V on every token; loss = mean over the N real positions of "
                 "-sum(q log p̂); dlogits = (p̂ - q) / N at real positions, 0 at pads.")


def _grad_factors(logits, targets, pad_id=None, label_smoothing=0.0):
    from .lesson07 import _grad_factors as factors
    return factors(logits, targets, pad_id, label_smoothing)


SEQUENCE_XENT_PROBES = Probes(
    _xent_model, Combos("sequence_xent", _SMOOTH_CHOICES, _SMOOTH_RIGHT),
    Scale(_grad_factors, what="the entries of dlogits", knob="grad_factor"),
    EachOutput(Combos("sequence_xent", _SMOOTH_CHOICES, _SMOOTH_RIGHT, most=1), ("loss", "dlogits")))


SEQUENCE_CROSS_ENTROPY = Exercise("8.1", "sequence_cross_entropy", points=3, reference=loss_mod.softmax_cross_entropy,
                                  sizes={"logits": "... m V", "targets": "... m"}, reads=("pad_id", "label_smoothing"))


@SEQUENCE_CROSS_ENTROPY.checked_by
def check_sequence_cross_entropy(sequence_cross_entropy=None, *, points=None, hidden=False):
    """Mean cross-entropy over non-pad targets, with label smoothing, and its gradient."""
    c = Checker(SEQUENCE_CROSS_ENTROPY, points, hidden)
    fn = c.find(sequence_cross_entropy, "sequence_cross_entropy")
    cases = loss_cases()
    ref = loss_mod.softmax_cross_entropy
    common = dict(catalog=CATALOG["sequence_cross_entropy"], names=("loss", "dlogits"), forbidden=[ref],
                  probes=SEQUENCE_XENT_PROBES)
    c.check_cases("one sequence, plain one-hot targets", fn, ref, cases["basic"], **common)
    c.check_cases("padded batches: pads ignored in the loss, the mean and the gradient", fn, ref, cases["pads"], **common)
    c.check_cases("label smoothing", fn, ref, cases["smoothing"], **common)
    c.check_cases("large logits, float32, all padding", fn, ref, cases["robust"], **common)
    return c.result()


# -- Exercise 8.2 -----------------------------------------------------------------------------------------
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


# -- Exercise 8.3 -----------------------------------------------------------------------------------------
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
    warmup_steps, the decay after it, an if in place of the min), factor_used."""
    f = 1.0 if factor is None or not k.get("factor_used", True) else factor
    out = []
    for s in steps:
        s = s + k.get("shift", 0)
        if s <= 0:
            raise ValueError("step 0")
        power = k.get("warm_power", -1.5)
        branch = isinstance(power, tuple)  # ("if", p): the ramp while step <= warmup_steps, then the decay
        decay = k.get("decay", -0.5)
        a = warmup_steps ** -0.5 if decay == "flat" else s ** decay  # "flat": the peak kept after the warm-up
        b = s * warmup_steps ** (power[1] if branch else power)
        picked = (b if s <= warmup_steps else a) if branch else min(a, b) if k.get("pick", "min") == "min" else max(a, b)
        out.append(f * d_model ** k.get("d_power", -0.5) * picked)
    return np.array(out) * k.get("factor_scale", 1.0)


_SCHEDULE_CHOICES = [
    ("shift", [(0, "", ""), (-1, "one_step_early", "the step is counted from 0 (step - 1 is used): steps count from 1"),
               (1, "one_step_late", "step + 1 is used: the schedule runs one step ahead")]),
    ("warm_power", [(-1.5, "", ""), (-1.0, "ramp_over_warmup", "the ramp is step / warmup_steps, not step * warmup_steps^-1.5"),
                    (-0.5, "ramp_warmup_half", "the ramp uses warmup_steps^-0.5 instead of warmup_steps^-1.5"),
                    (("if", -1.0), "ramp_to_one", "the warm-up branch (step <= warmup_steps) is step / warmup_steps, a "
                     "ramp up to 1 times the other factors, where the formula has step * warmup_steps^-1.5, which "
                     "meets step^-0.5 at step = warmup_steps: your rate jumps there")]),
    ("decay", [(-0.5, "", ""), (-1.0, "decay_one_over_step", "the decay is 1/step, not 1/sqrt(step)"),
               ("flat", "no_decay", "after the warm-up the rate stays at its peak: the decay, step^-0.5, is missing "
                "(min(step, warmup_steps) alone stops the ramp but never decays)")]),
    ("d_power", [(-0.5, "", ""), (0.5, "d_model_sqrt", "d_model^0.5 multiplies instead of d_model^-0.5"),
                 (0.0, "no_d_model", "the d_model^-0.5 factor is missing"),
                 (-1.0, "d_model_inverse", "d_model^-1 is used instead of d_model^-0.5")]),
    ("pick", [("min", "", ""), ("max", "max", "max of the two branches instead of min")]),
    ("factor_used", [(True, "", ""), (False, "factor_ignored", "the factor argument is ignored")]),
]
_SCHEDULE_RIGHT = "lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5), with steps counted from 1."


SCHEDULE_PROBES = Probes(
    _schedule_model, Combos("schedule", _SCHEDULE_CHOICES, _SCHEDULE_RIGHT),
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


# -- Exercise 8.4 -----------------------------------------------------------------------------------------
def _batch(seed, src_lengths, tgt_lengths, vocab_size, pad_id=PAD, bos_id=BOS):
    r = generator(seed + 2000)
    avoid = (PAD, BOS, EOS, pad_id, bos_id)
    src = padded_tokens(r, src_lengths, max(src_lengths), vocab_size, pad_id, avoid=avoid)
    return src, padded_tokens(r, tgt_lengths, max(tgt_lengths), vocab_size, pad_id, avoid=avoid, last=EOS)


def _describe(out):
    if isinstance(out, (tuple, list)):
        return f"a {type(out).__name__} of {len(out)} items"
    return "None (did you forget `return`?)" if out is None else type(out).__name__


def _one_step(train_step):
    """Run train_step on a fresh random model and Adam; return (loss, accuracy, parameters after)."""
    def run(seed, src_lengths, tgt_lengths, label_smoothing=0.0, lr=None, vocab_size=7, n_layers=1, pad_id=PAD,
            bos_id=BOS, dropout=0.0):
        model = random_model(seed, vocab_size=vocab_size, n_layers=n_layers, pad_id=pad_id,
                             model_class=functools.partial(model_mod.Seq2Seq, dropout=dropout))  # in training mode
        optimizer = optim.Adam(model.parameters(), lr=0.01)
        src, targets = _batch(seed, src_lengths, tgt_lengths, vocab_size, pad_id, bos_id)
        out = train_step(model, optimizer, src, targets, bos_id, label_smoothing=label_smoothing, lr=lr)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError(f"train_step must return the pair (loss, accuracy), got {_describe(out)}")
        after = np.concatenate([p.ravel() for p in model.parameters().values()])
        return (out[0], out[1], after)
    return run


def train_step_cases():
    return {
        "plain": [Case("2 pairs without padding (source length 4, target length 5), default lr",
                       (0, [4, 4], [5, 5])),
                  Case("3 pairs, two layers each side, no padding", (1, [3, 3, 3], [4, 4, 4], 0.0, None, 9, 2),
                       hidden=True)],
        "pads": [Case("3 padded pairs (sources 5, 2, 3 long; targets 6, 3, 4 long)", (2, [5, 2, 3], [6, 3, 4])),
                 Case("a model whose pad id is 3 (model.config.pad_id), with <bos> 4: 2 padded pairs, V=9",
                      (6, [4, 2], [5, 3], 0.0, None, 9, 1, 3, 4)),
                 Case("4 padded pairs, V=11", (3, [2, 6, 4, 3], [3, 7, 5, 4], 0.0, None, 11), hidden=True)],
        "options": [Case("label_smoothing=0.1 and lr=0.003, padded", (4, [4, 2], [5, 3], 0.1, 0.003)),
                    Case("label_smoothing=0.2, lr=0.05", (5, [3, 5], [4, 6], 0.2, 0.05), hidden=True)],
        "dropout": [Case("a model with dropout 0.1, in training mode (its masks drawn from model.dropout_rng): "
                         "2 padded pairs", (7, [4, 3], [5, 4]), {"dropout": 0.1}),
                    Case("dropout 0.3, label_smoothing=0.1, 3 padded pairs", (8, [5, 2, 4], [6, 3, 5], 0.1),
                         {"dropout": 0.3}, hidden=True)],
    }


def _train_step_knobbed(k):
    """training.train_step with knobs: pad ("given": the loss ignores pad_id; "none": pads are targets too,
    in the loss, its mean and its gradient), accuracy ("before"; "after": from a forward pass after the
    update; "with_pads": pad positions counted), loss ("before"; "after": from a forward pass after the update),
    passes ("once"; "accuracy_first": the accuracy from a pass of its own before the loss's, which draws its own
    dropout masks)."""
    def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):
        pad_id = model.config.pad_id
        tgt_in = model_mod.shift_right(targets, bos_id)
        first = model(src, tgt_in) if k.get("passes") == "accuracy_first" else None
        logits, cache = training.forward_with_cache(model, src, tgt_in)
        loss, dlogits = loss_mod.softmax_cross_entropy(logits, targets, pad_id if k.get("pad", "given") == "given"
                                                       else None, label_smoothing)
        optimizer.step(training.backward(model, dlogits, cache), lr=lr)
        if "after" in (k.get("accuracy"), k.get("loss")):
            later, _ = training.forward_with_cache(model, src, tgt_in)
            if k.get("loss") == "after":
                loss, _ = loss_mod.softmax_cross_entropy(later, targets, pad_id, label_smoothing)
            if k.get("accuracy") == "after":
                logits = later
        accuracy = loss_mod.token_accuracy(logits if first is None else first, targets,
                                           None if k.get("accuracy") == "with_pads" else pad_id)
        return loss, accuracy
    return train_step


def _train_step_model(k, *args, **kwargs):
    return _one_step(_train_step_knobbed(k))(*args, **kwargs)


TRAIN_STEP_PROBES = Probes(_train_step_model, Combos("train_step", [
    ("pad", [("given", "", ""), ("none", "loss_without_pad_id", "the loss is computed without pad_id: the pad "
                                                                "positions count as targets, in the loss, its mean "
                                                                "and its gradient (or another value took pad_id's "
                                                                "place: a setting given by position, such as "
                                                                "label_smoothing, lands in the parameter in that "
                                                                "place; give settings by name)")]),
    ("accuracy", [("before", "", ""), ("after", "accuracy_after_update", "the accuracy is measured after the update "
                                                                         "(a second forward pass with the new "
                                                                         "parameters), not on the logits the loss used"),
                  ("with_pads", "accuracy_counts_pads", "the accuracy counts the pad positions: it is the fraction of "
                                                        "real (non-pad) target tokens predicted right")]),
    ("loss", [("before", "", ""), ("after", "loss_after_update", "the loss is measured after the update (a second "
                                                                 "forward pass), not the loss the gradient came from")]),
    ("passes", [("once", "", ""), ("accuracy_first", "second_forward_pass", "the accuracy comes from a forward pass "
                                                                          "of its own, before the loss's: with "
                                                                          "dropout in training mode each pass draws "
                                                                          "its own masks from model.dropout_rng, so "
                                                                          "the loss, its gradient and the accuracy "
                                                                          "come from other masks than one pass's. "
                                                                          "Run the forward pass once and take both "
                                                                          "from its logits")]),
], "Forward once on shift_right(targets, bos_id); the loss with the model's pad_id (pads ignored); one optimizer "
   "step; return that loss and the token accuracy of the same logits, pads excluded."))


TRAIN_STEP = Exercise("8.4", "train_step", points=3, reference=training.train_step,
                      reads=("bos_id", "label_smoothing", "lr", "model.config.pad_id"))


@TRAIN_STEP.checked_by
def check_train_step(train_step=None, *, points=None, hidden=False):
    """One teacher-forced step; returns (loss, accuracy) of the batch before the update.

    Your `sequence_cross_entropy` (and `adam_update`, `warmup_schedule`, if used) are replaced by the
    reference while this runs, so a mistake in Exercises 8.1-8.3 is not charged again here.
    """
    c = Checker(TRAIN_STEP, points, hidden)
    fn = c.find(train_step, "train_step")
    fn = rebind(fn, sequence_cross_entropy=loss_mod.softmax_cross_entropy, adam_update=optim.adam_update,
                warmup_schedule=optim.warmup_schedule)
    cases = train_step_cases()
    catalog = wrapped(CATALOG["train_step"], _one_step)
    common = dict(catalog=catalog, forbidden=[training.train_step], probes=TRAIN_STEP_PROBES,
                  names=("loss", "accuracy", "the parameters after the update"))
    ref = _one_step(training.train_step)
    c.check_cases("loss, accuracy and update on an unpadded batch", _one_step(fn), ref, cases["plain"], **common)
    c.check_cases("padded batches", _one_step(fn), ref, cases["pads"], **common)
    c.check_cases("label_smoothing and lr are passed on", _one_step(fn), ref, cases["options"], **common)
    c.check_cases("dropout in training mode: one forward pass draws the masks", _one_step(fn), ref, cases["dropout"],
                  **common)
    return c.result()


# -- Exercise 8.5 -----------------------------------------------------------------------------------------
TRAINING_STEP_ORDER = Ordering(
    "8.5", "one training step, in order", "training_step_order", points=1,
    steps=[
        Step("draw a batch of (source, target) pairs, padded to a common length",
             "Everything else in the step works on the batch, so it is drawn first."),
        Step("shift the targets right, prepending BOS: the decoder's inputs",
             "The decoder inputs are made from the batch's targets, so the batch must be drawn first."),
        Step("run the model once over all m target positions, under the causal mask: the logits",
             "The forward pass reads the source and the shifted decoder inputs, so both must exist before it runs."),
        Step("cross-entropy of the logits against the targets, ignoring pads, with smoothed labels",
             "The loss compares the logits with the targets, so the batch, its decoder inputs and the "
             "forward pass that makes the logits all come before it."),
        Step("backpropagate: the gradient of the loss for every parameter",
             "Backpropagation starts from dL/dlogits, which the loss computes, so the loss (and everything "
             "it needs) comes before it."),
        Step("update Adam's running averages m and v with the new gradient",
             "Adam's running averages take in this step's gradient, so backpropagation, and everything it "
             "depends on, must have run first."),
        Step("move every parameter by −lr · m̂ / (√v̂ + ε), with this step's rate lr from the warm-up schedule",
             "The move uses m̂ and v̂, which must already hold this step's gradient, so everything that "
             "produces them (the forward pass, the loss, the gradient, the running averages) comes first. "
             "Changing the parameters ends the step."),
    ],
    shown=[3, 6, 1, 4, 0, 5, 2],
)


@TRAINING_STEP_ORDER.checked_by
def check_training_step_order(training_step_order=None, *, points=None):
    """All or nothing."""
    return TRAINING_STEP_ORDER.check(training_step_order, points)


# -- Exercise 8.6 -----------------------------------------------------------------------------------------
# The convention: u = rng.random(x.shape), drawn once; keep where u >= rate; x * keep / (1 - rate); with
# training=False or rate == 0, x itself and nothing drawn. keep = u < 1 - rate (the same distribution from
# the same single draw) is accepted too: the checker finds out which one the answer uses and checks every
# case against that one, exactly.
class _Flipped:
    """A generator whose random() gives 1 - u: the catalog's mistakes, run in the u < 1 - rate convention."""

    def __init__(self, rng):
        self.rng = rng

    def random(self, size=None):
        return 1.0 - self.rng.random(size)

    def __getattr__(self, name):
        return getattr(self.rng, name)


def _draws(rng, seed, limit):
    """How many rng.random() numbers `rng` has drawn since default_rng(seed); -1 if not a whole number of them."""
    target = rng.bit_generator.state
    fresh = np.random.default_rng(seed)
    for k in range(limit + 1):
        if fresh.bit_generator.state == target:
            return k
        fresh.random()
    return -1


def _seeded(dropout, flipped=False):
    """Run dropout(x, rate, rng, ...) with rng = default_rng(seed); return (output, numbers drawn from rng)."""
    def run(x, rate, seed, **kwargs):
        rng = np.random.default_rng(seed)
        out = dropout(x, rate, _Flipped(rng) if flipped else rng, **kwargs)
        return out, _draws(rng, seed, 3 * np.size(x) + 8)
    return run


def _dropout_single_draw(x, rate, rng, training=True):
    """The other exact convention: keep where u < 1 - rate."""
    if not training or rate == 0:
        return x
    u = rng.random(np.shape(x))
    return np.asarray(x, dtype=np.float64) * (u < 1.0 - rate) / (1.0 - rate)


def _probe(fn):
    """(keeps u < 1 - rate, draws nothing from rng) of the answer on one training-mode input; both
    False when it fails or returns something else than an array of x's shape."""
    x, rate, seed = np.arange(1.0, 25.0).reshape(4, 6), 0.3, 808
    rng = np.random.default_rng(seed)
    out = run_student(fn, (x.copy(), rate, rng), forbidden=[layers.dropout, training._dropout])
    got = out.value
    if out.error is not None or not isinstance(got, np.ndarray) or got.shape != x.shape:
        return False, False
    u = np.random.default_rng(seed).random(x.shape)
    single_draw = np.array_equal(got != 0, u < 1 - rate) and not np.array_equal(got != 0, u >= rate)
    return bool(single_draw), _draws(rng, seed, 0) == 0 and bool(np.any(got != x))


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
        from .probes.repair import answer_function
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


EXERCISES = [SEQUENCE_CROSS_ENTROPY, ADAM_UPDATE, WARMUP_SCHEDULE, TRAIN_STEP, DROPOUT]
ORDERINGS = [TRAINING_STEP_ORDER]


# The concept checks before and after the lesson (encdec.checks.concepts): Exercise 8.0, and the one
# numbered after the last exercise above.
from .concepts import concept_checks  # noqa: E402

CONCEPTS = concept_checks(8, after=[*EXERCISES, *ORDERINGS])
check_concepts_before, check_concepts_after = (check.checker for check in CONCEPTS)
