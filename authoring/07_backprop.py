# %% [markdown]
# # Lesson 7 — Backpropagation
#
# *Encoder–Decoder Transformers, from NumPy to GPU · Lesson 7 of 10*
#
# ![The course map: the whole encoder–decoder transformer drawn bottom to top, with this lesson's part, the cross-entropy loss at the logits and the backward pass that carries the gradients of every learned array back through the model, outlined in red and the rest faded](../figures/course_map_07.svg)
#
# *The course map. In red: the loss at the logits, where the backward pass starts, and the gradients flowing back along every arrow (head, decoder, $H_{\text{enc}}$, encoder, down to the embedding $E$); every [LEARNED] chip is red, because every parameter gets a gradient. The [figure key](../FIGURE_KEY.md) explains the shapes.*
#
# The model of Lesson 6 has tens of thousands of [LEARNED] numbers and no idea what to do with them.
# Training (Lesson 8) nudges every number a little, guided by the gradient of the loss. This lesson computes
# those gradients by hand, one building block at a time, and checks each one twice: against
# finite differences and against PyTorch's automatic differentiation.
#
# **Learning goals.** By the end of this lesson you can
#
# 1. derive the gradient of the softmax cross-entropy, $\partial L / \partial z = \hat p - y$, and
#    average it correctly over the real (non-pad) tokens;
# 2. write a central-difference gradient checker and read its relative error;
# 3. write the backward pass of the softmax without building its Jacobian;
# 4. write the backward passes of scaled dot-product attention and of RMSNorm;
# 5. check any backward pass against finite differences and torch autograd, and recognise a wrong one;
# 6. put the layers in the order backpropagation visits them.
#
# **Recap of Lesson 6.** The forward pass embeds the source ($\sqrt{d}\,E[\text{token}] + PE$), runs
# $N$ encoder blocks and a final RMSNorm to get $H_{\text{enc}}$, then embeds the shifted-right
# targets, runs $N$ decoder blocks that cross-attend to $H_{\text{enc}}$, a final RMSNorm, and the tied
# head $z = h E^\top$: logits of shape $(m, V)$. The NumPy model and its PyTorch twin give the same
# logits on the same weights.
#
# **How exercises work.** Replace each stub with your code, run it, then run the test cell below it:
# the test compares your function with the course's reference on many inputs and names the likely
# misconception when they differ. As in Lesson 1, return new arrays and leave the arrays passed to
# your functions as they were when the function returns (Exercise 7.2 perturbs `x` in place and puts
# each entry back).
#
# Tags: **[LEARNED]** set by the optimiser and saved with the model; **[CONFIG]** chosen before the run, the
# same for every input; **[STATE]** computed by the program from the inputs, or from the training so far.
# The [figure key](../FIGURE_KEY.md) gives the rule with examples, and what every colour and shape means.
# Every gradient in this lesson is [STATE]: the program computes it from the inputs and the current
# weights, and in training it lives for one step.

# %% [setup] setup
# Run this cell first. It checks your environment and loads what the lesson needs.
from encdec.env import check_environment

check_environment()
import numpy as np
import matplotlib.pyplot as plt
from encdec import plotting
import encdec as ref  # the course's reference implementation, used by the figures
from encdec import create_causal_mask, relative_error, rms_norm, scaled_dot_product_attention, softmax

np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 7.1 What a backward pass computes
#
# Training needs, for one scalar loss $L$ and every array $a$ the model holds ([LEARNED]) or computes
# ([STATE]), the gradient $\bar a = \partial L / \partial a$ [STATE]: an array **of the same shape as $a$**,
# entry by entry "how much $L$ moves when this entry moves". Only the [LEARNED] arrays' gradients are kept
# for the optimiser; the others are stepping stones on the way to them.
#
# The chain rule runs backwards through the computation. If a layer computes $y = g(x)$, and we already
# have $\bar y$ (called `dout`, the *upstream* gradient), then
#
# $$\bar x_k = \sum_j \frac{\partial y_j}{\partial x_k}\,\bar y_j, \qquad\text{that is}\qquad \bar x = J^\top \bar y ,$$
#
# with $J$ the Jacobian of $g$. The Jacobian is never built: a softmax over $V = 32000$ words would
# have a billion entries per position. Each backward function applies $J^\top$ directly, from `dout`
# and whatever the forward pass saw, and returns the gradients of its inputs. Two rules cover
# everything below:
#
# * **shapes**: a gradient has the shape of what it is the gradient of;
# * **sharing**: an array used in several places (a gain $\gamma$ applied at every position, the
#   embedding $E$ used three times) receives the **sum** of the gradients from all its uses.
#
# The backward pass goes through the layers in the reverse order of the forward pass, starting from
# the loss. So we start there too.

