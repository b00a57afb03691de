"""Exercise 10.4, torch_train_step: two training steps on the torch twin of a NumPy model must give the
losses, gradient norms and weight changes computed in NumPy (reference_two_steps), with SGD, AdamW and
in float32."""

import numpy as np

from ... import optim, training
from ...loss import softmax_cross_entropy
from ...mistakes import CATALOG
from ...model import shift_right
from ..cases import Case
from ..catalog import wrapped
from ..causes import with_cause
from ..comparing import RTOL, RTOL32, compare
from ..exercises import Exercise, Later
from ..fixtures import BOS, EOS, PAD, generator
from ..probes.containers import _generator_read_twice
from ..probes.targeted import has_pattern
from ..running import run_student
from .small_models import _flat_name, _np_model
from .torch_checker import Returned, TorchChecker, _error_cause, _one_thread, repaired_with
from .torch_references import references


def _train_batches(seed, vocab_size, pad_id=PAD, first=3):
    """Two batches (src (3, 5), tgt (3, 4)): targets end in EOS, then pads; sources right-padded. Tokens are
    drawn from `first` up, past every special id."""
    r = generator(seed)
    out = []
    for _ in range(2):
        src = r.integers(first, vocab_size, size=(3, 5))
        src[0, 3:] = pad_id
        tgt = r.integers(first, vocab_size, size=(3, 4))
        tgt[0, 1], tgt[0, 2:] = EOS, pad_id
        tgt[1, 3] = EOS
        tgt[2, 2], tgt[2, 3] = EOS, pad_id
        out.append((src, tgt))
    return out


TRAIN_SETUPS = {  # optimizer, the rates of the two steps, max_norm, (pad id of the model, bos id)
    "sgd": ("SGD", (0.5, 0.3), 1.0, (PAD, BOS)),
    "sgd-unclipped": ("SGD", (0.5, 0.3), 100.0, (PAD, BOS)),
    "sgd-other-ids": ("SGD", (0.5, 0.3), 1.0, (3, 4)),
    "adamw": ("AdamW", (0.01, 0.02), 1.0, (PAD, BOS)),
}


def _setup(seed, setup):
    """(optimizer kind, rates, max_norm, NumPy model, its two batches, bos id) of one case."""
    kind, lrs, max_norm, (pad_id, bos_id) = TRAIN_SETUPS[setup]
    model = _np_model(seed, pad_id=pad_id)
    first = 3 if (pad_id, bos_id) == (PAD, BOS) else max(pad_id, bos_id) + 1
    return kind, lrs, max_norm, model, _train_batches(seed, model.config.vocab_size, pad_id, first), bos_id
MADE_WITH_LR = 7.0  # the optimizer is made with another rate: the step must set its own


def _clip_numpy(grads, max_norm):
    """torch.nn.utils.clip_grad_norm_, in NumPy: (norm before clipping); grads scaled in place."""
    norm = float(np.sqrt(sum(np.sum(g * g) for g in grads.values())))
    coef = min(max_norm / (norm + 1e-6), 1.0)
    for g in grads.values():
        g *= coef
    return norm


def reference_two_steps(seed, setup, dtype="float64"):
    """What two training steps must give, computed in NumPy: (loss 1, norm 1, change of the parameters
    in step 1, loss 2, norm 2, change in step 2). Each step's change, not the new values, is compared:
    clipping by hand without torch's 1e-6 guard (max_norm / norm) scales a change by a relative
    1e-6 / norm, within the tolerance, which it would not be for values near 0."""
    kind, lrs, max_norm, model, batches, bos_id = _setup(seed, setup)
    params = model.parameters()
    adamw = optim.AdamW(params, lr=MADE_WITH_LR, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.1) if kind == "AdamW" else None
    out = []
    for (src, tgt), lr in zip(batches, lrs):
        logits, cache = training.forward_with_cache(model, src, shift_right(tgt, bos_id))
        loss, dlogits = softmax_cross_entropy(logits, tgt, model.config.pad_id)
        grads = training.backward(model, dlogits, cache)
        norm = _clip_numpy(grads, max_norm)
        before = np.concatenate([params[n].ravel() for n in sorted(params)])
        if adamw is not None:
            adamw.step(grads, lr=lr)
        else:
            for name, p in params.items():
                p -= lr * grads[name]
        out += [np.array(loss), np.array(norm), np.concatenate([params[n].ravel() for n in sorted(params)]) - before]
    return tuple(out)


