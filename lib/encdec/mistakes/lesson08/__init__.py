"""Lesson 08: the padding-aware, label-smoothed loss, the Adam step, the warm-up schedule,
one teacher-forced training step and inverted dropout.

The train_step mistakes call the reference loss (`loss_`), forward pass and backward pass, so each
one shows exactly one wrong idea about the training step itself.

One module per exercise, imported below in the order of the exercises; each registers its entries in
the order the checker tries them (the first that matches is named), so neither order may change. Each
module ends with its share of the shape-preserving slips added later (every shape still fits; only the
values show them), after the exercise's first entries. No helper is shared by several modules:

    sequence_loss  Exercise 8.1, sequence_cross_entropy (and `_smoothed`, the label-smoothed target q)
    adam           Exercise 8.2, adam_update
    schedule       Exercise 8.3, warmup_schedule
    train_step     Exercise 8.4, train_step
    dropout        Exercise 8.6, dropout
"""

from . import sequence_loss  # noqa: F401  (each import fills the catalog)
from . import adam  # noqa: F401
from . import schedule  # noqa: F401
from . import train_step  # noqa: F401
from . import dropout  # noqa: F401