# %% [markdown]
# ## 7.2 The loss and its gradient: $\hat p - y$
#
# At one position the model outputs logits $z \in \mathbb{R}^V$ and the target is token $t$. The model's
# probabilities are $\hat p = \operatorname{softmax}(z)$, and the cross-entropy loss is the surprise
# at the right answer:
#
# $$\ell = -\log \hat p_t = -z_t + \log \sum_k e^{z_k}.$$
#
# Differentiate with respect to $z_j$: the first term gives $-1$ when $j = t$, the second gives
# $e^{z_j} / \sum_k e^{z_k} = \hat p_j$. With $y$ the one-hot vector of $t$,
#
# $$\frac{\partial \ell}{\partial z} = \hat p - y .$$
#
# It could not be simpler: push up the logit of the right word (its entry $\hat p_t - 1$ is negative),
# push down every other word in proportion to the probability it stole. The entries sum to 0.
#
# **Over a batch.** Targets are padded (Lesson 6), and a pad position is not a prediction. The loss is
# the **mean over the $N$ non-pad positions**, so its gradient is $(\hat p - y)/N$ at every non-pad
# position and exactly 0 at the pads:
#
# $$L = \frac{1}{N} \sum_{i:\ t_i \ne \text{pad}} \ell_i, \qquad \frac{\partial L}{\partial z_i} = \begin{cases} (\hat p_i - y_i)/N & t_i \ne \text{pad} \\ 0 & t_i = \text{pad.} \end{cases}$$
#
# A mean, not a sum, keeps the loss and the step size independent of the batch size and of how much
# padding a batch holds. And compute $\log \hat p$ stably, as in Lesson 1:
# $\log \hat p = z - \max z - \log \sum_k e^{z_k - \max z}$. A batch with no real token at all has
# $N = 0$: its loss is 0 and its gradient is zero.
#
# ### Exercise 7.1 — `softmax_cross_entropy(logits, targets, pad_id=None)`

# %% [solution] softmax_cross_entropy
def softmax_cross_entropy(logits, targets, pad_id=None):
    """Mean cross-entropy over the non-pad positions, and its gradient.

    Inputs:  logits  (..., m, V) float
             targets (..., m) integer ids
             pad_id  positions whose target is pad_id are ignored (None: none are)
    Returns: (loss: float, dlogits (..., m, V)): dlogits = (p_hat - y) / N at the N non-pad
             positions and 0 at the pads. With N = 0: (0.0, zeros).
    """
    ### BEGIN SOLUTION
    z = np.asarray(logits, dtype=np.float64)
    targets = np.asarray(targets)
    V = z.shape[-1]
    keep = np.ones(targets.shape, dtype=bool) if pad_id is None else targets != pad_id  # (..., m)
    N = int(keep.sum())
    if N == 0:
        return 0.0, np.zeros_like(z)
    shifted = z - z.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # (..., m, V)
    y = np.eye(V)[np.where(keep, targets, 0)]  # one-hot (..., m, V); pad rows masked below
    loss = float(-(y * log_p).sum(axis=-1)[keep].sum() / N)
    dlogits = (np.exp(log_p) - y) * keep[..., None] / N
    return loss, dlogits
    ### END SOLUTION


# %% [test] 7.1

# %% [markdown]
# A small padded batch through the reference: logits of shape (1, 3, 5), standard-normal random numbers over
# $V = 5$ tokens, and targets `[4, 2, 0]` with `pad_id = 0`, so the third position is padding.

# %% [markdown]
# **Self-check 7.1 — predict, then run.** Before you run the next cell, predict (a) the third row of
# `dlogits`, (b) what every row of `dlogits` sums to, and (c) whether the loss will be near 0, near
# $\ln 5 \approx 1.61$, or above it.
#
# <details><summary>Answer</summary>
#
# (a) All zeros: a pad position is not a prediction, so it gets no gradient. (b) 0: $\hat p$ and $y$ each
# sum to 1, so $\hat p - y$ sums to 0 (and the pad row is 0 anyway). (c) Slightly above $\ln 5$: the cell
# prints 1.7245. Equal logits would give exactly $\ln V$; random unequal logits are *worse* than uniform on
# average, because $\log \sum_k e^{z_k}$ is convex (Jensen's inequality), so the expected loss is at least
# $\ln V$ (about 1.97 for standard-normal logits and $V = 5$). An untrained model with random logits
# usually starts above $\ln V$.
#
# </details>

# %%
rng = np.random.default_rng(0)
logits = rng.normal(size=(1, 3, 5))
targets = np.array([[4, 2, 0]])  # the last position is padding (pad_id = 0)
loss, dlogits = ref.softmax_cross_entropy(logits, targets, pad_id=0)
print(f"loss {loss:.4f}\ndlogits\n{dlogits[0] + 0.0}\nrow sums {dlogits[0].sum(axis=-1) + 0.0}")

