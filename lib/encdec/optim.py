"""Adam, AdamW and the warm-up learning-rate schedules.

Adam keeps two running averages per parameter [STATE]: m (of gradients) and v (of squared
gradients), bias-corrected by 1 - beta^t, and moves each parameter by lr * m_hat / (sqrt(v_hat) + eps).
AdamW adds decoupled weight decay: before the Adam move, each decayed parameter shrinks by
lr * weight_decay * p, the gradient untouched (torch.optim.AdamW's update, step for step).
"""

import numpy as np


def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):
    """One Adam step for one array, in closed form.

    Inputs:  param, grad, m, v arrays of one shape; t the step number, starting at 1.
    Returns: (new_param, new_m, new_v); nothing is modified in place.
    """
    if t < 1:
        raise ValueError(f"Adam's step t starts at 1 (bias correction divides by 1 - beta^t), got {t}")
    for name, arr in (("grad", grad), ("m", m), ("v", v)):
        if np.shape(arr) != np.shape(param):
            raise ValueError(f"{name} of shape {np.shape(arr)} must match param {np.shape(param)}")
    m = beta1 * m + (1.0 - beta1) * grad
    v = beta2 * v + (1.0 - beta2) * grad * grad
    m_hat = m / (1.0 - beta1**t)
    v_hat = v / (1.0 - beta2**t)
    return param - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


class Adam:
    """Adam over a dict of parameter arrays, updated in place (the model sees the new values)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.98), eps=1e-9):
        self.params = params
        self.lr, self.betas, self.eps = lr, betas, eps
        self.t = 0
        self.m = {k: np.zeros_like(p) for k, p in params.items()}
        self.v = {k: np.zeros_like(p) for k, p in params.items()}

    def step(self, grads, lr=None):
        missing = set(self.params) - set(grads)
        if missing:
            raise ValueError(f"no gradient for parameters {sorted(missing)}")
        self.t += 1
        lr = self.lr if lr is None else lr
        for k, p in self.params.items():
            p[...], self.m[k], self.v[k] = self._update(k, p, grads[k], lr)

    def _update(self, name, param, grad, lr):
        return adam_update(param, grad, self.m[name], self.v[name], self.t, lr, *self.betas, self.eps)


def adamw_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=1e-2):
    """One AdamW step for one array: decoupled weight decay, then Adam.

    p <- p - lr * weight_decay * p, then p <- p - lr * m_hat / (sqrt(v_hat) + eps) with Adam's
    m, v and bias correction. The decay never enters m or v (that is what "decoupled" means:
    Adam with an L2 term would add weight_decay * p to the gradient instead).
    Inputs:  param, grad, m, v arrays of one shape; t the step number, starting at 1.
    Returns: (new_param, new_m, new_v); nothing is modified in place.
    """
    decayed = param - lr * weight_decay * param
    return adam_update(decayed, grad, m, v, t, lr, beta1, beta2, eps)


def is_matrix(name, param):
    """The default decay rule (as encdec.capstone.build_optimizer): arrays of 2 or more dimensions
    (projections, FFN matrices, the embedding) are decayed; gains and biases (1-D) are not."""
    return np.ndim(param) >= 2


class AdamW(Adam):
    """AdamW over a dict of parameter arrays, updated in place, equal to torch.optim.AdamW with two
    parameter groups: the arrays for which decay(name, array) is true get `weight_decay`, the
    others none. Defaults are torch's: lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 1e-2."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, decay=is_matrix):
        super().__init__(params, lr, betas, eps)
        self.weight_decay = weight_decay
        self.decayed = {k for k, p in params.items() if decay(k, p)}

    def _update(self, name, param, grad, lr):
        wd = self.weight_decay if name in self.decayed else 0.0
        return adamw_update(param, grad, self.m[name], self.v[name], self.t, lr, *self.betas, self.eps, wd)


def warmup_schedule(step, d_model, warmup_steps, factor=1.0):
    """The 2017 schedule: lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5).

    Rises linearly for `warmup_steps` steps, peaks at step = warmup_steps, then decays as
    1/sqrt(step). Steps count from 1.
    """
    if step < 1 or warmup_steps < 1:
        raise ValueError(f"step and warmup_steps count from 1, got step={step}, warmup_steps={warmup_steps}")
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def warmup_cosine_schedule(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):
    """Linear warm-up to peak_lr over warmup_steps, then cosine decay to min_lr at total_steps."""
    if step < 1:
        raise ValueError(f"step counts from 1, got {step}")
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    progress = min((step - warmup_steps) / max(total_steps - warmup_steps, 1), 1.0)
    return min_lr + 0.5 * (peak_lr - min_lr) * (1.0 + np.cos(np.pi * progress))


def clip_grad_norm(grads, max_norm):
    """Scale all gradients together so their global L2 norm is at most max_norm; returns the norm."""
    norm = float(np.sqrt(sum(np.sum(g * g) for g in grads.values())))
    if norm > max_norm:
        for g in grads.values():
            g *= max_norm / norm
    return norm
