"""Exercise 9.6: the steps of one decoding step with a KV cache, put in order."""

from ..ordering import Ordering, Step


CACHED_STEP_ORDER = Ordering(
    "9.6", "one decoding step with a KV cache, in order", "cached_step_order", points=1,
    steps=[
        Step("embed the newest token at position t, the number of tokens already cached",
             "Every step starts from the one token just generated: nothing can be computed for it before it "
             "is embedded at its position."),
        Step("normalise it, project it to one new row of keys and values, and append that row to the "
             "self-attention cache",
             "The new row of keys and values is computed from the newly embedded token, so the embedding "
             "must come first."),
        Step("self-attention: the new token's query attends over all cached keys and values, plus the residual",
             "The query must see its own key and value too, so the new row (made from the embedded token) "
             "has to be in the cache before self-attention runs."),
        Step("cross-attention: the query attends over the encoder's keys and values, computed once "
             "before the first step, plus the residual",
             "Cross-attention's query is the output of the self-attention sublayer, so self-attention, and "
             "everything before it, must have run."),
        Step("feed-forward network, plus the residual",
             "The feed-forward sublayer is the last of the block and reads what cross-attention wrote."),
        Step("final RMSNorm and the tied output head: logits for the next token",
             "The output head reads the last block's output, so every sublayer of every block must have run first."),
        Step("choose the next token (argmax or a sample) and stop if it is EOS",
             "A token can only be chosen from the logits, so the output head (and everything before it) must "
             "have produced them."),
    ],
    shown=[4, 1, 6, 3, 0, 5, 2],
)


@CACHED_STEP_ORDER.checked_by
def check_cached_step_order(cached_step_order=None, *, points=None):
    """All or nothing."""
    return CACHED_STEP_ORDER.check(cached_step_order, points)