# %% [markdown]
# ## 7.3 Checking a gradient: central differences
#
# How do we know a gradient is right? By measuring it. For a scalar function $f$ of an array $x$, nudge
# one entry by $\pm h$ and watch $f$:
#
# $$\frac{\partial f}{\partial x_i} \approx \frac{f(x + h e_i) - f(x - h e_i)}{2h},$$
#
# with $e_i$ the array that is 1 at entry $i$ and 0 elsewhere. This **central** difference has an error
# that shrinks like $h^2$ (the $h^2$ terms of the two Taylor expansions cancel); the one-sided
# $(f(x + h e_i) - f(x))/h$ only like $h$. But $h$ cannot be tiny: $f$ is known to about
# $10^{-16}$ relative precision, and dividing by $h$ magnifies that rounding error like $10^{-16}/h$. So
# each method has a best $h$, where the two errors balance; the figure after the exercise measures it.
#
# Two arrays are then compared with the **relative error** $\lVert a - b\rVert / (\lVert a\rVert + \lVert b\rVert)$:
# below about $10^{-7}$ the analytic gradient is almost surely right (in float64 with $h = 10^{-5}$ a
# right one usually scores $10^{-10}$ or less), above $10^{-3}$ it is almost surely wrong. It is never
# above 1: exactly 1 means the two point in opposite directions or one of them is all zeros (a numerical
# gradient that perturbed a copy of $x$, say), and two unrelated gradients of similar size score about 0.7.
# (`relative_error` is in `encdec`.)
#
# **Checking a backward pass, not just a loss.** A backward function maps `dout` to $J^\top$ `dout`. Pick
# a random `dout` and define the scalar $f(x) = \sum$ `dout` $\odot\, g(x)$. Its gradient is exactly
# $J^\top$ `dout`, so finite differences of this $f$ check the backward function, whatever the shape of
# $g$'s output.
#
# ### Exercise 7.2 — `numerical_gradient(f, x, h=1e-5)`
#
# `f` takes no arguments: it reads the array `x` itself (a closure), so you must change `x` **in
# place**, one entry at a time, call `f()`, and put the entry back exactly as it was. `np.ndindex(x.shape)`
# yields every index of an array of any shape.

# %% [solution] numerical_gradient
def numerical_gradient(f, x, h=1e-5):
    """Central differences: df/dx_i ~ (f(x + h e_i) - f(x - h e_i)) / (2h), entry by entry.

    Inputs:  f  a function of no arguments returning a scalar; it reads the array x.
             x  float64 array of any shape; perturbed in place and put back exactly.
             h  the step [CONFIG].
    Returns: grad, shaped like x.
    """
    ### BEGIN SOLUTION
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + h
        f_plus = float(f())
        x[i] = old - h
        f_minus = float(f())
        x[i] = old  # restore exactly
        grad[i] = (f_plus - f_minus) / (2 * h)
    return grad
    ### END SOLUTION


# %% [test] 7.2

# %% [markdown]
# How big should $h$ be? The next cell plots the error of both estimates of $f'(1)$ for
# $f(x) = e^x \sin x$, one-sided and central, against $h$ from $10^{-13}$ to $10^{-1}$, on log–log axes.

# %% [markdown]
# **Self-check 7.2 — predict, then run.** For each method, predict roughly at which $h$ its error is
# smallest and how small it gets there, from the truncation error ($\propto h$ one-sided, $\propto h^2$
# central) and the rounding error ($\approx 10^{-16}/h$). Why not take $h = 10^{-12}$ "to be more exact"?
#
# <details><summary>Answer</summary>
#
# The best $h$ balances the two errors. One-sided: $h \approx 10^{-16}/h$ gives $h \approx 10^{-8}$ and an
# error near $10^{-8}$ (measured: $2.2 \cdot 10^{-8}$ at $h = 10^{-8}$). Central: $h^2 \approx 10^{-16}/h$
# gives $h \approx 10^{-5}$ and an error near $10^{-11}$ (measured: $2.9 \cdot 10^{-11}$ at $h = 10^{-5}$, and
# the smallest, $3.9 \cdot 10^{-12}$, at $h \approx 3 \cdot 10^{-6}$). So central differences are about a thousand
# times more accurate at their best $h$. At $h = 10^{-12}$ rounding dominates: the errors are
# $5.7 \cdot 10^{-5}$ (central) and $5.0 \cdot 10^{-4}$ (one-sided), worse than at $h = 10^{-5}$.
#
# </details>

# %% [demo]
f = lambda x: np.exp(x) * np.sin(x)  # noqa: E731
exact = np.exp(1.0) * (np.sin(1.0) + np.cos(1.0))
hs = np.logspace(-13, -1, 49)
one_sided = np.abs((f(1.0 + hs) - f(1.0)) / hs - exact)
central = np.abs((f(1.0 + hs) - f(1.0 - hs)) / (2 * hs) - exact)
fig, ax = plotting.figure(width=5.6, height=3.6)
plotting.curves({"one-sided (f(x+h) - f(x)) / h": (hs, one_sided), "central (f(x+h) - f(x-h)) / 2h": (hs, central),
                 "theory: slope 1": (hs[24:], 2.0 * hs[24:]), "theory: slope 2": (hs[30:], 0.7 * hs[30:] ** 2)},
                ax=ax, logy=True, xlabel="step h", ylabel="|error| of the estimated derivative",
                title="finite differences: truncation vs rounding")
ax.set_xscale("log")
ax.axvline(1e-5, linestyle=plotting.LINES["threshold"], color=plotting.COLORS["reference"])
plt.show()

# %% [markdown]
# Right of each minimum the truncation error dominates and falls like $h$ (one-sided) or $h^2$ (central),
# as the dashed lines of slope 1 and 2 show; left of it the rounding error $\approx 10^{-16}/h$ takes over.
# The central difference at $h = 10^{-5}$ (dotted) is good to about $10^{-11}$.

# %% [markdown]
# Now the gradient checker at work on Exercise 7.1's gradient (the reference's; put your own
# `softmax_cross_entropy` in its place to check yours), and against PyTorch's `cross_entropy`, which
# ignores pad positions with `ignore_index` and averages over the rest, like ours (one difference: for a
# batch with no real token torch returns nan, ours 0).

