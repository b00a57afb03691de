# %% [markdown]
# # Lesson 1 — Attention from scratch
#
# *Encoder–Decoder Transformers, from NumPy to GPU · Lesson 1 of 10*
#
# ![The course map: the whole encoder–decoder transformer drawn bottom to top, with this lesson's part, scaled dot-product attention inside the three attention boxes (encoder self-attention, decoder masked self-attention, cross-attention) and the sinusoidal position encodings, outlined in red and the rest faded](../figures/course_map_01.svg)
#
# *The course map. In red: the three attention boxes, each built on the scaled dot-product attention you write today, and the sinusoidal position encodings. The [figure key](../FIGURE_KEY.md) explains the shapes.*
#
# Every later lesson — the encoder, the causal decoder, cross-attention, the whole translator — is
# built from the one operation you write today: **scaled dot-product attention**.
#
# **Learning goals.** By the end of this lesson you can
#
# 1. write a numerically stable softmax and say why the naive one fails;
# 2. write scaled dot-product attention for any batch shape, with an additive mask;
# 3. explain, with a measurement, why the scores are divided by $\sqrt{d_k}$;
# 4. build the sinusoidal position encodings that tell attention where each token sits;
# 5. put the steps of attention in order, and say why each one comes where it does.
#
# **How exercises work.** Each exercise gives a formula, a docstring with shapes and a stub
# (`raise NotImplementedError()`). Replace the stub with your code, run the cell, then run the
# test cell below it. The test compares your function with the course's reference on many inputs
# (batched, rectangular, masked, float32, extreme values) and tells you *what* is wrong — often the
# name of the misconception. The number it ends with is your score for that exercise. When your
# work is graded (`make grade`), the same tests run again with extra hidden cases.
# Unless an exercise says otherwise (a cache or a model that a step updates in place), your functions
# return new arrays and leave the NumPy arrays passed to them unchanged: write `x = x - m`, not `x -= m`,
# which would also change the caller's array. The tests check this.
#
# Tags: **[LEARNED]** set by the optimiser and saved with the model; **[CONFIG]** chosen before the run, the
# same for every input; **[STATE]** computed by the program from the inputs, or from the training so far.
# The [figure key](../FIGURE_KEY.md) gives the rule with examples, and what every colour and shape means.
# Appendices: [A — formulas](../APPENDIX_A_formulas.md),
# [B — architecture comparison](../APPENDIX_B_architectures.md), [C — acronyms](../APPENDIX_C_acronyms.md).

# %% [setup] setup
# Run this cell first. It checks your environment and loads what the lesson needs.
from encdec.env import check_environment

check_environment()
import numpy as np
import matplotlib.pyplot as plt
from encdec import plotting
import encdec as ref  # the course's reference implementation, used by the figures

np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 1.1 What attention computes
#
# Attention is a soft dictionary lookup. Each position that *asks* holds a **query** vector; each
# position that can be *looked at* holds a **key** (what it offers to match against) and a **value**
# (what it hands over when it matches). With $m$ queries and $n$ keys/values stacked as rows,
#
# $$Q \in \mathbb{R}^{m \times d_k},\qquad K \in \mathbb{R}^{n \times d_k},\qquad V \in \mathbb{R}^{n \times d_v},$$
#
# attention compares every query with every key, turns each row of comparisons into weights
# that sum to 1, and returns the weighted average of the values:
#
# $$\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\Big(\frac{Q K^\top}{\sqrt{d_k}} + M\Big)\, V .$$
#
# The scores $QK^\top$ form an $m \times n$ matrix: row $i$ says how well query $i$ matches each key.
# $M$ is an additive **mask** [STATE], built for the input at hand by a masking rule [CONFIG] such
# as "hide the future" or "hide every pad": $0$ where a key may be seen, $-\infty$ where it is hidden.
# In self-attention $m = n$ (a sequence looks at itself); in the decoder's cross-attention of
# Lesson 4, $m$ target positions look at $n$ source positions and the matrix is rectangular.
# The weights and the output are [STATE]: computed afresh for every input.
#
# Everything in this course works on any number of leading batch dimensions: $Q$ may be
# `(m, d_k)`, `(B, m, d_k)` or `(B, h, m, d_k)`. NumPy's `@` multiplies the last two axes and
# broadcasts the rest, so one implementation serves them all — as long as you transpose only the
# last two axes of $K$.

