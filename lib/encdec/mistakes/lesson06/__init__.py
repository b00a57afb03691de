"""Lesson 06: shift_right, embed, encode, decode, parameter_count, bpe_merge_step.

The encode and decode mistakes call the reference embedding (`embed_`) and the reference blocks
stored in the model, so each one shows exactly one wrong idea about the assembly.

One module per exercise, imported below in the order of the exercises; each registers its entries in
the order the checker tries them (the first that matches is named), so neither order may change. Each
module of 6.1-6.5 ends with its share of the shape-preserving slips added later (every shape still
fits; only the values show them), after the exercise's first entries:

    shared           what several modules share: `embed_`, the reference embedding (Seq2Seq.embed)
    shift_right      Exercise 6.1, shift_right
    embed            Exercise 6.2, embed
    encode           Exercise 6.3, encode
    decode           Exercise 6.4, decode
    parameter_count  Exercise 6.5, parameter_count (and `_ffn`, the feed-forward network's count)
    bpe_merge_step   Exercise 6.7, bpe_merge_step
"""

from . import shift_right  # noqa: F401  (each import fills the catalog)
from . import embed  # noqa: F401
from . import encode  # noqa: F401
from . import decode  # noqa: F401
from . import parameter_count  # noqa: F401
from . import bpe_merge_step  # noqa: F401