# %% [demo]
import torch
import torch.nn.functional as F

rng = np.random.default_rng(1)
logits = rng.normal(size=(2, 5, 7))
targets = np.array([[3, 1, 4, 6, 0], [2, 5, 0, 0, 0]])
loss, dlogits = ref.softmax_cross_entropy(logits, targets, pad_id=0)
numeric = ref.numerical_gradient(lambda: ref.softmax_cross_entropy(logits, targets, pad_id=0)[0], logits)
z = torch.tensor(logits, requires_grad=True)
torch_loss = F.cross_entropy(z.reshape(-1, 7), torch.tensor(targets).reshape(-1), ignore_index=0)
torch_loss.backward()
print(f"loss {loss:.6f}, torch {torch_loss.item():.6f}")
print(f"dlogits vs finite differences: relative error {relative_error(dlogits, numeric):.1e}")
print(f"dlogits vs torch autograd:     relative error {relative_error(dlogits, z.grad.numpy()):.1e}")

# %% [markdown]
# ## 7.4 The softmax backward pass
#
# The softmax $p = \operatorname{softmax}(x)$ mixes its inputs: every $p_j$ depends on every $x_k$,
# through the shared denominator. Differentiating $p_j = e^{x_j} / \sum_l e^{x_l}$,
#
# $$\frac{\partial p_j}{\partial x_k} = p_j(\delta_{jk} - p_k), \qquad J = \operatorname{diag}(p) - p\,p^\top .$$
#
# The diagonal $p_j(1 - p_j)$ is positive (raising $x_j$ raises $p_j$); the off-diagonal entries
# $-p_j p_k$ are negative (raising $x_k$ steals probability from everyone else). A backward pass that
# keeps only the diagonal is a classic mistake: it looks plausible and is wrong. $J$ is symmetric, so
#
# $$\bar x = J^\top \bar p = p \odot \bar p - p\,(p^\top \bar p) = p \odot \big(\bar p - \langle \bar p, p\rangle\big),$$
#
# where $\langle \bar p, p \rangle = \sum_j \bar p_j p_j$ is one number per row, taken along the softmax
# axis. No $V \times V$ matrix is ever built. Where the forward softmax gave $p_j = 0$ (a masked key),
# $\bar x_j = 0$: no gradient flows back through a hidden score.
#
# ### Exercise 7.3 — `softmax_backward(dout, probs, axis=-1)`
#
# `probs` is the forward output $p$ (the backward pass needs only $p$, not $x$); `dout` is $\bar p$.

# %% [solution] softmax_backward
def softmax_backward(dout, probs, axis=-1):
    """Backward of p = softmax(x) along `axis`: dx = p * (dout - sum(dout * p)).

    Inputs:  dout  upstream gradient, shaped like probs
             probs the forward output p (any shape)
             axis  the axis the forward softmax normalised
    Returns: dx, shaped like probs.
    """
    ### BEGIN SOLUTION
    inner = np.sum(dout * probs, axis=axis, keepdims=True)  # <dout, p> per row
    return probs * (dout - inner)
    ### END SOLUTION


# %% [test] 7.3

# %% [markdown]
# The Jacobian of a 6-way softmax (red positive, blue negative): the full $\operatorname{diag}(p) - pp^\top$
# on the left, the diagonal-only mistake on the right. Rows are the outputs $p_j$, columns the inputs $x_k$.

# %% [markdown]
# **Self-check 7.3 — predict, then run.** The next cell also prints the row sums and the column sums of
# $J = \operatorname{diag}(p) - pp^\top$, and the row sums of the diagonal-only Jacobian. Predict all three.
#
# <details><summary>Answer</summary>
#
# Every column of $J$ sums to 0: $\sum_j \partial p_j / \partial x_k = \partial (\sum_j p_j) / \partial x_k = 0$,
# because the probabilities sum to 1 whatever the input. Every row sums to 0 too, since $J$ is symmetric;
# read directly, $\sum_k \partial p_j / \partial x_k = p_j (1 - \sum_k p_k) = 0$ says that adding the same
# number to every input changes nothing. The diagonal-only rows sum to $p_j(1 - p_j) > 0$: here 0.249, 0.159,
# 0.106, 0.068, 0.042 and 0.026.
#
# </details>

# %% [demo]
p = ref.softmax(np.array([2.0, 1.0, 0.5, 0.0, -0.5, -1.0]))
J = np.diag(p) - np.outer(p, p)
fig, (left, right) = plotting.figure(1, 2, width=4.8, height=3.4)
plotting.matrix(J, ax=left, title="J = diag(p) - p pᵀ", xlabel="input x_k", ylabel="output p_j", label="dp_j / dx_k")
plotting.matrix(np.diag(np.diag(J)), ax=right, title="diagonal only (wrong)", xlabel="input x_k", ylabel="output p_j",
                label="dp_j / dx_k")
plt.show()
print("row sums of J:   ", J.sum(axis=1).round(12) + 0.0)
print("column sums of J:", J.sum(axis=0).round(12) + 0.0)
print("row sums of the diagonal-only one:", np.diag(J).round(3))

