"""Checkers for lesson 07, Backpropagation.

Each exercise is declared (number, title, points) right above its checker; EXERCISES and ORDERINGS,
at the end, list them.
"""

import ast
import dataclasses
import functools
import importlib

import numpy as np

from .. import loss
from ..attention import create_causal_mask, scaled_dot_product_attention, softmax
from ..mistakes import CATALOG
from ..mistakes import lesson07 as _register  # noqa: F401  (fills the catalog)
from .catalog import wrapped
from .core import Case, Checker, rebind, run_student
from .exercises import Exercise
from .fixtures import generator, padded_tokens
from .ordering import Ordering, Step
from .probes import Axis, Combos, EachOutput, FailedProduct, Probe, Probes, Scale, combos
from .probes.repair import answer_function

# the module, not encdec.backward (the package exports training.backward under that name)
backward = importlib.import_module("..backward", __package__)


# -- Exercise 7.1 --------------------------------------------------------------------------------------
def _padded_targets(r, lengths, m, V, pad_id):
    """Targets of any id but the pad, then pads."""
    return padded_tokens(r, lengths, m, V, pad_id, avoid=())


def _xent(logits, targets, pad_id=None):
    return loss.softmax_cross_entropy(logits, targets, pad_id)


def cross_entropy_cases():
    r = generator(71)
    batch_t = _padded_targets(r, [5, 3], 5, 7, 0)
    pad3 = _padded_targets(r, [4, 2, 1], 4, 6, 3)
    deep = _padded_targets(r, [3, 1, 2, 3, 2, 3], 3, 5, 0).reshape(2, 3, 3)
    return {
        "plain": [Case("one sequence: m=4 positions, V=6, no padding (pad_id=None)",
                       (r.normal(size=(4, 6)) * 2, r.integers(0, 6, size=4))),
                  Case("one position, V=3", (r.normal(size=(1, 3)), np.array([2])), hidden=True)],
        "padded": [Case("a batch (2, 5) of targets with pads (pad_id=0), V=7",
                        (r.normal(size=(2, 5, 7)), batch_t), {"pad_id": 0}),
                   Case("pad_id=3, a batch (3, 4), V=6", (r.normal(size=(3, 4, 6)), pad3), {"pad_id": 3}),
                   Case("leading shape (2, 3), m=3, V=5", (r.normal(size=(2, 3, 3, 5)), deep), {"pad_id": 0},
                        hidden=True)],
        "robust": [Case("large logits (about ±1000)", (r.normal(size=(2, 5, 7)) * 1000, batch_t), {"pad_id": 0}),
                   Case("float32 logits", (r.normal(size=(2, 5, 7)).astype(np.float32), batch_t), {"pad_id": 0},
                        float32=True),
                   Case("near-equal logits (1e-9 apart)", (r.normal(size=(2, 5, 7)) * 1e-9, batch_t), {"pad_id": 0},
                        hidden=True)],
        "empty": [Case("every target is padding", (r.normal(size=(2, 3, 4)), np.zeros((2, 3), dtype=np.int64)),
                       {"pad_id": 0})],
    }


# -- the probes' models: the references with their parts made variable (encdec.checks.probes) ------------
def xent_model(k, logits, targets, pad_id=None, label_smoothing=0.0):
    """softmax_cross_entropy with knobs (Lesson 8's sequence_cross_entropy uses it too):
    pads ("ignored", "kept": pad positions counted as real), grad_pads (True: the gradient not zeroed at
    pads), loss_pads (True: the pads' terms in the loss's sum, N still the real tokens), loss_mean ("tokens", "positions": divided by every position, "rows": the mean of each sequence's mean), grad_factor (a number in place
    of 1/N), grad_sign, loss_sign, smooth ("all": eps/V on every token; "others": eps/(V-1) on the
    non-targets; "no_pad": eps/(V-1) on every token but the pad; "added": one-hot + eps/V, the target
    not reduced; "none": smoothing ignored)."""
    logits = np.asarray(logits)
    targets = np.asarray(targets)
    V = logits.shape[-1]
    keep = np.ones(targets.shape, dtype=bool)
    if pad_id is not None and k.get("pads", "ignored") == "ignored":
        keep = targets != pad_id
    eps = label_smoothing
    smooth = k.get("smooth", "all")

    def smoothed(one_hot):
        if smooth == "all" or eps == 0:
            return one_hot * (1 - eps) + eps / V
        if smooth == "others":
            return one_hot * (1 - eps) + (1 - one_hot) * eps / (V - 1)
        if smooth == "no_pad":
            spread = np.ones(V) * eps / (V - 1)
            spread[0 if pad_id is None else pad_id] = 0.0
            return one_hot * (1 - eps) + spread
        if smooth == "added":
            return one_hot + eps / V
        return one_hot
    q = smoothed(np.eye(V)[np.where(keep, targets, 0)])
    logp = loss.log_softmax(logits, axis=-1)
    n = int(keep.sum())
    if n == 0:
        return 0.0, np.zeros_like(logits)
    per = -np.sum(q * logp, axis=-1)
    if k.get("loss_pads"):  # the pads' own terms, -log p̂[pad], in the sum
        per = np.where(keep, per, -np.sum(smoothed(np.eye(V)[targets]) * logp, axis=-1))
        keep_in_sum = np.ones(targets.shape, dtype=bool)
    else:
        keep_in_sum = keep
    if k.get("loss_mean") == "rows":  # each sequence's own mean over its real tokens, then their mean
        rows = (per * keep_in_sum).reshape(-1, targets.shape[-1]).sum(-1)
        counts = keep.reshape(-1, targets.shape[-1]).sum(-1)
        value = k.get("loss_sign", 1) * float(np.mean(rows[counts > 0] / counts[counts > 0]))
    else:
        denom = {"tokens": n, "positions": targets.size}[k.get("loss_mean", "tokens")]
        value = k.get("loss_sign", 1) * float(np.sum(per * keep_in_sum) / denom)
    grad_keep = np.ones(targets.shape, dtype=bool) if k.get("grad_pads") else keep
    factor = k.get("grad_factor", 1.0 / n)
    dlogits = k.get("grad_sign", 1) * (np.exp(logp) - q) * grad_keep[..., None] * factor
    return value, dlogits.astype(logits.dtype) if logits.dtype == np.float32 else dlogits


