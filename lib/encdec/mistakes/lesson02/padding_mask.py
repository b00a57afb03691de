"""Exercise 2.3, padding_mask: the mistakes of the additive padding mask."""

import numpy as np

from .. import mistake


# -- Exercise 2.3 padding_mask -------------------------------------------------------------------------
@mistake("padding_mask", "boolean",
         "the mask is boolean (True at pads). Masks in this course are additive, added to the "
         "scores: 0.0 where a key is visible and -inf where it is hidden. Use np.where(tokens == pad_id, -np.inf, 0.0).")
def padding_mask(tokens, pad_id):
    return (np.asarray(tokens) == pad_id)[..., None, None, :]


@mistake("padding_mask", "inverted",
         "the mask is inverted: it hides the real tokens and shows the pads. -inf goes where "
         "tokens == pad_id, 0.0 everywhere else.")
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == pad_id, 0.0, -np.inf)[..., None, None, :]


@mistake("padding_mask", "no_new_axes",
         "the mask has shape (..., n), which lines up with the scores' last axis but not with their "
         "batch axis: (B, n) against scores (B, h, m, n) pairs batch row b with query row b. Add "
         "two axes before the last: mask[..., None, None, :] has shape (..., 1, 1, n).")
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == pad_id, -np.inf, 0.0)


@mistake("padding_mask", "one_new_axis",
         "the mask has shape (..., 1, n): enough for single-head scores (B, m, n), but against "
         "multi-head scores (B, h, m, n) the batch axis lines up with the heads. Return shape "
         "(..., 1, 1, n): one axis for the heads, one for the queries.")
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == pad_id, -np.inf, 0.0)[..., None, :]


@mistake("padding_mask", "hides_queries",
         "the pads are hidden as queries (rows), shape (..., 1, n, 1). A pad must never be looked "
         "at, so hide it as a key: a column of the scores, shape (..., 1, 1, n).")
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == pad_id, -np.inf, 0.0)[..., None, :, None]


@mistake("padding_mask", "large_negative",
         "pads get a large negative number (like -1e9) instead of -inf, which the exercise asks for. "
         "The difference shows where every key is a pad: with -1e9 such a row gets the softmax of its raw "
         "scores, weight on the pads, instead of zeros; and the course's masks, which later exercises add "
         "to yours, are exactly 0.0 and -np.inf. Use -np.inf.")
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == pad_id, -1e9, 0.0)[..., None, None, :]


@mistake("padding_mask", "multiplicative",
         "this is a multiplicative 1/0 mask (1 to keep, 0 to hide). Masks here are added to the "
         "scores before the softmax: 0.0 to keep, -inf to hide, so exp(-inf) = 0.")
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == pad_id, 0.0, 1.0)[..., None, None, :]


@mistake("padding_mask", "pad_id_ignored",
         "the pad id is taken to be 0 whatever `pad_id` says. Compare the tokens with the "
         "`pad_id` argument: vocabularies put padding at different ids.")
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == 0, -np.inf, 0.0)[..., None, None, :]


@mistake("padding_mask", "plus_inf",
         "the pads get +inf instead of -inf. Added to a score, +inf gives that key all the weight (and "
         "inf - inf is nan in the softmax); a hidden key gets -inf, so that exp(-inf) = 0.")
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == pad_id, np.inf, 0.0)[..., None, None, :]


@mistake("padding_mask", "minus_one",
         "the pads get -1.0. Added to a score, -1 only lowers a pad's weight a little; a hidden key must "
         "get -inf, so that exp(-inf) = 0 gives it exactly zero weight.")
def padding_mask(tokens, pad_id):  # noqa: F811
    return np.where(np.asarray(tokens) == pad_id, -1.0, 0.0)[..., None, None, :]