# %% [markdown]
# Every column of the true Jacobian sums to 0, because the probabilities always sum to 1 whatever the input;
# and since $J$ is symmetric, every row does too (adding the same number to every input changes nothing).
# The diagonal-only one breaks both.
#
# Checked twice: against finite differences of $f(x) = \sum \bar p \odot \operatorname{softmax}(x)$ (§7.3),
# and against torch, which back-propagates the same $\bar p$ through `torch.softmax`.

# %% [demo]
rng = np.random.default_rng(2)
x, dout = rng.normal(size=(3, 6)), rng.normal(size=(3, 6))
dx = ref.softmax_backward(dout, ref.softmax(x))
numeric = ref.numerical_gradient(lambda: np.sum(dout * ref.softmax(x)), x)
xt = torch.tensor(x, requires_grad=True)
torch.softmax(xt, dim=-1).backward(torch.tensor(dout))
print(f"softmax_backward vs finite differences: {relative_error(dx, numeric):.1e}")
print(f"softmax_backward vs torch autograd:     {relative_error(dx, xt.grad.numpy()):.1e}")

# %% [markdown]
# ## 7.5 The attention backward pass
#
# Attention (Lesson 1) is three steps, and its backward pass walks them in reverse:
#
# | forward | backward | shape |
# |---|---|---|
# | $S = QK^\top / \sqrt{d_k} + M$ | $\bar Q = \bar S K / \sqrt{d_k}$, $\ \bar K = \bar S^\top Q / \sqrt{d_k}$ | `(..., m, d_k)`, `(..., n, d_k)` |
# | $A = \operatorname{softmax}(S)$ (along keys) | $\bar S = \operatorname{softmax\_backward}(\bar A, A)$ | `(..., m, n)` |
# | $O = A V$ | $\bar A = \bar O V^\top$, $\ \bar V = A^\top \bar O$ | `(..., m, n)`, `(..., n, d_v)` |
#
# Each matrix-product rule comes from one pattern: if $O = AB$, then $\bar A = \bar O B^\top$ and
# $\bar B = A^\top \bar O$. Check it with shapes: when $m$, $n$ and the widths differ, they only fit one way.
# In self-attention $m = n$, so `A @ dout` also has the shape of $V$: there the shapes cannot catch a
# missing transpose, and only the gradient check can. The $1/\sqrt{d_k}$ of the forward pass reappears in
# the backward pass. The mask array $M$ [STATE] (built for each batch by the masking rules [CONFIG]) is added
# to the scores, not computed from $Q$ or $K$ or any [LEARNED] array, so it needs no gradient. Its hidden
# entries have $A = 0$, so their $\bar S$ is 0 and nothing flows into the hidden keys through them. As in
# Lesson 1, transpose only the last two axes (`np.swapaxes(a, -1, -2)`), so the same code serves every
# batch shape.
#
# ### Exercise 7.4 — `attention_backward(dout, Q, K, V, weights)`
#
# `weights` is the $A$ the forward pass returned (masked entries are 0, so the mask itself is not
# needed). Use your `softmax_backward` (while this is checked the test swaps in the reference, so a
# mistake in Exercise 7.3 is not charged twice).

# %% [solution] attention_backward
def attention_backward(dout, Q, K, V, weights):
    """Backward of out = softmax(Q K^T / sqrt(d_k) + mask) V.

    Inputs:  dout    (..., m, d_v) upstream gradient
             Q       (..., m, d_k); K (..., n, d_k); V (..., n, d_v): the forward inputs
             weights (..., m, n) the forward attention weights A
    Returns: (dQ (..., m, d_k), dK (..., n, d_k), dV (..., n, d_v)).
    """
    ### BEGIN SOLUTION
    scale = 1.0 / np.sqrt(Q.shape[-1])
    dV = np.swapaxes(weights, -1, -2) @ dout  # (..., n, d_v)
    dweights = dout @ np.swapaxes(V, -1, -2)  # (..., m, n)
    dscores = softmax_backward(dweights, weights, axis=-1) * scale  # (..., m, n)
    dQ = dscores @ K  # (..., m, d_k)
    dK = np.swapaxes(dscores, -1, -2) @ Q  # (..., n, d_k)
    return dQ, dK, dV
    ### END SOLUTION


# %% [test] 7.4

# %% [markdown]
# The reference attention backward, for a batch of two with a causal mask, against
# finite differences (one input at a time) and against torch autograd:

# %% [demo]
rng = np.random.default_rng(3)
Q, K, V = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 5))
mask = create_causal_mask(4)
out, weights = scaled_dot_product_attention(Q, K, V, mask)
dout = rng.normal(size=out.shape)
grads = ref.attention_backward(dout, Q, K, V, weights)
ts = [torch.tensor(a, requires_grad=True) for a in (Q, K, V)]
scores = ts[0] @ ts[1].transpose(-1, -2) / np.sqrt(3) + torch.tensor(mask)
(torch.softmax(scores, dim=-1) @ ts[2]).backward(torch.tensor(dout))
for name, analytic, arr, t in zip(("dQ", "dK", "dV"), grads, (Q, K, V), ts):
    numeric = ref.numerical_gradient(lambda: np.sum(dout * scaled_dot_product_attention(Q, K, V, mask)[0]), arr)
    print(f"{name}: vs finite differences {relative_error(analytic, numeric):.1e}   "
          f"vs torch autograd {relative_error(analytic, t.grad.numpy()):.1e}")

