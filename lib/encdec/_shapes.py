"""Input checks shared by the reference: every failure is a ValueError that names the shapes."""

import numpy as np


def as_float(x, name, min_ndim=1):
    """Return `x` as a float64 array with at least `min_ndim` dimensions, or raise ValueError."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric, got {type(x).__name__}: {exc}") from None
    if arr.ndim < min_ndim:
        raise ValueError(
            f"{name} must have at least {min_ndim} dimension(s), got shape {arr.shape}"
        )
    return arr


def as_tokens(tokens, name="tokens", min_ndim=1):
    """Return integer token ids as an int64 array, or raise ValueError."""
    arr = np.asarray(tokens)
    if arr.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s), got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise ValueError(f"{name} must hold integer token ids, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def check_last_dim(x, d, name, what="d_model"):
    if x.shape[-1] != d:
        raise ValueError(f"{name} of shape {x.shape} must end in {what}={d}")


def check_mask(mask, scores_shape, name="mask"):
    """Return an additive float mask that broadcasts to `scores_shape` without growing it."""
    if mask is None:
        return None
    mask = np.asarray(mask)
    if mask.dtype == bool:
        raise ValueError(
            f"{name} of shape {mask.shape} is boolean; masks here are additive: "
            "0.0 where visible and -inf where hidden (np.where(keep, 0.0, -np.inf))"
        )
    mask = mask.astype(np.float64)
    try:
        out = np.broadcast_shapes(mask.shape, tuple(scores_shape))
    except ValueError:
        out = None
    if out != tuple(scores_shape):
        raise ValueError(
            f"{name} of shape {mask.shape} does not broadcast to the attention scores "
            f"of shape {tuple(scores_shape)}"
        )
    return mask