XENT_RIGHT = ("The loss is the mean of -log p̂[target] over the N non-pad positions; dlogits = (p̂ - y) / N at "
              "those positions and 0 at pads.")
XENT_CHOICES = [
    ("pads", [("ignored", "", ""), ("kept", "pads_counted", "pad positions are counted as real targets")]),
    ("grad_pads", [(False, "", ""), (True, "grad_at_pads", "the gradient is not zeroed at pad positions")]),
    ("loss_pads", [(False, "", ""), (True, "pads_in_loss_sum", "the loss sums -log p̂ over every position, pads "
                   "included, and divides by N, the real tokens: leave the pads' terms out of the sum (mask them first)")]),
    ("loss_mean", [("tokens", "", ""), ("positions", "loss_over_positions",
                                        "the loss is divided by every position, pads included, not by N"),
                   ("rows", "mean_of_sequence_means", "the loss is the mean of each sequence's own mean, which weighs a "
                    "short sequence's tokens more than a long one's: take one mean over all N real tokens of the batch "
                    "(the gradient's 1/N is that mean's)")]),
    ("loss_sign", [(1, "", ""), (-1, "loss_sign", "the loss has the wrong sign (it is -mean log p̂, a positive number)")]),
    ("grad_sign", [(1, "", ""), (-1, "grad_sign", "dlogits has the wrong sign: it is p̂ - y, not y - p̂")]),
]


def _grad_factors(logits, targets, pad_id=None, label_smoothing=0.0):
    targets = np.asarray(targets)
    n = int(np.sum(targets != pad_id)) if pad_id is not None else targets.size
    out = [("1/N", 1.0 / max(n, 1), None),
           ("1", 1.0, "dlogits is not divided by N, the number of real tokens: the loss is a mean, so its "
                      "gradient is (p̂ - y) / N.")]
    if targets.size != n:
        out.append(("1/(number of positions)", 1.0 / targets.size,
                    "dlogits is divided by every position, pads included: divide by N, the number of real tokens."))
    return out


def xent_probes(choices, right):
    return Probes(xent_model, Combos("xent", choices, right),
                  Scale(_grad_factors, what="the entries of dlogits", knob="grad_factor"),
                  EachOutput(Combos("xent", choices, right, most=1), ("loss", "dlogits")))


XENT_PROBES = xent_probes(XENT_CHOICES, XENT_RIGHT)


SOFTMAX_CROSS_ENTROPY = Exercise("7.1", "softmax_cross_entropy", points=3, reference=loss.softmax_cross_entropy,
                                 sizes={"logits": "... m V", "targets": "... m"}, reads=("pad_id",),
                                 weights={"padded batches: pads ignored, mean over the real tokens": 2,
                                          "a batch with no real token": 0.5})


