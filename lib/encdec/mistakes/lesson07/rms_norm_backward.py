"""Exercise 7.5, rms_norm_backward: the mistakes of RMSNorm's backward pass."""

import numpy as np

from .. import mistake


# -- Exercise 7.5 rms_norm_backward --------------------------------------------------------------------------
@mistake("rms_norm_backward", "rms_treated_as_constant",
         "1/rms(x) is treated as a constant, so dx = gamma * dout / rms misses a term. The rms depends "
         "on x too: dx = r ĝ - x r³ mean(ĝ x) along the last axis, with ĝ = dout * gamma and r = 1/rms(x).")
def rms_norm_backward(dout, x, gamma, eps=1e-6):
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    dgamma = np.sum((dout * x * r).reshape(-1, x.shape[-1]), axis=0)
    return r * dout * gamma, dgamma


@mistake("rms_norm_backward", "dgamma_not_summed",
         "dgamma keeps one row per position. gamma is shared by every position, so its gradient is the "
         "sum over all leading axes: dgamma has shape (d,), like gamma.")
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    g = dout * gamma
    return r * g - x * r**3 * np.mean(g * x, axis=-1, keepdims=True), dout * x * r


@mistake("rms_norm_backward", "dgamma_unnormalised",
         "dgamma sums dout * x. The gain multiplies the *normalised* x, so dgamma = sum(dout * x / rms(x)) "
         "over all positions.")
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    g = dout * gamma
    dx = r * g - x * r**3 * np.mean(g * x, axis=-1, keepdims=True)
    return dx, np.sum((dout * x).reshape(-1, x.shape[-1]), axis=0)


@mistake("rms_norm_backward", "gamma_forgotten",
         "gamma is left out of dx. The output is gamma * x / rms(x), so the gradient reaching the "
         "normalised x is dout * gamma; use it in both terms of dx.")
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    dx = r * dout - x * r**3 * np.mean(dout * x, axis=-1, keepdims=True)
    return dx, np.sum((dout * x * r).reshape(-1, x.shape[-1]), axis=0)


@mistake("rms_norm_backward", "sum_instead_of_mean",
         "the second term uses a sum over the last axis where the mean belongs: rms(x)² is the *mean* of "
         "x², so its derivative brings a 1/d. Use np.mean(g * x, axis=-1, keepdims=True).")
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    g = dout * gamma
    dx = r * g - x * r**3 * np.sum(g * x, axis=-1, keepdims=True)
    return dx, np.sum((dout * x * r).reshape(-1, x.shape[-1]), axis=0)


@mistake("rms_norm_backward", "eps_left_out",
         "eps is left out of the rms: r = 1/sqrt(mean(x²)). The forward pass used sqrt(mean(x²) + eps), "
         "and the backward pass must use the same r (it matters when x is near zero).")
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True))
    g = dout * gamma
    dx = r * g - x * r**3 * np.mean(g * x, axis=-1, keepdims=True)
    return dx, np.sum((dout * x * r).reshape(-1, x.shape[-1]), axis=0)


@mistake("rms_norm_backward", "eps_argument_ignored",
         "eps is fixed at 1e-6 instead of using the `eps` argument. Use the eps the caller passes, the "
         "one the forward pass used.")
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6)
    g = dout * gamma
    dx = r * g - x * r**3 * np.mean(g * x, axis=-1, keepdims=True)
    return dx, np.sum((dout * x * r).reshape(-1, x.shape[-1]), axis=0)


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("rms_norm_backward", "second_term_without_gamma",
         "the second term of dx uses dout where dx̂ = dout * gamma belongs: - x r³ mean(dx̂ · x). The "
         "gradient reaching x̂ is dout * gamma in both terms.")
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    dgamma = np.sum((dout * x * r).reshape(-1, x.shape[-1]), axis=0)
    return r * dout * gamma - x * r**3 * np.mean(dout * x, axis=-1, keepdims=True), dgamma


@mistake("rms_norm_backward", "r_squared_in_second_term",
         "the second term uses r², not r³: differentiating r = (mean(x²) + eps)^(-1/2) gives "
         "-r³ x / d, so dx = r dx̂ - x r³ mean(dx̂ · x).")
def rms_norm_backward(dout, x, gamma, eps=1e-6):  # noqa: F811
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    dgamma = np.sum((dout * x * r).reshape(-1, x.shape[-1]), axis=0)
    dxhat = dout * gamma
    return r * dxhat - x * r**2 * np.mean(dxhat * x, axis=-1, keepdims=True), dgamma
