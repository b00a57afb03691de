"""Exercise 8.1, sequence_cross_entropy: its cases (padded batches, label smoothing, large logits,
all padding), the probes of its slips (the smoothing mass, the pads, the mean) and the checker."""

import numpy as np

from ... import loss as loss_mod
from ...mistakes import CATALOG
from ..core import Case, Checker
from ..exercises import Exercise
from ..fixtures import EOS, PAD, generator, padded_tokens
from ..probes import Combos, EachOutput, Probes, Scale


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
    from ..lesson07 import xent_model
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
    from ..lesson07 import _grad_factors as factors
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