@SOFTMAX_CROSS_ENTROPY.checked_by
def check_softmax_cross_entropy(softmax_cross_entropy=None, *, points=None, hidden=False):
    """Mean cross-entropy over non-pad positions and its gradient (p̂ - y) / N."""
    c = Checker(SOFTMAX_CROSS_ENTROPY, points, hidden)
    fn = c.find(softmax_cross_entropy, "softmax_cross_entropy")
    cases = cross_entropy_cases()
    common = dict(catalog=CATALOG["softmax_cross_entropy"], names=("loss", "dlogits"),
                  forbidden=[loss.softmax_cross_entropy], probes=XENT_PROBES)
    c.check_cases("loss and gradient, no padding", fn, _xent, cases["plain"], **common)
    c.check_cases("padded batches: pads ignored, mean over the real tokens", fn, _xent, cases["padded"], **common)
    c.check_cases("large logits and float32", fn, _xent, cases["robust"], robust=True, **common)
    c.check_cases("a batch with no real token", fn, _xent, cases["empty"], **common)
    return c.result()


# -- Exercise 7.2 --------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Problem:
    """A scalar function f() that reads an array x: make() gives a fresh (f, x) each time."""

    label: str
    shape: tuple
    seed: int
    kind: str

    def make(self):
        x = generator(self.seed).normal(size=self.shape)
        w = generator(self.seed + 1).normal(size=self.shape)
        if self.kind == "sin":
            def f():
                return np.sum(w * np.sin(x))
        elif self.kind == "quadratic":
            A = generator(self.seed + 2).normal(size=(x.size, x.size))

            def f():
                return x.ravel() @ A @ x.ravel()
        elif self.kind == "cubic":
            def f():
                return np.sum(w * x**3)
        elif self.kind == "xent":
            targets = generator(self.seed + 3).integers(0, self.shape[-1], size=self.shape[:-1])

            def f():
                return loss.softmax_cross_entropy(x, targets)[0]
        else:  # log-sum-exp
            def f():
                return np.log(np.sum(np.exp(x * w)))
        return f, x


def _gradient_of(fn):
    def run(problem, h=None):
        f, x = problem.make()
        return fn(f, x) if h is None else fn(f, x, h)
    return run


def _x_after(fn):
    def run(problem, h=None):
        f, x = problem.make()
        fn(f, x) if h is None else fn(f, x, h)
        return x
    return run


def numerical_gradient_cases():
    return [
        Case("f = sum(w * sin(x)), x of shape (3, 4), default h", (Problem("sin", (3, 4), 720, "sin"),)),
        Case("f = xᵀ A x (every entry interacts), x of shape (5,), h=1e-5",
             (Problem("quadratic", (5,), 721, "quadratic"), 1e-5)),
        Case("f = sum(w * x³), x of shape (4,), h=1e-2", (Problem("cubic", (4,), 722, "cubic"), 1e-2)),
        Case("f = cross-entropy of logits x (2, 3, 5), h=1e-4", (Problem("xent", (2, 3, 5), 723, "xent"), 1e-4),
             hidden=True),
        Case("f = log(sum(exp(w * x))), x of shape (2, 2, 3), h=1e-3",
             (Problem("lse", (2, 2, 3), 724, "lse"), 1e-3), hidden=True),
    ]


@functools.lru_cache(maxsize=64)
def _reference_gradient(problem, h):
    f, x = problem.make()
    return backward.numerical_gradient(f, x) if h is None else backward.numerical_gradient(f, x, h)


def _gradient_model(k, problem, h=None):
    """The central differences times a factor (knob factor; 1 is right)."""
    return k.get("factor", 1.0) * _reference_gradient(problem, h)


class _FirstAxisLoop(Probe):
    """`for i in range(len(x))` (or range(x.shape[0])) with x[i] nudged, on an x of two or more axes: x[i] is a
    whole slice, nudged at once. Read from the answer's source, named only where the failing case's x has more
    than one axis."""

    kind = "loop"

    def find(self, attempt, probes):
        problem = attempt.case.args[0]
        fdef = answer_function(attempt.student)
        if fdef is None or len(problem.shape) < 2:
            return None
        params = [a.arg for a in fdef.args.args]
        x = params[1] if len(params) > 1 else None
        for loop in ast.walk(fdef):
            if isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and x is not None \
                    and ast.unparse(loop.iter) in (f"range(len({x}))", f"range({x}.shape[0])") \
                    and any(isinstance(n, ast.Subscript) and ast.unparse(n) == f"{x}[{loop.target.id}]"
                            for n in ast.walk(loop)):
                return self.finding(attempt, "first_axis", (
                    f"your loop `for {loop.target.id} in {ast.unparse(loop.iter)}` runs over the first axis of {x} "
                    f"only: {x} has shape {problem.shape} here, so `{x}[{loop.target.id}]` is a whole slice, every "
                    "entry of it is nudged at once and the slice gets one number, not one partial derivative per "
                    f"entry. Visit every entry: for idx in np.ndindex({x}.shape), with {x}[idx]."))
        return None


