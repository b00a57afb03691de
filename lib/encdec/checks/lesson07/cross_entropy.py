"""Exercise 7.1, softmax_cross_entropy: its cases, the knob model of the loss's slips (xent_model and
_grad_factors, which Lesson 8's sequence_cross_entropy uses too; XENT_CHOICES, XENT_PROBES) and the checker."""

import numpy as np

from ... import loss
from ...mistakes import CATALOG
from ..core import Case, Checker
from ..exercises import Exercise
from ..fixtures import generator, padded_tokens
from ..probes import Combos, EachOutput, Probes, Scale


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
