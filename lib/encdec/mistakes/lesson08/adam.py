"""Exercise 8.2, adam_update: the mistakes of one Adam step."""

import numpy as np

from .. import mistake


# -- Exercise 8.2 adam_update ------------------------------------------------------------------------------
@mistake("adam_update", "no_bias_correction",
         "m and v are used without bias correction. Both start at 0, so in the first steps they are "
         "far too small (m_1 = (1 - beta1) g); divide by 1 - beta1^t and 1 - beta2^t before the update.")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad**2
    return param - lr * m / (np.sqrt(v) + eps), m, v


@mistake("adam_update", "eps_inside_sqrt",
         "eps is added inside the square root, sqrt(v_hat + eps). Adam adds it outside: "
         "m_hat / (sqrt(v_hat) + eps). The two differ when gradients are tiny.")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad**2
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return param - lr * m_hat / np.sqrt(v_hat + eps), m, v


@mistake("adam_update", "no_sqrt",
         "the update divides by v_hat instead of sqrt(v_hat). v averages squared gradients; its "
         "square root has the gradient's units, which is what makes the step size about lr whatever "
         "the gradient's scale.")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad**2
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return param - lr * m_hat / (v_hat + eps), m, v


@mistake("adam_update", "v_not_squared",
         "v averages the gradient, not its square: v = beta2 v + (1 - beta2) g^2. Without the square, "
         "v can be negative and its square root is nan.")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return param - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


@mistake("adam_update", "betas_swapped_in_average",
         "the running average weights are swapped: m = (1 - beta1) m + beta1 g forgets the past "
         "almost at once. beta is the weight of the old average: m = beta1 m + (1 - beta1) g.")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    m = (1 - beta1) * m + beta1 * grad
    v = (1 - beta2) * v + beta2 * grad**2
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return param - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


@mistake("adam_update", "returns_corrected_moments",
         "the bias-corrected m_hat and v_hat are returned as the new state. The corrections only "
         "scale this step's update; the running averages to keep are the uncorrected m and v "
         "(otherwise the correction is applied again, and again, on every later step).")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad**2
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return param - lr * m_hat / (np.sqrt(v_hat) + eps), m_hat, v_hat


@mistake("adam_update", "gradient_ascent",
         "the step goes up the gradient (param + lr * ...). To lower the loss move against it: "
         "param - lr * m_hat / (sqrt(v_hat) + eps).")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad**2
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    return param + lr * m_hat / (np.sqrt(v_hat) + eps), m, v


@mistake("adam_update", "correction_with_t_plus_one",
         "the bias correction uses t + 1 (as if t counted from 0). Here t is the number of the "
         "step being taken, starting at 1: divide by 1 - beta1^t and 1 - beta2^t.")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad**2
    m_hat, v_hat = m / (1 - beta1 ** (t + 1)), v / (1 - beta2 ** (t + 1))
    return param - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("adam_update", "v_not_corrected",
         "only m is bias-corrected: v̂ = v / (1 - beta2^t) is missing, so early steps are far too large "
         "(v starts at 0 and is tiny for many steps). Correct both moments.")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    m = beta1 * m + (1.0 - beta1) * grad
    v = beta2 * v + (1.0 - beta2) * grad * grad
    return param - lr * (m / (1.0 - beta1**t)) / (np.sqrt(v) + eps), m, v


@mistake("adam_update", "raw_gradient_in_the_step",
         "the step uses the gradient itself, lr * g / (sqrt(v̂) + eps), not the running average m̂: that "
         "is RMSprop, without Adam's momentum. The step is lr * m̂ / (sqrt(v̂) + eps).")
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):  # noqa: F811
    m = beta1 * m + (1.0 - beta1) * grad
    v = beta2 * v + (1.0 - beta2) * grad * grad
    return param - lr * grad / (np.sqrt(v / (1.0 - beta2**t)) + eps), m, v
