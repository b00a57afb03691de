"""Exercise 2.2, gelu: the mistakes of the tanh-form GELU."""

import math

import numpy as np

from .. import mistake

_erf = np.vectorize(math.erf, otypes=[np.float64])


# -- Exercise 2.2 gelu ---------------------------------------------------------------------------------
@mistake("gelu", "relu",
         "this is ReLU (max(0, x)). GELU is smooth and lets small negative inputs through a little: "
         "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).")
def gelu(x):
    return np.maximum(0.0, x)


@mistake("gelu", "sigmoid_gelu",
         "this is the sigmoid approximation x * sigmoid(1.702 x). The course uses the tanh form: "
         "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).")
def gelu(x):  # noqa: F811
    return x / (1.0 + np.exp(-1.702 * x))


@mistake("gelu", "erf_gelu",
         "this is the exact GELU, x * Phi(x) with the error function, not the tanh form the exercise asks "
         "for (the form of GPT-2 and of the course's models). The two differ by up to 5e-4, far more than the "
         "test's tolerance: write 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).")
def gelu(x):  # noqa: F811
    return 0.5 * x * (1.0 + _erf(np.asarray(x, dtype=np.float64) / np.sqrt(2.0)))


@mistake("gelu", "cube_as_square",
         "the correction term is 0.044715 x^2; it is 0.044715 x^3 (cubed, so it keeps the sign of x).")
def gelu(x):  # noqa: F811
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**2)))


@mistake("gelu", "no_sqrt_2_over_pi",
         "the factor sqrt(2/pi) inside the tanh is missing: tanh(sqrt(2/pi) (x + 0.044715 x^3)).")
def gelu(x):  # noqa: F811
    return 0.5 * x * (1.0 + np.tanh(x + 0.044715 * x**3))


@mistake("gelu", "cdf_only",
         "this returns only the gate 0.5 (1 + tanh(...)), a number between 0 and 1. GELU multiplies "
         "the input by it: 0.5 x (1 + tanh(...)).")
def gelu(x):  # noqa: F811
    return 0.5 * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


@mistake("gelu", "minus_cubic_term",
         "the cubic term is subtracted: the tanh form reads tanh(sqrt(2/pi) (x + 0.044715 x^3)), with a plus.")
def gelu(x):  # noqa: F811
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x - 0.044715 * x ** 3)))


@mistake("gelu", "no_half",
         "the factor 0.5 is missing: GELU is 0.5 x (1 + tanh(...)), x times a number between 0 and 1. "
         "Without it, large positive inputs come out doubled.")
def gelu(x):  # noqa: F811
    return x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))