# %% [markdown]
# **Self-check 1.1 — explain why.** One could also hide keys *after* the softmax, by multiplying the
# weights by 0 where a key is hidden and by 1 elsewhere. Why does attention instead add $-\infty$ to the
# scores *before* the softmax?
#
# <details><summary>Answer</summary>
#
# Multiplying after the softmax zeroes the hidden weights but leaves the others as they were, so the
# row no longer sums to 1. For scores $[1, 2, 3]$ with the last key hidden, the softmax gives
# $[0.090, 0.245, 0.665]$ and the product $[0.090, 0.245, 0]$, which sums to 0.335. Adding $-\infty$
# first makes $e^{-\infty} = 0$ part of the normalisation: the softmax of $[1, 2, -\infty]$ is
# $[0.269, 0.731, 0]$, a proper distribution over the visible keys.
#
# </details>

# %% [markdown]
# ## 1.2 Softmax, stably
#
# $$\operatorname{softmax}(x)_j = \frac{e^{x_j}}{\sum_k e^{x_k}}.$$
#
# Taken literally, this overflows: `np.exp(1000.0)` is `inf`, and `inf / inf` is `nan`. The cure
# is one line of algebra. For any constant $c$,
#
# $$\frac{e^{x_j - c}}{\sum_k e^{x_k - c}} = \frac{e^{-c}\,e^{x_j}}{e^{-c}\sum_k e^{x_k}} = \operatorname{softmax}(x)_j ,$$
#
# so subtract $c = \max_k x_k$: the largest exponent becomes $e^0 = 1$, nothing overflows, and
# the sum is at least 1, so nothing divides by zero. This needs a finite maximum: if every entry of
# a row is $-\infty$ (a query whose keys are all hidden), then $x - \max x$ is $-\infty - (-\infty) =$
# `nan`, and the whole row is `nan`. The course's reference `encdec.softmax` treats that case apart
# and returns a row of zeros. The tests never give your softmax such a row.
#
# The maximum should be taken **along the same axis** as the sum. Any constant cancels
# algebraically, but a row that lies far below a global maximum underflows to all zeros, and $0/0$ is
# `nan`.

# %% [markdown]
# **Self-check 1.2 — explain why.** Every score in a row gets $+100$. What happens to the softmax
# weights of that row? What if every score is doubled instead?
#
# <details><summary>Answer</summary>
#
# Adding 100 changes nothing: it is the constant $c$ of the derivation above, which cancels. Scores
# $[1, 2, 3]$ and $[101, 102, 103]$ both give $[0.090, 0.245, 0.665]$. Doubling is not a shift: it
# spreads the scores further apart and sharpens the distribution, $[2, 4, 6]$ gives
# $[0.016, 0.117, 0.867]$. This is why the *scale* of the scores matters (§1.4) while shifts do not.
#
# </details>

# %% [markdown]
# ### Exercise 1.1 — `softmax(x, axis=-1)`
#
# Write a stable softmax along `axis`. Use `keepdims=True` so the row maxima and sums broadcast
# back against `x`.

