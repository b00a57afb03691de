"""Checkers for lesson 08, Training.

Each exercise is declared (number, title, points) right above its checker; EXERCISES and ORDERINGS,
at the end, list them.

`train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None)` receives the
reference `encdec.Seq2Seq` with randomised weights and the reference `encdec.Adam`, and runs with
the reference loss in place of the student's `sequence_cross_entropy` (and the reference
`adam_update` and `warmup_schedule`, should it call them), so a mistake in Exercises 8.1-8.3 is
never charged again in 8.4.

The modules, one job each (the test cells and the notebooks import everything from this package):

    sequence_loss   Exercise 8.1, sequence_cross_entropy (its cases and probes)
    adam            Exercise 8.2, adam_update (its cases, probes, and the inputs-unchanged part)
    schedule        Exercise 8.3, warmup_schedule (asked one step at a time: _over_steps)
    train_step      Exercise 8.4, train_step (one step on a fresh random model and Adam: _one_step)
    step_order      Exercise 8.5, one training step in order
    dropout_draws   Exercise 8.6's two accepted conventions and the counting of numbers drawn from rng
    dropout_slips   Exercise 8.6's diagnoses: dropout with knobs, its slips, the mask not from rng
    dropout         Exercise 8.6, dropout (its cases and the checker)
"""

from ...mistakes import lesson08 as _register  # noqa: F401  (fills the catalog)
# What the notebooks, the tests and the tools read from encdec.checks.lesson08, re-exported:
from .adam import ADAM_PROBES, ADAM_UPDATE, adam_cases, check_adam_update  # noqa: F401
from .dropout import DROPOUT, check_dropout, dropout_cases  # noqa: F401
from .dropout_draws import _seeded  # noqa: F401
from .dropout_slips import dropout_probes  # noqa: F401
from .schedule import SCHEDULE_PROBES, WARMUP_SCHEDULE, _over_steps, check_warmup_schedule, schedule_cases  # noqa: F401
from .sequence_loss import (SEQUENCE_CROSS_ENTROPY, SEQUENCE_XENT_PROBES, check_sequence_cross_entropy,  # noqa: F401
                            loss_cases)
from .step_order import TRAINING_STEP_ORDER, check_training_step_order  # noqa: F401
from .train_step import TRAIN_STEP, TRAIN_STEP_PROBES, _one_step, check_train_step, train_step_cases  # noqa: F401

EXERCISES = [SEQUENCE_CROSS_ENTROPY, ADAM_UPDATE, WARMUP_SCHEDULE, TRAIN_STEP, DROPOUT]
ORDERINGS = [TRAINING_STEP_ORDER]

for _graded in [*EXERCISES, *ORDERINGS]:  # the test cells import the checkers from this package
    _graded.checker.__module__ = __name__
del _graded


# The concept checks before and after the lesson (encdec.checks.concepts): Exercise 8.0, and the one
# numbered after the last exercise above.
from ..concepts import concept_checks  # noqa: E402

CONCEPTS = concept_checks(8, after=[*EXERCISES, *ORDERINGS])
check_concepts_before, check_concepts_after = (check.checker for check in CONCEPTS)
