"""Lesson 10: the capstone in PyTorch. The weight transfer from NumPy, the warm-up + cosine schedule,
AdamW's parameter groups, one training step with clipping, exact-match evaluation, and greedy decoding
with a KV cache.

Written with tensor methods, and `import torch` inside the functions that need the module itself:
every grading kernel imports all the catalogs at start-up, and only this lesson should pay for
importing torch. Helpers that stand in for code the notebook gives carry a trailing underscore
(`rms_norm_`, `attend_`, `embed_at_`), so that pasting a mistake into a notebook never replaces the
student's own function of the plain name.

One module per exercise, imported below in the order of the exercises; each registers its entries in
the order the checker tries them (the first that matches is named), so neither order may change. Each
module ends with its share of the shape-preserving slips added later (every shape still fits; only the
values show them), after the exercise's first entries:

    given            what the notebook gives (section 10.9), for tensors: `rms_norm_`, `split_heads_`,
                     `merge_heads_`, `attend_`, `embed_at_` (the greedy_decode_cached mistakes call them)
    load_parameters  Exercise 10.1, load_numpy_parameters
    schedule         Exercise 10.2, lr_at
    optimizer        Exercise 10.3, make_optimizer
    train_step       Exercise 10.4, torch_train_step (and `_loss`, `_shift_right`, `_set_lr`)
    exact_match      Exercise 10.5, exact_match (and `_padded`, `_decoded`)
    cached_decoding  Exercise 10.6, greedy_decode_cached (and `_cross_kv`, `_blocks`, `_banned_argmax`,
                     `_cached_greedy_`)
"""

from . import load_parameters  # noqa: F401  (each import fills the catalog)
from . import schedule  # noqa: F401
from . import optimizer  # noqa: F401
from . import train_step  # noqa: F401
from . import exact_match  # noqa: F401
from . import cached_decoding  # noqa: F401