NUMERICAL_GRADIENT_PROBES = Probes(_gradient_model, _FirstAxisLoop(), Scale(
    lambda problem, h=None: [("1", 1.0, None),
                             ("2", 2.0, "your differences are twice the gradient: (f(x + h) - f(x - h)) is divided by "
                                        "h, but the two points are 2h apart. Divide by 2 h."),
                             ("1/2", 0.5, "your differences are half the gradient: the central difference "
                                          "(f(x + h) - f(x - h)) is divided by 4 h or 2 h twice. Divide by 2 h, once.")],
    what="your difference quotients", knob="factor"))


NUMERICAL_GRADIENT = Exercise("7.2", "numerical_gradient", points=2, reference=backward.numerical_gradient,
                              reads=("h",), weights={"central differences, entry by entry": 3})


@NUMERICAL_GRADIENT.checked_by
def check_numerical_gradient(numerical_gradient=None, *, points=None, hidden=False):
    """Central differences, one entry at a time, x restored."""
    c = Checker(NUMERICAL_GRADIENT, points, hidden)
    fn = c.find(numerical_gradient, "numerical_gradient")
    cases = numerical_gradient_cases()
    forbidden = [backward.numerical_gradient, backward.gradient_check]
    catalog = CATALOG["numerical_gradient"]
    ref = backward.numerical_gradient
    c.check_cases("central differences, entry by entry", _gradient_of(fn) if fn else None, _gradient_of(ref),
                  cases, catalog=wrapped(catalog, _gradient_of), forbidden=forbidden,
                  probes=NUMERICAL_GRADIENT_PROBES)
    if c.check_cases("x is left as it was", _x_after(fn) if fn else None, _x_after(ref), cases,
                     catalog=wrapped(catalog, _x_after), forbidden=forbidden):
        note = _restored_by_arithmetic(fn, c.to_run(cases), forbidden)
        if note:
            c.note(note)
    return c.result()


def _restored_by_arithmetic(fn, cases, forbidden):
    """A note (no points: x is back to within rounding, which the statement asks) where an entry of x comes back
    different in its last bits: undone by arithmetic (+= h, -= 2 h, += h), not written back; "" otherwise."""
    for case in cases:
        problem, *h = case.args
        f, x = problem.make()
        before = x.copy()
        if run_student(fn, (f, x, *h), forbidden=forbidden).error is not None or np.array_equal(x, before):
            continue
        idx = tuple(int(i) for i in np.argwhere(x != before)[0])
        return (f"x comes back within rounding, so it counts as restored; yet not exactly: on \"{case.label}\", "
                f"x{list(idx)} was {float(before[idx])!r} and is {float(x[idx])!r} afterwards. Undoing a step by arithmetic (+= h, "
                "then -= 2 * h, then += h) does not always give the old number back in floating point; save it "
                "(old = x[idx]) and write it back (x[idx] = old) to restore x exactly.")
    return ""


# -- Exercise 7.3 --------------------------------------------------------------------------------------
def softmax_backward_cases():
    r = generator(73)

    def pair(shape, axis=-1, scale=1.0, mask=None, dtype=np.float64):
        z = r.normal(size=shape) * scale
        if mask is not None:
            z = z + mask
        return (r.normal(size=shape).astype(dtype), softmax(z, axis=axis).astype(dtype))

    return {
        "rows": [Case("a (3, 5) array, softmax over the last axis", pair((3, 5))),
                 Case("a single row of 4", pair((4,))),
                 Case("a (4, 4) array", pair((4, 4)), hidden=True)],
        "axis": [Case("axis=0 on a (4, 3) array", pair((4, 3), axis=0), {"axis": 0}),
                 Case("axis=1 on a (2, 3, 4) array", pair((2, 3, 4), axis=1), {"axis": 1}, hidden=True)],
        "batched": [Case("batched (2, 3, 4, 5)", pair((2, 3, 4, 5))),
                    Case("masked rows (causal, 5 x 5): zero probabilities", pair((5, 5), mask=create_causal_mask(5))),
                    Case("saturated softmax (logits about 50)", pair((3, 6), scale=50.0), hidden=True),
                    Case("float32", pair((3, 5), dtype=np.float32), float32=True, hidden=True)],
    }


def _softmax_backward_model(k, dout, probs, axis=-1):
    """softmax_backward with knobs: inner ("weighted": sum(dout * p); "unweighted": sum(dout); "none"),
    lead (False: the leading p left out), sign, sum_axis (the axis of the sum), factor (on the result)."""
    dout, probs = np.asarray(dout), np.asarray(probs)
    sum_axis = k.get("sum_axis", axis)
    inner = {"weighted": lambda: np.sum(dout * probs, axis=sum_axis, keepdims=True),
             "unweighted": lambda: np.sum(dout, axis=sum_axis, keepdims=True),
             "none": lambda: 0.0}[k.get("inner", "weighted")]()
    core = dout - inner
    return k.get("factor", 1.0) * k.get("sign", 1) * (probs * core if k.get("lead", True) else core)


