"""Exercise 6.1, shift_right: the mistakes of the teacher-forcing shift."""

import numpy as np

from .. import mistake


# -- Exercise 6.1 shift_right ---------------------------------------------------------------------------
@mistake("shift_right", "roll_wraps_around",
         "np.roll moves the last token around to position 0 instead of putting BOS there. After "
         "shifting, write bos_id into position 0 (or build [BOS] + targets[..., :-1] directly).")
def shift_right(targets, bos_id):
    return np.roll(targets, 1, axis=-1)


@mistake("shift_right", "last_token_kept",
         "BOS is prepended but the last token is not dropped, so the decoder input is one position "
         "longer than the targets. Drop the last target: [BOS] + targets[..., :-1] has length m.")
def shift_right(targets, bos_id):  # noqa: F811
    bos = np.full(targets.shape[:-1] + (1,), bos_id, dtype=targets.dtype)
    return np.concatenate([bos, targets], axis=-1)


@mistake("shift_right", "first_token_dropped",
         "the first target token is dropped instead of the last: position 1 must read y1, the "
         "token the model predicted at position 0. Keep targets[..., :-1], not targets[..., 1:].")
def shift_right(targets, bos_id):  # noqa: F811
    bos = np.full(targets.shape[:-1] + (1,), bos_id, dtype=targets.dtype)
    return np.concatenate([bos, targets[..., 1:]], axis=-1)


@mistake("shift_right", "shifted_left",
         "the sequence is shifted left (BOS put at the end). Teacher forcing shifts right: "
         "position t of the decoder input holds the target of position t - 1, and position 0 holds BOS.")
def shift_right(targets, bos_id):  # noqa: F811
    bos = np.full(targets.shape[:-1] + (1,), bos_id, dtype=targets.dtype)
    return np.concatenate([targets[..., 1:], bos], axis=-1)


@mistake("shift_right", "unbatched_only",
         "this works for one sequence but not for a batch: targets[:-1] drops the last *row* of a "
         "(B, m) batch, and [bos_id] has one dimension fewer than the batch. Work on the last axis: "
         "targets[..., :-1], and a BOS column of shape targets.shape[:-1] + (1,).")
def shift_right(targets, bos_id):  # noqa: F811
    return np.concatenate([[bos_id], targets[:-1]])


@mistake("shift_right", "float_ids",
         "the result holds floats (np.ones and np.zeros make float64 arrays), but token ids index the "
         "embedding table and must stay integers. Build the BOS column with the targets' own dtype: "
         "np.full(shape, bos_id, dtype=targets.dtype).")
def shift_right(targets, bos_id):  # noqa: F811
    bos = np.ones(targets.shape[:-1] + (1,)) * bos_id
    return np.concatenate([bos, targets[..., :-1]], axis=-1)


@mistake("shift_right", "bos_hardcoded",
         "BOS is written as the number 1 instead of the `bos_id` argument. Use bos_id: vocabularies "
         "differ in where they keep their special tokens.")
def shift_right(targets, bos_id):  # noqa: F811
    bos = np.full(targets.shape[:-1] + (1,), 1, dtype=targets.dtype)
    return np.concatenate([bos, targets[..., :-1]], axis=-1)


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("shift_right", "shifted_by_two",
         "the targets move two places, not one: position t must hold y_(t-1), the token just before the one "
         "it predicts. Prepend one BOS and drop one token: [bos_id] + targets[..., :-1].")
def shift_right(targets, bos_id):  # noqa: F811
    out = np.full_like(targets, bos_id)
    out[..., 2:] = targets[..., :-2]
    return out


@mistake("shift_right", "shifted_along_the_batch",
         "the shift runs along the first axis (the batch), not the last (the positions): each sequence is "
         "replaced by the one before it. Shift along axis -1: targets[..., :-1].")
def shift_right(targets, bos_id):  # noqa: F811
    targets = np.asarray(targets)
    out = np.empty_like(targets)
    out[0] = bos_id
    out[1:] = targets[:-1]
    return out