# %% [markdown]
# ## 7.6 The RMSNorm backward pass
#
# RMSNorm (Lesson 2) scales each row $x \in \mathbb{R}^d$ to unit root-mean-square, then applies the gain
# $\gamma$ [LEARNED]:
#
# $$y = \gamma \odot x\, r, \qquad r = \Big(\tfrac{1}{d}\textstyle\sum_k x_k^2 + \varepsilon\Big)^{-1/2}.$$
#
# Write $\hat g = \bar y \odot \gamma$, the gradient arriving at $x r$. The trap is to treat $r$ as a
# constant: $r$ depends on every $x_k$, with $\partial r / \partial x_k = -r^3 x_k / d$. Both paths
# together give
#
# $$\bar x = r\,\hat g - x\, r^3 \cdot \tfrac{1}{d}\textstyle\sum_k \hat g_k x_k \qquad (\text{the mean of } \hat g \odot x \text{ along the row}),$$
#
# $$\bar\gamma = \sum_{\text{all positions}} \bar y \odot x\, r \qquad (\text{shape } (d,)\text{: one gain shared by every position}).$$
#
# The $\varepsilon$ [CONFIG] is part of $r$: the backward pass uses the same $r$ as the forward pass,
# which matters for rows near zero.
#
# ### Exercise 7.5 — `rms_norm_backward(dout, x, gamma, eps=1e-6)`

# %% [solution] rms_norm_backward
def rms_norm_backward(dout, x, gamma, eps=1e-6):
    """Backward of y = gamma * x / sqrt(mean(x^2) + eps), over the last axis.

    Inputs:  dout (..., d) upstream gradient; x (..., d) the forward input; gamma (d,); eps.
    Returns: (dx (..., d), dgamma (d,)), dgamma summed over every leading axis.
    """
    ### BEGIN SOLUTION
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)  # (..., 1)
    g = dout * gamma  # gradient at the normalised x
    dx = r * g - x * r**3 * np.mean(g * x, axis=-1, keepdims=True)
    dgamma = np.sum((dout * x * r).reshape(-1, x.shape[-1]), axis=0)  # (d,)
    return dx, dgamma
    ### END SOLUTION


# %% [test] 7.5

# %% [markdown]
# Checked against finite differences and against torch's `F.rms_norm`:

# %% [demo]
rng = np.random.default_rng(4)
x, gamma = rng.normal(size=(2, 3, 6)), rng.uniform(0.5, 1.5, size=6)
dout = rng.normal(size=x.shape)
dx, dgamma = ref.rms_norm_backward(dout, x, gamma)
xt, gt = torch.tensor(x, requires_grad=True), torch.tensor(gamma, requires_grad=True)
F.rms_norm(xt, (6,), gt, eps=1e-6).backward(torch.tensor(dout))
for name, analytic, arr, t in (("dx", dx, x, xt), ("dgamma", dgamma, gamma, gt)):
    numeric = ref.numerical_gradient(lambda: np.sum(dout * rms_norm(x, gamma)), arr)
    print(f"{name:>6}: vs finite differences {relative_error(analytic, numeric):.1e}   "
          f"vs torch autograd {relative_error(analytic, t.grad.numpy()):.1e}")

# %% [markdown]
# ## 7.7 What a wrong gradient looks like
#
# The course keeps a catalog of wrong implementations (the ones the tests recognise). In the next cell a
# few of them meet the gradient checker, next to the correct backward passes: the cross-entropy gradient
# on logits of shape (2, 4, 6) with targets `[[1, 2, 3, 0], [4, 5, 0, 0]]` and `pad_id = 0`, the softmax
# backward, the attention backward ($\bar Q$, with $d_k = 4$) and the RMSNorm backward ($\bar x$).
#
# Some mistakes multiply the whole gradient by a wrong factor $c$. Their relative error does not depend on
# the numbers at all: $\lVert c\,a - a\rVert / (\lVert c\,a\rVert + \lVert a\rVert) = |c - 1| / (|c| + 1)$.

# %% [markdown]
# **Self-check 7.4 — predict, then run.** From $|c - 1|/(|c| + 1)$, predict the relative errors of (a) the
# sign-flipped cross-entropy gradient $y - \hat p$, (b) the cross-entropy gradient not divided by $N$,
# (c) the one that divides by all 8 positions, pads included, instead of $N$, and (d) the attention
# backward without the $1/\sqrt{d_k}$.
#
# <details><summary>Answer</summary>
#
# (a) $c = -1$: $2/2 = 1$. (b) The targets hold $N = 5$ real tokens, so $c = 5$: $4/6 \approx 0.67$.
# (c) $c = 5/8$: $(3/8)/(13/8) = 3/13 \approx 0.23$. (d) $\bar Q$ is $\sqrt{d_k} = 2$ times too large, $c = 2$:
# $1/3$. The cell prints 1.0, 0.67, 0.23 and 0.33, and these do not change with the random seed. The
# diagonal-only softmax and the RMSNorm with $r$ held constant are not a single factor, so the formula says
# nothing about them; they still land far above $10^{-3}$.
#
# </details>