def _axes(dout, probs, axis=-1):
    return list(range(np.ndim(dout))) + [None]


SOFTMAX_BACKWARD_PROBES = Probes(
    _softmax_backward_model,
    Combos("softmax_backward", [
        ("inner", [("weighted", "", ""), ("none", "no_inner_term", "the term ⟨dout, p⟩ = sum(dout * p) is missing: "
                                                                   "that is the diagonal of the Jacobian only"),
                   ("unweighted", "inner_unweighted", "the inner term sums dout alone, not dout * p")]),
        ("lead", [(True, "", ""), (False, "no_leading_p", "the leading factor p is missing")]),
        ("sign", [(1, "", ""), (-1, "sign", "the sign is flipped")]),
    ], "dx = p * (dout - sum(dout * p, axis, keepdims=True)): the Jacobian diag(p) - p pᵀ applied to dout."),
    Axis("the sum ⟨dout, p⟩", "sum_axis", _axes, right=lambda dout, probs, axis=-1: axis % np.ndim(dout),
         fix="Sum along `axis`, the axis the softmax ran over, with keepdims=True."),
    Scale(lambda dout, probs, axis=-1: [("1", 1.0, None)], what="the entries of your dx", knob="factor"))


SOFTMAX_BACKWARD = Exercise("7.3", "softmax_backward", points=3, reference=backward.softmax_backward,
                            reads=("axis",))


@SOFTMAX_BACKWARD.checked_by
def check_softmax_backward(softmax_backward=None, *, points=None, hidden=False):
    """dx = p * (dout - sum(dout * p)) along `axis`."""
    c = Checker(SOFTMAX_BACKWARD, points, hidden)
    fn = c.find(softmax_backward, "softmax_backward")
    cases = softmax_backward_cases()
    common = dict(catalog=CATALOG["softmax_backward"], forbidden=[backward.softmax_backward],
                  probes=SOFTMAX_BACKWARD_PROBES)
    ref = backward.softmax_backward
    c.check_cases("rows of probabilities", fn, ref, cases["rows"], **common)
    c.check_cases("the axis argument is respected", fn, ref, cases["axis"], **common)
    c.check_cases("batched, masked and saturated", fn, ref, cases["batched"], **common)
    return c.result()


# -- Exercise 7.4 --------------------------------------------------------------------------------------
def attention_backward_cases():
    r = generator(74)

    def case(lead, m, n, d_k, d_v, mask=None, scale=1.0, dtype=np.float64):
        Q, K, V = (r.normal(size=lead + s) * scale for s in ((m, d_k), (n, d_k), (n, d_v)))
        _, weights = scaled_dot_product_attention(Q, K, V, mask)
        dout = r.normal(size=lead + (m, d_v))
        return tuple(a.astype(dtype) for a in (dout, Q, K, V, weights))

    pad = np.where(np.arange(6) >= 4, -np.inf, 0.0)  # keys 4 and 5 hidden
    return {
        "basic": [Case("unbatched, m=3 queries, n=5 keys, d_k=4, d_v=2", case((), 3, 5, 4, 2)),
                  Case("one query, d_k=1", case((), 1, 4, 1, 3), hidden=True)],
        "batched": [Case("batched (2,), m=4, n=3, d_k=6, d_v=5", case((2,), 4, 3, 6, 5)),
                    Case("heads: leading shape (2, 3), m=n=4", case((2, 3), 4, 4, 2, 2), hidden=True)],
        "masked": [Case("causal mask, m=n=4", case((), 4, 4, 3, 2, create_causal_mask(4)), alike=(("m", "n"),)),
                   Case("padding mask hiding keys 4 and 5, m=3, n=6, d_v=5", case((2,), 3, 6, 4, 5, pad)),
                   Case("large scores (entries about 5)", case((), 3, 5, 8, 2, scale=5.0), hidden=True),
                   Case("float32", case((), 3, 5, 4, 2, dtype=np.float32), float32=True, hidden=True)],
    }