def _two_steps(fn):
    """Run a torch_train_step answer for two steps on the torch twin of the NumPy model."""
    def run(seed, setup, dtype="float64"):
        R = references()
        torch = R.torch
        kind, lrs, max_norm, model, batches, bos_id = _setup(seed, setup)
        twin = R.tm.from_numpy(model, dtype=getattr(torch, dtype))
        if kind == "AdamW":
            optimizer = R.make_optimizer(twin, MADE_WITH_LR, 0.1, (0.9, 0.98))
        else:
            params = list(twin.parameters())
            optimizer = torch.optim.SGD([{"params": [p for p in params if p.ndim >= 2]},
                                         {"params": [p for p in params if p.ndim < 2]}], lr=MADE_WITH_LR)
        out = []
        for (src, tgt), lr in zip(batches, lrs):
            params = dict(twin.named_parameters())
            before = {k: p.detach().double().clone() for k, p in params.items()}
            result = fn(twin, optimizer, torch.from_numpy(src), torch.from_numpy(tgt), bos_id, lr, max_norm)
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                raise Returned("return two numbers, (loss, grad_norm); your function returned "
                               + (f"{len(result)} items" if isinstance(result, (tuple, list)) else type(result).__name__)
                               + (" (did you forget `return`?)" if result is None else ""))
            out += [np.array(float(x), dtype=np.float64) for x in result]
            out.append(np.concatenate([(params[k].detach().double() - before[k]).numpy().ravel() for k in sorted(params)]))
        return tuple(out)
    return run


def _compare_steps(got, expected, float32=False, select=range(6)):
    """None when two runs agree, else a message. Losses and norms to the usual tolerance; each step's
    change of the weights to the usual relative tolerance plus an absolute one of that tolerance times
    its largest entry: the second step's gradient is computed at weights that carry the first step's
    rounding, which for tiny entries of the change is more than rounding. `select`: the results compared."""
    if not isinstance(got, tuple) or len(got) != len(expected):
        return f"expected {len(expected)} results, got {got!r:.60}"
    rtol = RTOL32 if float32 else RTOL
    for k in select:
        name, g, e = STEP_NAMES[k], got[k], expected[k]
        if np.ndim(e) == 0:
            problem = compare(g, e, float32)
        else:
            g, e = np.asarray(g, dtype=np.float64), np.asarray(e, dtype=np.float64)
            if g.shape != e.shape:
                problem = f"shape: expected {e.shape}, got {g.shape}"
            else:
                bad = ~(np.abs(g - e) <= rtol * np.abs(e) + rtol * np.max(np.abs(e)))
                problem = None
                if np.any(bad):
                    i = int(np.argwhere(bad)[0][0])
                    problem = (f"values differ in {_flat_name(i)}: expected {e[i]:.6g}, got {g[i]:.6g} "
                               f"({int(bad.sum())} of {bad.size} numbers differ)")
        if problem:
            return f"{name}: {problem}"
    return None


STEP_NAMES = ("the first step's loss", "the first step's gradient norm (before clipping)",
              "the first step's change of the weights", "the second step's loss",
              "the second step's gradient norm", "the second step's change of the weights")


