"""Exercise 3.5: the steps of masked multi-head self-attention, put in order."""

from ..ordering import Ordering, Step


MASKED_ATTENTION_ORDER = Ordering(
    "3.5", "the steps of masked multi-head self-attention, in order", "masked_attention_order", points=1,
    steps=[
        Step("project the decoder states into queries, keys and values (x @ W_q, x @ W_k, x @ W_v)",
             "Queries, keys and values are made from the decoder states by the projections; every "
             "other step works on them, so the projection comes first."),
        Step("split the queries, keys and values into heads of width d_k",
             "Each head takes its own d_k columns of the projected Q, K and V, so the projection must "
             "come before the split; every step after it runs in each head separately."),
        Step("score every query against every key, in each head: Q @ K.T",
             "Scores compare each head's queries with that head's keys, so the heads must be split "
             "first."),
        Step("scale the scores by 1/sqrt(d_k) and add the causal mask",
             "Scaling and masking change the raw scores, so the scores must exist first, and both must "
             "be done before the softmax. (Between the two, the order does not matter: -inf scaled is "
             "still -inf and 0 scaled is still 0, so they are one step here.)"),
        Step("softmax along the key axis",
             "The softmax must see the scaled, masked scores: exp(-inf) = 0 is what gives every future "
             "position exactly zero weight while the visible weights still sum to 1."),
        Step("take the weighted sum of the values, in each head",
             "The values are mixed with the attention weights, so the softmax must have produced them."),
        Step("merge the heads back into one vector of width d_model per position",
             "Merging puts the heads' outputs side by side, so every head must have finished its "
             "weighted sum first."),
        Step("project the merged vector with W_o",
             "W_o mixes information across heads, so it comes last, once the heads sit side by side "
             "again in one d_model-wide vector."),
    ],
    shown=[4, 7, 1, 6, 0, 2, 5, 3],
)


@MASKED_ATTENTION_ORDER.checked_by
def check_masked_attention_order(masked_attention_order=None, *, points=None):
    """All or nothing."""
    return MASKED_ATTENTION_ORDER.check(masked_attention_order, points)