def _attention_backward_model(k, dout, Q, K, V, weights):
    """attention_backward with knobs: scale (a number in place of 1/sqrt(d_k)), softmax ("right",
    "skipped": dscores = dweights, "diagonal": weights * dweights), dV ("right", "untransposed": weights
    @ dout), dK ("right", "untransposed": dscores @ Q), sign (on all three)."""
    dout, Q, K, V, weights = (np.asarray(a) for a in (dout, Q, K, V, weights))
    scale = k.get("scale", 1.0 / np.sqrt(Q.shape[-1]))
    wT = np.swapaxes(weights, -1, -2)
    if "untransposed" in (k.get("dV"), k.get("dK")) and weights.shape[-1] != weights.shape[-2]:
        # (m, n) @ (m, .) fails with one message whichever product it is: the error would not say
        # which gradient was left untransposed (FailedProduct reads the failing product's operands instead)
        raise LookupError("an untransposed product does not apply to m != n")
    dV = wT @ dout if k.get("dV", "right") == "right" else weights @ dout
    dweights = dout @ np.swapaxes(V, -1, -2)
    how = k.get("softmax", "right")
    if how == "right":
        dscores = backward.softmax_backward(dweights, weights)
    elif how == "skipped":
        dscores = dweights
    else:
        dscores = weights * dweights
    dscores = dscores * scale
    dQ = dscores @ K
    dK = np.swapaxes(dscores, -1, -2) @ Q if k.get("dK", "right") == "right" else dscores @ Q
    sign = k.get("sign", 1)
    return tuple(sign * backward._sum_to(g, a.shape) for g, a in ((dQ, Q), (dK, K), (dV, V)))


_ATTENTION_CHOICES = [
    ("softmax", [("right", "", ""), ("skipped", "softmax_skipped", "the gradient skips the softmax's backward pass "
                                                                    "(dscores = dweights)"),
                 ("diagonal", "softmax_diagonal", "the softmax's backward pass keeps only the diagonal, weights * dweights, "
                                                  "without the - ⟨dweights, weights⟩ term")]),
    ("dV", [("right", "", ""), ("untransposed", "dV_untransposed", "dV is weights @ dout: weights must be transposed, "
                                                                   "dV = weightsᵀ @ dout")]),
    ("dK", [("right", "", ""), ("untransposed", "dK_untransposed", "dK is dscores @ Q: dscores must be transposed, "
                                                                   "dK = dscoresᵀ @ Q")]),
    ("sign", [(1, "", ""), (-1, "sign", "every gradient has the wrong sign")]),
]
_ATTENTION_RIGHT = ("dV = weightsᵀ dout; dweights = dout Vᵀ; dscores = softmax_backward(dweights, weights) / sqrt(d_k); "
                    "dQ = dscores K; dK = dscoresᵀ Q.")


def _attention_scales(dout, Q, K, V, weights):
    d_k = np.shape(Q)[-1]
    return [("1/sqrt(d_k)", 1.0 / np.sqrt(d_k), None),
            ("1", 1.0, "the 1/sqrt(d_k) factor is missing from dscores: the forward pass scaled the scores, so "
                       "their gradient carries the same factor."),
            ("sqrt(d_k)", float(np.sqrt(d_k)), "dscores is multiplied by sqrt(d_k) instead of divided by it."),
            ("1/d_k", 1.0 / d_k, "dscores is divided by d_k, not by sqrt(d_k).")]


def _untransposed_products(attempt):
    """The products a gradient left untransposed computes, with the shapes of their operands: weights @ dout
    for dV (the catalog's dV_not_transposed), dscores @ Q for dK (dscores is shaped like the weights)."""
    dout, Q, K, V, weights = attempt.case.args
    words = {name: text for name, _, text in combos(_ATTENTION_CHOICES, _ATTENTION_RIGHT)}
    return [(np.shape(weights), np.shape(dout), "dV_untransposed", CATALOG.find("attention_backward", "dV_not_transposed")),
            (np.shape(weights), np.shape(Q), "dK_untransposed", words["dK_untransposed"])]


ATTENTION_BACKWARD_PROBES = Probes(
    _attention_backward_model,
    FailedProduct("attention_backward", _untransposed_products),
    Combos("attention_backward", _ATTENTION_CHOICES, _ATTENTION_RIGHT),
    Scale(_attention_scales, what="dscores", knob="scale"),
    EachOutput(Combos("attention_backward", _ATTENTION_CHOICES, _ATTENTION_RIGHT, most=1), ("dQ", "dK", "dV")))


# A product left untransposed, weights @ dout (dV) or dscores @ Q (dK), fails on m != n with the very same
# message, so the error cannot say which one it is: these entries are matched by their values only (on a
# square case), and on m != n the FailedProduct probe reads the failing product's operands instead.
_VALUES_ONLY = {"dV_not_transposed"}


class _NotThisEntry(Exception):
    """What an entry matched by its values only raises in place of its error: no answer raises it."""


def _values_only(m):
    def impl(*args, **kwargs):
        try:
            return m.impl(*args, **kwargs)
        except Exception as exc:
            raise _NotThisEntry(f"{m.key}: {exc}") from None
    return dataclasses.replace(m, impl=impl)


ATTENTION_BACKWARD = Exercise("7.4", "attention_backward", points=4, reference=backward.attention_backward,
                              sizes={"Q": "... m d_k", "K": "... n d_k", "V": "... n d_v"})


