"""Exercise 7.2, numerical_gradient: the mistakes of the central-difference gradient."""

import numpy as np

from .. import mistake


# -- Exercise 7.2 numerical_gradient ------------------------------------------------------------------------
@mistake("numerical_gradient", "forward_difference",
         "this is a forward difference (f(x + h) - f(x)) / h, whose error shrinks only like h. Use the "
         "central difference (f(x + h e_i) - f(x - h e_i)) / (2h): its error shrinks like h².")
def numerical_gradient(f, x, h=1e-5):
    grad = np.zeros_like(x)
    f0 = float(f())
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + h
        grad[i] = (float(f()) - f0) / h
        x[i] = old
    return grad


@mistake("numerical_gradient", "divided_by_h",
         "the central difference is divided by h instead of 2h, so every entry is twice too large: the "
         "two evaluations are 2h apart.")
def numerical_gradient(f, x, h=1e-5):  # noqa: F811
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + h
        f_plus = float(f())
        x[i] = old - h
        f_minus = float(f())
        x[i] = old
        grad[i] = (f_plus - f_minus) / h
    return grad


@mistake("numerical_gradient", "not_restored",
         "x[i] is not put back after it is perturbed, so each later entry is measured at a shifted point "
         "and x comes back changed. Save old = x[i] and restore x[i] = old after the two evaluations.")
def numerical_gradient(f, x, h=1e-5):  # noqa: F811
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + h
        f_plus = float(f())
        x[i] = old - h
        f_minus = float(f())
        grad[i] = (f_plus - f_minus) / (2 * h)
    return grad


@mistake("numerical_gradient", "perturbs_a_copy",
         "a copy of x is perturbed, but f reads x itself, so f never sees the change and every entry "
         "is 0. Perturb x in place (x[i] = old + h), call f(), then restore x[i] = old.")
def numerical_gradient(f, x, h=1e-5):  # noqa: F811
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp = x.copy()
        xp[i] += h
        f_plus = float(f())
        xp[i] -= 2 * h
        f_minus = float(f())
        grad[i] = (f_plus - f_minus) / (2 * h)
    return grad


@mistake("numerical_gradient", "all_entries_at_once",
         "all entries of x are moved together, which measures one directional derivative (the sum of "
         "the gradient's entries), not each entry. Perturb one entry at a time, e_i being the i-th unit vector.")
def numerical_gradient(f, x, h=1e-5):  # noqa: F811
    old = x.copy()
    x += h
    f_plus = float(f())
    x[...] = old - h
    f_minus = float(f())
    x[...] = old
    return np.full_like(x, (f_plus - f_minus) / (2 * h))


@mistake("numerical_gradient", "ignores_h",
         "the step h is fixed at 1e-5 instead of using the `h` argument. Use the h the caller passes.")
def numerical_gradient(f, x, h=1e-5):  # noqa: F811
    step = 1e-5
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + step
        f_plus = float(f())
        x[i] = old - step
        f_minus = float(f())
        x[i] = old
        grad[i] = (f_plus - f_minus) / (2 * step)
    return grad


@mistake("numerical_gradient", "passes_x_to_f",
         "f takes no arguments: it reads the array x itself. Change x in place (x[i] = old + h), call "
         "f(), and put x[i] back afterwards.")
def numerical_gradient(f, x, h=1e-5):  # noqa: F811
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        grad[i] = (float(f(xp)) - float(f(xm))) / (2 * h)
    return grad


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("numerical_gradient", "backward_difference",
         "this is the one-sided difference (f(x) - f(x - h)) / h: its error shrinks like h, not h². Use the "
         "central difference (f(x + h) - f(x - h)) / (2h), restoring x afterwards.")
def numerical_gradient(f, x, h=1e-5):  # noqa: F811
    grad = np.zeros_like(x)
    flat, g = x.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        base = float(f())
        flat[i] = old - h
        g[i] = (base - float(f())) / h
        flat[i] = old
    return grad


@mistake("numerical_gradient", "plus_and_minus_swapped",
         "the difference is taken the wrong way round, (f(x - h) - f(x + h)) / (2h): every entry has the "
         "wrong sign. The slope is (f(x + h) - f(x - h)) / (2h).")
def numerical_gradient(f, x, h=1e-5):  # noqa: F811
    grad = np.zeros_like(x)
    flat, g = x.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + h
        plus = float(f())
        flat[i] = old - h
        minus = float(f())
        flat[i] = old
        g[i] = (minus - plus) / (2 * h)
    return grad
