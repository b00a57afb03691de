"""Exercise 2.5, FeedForward.__call__: the mistakes of the feed-forward network (written as methods)."""

import numpy as np

from ...layers import gelu as gelu_
from .. import mistake


# -- Exercise 2.5 FeedForward.__call__ -----------------------------------------------------------------
@mistake("FeedForward", "relu",
         "the hidden layer uses ReLU. This course's feed-forward network uses GELU between the two "
         "linear maps: gelu(x @ W1 + b1) @ W2 + b2.")
def __call__(self, x):
    return np.maximum(0.0, x @ self.W1 + self.b1) @ self.W2 + self.b2


@mistake("FeedForward", "no_activation",
         "there is no activation between the two linear maps, so the whole network collapses to one "
         "linear map x @ (W1 W2) + const. Apply gelu to x @ W1 + b1.")
def __call__(self, x):  # noqa: F811
    return (x @ self.W1 + self.b1) @ self.W2 + self.b2


@mistake("FeedForward", "b1_forgotten",
         "the first bias b1 is missing: the hidden layer is gelu(x @ W1 + b1).")
def __call__(self, x):  # noqa: F811
    return gelu_(x @ self.W1) @ self.W2 + self.b2


@mistake("FeedForward", "b2_forgotten",
         "the second bias b2 is missing: the output is gelu(x @ W1 + b1) @ W2 + b2.")
def __call__(self, x):  # noqa: F811
    return gelu_(x @ self.W1 + self.b1) @ self.W2


@mistake("FeedForward", "activation_on_output",
         "GELU is also applied to the output. The activation sits only between the two linear maps; "
         "the output goes into a residual sum and must be free to take any sign.")
def __call__(self, x):  # noqa: F811
    return gelu_(gelu_(x @ self.W1 + self.b1) @ self.W2 + self.b2)


@mistake("FeedForward", "residual_inside",
         "the network adds its input back, x + ffn(x). The residual belongs to the block (Exercise 2.6), "
         "which adds the feed-forward output to x itself: FeedForward returns gelu(x @ W1 + b1) @ W2 + b2 alone.")
def __call__(self, x):  # noqa: F811
    return x + gelu_(x @ self.W1 + self.b1) @ self.W2 + self.b2


@mistake("FeedForward", "bias_after_activation",
         "b1 is added after the activation, gelu(x @ W1) + b1. The bias shifts the input of the "
         "activation: gelu(x @ W1 + b1).")
def __call__(self, x):  # noqa: F811
    return (gelu_(x @ self.W1) + self.b1) @ self.W2 + self.b2