@ATTENTION_BACKWARD.checked_by
def check_attention_backward(attention_backward=None, *, points=None, hidden=False):
    """(dQ, dK, dV) of softmax(Q K^T / sqrt(d_k) + mask) V.

    Your `softmax_backward` is replaced by the reference while this runs, so a mistake in
    Exercise 7.3 is not charged again here.
    """
    c = Checker(ATTENTION_BACKWARD, points, hidden)
    fn = c.find(attention_backward, "attention_backward")
    fn = rebind(fn, softmax_backward=backward.softmax_backward)
    cases = attention_backward_cases()
    common = dict(catalog=CATALOG["attention_backward"], names=("dQ", "dK", "dV"),
                  forbidden=[backward.attention_backward], probes=ATTENTION_BACKWARD_PROBES)
    ref = backward.attention_backward
    common["catalog"] = [_values_only(m) if m.key in _VALUES_ONLY else m for m in common["catalog"]]
    c.check_cases("unbatched, rectangular (m != n)", fn, ref, cases["basic"], **common)
    c.check_cases("leading batch dimensions", fn, ref, cases["batched"], **common)
    c.check_cases("masked weights, large scores, float32", fn, ref, cases["masked"], **common)
    return c.result()


# -- Exercise 7.5 --------------------------------------------------------------------------------------
def rms_norm_backward_cases():
    r = generator(75)

    def case(shape, scale=1.0, **kwargs):
        d = shape[-1]
        return Case(kwargs.pop("label"), (r.normal(size=shape), r.normal(size=shape) * scale, r.uniform(0.5, 1.5, size=d)),
                    kwargs.pop("kw", {}), **kwargs)

    # x of scale 10 in the first two parts: eps = 1e-6 is then invisible at this tolerance, so leaving it
    # out costs only the third part, which is about eps.
    return {
        "basic": [case((4, 6), 10.0, label="x of shape (4, 6)"),
                  case((5,), 10.0, label="a single vector, d=5"),
                  case((3, 3), 10.0, label="x of shape (3, 3)", hidden=True)],
        "batched": [case((2, 3, 5), 10.0, label="batched (2, 3, 5)"),
                    case((2, 2, 3, 4), 10.0, label="leading shape (2, 2, 3)", hidden=True)],
        "eps": [case((3, 4), scale=1e-4, label="near-zero x (about 1e-4), where eps matters"),
                case((3, 4), scale=0.1, kw={"eps": 1e-2}, label="eps=1e-2"),
                case((2, 8), scale=1e3, label="large x (about 1e3)", hidden=True)],
    }


def _rms_backward_model(k, dout, x, gamma, eps=1e-6):
    """rms_norm_backward with knobs: second ("right"; "none": r treated as a constant; "no_gamma": the
    second term without gamma), second_factor (a number on the second term; 1 right), gamma_in_dx
    (False: dx without gamma), eps ("right", "none", "default": 1e-6 whatever is passed), dgamma
    ("right", "unnormalised": sum(dout * x), "with_gamma": times gamma), sign."""
    dout, x, gamma = (np.asarray(a, dtype=np.float64) for a in (dout, x, gamma))
    e = {"right": eps, "none": 0.0, "default": 1e-6}[k.get("eps", "right")]
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + e)
    how = k.get("dgamma", "right")
    dgamma = np.sum((dout * x * (1.0 if how == "unnormalised" else r)).reshape(-1, x.shape[-1]), axis=0)
    if how == "with_gamma":
        dgamma = dgamma * gamma
    dxhat = dout * gamma if k.get("gamma_in_dx", True) else dout
    second = k.get("second", "right")
    inner = dxhat if second != "no_gamma" else dout
    dx = r * dxhat - (0.0 if second == "none" else k.get("second_factor", 1.0) * x * r**3 *
                      np.mean(inner * x, axis=-1, keepdims=True))
    return k.get("sign", 1) * dx, dgamma


_RMS_CHOICES = [
    ("second", [("right", "", ""), ("none", "no_second_term", "the second term of dx, - x r³ mean(dx̂ · x), is missing: "
                                                             "r = 1/rms(x) depends on x too"),
                ("no_gamma", "second_term_without_gamma", "the second term uses dout instead of dx̂ = dout * gamma")]),
    ("gamma_in_dx", [(True, "", ""), (False, "no_gamma", "dx leaves gamma out: the upstream gradient of x̂ is dout * gamma")]),
    ("eps", [("right", "", ""), ("none", "no_eps", "eps is left out of rms(x)"),
             ("default", "eps_ignored", "the eps argument is ignored (1e-6 is used whatever is passed)")]),
    ("dgamma", [("right", "", ""), ("unnormalised", "dgamma_unnormalised", "dgamma sums dout * x, not dout * x / rms(x)"),
                ("with_gamma", "dgamma_times_gamma", "dgamma is multiplied by gamma")]),
    ("sign", [(1, "", ""), (-1, "sign", "dx has the wrong sign")]),
]
_RMS_RIGHT = ("With r = 1/sqrt(mean(x²) + eps) and dx̂ = dout * gamma: dx = r dx̂ - x r³ mean(dx̂ · x), "
              "dgamma = the sum of dout * x * r over every position.")