# %% [solution] softmax
def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`.

    Inputs:  x — array of any shape (float).
             axis — the axis to normalise over (default: the last).
    Returns: an array of the same shape; entries are >= 0 and sum to 1 along `axis`.
    """
    ### BEGIN SOLUTION
    x = np.asarray(x, dtype=np.float64)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)
    ### END SOLUTION


# %% [test] 1.1

# %% [markdown]
# ## 1.3 Scaled dot-product attention
#
# Now the whole formula. In shapes, with any leading batch dimensions `...`:
#
# | step | computation | shape |
# |---|---|---|
# | scores | $S = Q K^\top / \sqrt{d_k}$ | `(..., m, n)` |
# | mask | $S + M$ ($M$ broadcasts to `(..., m, n)`) | `(..., m, n)` |
# | weights | $A = \operatorname{softmax}(S + M)$ along the **key** axis (the last) | `(..., m, n)`, rows sum to 1 |
# | output | $A V$ | `(..., m, d_v)` |

# %% [markdown]
# **Self-check 1.3 — predict, then run.** A batch of keys `K` has shape `(2, 5, 4)` ($B = 2$, $n = 5$,
# $d_k = 4$) and the queries `Q` have shape `(2, 3, 4)`. What is the shape of `K.T`, and what does
# `Q @ K.T` do? What should the scores' shape be?
#
# <details><summary>Answer</summary>
#
# `K.T` reverses *all* the axes: `(4, 5, 2)`, not `(2, 4, 5)`. `Q @ K.T` then multiplies `(3, 4)` by
# `(5, 2)` and raises a `ValueError`: the inner sizes, 4 and 5, do not match. Had the sizes happened
# to fit, for example with $B = n = d_k$, it would have silently computed nonsense.
# `np.swapaxes(K, -1, -2)` swaps only the last two axes, `(2, 4, 5)`, and the scores come out
# `(2, 3, 5)`: $B \times m \times n$.
#
# </details>

# %%
Q, K = np.zeros((2, 3, 4)), np.zeros((2, 5, 4))
print("K.T:", K.T.shape, "   np.swapaxes(K, -1, -2):", np.swapaxes(K, -1, -2).shape)
try:
    Q @ K.T
except ValueError as err:
    print("Q @ K.T raises ValueError:", str(err).split("(")[-1].rstrip(")"))
print("Q @ np.swapaxes(K, -1, -2):", (Q @ np.swapaxes(K, -1, -2)).shape)

# %% [markdown]
# Three details trip people up:
#
# * **Transpose only the last two axes of $K$.** For a batched `K` of shape `(B, n, d_k)`,
#   `K.T` reverses *all* axes. Use `np.swapaxes(K, -1, -2)`.
# * **The mask goes in before the softmax.** $e^{-\infty} = 0$ is what gives a hidden key exactly
#   zero weight while the visible keys still sum to 1.
# * **Return both** the output and the weights, in that order. Later lessons draw the weights.
#
# ### Exercise 1.2 — `scaled_dot_product_attention(Q, K, V, mask=None)`
#
# Use your `softmax` from Exercise 1.1. (While this exercise is checked, the test swaps in the
# reference softmax, so a mistake in Exercise 1.1 is never charged twice.)

# %% [solution] scaled_dot_product_attention
def scaled_dot_product_attention(Q, K, V, mask=None):
    """softmax(Q K^T / sqrt(d_k) + mask) V.

    Inputs:  Q    (..., m, d_k) queries
             K    (..., n, d_k) keys
             V    (..., n, d_v) values
             mask additive, broadcastable to (..., m, n): 0 = visible, -inf = hidden; or None
    Returns: (output (..., m, d_v), weights (..., m, n)); each row of weights sums to 1.
    """
    ### BEGIN SOLUTION
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)  # (..., m, n)
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, axis=-1)  # over the keys
    return weights @ V, weights
    ### END SOLUTION


# %% [test] 1.2

# %% [markdown]
# Try it on a tiny example: 3 queries, 5 keys, and a mask that hides the last two keys. Every row of
# weights sums to 1 and the hidden columns are exactly 0.

# %%
rng = np.random.default_rng(0)
Q, K, V = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
mask = np.array([0.0, 0.0, 0.0, -np.inf, -np.inf])
out, weights = ref.scaled_dot_product_attention(Q, K, V, mask)
print("weights (3 queries x 5 keys):\n", weights)
print("row sums:", weights.sum(axis=-1))

# %% [markdown]
# ## 1.4 Why divide by $\sqrt{d_k}$?
#
# Take a query and a key whose $2d_k$ components are all independent, each with mean 0 and
# variance 1. Their dot product $q \cdot k = \sum_{i=1}^{d_k} q_i k_i$ is a sum of $d_k$ independent
# terms of variance 1, so
#
# $$\operatorname{Var}(q \cdot k) = d_k, \qquad \operatorname{std}(q \cdot k) = \sqrt{d_k}.$$
#
# Scores therefore spread wider as $d_k$ grows, and a softmax of widely spread scores **saturates**:
# almost all weight lands on one key, the others get almost none, and the gradient through the
# softmax (which is $p_j(\delta_{jk} - p_k)$, tiny when every $p$ is near 0 or 1) nearly vanishes.
# Dividing by $\sqrt{d_k}$ brings the standard deviation back to 1 whatever the width. The figure
# measures it: the same dot products, unscaled (left) and scaled (right), for three widths.
# (The figures use the reference `encdec`, so they work before your exercises pass.)

# %% [markdown]
# **Self-check 1.4 — predict, then run.** The cell below draws 4000 pairs of random vectors for
# $d_k = 4$, $64$ and $512$. Predict the standard deviation of their dot products, which the legends
# print, before and after dividing by $\sqrt{d_k}$.
#
# <details><summary>Answer</summary>
#
# Unscaled, about $\sqrt{d_k}$: $2$, $8$ and $22.6$ (the legends show 2.0, 7.9 and 22.7, estimates from
# 4000 samples). Scaled, about 1 (0.99, 0.98 and 1.00). The variance of a sum of $d_k$ independent terms
# of variance 1 is $d_k$, and dividing by $\sqrt{d_k}$ divides the variance by $d_k$.
#
# </details>

# %% [demo]
rng = np.random.default_rng(1)
unscaled, scaled = {}, {}
for d_k in (4, 64, 512):
    q, k = rng.normal(size=(4000, d_k)), rng.normal(size=(4000, d_k))
    dots = np.sum(q * k, axis=-1)
    unscaled[f"d_k = {d_k} (std {dots.std():.1f})"] = dots
    scaled[f"d_k = {d_k} (std {(dots / np.sqrt(d_k)).std():.2f})"] = dots / np.sqrt(d_k)
fig, (left, right) = plotting.figure(1, 2, width=5.0)
plotting.histograms(unscaled, ax=left, title=r"unscaled $q \cdot k$", xlabel="score")
plotting.histograms(scaled, ax=right, title=r"scaled $q \cdot k / \sqrt{d_k}$", xlabel="score")
plt.show()

# %% [markdown]
# Now watch the softmax saturate. The slider sets $d_k$; one query is scored against eight keys, and
# the bars show the resulting weights without scaling (left) and with it (right). The largest weight
# is drawn in red. Without scaling, the largest weight tends towards 1 as $d_k$ grows. For this draw it
# is above 0.99 from $d_k = 128$ on, while with scaling it never exceeds 0.5. The climb is not smooth,
# because each $d_k$ draws new vectors. Averaged over many draws, the largest unscaled weight is about
# 0.75 at $d_k = 16$ and 0.94 at $d_k = 256$; the scaled one stays between 0.30 and 0.36.

# %% [demo]
import ipywidgets as widgets


def show_saturation(d_k=16):
    r = np.random.default_rng(7)  # a fixed seed: the same draw each time, new vectors for each d_k
    q, keys = r.normal(size=d_k), r.normal(size=(8, d_k))
    raw = keys @ q
    fig, (left, right) = plotting.figure(1, 2, width=4.0, height=2.8)
    for ax, scores, name in ((left, raw, "unscaled"), (right, raw / np.sqrt(d_k), "scaled")):
        w = ref.softmax(scores)
        plotting.bars(w, labels=[f"k{j}" for j in range(8)], ax=ax, highlight=int(np.argmax(w)),
                      title=f"{name}: max weight {w.max():.2f}")
        ax.set_ylim(0, 1)
    plt.show()


widgets.interact(show_saturation, d_k=widgets.SelectionSlider(
    options=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], value=16, description="d_k"));

# %% [markdown]
# **Measured in a trained model.** The argument above is about random vectors. The course's ablation ladder
# (Lesson 10, §10.15; `make ablations` trains it, and the results are shipped with the course, so this cell
# only reads them) trains the whole model of Lessons 6–9 on their reversal task, 300 steps, three seeds per
# row, with one piece removed at a time. Without the
# division by $\sqrt{d_k}$ (here $d_k = 16$: scores 4 times too widely spread), every seed ends far below
# the full model, and the held-out loss stays above the full model's along the whole run: the model learns,
# more slowly. What the row does not show: it is one small task at one width; it does not measure larger
# $d_k$, where the unscaled scores spread wider still.

# %% [demo]
from encdec.plotting.ablations import ablation_curves, table_rows

shipped = {r["name"]: r for r in table_rows()}  # encdec/data/ablations.json, written by `make ablations`
for name in ("full model", "no 1/sqrt(d_k)"):
    r = shipped[name]
    print(f"{name:>14}: exact match {r['exact_match']:.1%} (seeds {r['exact_match_min']:.1%} to "
          f"{r['exact_match_max']:.1%}), held-out loss {r['final_loss']:.3f}")
ablation_curves(rows=["full model", "no 1/sqrt(d_k)"])
plt.show()

# %% [markdown]
# ## 1.5 Where is each token? Sinusoidal positions
#
# Attention without a mask has no notion of order. Shuffle the rows of $Q$, $K$ and $V$ together and
# the outputs are shuffled the same way, nothing more: a bag of words. Order must be *added to the
# inputs*. The original transformer adds a fixed pattern to each token's embedding, a vector of sines
# and cosines at geometrically spaced frequencies. The formula is [CONFIG]; the $n$ rows computed from it
# for a sentence of length $n$ are [STATE], like the mask arrays:
#
# $$PE_{pos,\,2i} = \sin\!\Big(\frac{pos}{10000^{2i/d}}\Big), \qquad PE_{pos,\,2i+1} = \cos\!\Big(\frac{pos}{10000^{2i/d}}\Big).$$
#
# Columns come in pairs $(2i, 2i+1)$ that share one frequency: a sine and a cosine of the same
# angle. That is what makes $PE_{pos+k}$ a fixed rotation of $PE_{pos}$ (for even $d$): each pair is
# turned by the angle $k/10000^{2i/d}$, whatever $pos$ is, so relative offsets are easy for attention
# to read. Positions start at 0, so $PE_0 = [0, 1, 0, 1, \dots]$.
# When $d$ is odd the last column is a sine without its cosine partner.
#
# ### Exercise 1.3 — `sinusoidal_positions(n, d)`

# %% [solution] sinusoidal_positions
def sinusoidal_positions(n, d):
    """Fixed sinusoidal position encodings.

    Inputs:  n — number of positions (0, 1, ..., n-1); d — width of each encoding.
    Returns: PE of shape (n, d): PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(same angle).
             If d is odd, the last column d - 1 is a sine with no cosine partner:
             PE[pos, d-1] = sin(pos / 10000^((d-1)/d)).
    """
    ### BEGIN SOLUTION
    pos = np.arange(n)[:, None]  # (n, 1)
    two_i = np.arange(0, d, 2)  # (ceil(d/2),)
    angles = pos / np.power(10000.0, two_i / d)  # (n, ceil(d/2))
    pe = np.zeros((n, d))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, : d // 2])
    return pe
    ### END SOLUTION


# %% [test] 1.3

# %% [markdown]
# Left: the encodings for 50 positions of width 64 — fast oscillations in the first columns, slow
# ones in the last. Right: the dot product $PE_{p} \cdot PE_{q}$ against the offset $q - p$, once from
# position $p = 10$ and once from $p = 30$.

# %% [markdown]
# **Self-check 1.5 — predict, then run.** For $d = 64$, what is $PE_p \cdot PE_p$, the value at
# offset 0? Will the two curves, from position 10 and from position 30, differ where they overlap?
#
# <details><summary>Answer</summary>
#
# Each (sin, cos) pair contributes $\sin^2 + \cos^2 = 1$, so $PE_p \cdot PE_p = d/2 = 32$ for every $p$.
# The curves coincide exactly where they overlap (they differ by less than $10^{-13}$): pair by pair,
# $\sin a \sin b + \cos a \cos b = \cos(a - b)$, so $PE_p \cdot PE_q = \sum_i \cos\big((p - q)/10000^{2i/d}\big)$
# depends only on the offset.
#
# </details>

# %% [demo]
pe = ref.sinusoidal_positions(50, 64)
fig, (left, right) = plotting.figure(1, 2, width=4.6)
plotting.matrix(pe, ax=left, title="PE (50 positions x 64)", xlabel="column", ylabel="position")
plotting.curves({f"from position {p}": (np.arange(50) - p, pe @ pe[p]) for p in (10, 30)}, ax=right,
                xlabel="offset q - p", ylabel=r"$PE_p \cdot PE_q$", title="similarity depends on distance")
plt.show()

# %% [markdown]
# The dot product depends only on the distance $|p - q|$. It is largest ($d/2 = 32$) at distance 0 and
# drops quickly over the first few positions, then levels off with ripples. It is not monotone
# (distance 44 scores 19.1, distance 21 only 17.8), so it tells near from far better than far from
# farther.

# %% [markdown]
# **Measured: the model without positions.** The ladder's row without them: the same model, with nothing
# added to the embeddings. Reversing a sequence is nothing but order, and attention without positions cannot
# tell the order of the source: it reads a bag of letters. Every seed ends at a few percent exact match,
# against the full model's 98.5%. What the row does not show: which kind of positions is best; it compares the sinusoids
# of this section with none at all.

# %% [demo]
from encdec.plotting.ablations import ablation_curves, table_rows

shipped = {r["name"]: r for r in table_rows()}  # encdec/data/ablations.json, written by `make ablations`
for name in ("full model", "no positions"):
    r = shipped[name]
    print(f"{name:>12}: exact match {r['exact_match']:.1%} (seeds {r['exact_match_min']:.1%} to "
          f"{r['exact_match_max']:.1%}), held-out loss {r['final_loss']:.3f}")
ablation_curves(rows=["full model", "no positions"])
plt.show()

# %% [markdown]
# ## 1.6 The steps of attention, in order
#
# ### Exercise 1.4 — order the steps
#
# Here are the steps that take a sentence's tokens to the output of one attention operation,
# shuffled. Put them in the order they happen. (Queries, keys and values are computed from the
# position-aware vectors; take that step as given here. Lesson 2 adds the learned projections that
# do it.)
#
# 1. score every query against every key: Q K^T
# 2. look up each token's embedding vector
# 3. take the weighted sum of the values
# 4. scale the scores by 1/sqrt(d_k) and add the mask
# 5. softmax along the key axis
# 6. add the sinusoidal position encodings
#
# Practise with the widget (it gives instant feedback and grades nothing), then write your answer
# as a list of the step numbers above, in order, in the answer cell: for example `[2, 6, ...]`.

# %% [demo]
from encdec.checks.lesson01 import ATTENTION_ORDER

ATTENTION_ORDER.widget()

# %% [solution] attention_order
attention_order = [...]  # your answer: the step numbers in order
### BEGIN SOLUTION
attention_order = [2, 6, 1, 4, 5, 3]
### END SOLUTION

# %% [test] 1.4

# %% [markdown]
# ## Summary
#
# * Softmax is shift-invariant; subtracting the row maximum makes it safe for any finite logits.
# * Scaled dot-product attention is `softmax(Q K^T / sqrt(d_k) + M) V`: an $m \times n$ weight
#   matrix whose rows sum to 1, applied to the values. Masks are additive and go in before the softmax.
# * Dot products of width $d_k$ have standard deviation $\sqrt{d_k}$; dividing by it keeps the spread
#   of the scores the same at every width, so a large $d_k$ alone no longer saturates the softmax.
# * Attention without a mask ignores order; sinusoidal encodings, pairs of sines and cosines sharing
#   a frequency, add it to the inputs.
#
# **Next — Lesson 2, The encoder stack.** Attention with learned projections $W_q, W_k, W_v$ and
# several heads, RMSNorm, the feed-forward network, and the pre-norm encoder block that turns a
# source sentence into the memory $H_{\text{enc}}$ the decoder will read.