# %% [demo]
import encdec.checks.lesson07  # registers this lesson's catalogued mistakes in the catalog
from encdec.mistakes import CATALOG

rng = np.random.default_rng(5)
z, t = rng.normal(size=(2, 4, 6)), np.array([[1, 2, 3, 0], [4, 5, 0, 0]])
x, dout6 = rng.normal(size=(3, 6)), rng.normal(size=(3, 6))
xr, gamma, doutr = rng.normal(size=(3, 6)), rng.uniform(0.5, 1.5, size=6), rng.normal(size=(3, 6))
Qa, Ka, Va = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
douta = rng.normal(size=(3, 2))
_, Wa = scaled_dot_product_attention(Qa, Ka, Va)


def xent_error(fn):
    return relative_error(fn(z, t, 0)[1], ref.numerical_gradient(lambda: ref.softmax_cross_entropy(z, t, 0)[0], z))


def softmax_error(fn):
    return relative_error(fn(dout6, ref.softmax(x)), ref.numerical_gradient(lambda: np.sum(dout6 * ref.softmax(x)), x))


def attention_error(fn):
    numeric = ref.numerical_gradient(lambda: np.sum(douta * scaled_dot_product_attention(Qa, Ka, Va)[0]), Qa)
    return relative_error(fn(douta, Qa, Ka, Va, Wa)[0], numeric)


def rms_error(fn):
    return relative_error(fn(doutr, xr, gamma)[0], ref.numerical_gradient(lambda: np.sum(doutr * rms_norm(xr, gamma)), xr))


def wrong(exercise, key):
    return CATALOG.find(exercise, key).impl


rows = {
    "cross-entropy": xent_error(ref.softmax_cross_entropy),
    "  sign flipped (y - p)": xent_error(wrong("softmax_cross_entropy", "sign_flipped")),
    "  not divided by N": xent_error(wrong("softmax_cross_entropy", "gradient_not_divided")),
    "  pads counted in N": xent_error(wrong("softmax_cross_entropy", "pads_in_denominator")),
    "softmax": softmax_error(ref.softmax_backward),
    "  diagonal only": softmax_error(wrong("softmax_backward", "diagonal_only")),
    "attention (dQ)": attention_error(ref.attention_backward),
    "  no 1/sqrt(d_k)": attention_error(wrong("attention_backward", "no_scale")),
    "RMSNorm (dx)": rms_error(ref.rms_norm_backward),
    "  rms as a constant": rms_error(wrong("rms_norm_backward", "rms_treated_as_constant")),
}
errors = np.array(list(rows.values()))
fig, ax = plotting.figure(width=8.0, height=3.6)
plotting.bars(errors, labels=[k.strip() for k in rows], ax=ax, role="reference", ylabel="relative error",
              highlight=[i for i, k in enumerate(rows) if k.startswith("  ")],
              title="gradient check: correct backward passes (grey) and catalogued mistakes (red)")
ax.set_yscale("log")
plotting.threshold(ax, 1e-7, label="1e-7: right below")
ax.tick_params(axis="x", rotation=35)
ax.legend(frameon=False, fontsize=8)
plt.show()
for k, e in rows.items():
    print(f"{k:<26} {e:.1e}")

# %% [markdown]
# The correct backward passes score between $10^{-12}$ and $10^{-10}$, far below the dotted line at
# $10^{-7}$; every catalogued mistake lands above $10^{-3}$ (the smallest here, 0.11). A flipped sign gives
# exactly 1 and a wrong factor $c$ gives $|c - 1|/(|c| + 1)$, so a relative error is a clue to the kind of
# mistake, not only to its presence.

# %% [markdown]
# ## 7.8 The whole model
#
# The reference library chains exactly these pieces, plus the backward passes of a linear layer
# ($\bar x = \bar y W^\top$, $\bar W = x^\top \bar y$ summed over positions, $\bar b = \sum \bar y$) and of
# GELU (elementwise), into `encdec.training.backward(model, dlogits, cache)`: a gradient for every array
# of `model.parameters()`. Here it meets torch autograd on the PyTorch twin with the same weights, on a
# batch of the reversal task: every one of the model's arrays, compared. Then finite differences of the loss
# check a few entries of the embedding $E$ [LEARNED], the array used three times.

# %% [markdown]
# **Self-check 7.5 — explain why.** $E$ embeds the source tokens, embeds the target tokens, and is the tied
# head. Why must `backward` add up three shares to get $\partial L / \partial E$? In this batch tokens 3 and
# 11 occur in the source and in the shifted-right target, token 7 in neither: if `backward` kept only the
# head's share, which of the three finite-difference lines printed below would still agree?
#
# <details><summary>Answer</summary>
#
# $L$ depends on $E$ along three paths, and by the chain rule the total derivative is the sum over the paths
# (the "sharing" rule of §7.1); a finite difference always measures the total effect of moving $E[i, j]$.
# The embedding shares reach only the rows of tokens that occur in the batch, so row 7 gets nothing but the
# head's share: the `dL/dE[7,5]` line would still agree. The other two would not: the head's share alone is
# 0.03906 for `dL/dE[3,0]` (total 0.03939) and +0.04036 for `dL/dE[11,15]`, whose total, −0.04997, even has the
# other sign.
#
# </details>