RMS_NORM_BACKWARD_PROBES = Probes(
    _rms_backward_model,
    Combos("rms_norm_backward", _RMS_CHOICES, _RMS_RIGHT),
    Scale(lambda dout, x, gamma, eps=1e-6: [
        ("1", 1.0, None),
        ("d", float(np.shape(x)[-1]), "the second term of dx uses a sum over the d features where the mean belongs "
                                      "(it is d times too large).")], what="the entries of the second term of dx", knob="second_factor"),
    EachOutput(Combos("rms_norm_backward", _RMS_CHOICES, _RMS_RIGHT, most=1), ("dx", "dgamma")))


RMS_NORM_BACKWARD = Exercise("7.5", "rms_norm_backward", points=3, reference=backward.rms_norm_backward,
                             sizes={"x": "... d"}, reads=("eps",))


@RMS_NORM_BACKWARD.checked_by
def check_rms_norm_backward(rms_norm_backward=None, *, points=None, hidden=False):
    """(dx, dgamma) of y = gamma * x / sqrt(mean(x^2) + eps)."""
    c = Checker(RMS_NORM_BACKWARD, points, hidden)
    fn = c.find(rms_norm_backward, "rms_norm_backward")
    cases = rms_norm_backward_cases()
    common = dict(catalog=CATALOG["rms_norm_backward"], names=("dx", "dgamma"),
                  forbidden=[backward.rms_norm_backward], probes=RMS_NORM_BACKWARD_PROBES)
    ref = backward.rms_norm_backward
    c.check_cases("dx and dgamma", fn, ref, cases["basic"], **common)
    c.check_cases("leading batch dimensions (dgamma summed over them)", fn, ref, cases["batched"], **common)
    c.check_cases("eps: near-zero and large x, another eps", fn, ref, cases["eps"], **common)
    return c.result()


# -- Exercise 7.6 --------------------------------------------------------------------------------------
BACKPROP_ORDER = Ordering(
    "7.6", "the order backpropagation visits the model", "backprop_order", points=1,
    steps=[
        Step("the loss gradient at the logits: dz = (p̂ - y) / N",
             "Backpropagation starts where the forward pass ended: the gradient of the loss with respect "
             "to the logits."),
        Step("through the tied head z = h Eᵀ: dh = dz E, and the head's share of dE",
             "The head was the last operation of the forward pass, so it is the first one the gradient "
             "goes back through, as soon as dz exists."),
        Step("through the decoder's final RMSNorm",
             "The final norm fed the head, so its backward pass needs dh, which the head's backward produces."),
        Step("through the decoder blocks, last block first (FFN, cross-attention, self-attention in each)",
             "The decoder blocks fed the final norm, so their gradient comes out of the norm's backward pass."),
        Step("through the encoder's final RMSNorm, with dH_enc summed over every decoder block's cross-attention",
             "H_enc was read by the cross-attention of every decoder block: its gradient is complete only "
             "once backpropagation has passed through all of the decoder blocks."),
        Step("through the encoder blocks, last block first",
             "The encoder blocks fed the encoder's final norm, so they wait for its backward pass, which "
             "waits for the whole decoder."),
        Step("dE complete: the head's share plus the rows of the source and target tokens (times sqrt(d))",
             "E was used three times (source, target, head); its gradient is the sum of all three shares, "
             "and the source share is known only at the very end, after the encoder blocks."),
    ],
    shown=[4, 1, 6, 2, 5, 0, 3],
)


@BACKPROP_ORDER.checked_by
def check_backprop_order(backprop_order=None, *, points=None):
    """All or nothing."""
    return BACKPROP_ORDER.check(backprop_order, points)


EXERCISES = [SOFTMAX_CROSS_ENTROPY, NUMERICAL_GRADIENT, SOFTMAX_BACKWARD, ATTENTION_BACKWARD, RMS_NORM_BACKWARD]
ORDERINGS = [BACKPROP_ORDER]


# The concept checks before and after the lesson (encdec.checks.concepts): Exercise 7.0, and the one
# numbered after the last exercise above.
from .concepts import concept_checks  # noqa: E402

CONCEPTS = concept_checks(7, after=[*EXERCISES, *ORDERINGS])
check_concepts_before, check_concepts_after = (check.checker for check in CONCEPTS)
