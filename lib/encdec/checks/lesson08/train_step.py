"""Exercise 8.4, train_step: one step run on a fresh random model and Adam (_one_step), its cases
(padding, another pad id, label smoothing and lr, dropout), the probes of its slips (the pads, when
the loss and the accuracy are measured, a second forward pass) and the checker, which runs the answer
with the reference loss, adam_update and warmup_schedule in place of the notebook's."""

import functools

import numpy as np

from ... import model as model_mod
from ... import loss as loss_mod
from ... import optim, training
from ...mistakes import CATALOG
from ..catalog import wrapped
from ..core import Case, Checker, rebind
from ..exercises import Exercise
from ..fixtures import BOS, EOS, PAD, generator, padded_tokens, random_model
from ..probes import Combos, Probes


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