def _check_runs(c, label, student, cases, catalog, forbidden, select=range(6)):
    """Like Checker.check_cases, with _compare_steps (of the results in `select`) for the comparison
    and the diagnosis."""
    if c.stopped:
        return False
    cases = c.to_run(cases)
    for case in cases:
        outcome = run_student(student, case.args, {}, forbidden)
        c._absorb(outcome, case.label)
        expected = reference_two_steps(*case.args)
        if outcome.error is not None:
            if outcome.delegated or isinstance(outcome.error, NotImplementedError):
                c._explain_error(outcome)
                return c.part(label, False, c.stopped, cases=cases, failed=case)
            found = None
            for m in catalog:
                _, error = m.run(case.args, {})
                if error is not None and type(error) is type(outcome.error) and str(error) == str(outcome.error):
                    found = m
                    break
            found = found or _error_cause(c, case, outcome.error)
            message = f"[{case.label}] {c._explain_error(outcome)}"
            return c.part(label, False, with_cause(message, c.likely_cause(found)), cases=cases, failed=case)
        problem = _compare_steps(outcome.value, expected, case.float32, select)
        if problem:
            # a parameters() generator read twice first: its effect (no clipping) is a catalog entry's, its cause not
            found = repaired_with(c, student, lambda candidate: _right_steps(candidate, [case, *cases], forbidden),
                                  kinds=[_generator_read_twice]) if has_pattern(student, [_generator_read_twice]) \
                else None
            for m in catalog if found is None else ():
                value, error = m.run(case.args, {})
                # every result of both steps, not only this part's: a part that reads the losses alone would
                # let a mistake that moves the weights otherwise match by coincidence
                if error is None and _compare_steps(outcome.value, value, case.float32) is None:
                    found = m
                    break
            if found is None:
                found = repaired_with(c, student, lambda candidate: _right_steps(candidate, [case, *cases], forbidden))
            return c.part(label, False, with_cause(f"[{case.label}] {problem}", c.likely_cause(found)),
                          cases=cases, failed=case)
    return c.part(label, True, cases=cases)



def _right_steps(candidate, cases, forbidden):
    """True when a copy of the answer (the repair's) gives both steps' every result on every case, the failing case
    first."""
    for k, case in enumerate(cases):
        if any(case is earlier for earlier in cases[:k]):
            continue
        outcome = run_student(candidate, case.args, {}, forbidden)
        if outcome.error is not None or _compare_steps(outcome.value, reference_two_steps(*case.args),
                                                       case.float32) is not None:
            return False
    return True

TORCH_TRAIN_STEP = Exercise("10.4", "torch_train_step", points=3, reference=Later(lambda: references().train_step),
                            reads=("bos_id", "lr", "max_norm", "model.config.pad_id"))


@TORCH_TRAIN_STEP.checked_by
@_one_thread
def check_torch_train_step(torch_train_step=None, *, points=None, hidden=False):
    """Set the rate, teacher forcing, loss over real tokens, zero_grad, backward, clip, step. Two
    steps on the torch twin of a NumPy model must give NumPy's losses, gradient norms (before
    clipping) and weight changes, whose gradients come from Lesson 7's backward pass."""
    c = TorchChecker(TORCH_TRAIN_STEP, points, hidden)
    fn = c.find(torch_train_step, "torch_train_step")
    R = references()
    forbidden = [R.train_step, training.train_step, R.capstone.loss_and_stats]
    catalog = wrapped(CATALOG["torch_train_step"], _two_steps)
    student = _two_steps(fn) if fn is not None else None
    sgd = [Case("SGD, batches of 3 (sources of 5, targets of 4, some padded); lr 0.5 then 0.3, max_norm 1 "
                f"(the optimizer was made with lr {MADE_WITH_LR:g})", (0, "sgd")),
           Case("SGD, max_norm 100: nothing to clip", (0, "sgd-unclipped")),
           Case("SGD, a model whose pad id is 3 (model.config.pad_id), with <bos> 4", (5, "sgd-other-ids")),
           Case("SGD, two other batches, another model", (1, "sgd"), hidden=True)]
    adamw = [Case("AdamW (weight decay 0.1 on the matrices); lr 0.01 then 0.02, max_norm 1", (2, "adamw")),
             Case("AdamW, another model", (3, "adamw"), hidden=True)]
    common = (catalog, forbidden)
    _check_runs(c, "the loss of each step: teacher forcing, the mean over the real target tokens (float64)",
                student, sgd, *common, select=(0, 3))
    _check_runs(c, "the gradient norm of each step, before clipping", student, sgd, *common, select=(1, 4))
    _check_runs(c, "each step's change of the weights with SGD: fresh gradients, clipped, this step's rate in "
                "every group", student, sgd, *common, select=(2, 5))
    # the norm is judged in its own part only: a wrong norm does not cost the AdamW and float32 parts too
    _check_runs(c, "two steps with AdamW, as the capstone trains", student, adamw, *common, select=(0, 2, 3, 5))
    _check_runs(c, "a float32 model", student, [Case("the SGD steps in float32", (4, "sgd", "float32"), float32=True)],
                *common, select=(0, 2, 3, 5))
    return c.result()
