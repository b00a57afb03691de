"""Exercise 7.3, softmax_backward: the mistakes of the softmax's backward pass."""

import numpy as np

from .. import mistake


# -- Exercise 7.3 softmax_backward ---------------------------------------------------------------------------
@mistake("softmax_backward", "diagonal_only",
         "only the diagonal of the softmax Jacobian is used (dx = p(1 - p) dout). Every output depends on "
         "every input: J = diag(p) - p pᵀ, so dx = p * (dout - sum(dout * p)) along the axis.")
def softmax_backward(dout, probs, axis=-1):
    return probs * (1.0 - probs) * dout


@mistake("softmax_backward", "no_leading_p",
         "the factor p in front is missing: dx = dout - sum(dout * p). Each row of the Jacobian is "
         "p_j (δ_jk - p_k), so the whole bracket is multiplied by p: dx = p * (dout - sum(dout * p)).")
def softmax_backward(dout, probs, axis=-1):  # noqa: F811
    return dout - np.sum(dout * probs, axis=axis, keepdims=True)


@mistake("softmax_backward", "unweighted_sum",
         "the sum is not weighted by p: dx = p * (dout - sum(dout)). The subtracted term is the "
         "p-weighted average of dout, sum(dout * p).")
def softmax_backward(dout, probs, axis=-1):  # noqa: F811
    return probs * (dout - np.sum(dout, axis=axis, keepdims=True))


@mistake("softmax_backward", "sign_flipped",
         "the sign is flipped: dx = p * (sum(dout * p) - dout). It is p * (dout - sum(dout * p)): "
         "raising an input raises its own probability.")
def softmax_backward(dout, probs, axis=-1):  # noqa: F811
    return probs * (np.sum(dout * probs, axis=axis, keepdims=True) - dout)


@mistake("softmax_backward", "ignores_axis",
         "the `axis` argument is ignored: the sum always runs over the last axis. Sum along `axis`, "
         "the axis the forward softmax normalised.")
def softmax_backward(dout, probs, axis=-1):  # noqa: F811
    return probs * (dout - np.sum(dout * probs, axis=-1, keepdims=True))


@mistake("softmax_backward", "no_keepdims",
         "the sum is taken without keepdims=True, so it does not line up with the array it is "
         "subtracted from (an error, or wrong numbers when the shapes happen to broadcast). Use "
         "np.sum(dout * probs, axis=axis, keepdims=True).")
def softmax_backward(dout, probs, axis=-1):  # noqa: F811
    return probs * (dout - np.sum(dout * probs, axis=axis))


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("softmax_backward", "sums_probabilities_only",
         "the inner term sums p alone, sum(p) = 1, instead of ⟨dout, p⟩ = sum(dout * p): dx = p (dout - 1) "
         "is wrong. dx = p * (dout - sum(dout * p, axis, keepdims=True)).")
def softmax_backward(dout, probs, axis=-1):  # noqa: F811
    return probs * (dout - np.sum(probs, axis=axis, keepdims=True))


@mistake("softmax_backward", "mean_instead_of_sum",
         "the inner term is a mean, mean(dout * p), not the sum ⟨dout, p⟩ = sum(dout * p): the Jacobian "
         "diag(p) - p pᵀ gives the full sum along the axis.")
def softmax_backward(dout, probs, axis=-1):  # noqa: F811
    return probs * (dout - np.mean(dout * probs, axis=axis, keepdims=True))
