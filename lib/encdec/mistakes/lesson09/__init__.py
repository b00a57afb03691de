"""Lesson 09: greedy decoding, sampling the next token, beam search, one cached decoder step and
greedy decoding with the KV cache.

The decoding mistakes call the reference model's own encode and decode (and, for the cached ones,
the reference KVCache and decode_step: `KVCache_`, `decode_step_`), so each one shows exactly one
wrong idea about decoding.

One module per exercise, imported below in the order of the exercises; each registers its entries in
the order the checker tries them (the first that matches is named), so neither order may change. Each
module ends with its share of the shape-preserving slips added later (every shape still fits; only the
values show them), after the exercise's first entries:

    shared           what several modules share: `_banned` (the logits with some ids set to -inf) and
                     `_greedy_` (greedy decoding, cached or not, with one part replaceable)
    greedy           Exercise 9.1, greedy_decode (and `_greedy_banning`, greedy decoding with chosen ids banned)
    sampling         Exercise 9.2, sample_next_token (and `_probs`, `_draw`, `_top_k`, `_nucleus`)
    beam_search      Exercise 9.3, beam_search (and `_beam`, a beam search with pluggable parts)
    decode_step      Exercise 9.4, decode_step (and `_ffn_residual`, the feed-forward sublayer)
    cached_decoding  Exercise 9.5, cached_greedy_decode
"""

from . import greedy  # noqa: F401  (each import fills the catalog)
from . import sampling  # noqa: F401
from . import beam_search  # noqa: F401
from . import decode_step  # noqa: F401
from . import cached_decoding  # noqa: F401