# %% [demo]
from encdec import torch_model
from encdec.toy import BOS, PAD, ReverseTask
from encdec.training import backward, forward_with_cache

task = ReverseTask(n_letters=10, min_len=3, max_len=6)
src, tgt = task.batch(rng=0, size=4)
tgt_in = ref.shift_right(tgt, BOS)
model = ref.Seq2Seq(vocab_size=task.vocab_size, d_model=16, n_heads=2, d_ff=32,
                    n_encoder_layers=2, n_decoder_layers=2, pad_id=PAD, rng=0)
logits, cache = forward_with_cache(model, src, tgt_in)
loss, dlogits = ref.softmax_cross_entropy(logits, tgt, pad_id=PAD)
grads = backward(model, dlogits, cache)

twin = torch_model.from_numpy(model)
twin_logits = twin(torch.from_numpy(src), torch.from_numpy(tgt_in))
F.cross_entropy(twin_logits.reshape(-1, task.vocab_size), torch.from_numpy(tgt).reshape(-1), ignore_index=PAD).backward()
errors = {name: relative_error(grads[name], p.grad.numpy()) for name, p in twin.named_parameters()}
worst = max(errors, key=errors.get)
print(f"{len(errors)} arrays, {model.num_parameters():,} numbers; loss {loss:.4f}")
print(f"largest relative error against torch autograd: {errors[worst]:.1e} ({worst})")

# finite differences on a few entries of E, the array used three times
E = model.embedding
entries = [(3, 0), (7, 5), (11, 15)]
for i, j in entries:
    old = E[i, j]
    E[i, j] = old + 1e-5
    up = ref.softmax_cross_entropy(model(src, tgt_in), tgt, pad_id=PAD)[0]
    E[i, j] = old - 1e-5
    down = ref.softmax_cross_entropy(model(src, tgt_in), tgt, pad_id=PAD)[0]
    E[i, j] = old
    print(f"dL/dE[{i},{j}]: backward {grads['embedding'][i, j]: .8f}   finite difference {(up - down) / 2e-5: .8f}")

# %% [markdown]
# ## 7.9 The order of the backward pass
#
# ### Exercise 7.6 — order the steps
#
# Here are the steps of one backward pass through the whole encoder–decoder, from the loss to the last
# gradient, shuffled. Put them in the order backpropagation performs them.
#
# 1. through the encoder's final RMSNorm, with dH_enc summed over every decoder block's cross-attention
# 2. through the tied head z = h Eᵀ: dh = dz E, and the head's share of dE
# 3. dE complete: the head's share plus the rows of the source and target tokens (times sqrt(d))
# 4. through the decoder's final RMSNorm
# 5. through the encoder blocks, last block first
# 6. the loss gradient at the logits: dz = (p̂ - y) / N
# 7. through the decoder blocks, last block first (FFN, cross-attention, self-attention in each)
#
# Practise with the widget (instant feedback, grades nothing), then write your answer as a list of the
# step numbers above, in order, in the answer cell.

# %% [demo]
from encdec.checks.lesson07 import BACKPROP_ORDER

BACKPROP_ORDER.widget()

# %% [solution] backprop_order
backprop_order = [...]  # your answer: the step numbers in order
### BEGIN SOLUTION
backprop_order = [6, 2, 4, 7, 1, 5, 3]
### END SOLUTION

# %% [test] 7.6

# %% [markdown]
# ## Summary
#
# * A backward pass maps the upstream gradient to the gradients of the inputs, $\bar x = J^\top \bar y$,
#   without building $J$. Gradients have the shapes of their arrays; shared arrays sum their gradients.
# * Cross-entropy: $\partial \ell / \partial z = \hat p - y$; over a padded batch, $(\hat p - y)/N$ at the
#   $N$ real positions and 0 at the pads.
# * Softmax: $\bar x = p \odot (\bar p - \langle \bar p, p \rangle)$, the full Jacobian, never only its diagonal.
# * Attention: back through $AV$, the softmax and $QK^\top/\sqrt{d_k}$; the scale comes back, and the mask
#   array [STATE], computed from no [LEARNED] array, needs no gradient. In self-attention ($m = n$) the shapes
#   cannot catch a missing transpose; the gradient check can.
# * RMSNorm: $r$ depends on $x$, which adds the second term; $\bar\gamma$ sums over positions.
# * Central differences, one entry at a time, with $h \approx 10^{-5}$, check any backward pass through
#   $f(x) = \sum \bar y \odot g(x)$; a relative error below $10^{-7}$ is almost surely right, above $10^{-3}$
#   almost surely wrong (float64, smooth functions), and its value hints at the kind of mistake.
#   Torch autograd agrees with every backward pass here, and with the whole model's.
# * The backward pass visits the model in the reverse order of the forward pass, from the loss back to the
#   embeddings; $\bar E$ is complete only when all three of its shares are in.
#
# **Next — Lesson 8, Training.** With every gradient in hand: a padding-aware loss with label smoothing,
# the Adam optimiser, a warm-up schedule, and teacher forcing with all positions in one pass. The toy
# reversal model will learn inside the notebook, and its cross-attention will turn into an anti-diagonal.
