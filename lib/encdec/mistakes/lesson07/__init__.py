"""Lesson 07: softmax_cross_entropy, numerical_gradient, softmax_backward, attention_backward,
rms_norm_backward.

One module per exercise, imported below in the order of the exercises; each registers its entries in
the order the checker tries them (the first that matches is named), so neither order may change. Each
module ends with its share of the shape-preserving slips added later (every shape still fits; only the
values show them), after the exercise's first entries:

    cross_entropy       Exercise 7.1, softmax_cross_entropy (and `_targets_one_hot`, the log-probabilities,
                        one-hot targets and non-pad mask as a correct implementation has them)
    numerical_gradient  Exercise 7.2, numerical_gradient
    softmax_backward    Exercise 7.3, softmax_backward
    attention_backward  Exercise 7.4, attention_backward (and `_T`, the swap of the last two axes)
    rms_norm_backward   Exercise 7.5, rms_norm_backward
"""

from . import cross_entropy  # noqa: F401  (each import fills the catalog)
from . import numerical_gradient  # noqa: F401
from . import softmax_backward  # noqa: F401
from . import attention_backward  # noqa: F401
from . import rms_norm_backward  # noqa: F401
