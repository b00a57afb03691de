"""Exercise 2.1, rms_norm: the mistakes of RMSNorm."""

import numpy as np

from .. import mistake


# -- Exercise 2.1 rms_norm -----------------------------------------------------------------------------
@mistake("rms_norm", "layer_norm",
         "this is LayerNorm: it subtracts the mean and divides by the standard deviation. RMSNorm "
         "does not centre: divide x by sqrt(mean(x**2) + eps) along the last axis, then multiply by gamma.")
def rms_norm(x, gamma, eps=1e-6):
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma


@mistake("rms_norm", "no_sqrt",
         "x is divided by the mean square, not by its square root. RMS means root-mean-square: "
         "divide by sqrt(mean(x**2) + eps).")
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / (np.mean(x * x, axis=-1, keepdims=True) + eps) * gamma


@mistake("rms_norm", "gamma_forgotten",
         "the gain gamma is never applied. After dividing by the RMS, multiply by gamma: it is the "
         "[LEARNED] per-feature scale that lets the model undo the normalisation where it helps.")
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


@mistake("rms_norm", "eps_ignored",
         "eps is never used. For an all-zero vector the RMS is 0 and 0/0 gives nan; a near-zero "
         "vector is blown up to unit size, noise included. Add eps inside the square root: "
         "sqrt(mean(x**2) + eps).")
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True)) * gamma


@mistake("rms_norm", "eps_outside_sqrt",
         "eps is added after the square root: sqrt(mean(x**2)) + eps. The course (like T5 and "
         "Llama) adds it inside: sqrt(mean(x**2) + eps). The two differ for small inputs.")
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / (np.sqrt(np.mean(x * x, axis=-1, keepdims=True)) + eps) * gamma


@mistake("rms_norm", "whole_array",
         "the mean of x**2 is taken over the whole array. Each token's vector is normalised on its "
         "own: np.mean(x**2, axis=-1, keepdims=True).")
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / np.sqrt(np.mean(x * x) + eps) * gamma


@mistake("rms_norm", "std_not_rms",
         "x is divided by its standard deviation (np.std subtracts the mean first). RMSNorm uses the "
         "root of the plain mean square, with no mean subtracted: sqrt(mean(x**2) + eps).")
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / np.sqrt(np.var(x, axis=-1, keepdims=True) + eps) * gamma


@mistake("rms_norm", "mean_abs",
         "x is divided by the mean of |x| instead of the root mean square sqrt(mean(x^2) + eps). RMSNorm "
         "squares first, averages, then takes the square root.")
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / (np.mean(np.abs(x), axis=-1, keepdims=True) + eps) * gamma


@mistake("rms_norm", "sum_not_mean",
         "the squares are summed instead of averaged, so x is divided by its length sqrt(sum(x^2)), which "
         "grows with d_model. RMSNorm takes the mean: np.mean(x**2, axis=-1, keepdims=True).")
def rms_norm(x, gamma, eps=1e-6):  # noqa: F811
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + eps) * gamma
