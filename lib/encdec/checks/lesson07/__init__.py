"""Checkers for lesson 07, Backpropagation.

Each exercise is declared (number, title, points) right above its checker; EXERCISES and ORDERINGS,
at the end, list them.

The modules, one job each (the test cells and the notebooks import everything from this package):

    cross_entropy        Exercise 7.1, softmax_cross_entropy (and the loss's knob model, xent_model,
                         which Lesson 8's sequence_cross_entropy uses too)
    numerical_gradient   Exercise 7.2, numerical_gradient (x put back exactly)
    softmax_backward     Exercise 7.3, softmax_backward
    attention_backward   Exercise 7.4, attention_backward
    rms_norm_backward    Exercise 7.5, rms_norm_backward
    backprop_order       Exercise 7.6, the order backpropagation visits the model
"""

from ...mistakes import lesson07 as _register  # noqa: F401  (fills the catalog)
# What the notebooks, the tests, the tools and Lesson 8's checks read from encdec.checks.lesson07, re-exported:
from ..core import Case  # noqa: F401  (lesson07.Case, in the tests)
from .attention_backward import (ATTENTION_BACKWARD, ATTENTION_BACKWARD_PROBES,  # noqa: F401
                                 attention_backward_cases, check_attention_backward)
from .backprop_order import BACKPROP_ORDER, check_backprop_order  # noqa: F401
from .cross_entropy import (SOFTMAX_CROSS_ENTROPY, XENT_PROBES, _grad_factors, _xent,  # noqa: F401
                            check_softmax_cross_entropy, cross_entropy_cases, xent_model)
from .numerical_gradient import (NUMERICAL_GRADIENT, NUMERICAL_GRADIENT_PROBES, _gradient_of,  # noqa: F401
                                 check_numerical_gradient, numerical_gradient_cases)
from .rms_norm_backward import (RMS_NORM_BACKWARD, RMS_NORM_BACKWARD_PROBES, check_rms_norm_backward,  # noqa: F401
                                rms_norm_backward_cases)
from .softmax_backward import (SOFTMAX_BACKWARD, SOFTMAX_BACKWARD_PROBES, check_softmax_backward,  # noqa: F401
                               softmax_backward_cases)

EXERCISES = [SOFTMAX_CROSS_ENTROPY, NUMERICAL_GRADIENT, SOFTMAX_BACKWARD, ATTENTION_BACKWARD, RMS_NORM_BACKWARD]
ORDERINGS = [BACKPROP_ORDER]

for _graded in [*EXERCISES, *ORDERINGS]:  # the test cells import the checkers from this package
    _graded.checker.__module__ = __name__
del _graded


# The concept checks before and after the lesson (encdec.checks.concepts): Exercise 7.0, and the one
# numbered after the last exercise above.
from ..concepts import concept_checks  # noqa: E402

CONCEPTS = concept_checks(7, after=[*EXERCISES, *ORDERINGS])
check_concepts_before, check_concepts_after = (check.checker for check in CONCEPTS)
