"""Checkers for lesson 10, Capstone: training, evaluating and decoding in PyTorch.

Each exercise is declared (number, title, points) right above its checker; EXERCISES and ORDERINGS,
at the end, list them.

Every torch answer is checked against the NumPy reference on the same weights: the schedule against
`encdec.optim.warmup_cosine_schedule`; the optimizer and the training step against the NumPy model's
own backward pass, `encdec.optim.AdamW` and clipping done in NumPy; decoding against
`encdec.decoding.greedy_decode` (without a cache). Models are tiny and nothing trains for more than
two steps: every check takes a fraction of a second.

What cannot be seen in a return value is observed while the answer runs:
- exact_match gets a real torch Seq2Seq whose decoder follows a script (so every edge case of the
  comparison is exercised on purpose), and which records, each time the answer calls it, whether
  it is in training mode and whether autograd is recording. So a missing model.eval() is seen
  without relying on dropout (once the torch model has dropout, it would also change the scores);
- greedy_decode_cached runs under a torch function mode that counts the rows multiplied by the
  encoder's and every decoder block's W_q and W_k: one new position per step means B rows per
  step in self-attention, and the encoder output's B * n rows once.

torch is imported on first use, not with this module: every grading kernel imports all the
checkers at start-up (encdec.checks.guard), and only this lesson needs torch. The exercises'
references are torch functions, so each is made on first use (a `Later`).

The modules, one job each (the test cells and the notebooks import everything from this package):

    torch_references  the torch references and instruments, built on first use (references())
    torch_checker     TorchChecker, one torch thread per check, checks made of observed parts
    small_models      the small NumPy models of 10.3 and 10.4, names of their flattened entries
    load_parameters   Exercise 10.1, load_numpy_parameters
    schedule          Exercise 10.2, lr_at
    optimizer         Exercise 10.3, make_optimizer
    train_step        Exercise 10.4, torch_train_step
    exact_match       Exercise 10.5, exact_match
    cached_decoding   Exercise 10.6, greedy_decode_cached
    ddp_order         Exercise 10.7, the data-parallel step in order
    project_review    Exercise 10.8's review of the project's report and its checkpoint
    project_report    Exercise 10.8's check (0 points), and the course's example run
"""

from ...mistakes import lesson10 as _register  # noqa: F401  (fills the catalog)
from .. import exercises
# What the notebooks, the tests and the tools read from encdec.checks.lesson10, re-exported:
from ..fixtures import BOS, EOS, PAD  # noqa: F401  (the ids the cases use)
from .cached_decoding import (GREEDY_DECODE_CACHED, OTHER_IDS, _decode_cached_probes, _decode_inputs,  # noqa: F401
                              _reference_decoded, check_greedy_decode_cached, count_weight_rows, decode_cases,
                              decode_models)
from .ddp_order import DDP_STEP_ORDER, check_ddp_step_order  # noqa: F401
from .exact_match import EXACT_MATCH, _scenario_model, check_exact_match, exact_match_scenarios  # noqa: F401
from .load_parameters import LOAD_NUMPY_PARAMETERS, check_load_numpy_parameters  # noqa: F401
from .optimizer import MAKE_OPTIMIZER, check_make_optimizer  # noqa: F401
from .project_report import (PROJECT_REPORT, ProjectReport, check_project_report, example_report,  # noqa: F401
                             show_review)
from .project_review import (EXAMPLE_RUN, PROJECT_BUDGET, PROJECT_FIELDS, PROJECT_TASKS, RECHECK,  # noqa: F401
                             _task_module, default_parameters, exact_match_tolerance, parameter_total, read_run,
                             review_project)
from .schedule import CAPSTONE_SCHEDULE, LR_AT, LR_CURVE_PROBES, LR_PROBES, check_lr_at  # noqa: F401
from .torch_checker import _PASSED, DELEGATED, Returned, TorchChecker  # noqa: F401
from .torch_references import references
from .train_step import (MADE_WITH_LR, STEP_NAMES, TORCH_TRAIN_STEP, TRAIN_SETUPS, _compare_steps,  # noqa: F401
                         _two_steps, check_torch_train_step, reference_two_steps)

EXERCISES = [LOAD_NUMPY_PARAMETERS, LR_AT, MAKE_OPTIMIZER, TORCH_TRAIN_STEP, EXACT_MATCH, GREEDY_DECODE_CACHED]
ORDERINGS = [DDP_STEP_ORDER]
QUIZZES = [PROJECT_REPORT]

for _graded in [*EXERCISES, *ORDERINGS, *QUIZZES]:  # the test cells import the checkers from this package
    _graded.checker.__module__ = __name__
del _graded


# -- for the notebook's demonstrations ----------------------------------------------------------------
def cached_logits(model, src, tgt_in):
    """Teacher forcing through a KV cache (the course's own cached step): tgt_in (B, m) fed one column per
    step, the logits of every step stacked, (B, m, V). For comparing with model(src, tgt_in)."""
    return references().cached_logits(model, src, tgt_in)


def yours_or_ours(number, answer):
    """The student's answer to exercise `number` when its visible test passes, else the course's
    reference (with a note), so that a demonstration runs before the exercise is done. Grades nothing."""
    return exercises.yours_or_ours(EXERCISES, number, answer, passed=_PASSED.get(number))


# The concept checks before and after the lesson (encdec.checks.concepts): Exercise 10.0, and the one
# numbered after the last exercise above.
from ..concepts import concept_checks  # noqa: E402

CONCEPTS = concept_checks(10, after=[*EXERCISES, *ORDERINGS, *QUIZZES])
check_concepts_before, check_concepts_after = (check.checker for check in CONCEPTS)
