# %% [markdown]
# # Lesson 2 — The encoder stack
#
# *Encoder–Decoder Transformers, from NumPy to GPU · Lesson 2 of 10*
#
# ![The course map: the whole encoder–decoder transformer drawn bottom to top, with this lesson's part, the encoder block (multi-head self-attention, the feed-forward network, its two RMSNorm gains and the padding-mask rule), and the encoder's final RMSNorm, outlined in red and the rest faded](../figures/course_map_02.svg)
#
# *The course map. In red: the encoder block, repeated N_enc times: multi-head self-attention with the padding mask, the feed-forward network and their two RMSNorms; and the final RMSNorm that produces $H_{\text{enc}}$. The [figure key](../FIGURE_KEY.md) explains the shapes.*
#
# The encoder is the reader. It takes the source sentence, lets every token look at every other
# token, and hands the decoder one contextual vector per source token: the memory
# $H_{\text{enc}}$. Today you build it, piece by piece, from the attention you wrote in Lesson 1.
#
# **Learning goals.** By the end of this lesson you can
#
# 1. normalise with RMSNorm and say how it differs from LayerNorm;
# 2. write the tanh form of GELU, the activation of the feed-forward network;
# 3. build a padding mask so that no token ever attends to padding;
# 4. write multi-head attention: project, split into heads, attend, merge, project again, for
#    self-attention and for cross-attention;
# 5. write the feed-forward network and the pre-norm encoder block;
# 6. read per-head attention heatmaps, and show by experiment that the encoder is bidirectional
#    and blind to padding.
#
# **Recap of Lesson 1.** Attention is $\operatorname{softmax}(QK^\top/\sqrt{d_k} + M)\,V$: every
# query scores every key, the scores are scaled by $1/\sqrt{d_k}$ so that a large $d_k$ alone does not
# saturate the softmax, an additive mask ($0$ visible, $-\infty$ hidden) removes keys before the
# softmax, and the weights mix the values. Attention without a mask ignores order, so sinusoidal
# position encodings are added to the token embeddings.
# The course's versions of `softmax` and `scaled_dot_product_attention` (Lesson 1's exercises) are
# imported below, so this lesson runs even if Lesson 1 is unfinished.
#
# Tags: **[LEARNED]** set by the optimiser and saved with the model; **[CONFIG]** chosen before the run, the
# same for every input; **[STATE]** computed by the program from the inputs, or from the training so far.
# The [figure key](../FIGURE_KEY.md) gives the rule with examples, and what every colour and shape means.

# %% [setup] setup
# Run this cell first. It checks your environment and loads what the lesson needs.
from encdec.env import check_environment

check_environment()
import numpy as np
import matplotlib.pyplot as plt
from encdec import plotting
from encdec import softmax, scaled_dot_product_attention  # Lesson 1's exercises, ready to use
import encdec as ref  # the course's reference implementation, used by the figures

np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 2.1 What the encoder computes
#
# A source sentence of $n$ tokens becomes $n$ vectors of width $d_{\text{model}}$ [CONFIG]: each
# token's embedding plus its position encoding. The encoder is a stack of $N_{\text{enc}}$ [CONFIG]
# **blocks** of identical structure, each with its own [LEARNED] weights. Each block has two
# **sublayers**, and each sublayer is *pre-norm* with a *residual*: it reads a normalised copy of the
# block's running vector $X$ and adds its result back:
#
# $$H = X + \operatorname{MHA}\big(\operatorname{RMSNorm}(X)\big), \qquad X' = H + \operatorname{FFN}\big(\operatorname{RMSNorm}(H)\big).$$
#
# * **Multi-head self-attention** (MHA) is where tokens exchange information. In the encoder it is
#   **bidirectional**: token $i$ may look at every token, before and after it. Only padding is hidden.
# * The **feed-forward network** (FFN) then transforms each position on its own.
# * The **residual** $X + \dots$ keeps an identity path through the whole stack: the gradient reaches
#   the first block directly, added to what the sublayers contribute rather than multiplied through
#   them, so it does not vanish with depth. The **norm** keeps each sublayer's input at a steady scale.
#
# After the last block one more RMSNorm gives the memory $H_{\text{enc}} \in \mathbb{R}^{n \times d_{\text{model}}}$
# [STATE]: computed once per source sentence, read by every decoder block (Lesson 4).
#
# | piece | input | output |
# |---|---|---|
# | `rms_norm` | `(..., n, d_model)` | `(..., n, d_model)` |
# | `MultiHeadAttention` | `(..., n, d_model)` | `(..., n, d_model)` and weights `(..., h, n, n)` |
# | `FeedForward` | `(..., n, d_model)` | `(..., n, d_model)` via `(..., n, d_ff)` |
# | `EncoderBlock` | `(..., n, d_model)` and a padding mask `(..., 1, 1, n)` | `(..., n, d_model)` |
#
# Every piece keeps the shape `(..., n, d_model)`: that is what lets blocks stack, and residuals add.

# %% [markdown]
# ## 2.2 RMSNorm
#
# Deep stacks need the vectors entering each sublayer to stay at a predictable scale. **LayerNorm**
# (2016) centres each vector and divides by its standard deviation, then applies a gain and a bias.
# **RMSNorm** (2019) keeps only the rescaling, which its authors argue is the part of LayerNorm that
# matters: it divides by the vector's root mean square, with no centring and no bias:
#
# $$\operatorname{RMSNorm}(x) = \frac{x}{\sqrt{\tfrac{1}{d}\sum_{i=1}^{d} x_i^2 + \varepsilon}} \odot \gamma .$$
#
# The statistic is taken over the **last axis** only: each token's vector is normalised on its own.
# $\gamma \in \mathbb{R}^{d}$ is a gain [LEARNED], initialised to 1. $\varepsilon$ [CONFIG] (here
# $10^{-6}$) keeps the division safe when a vector is all near zero; it goes *inside* the square root.
# T5 and Llama use RMSNorm; so does this course.
#
# ### Exercise 2.1 — `rms_norm(x, gamma, eps=1e-6)`

# %% [solution] rms_norm
def rms_norm(x, gamma, eps=1e-6):
    """RMSNorm over the last axis.

    Inputs:  x     (..., d) vectors to normalise
             gamma (d,) gain [LEARNED]
             eps   small constant inside the square root [CONFIG]
    Returns: (..., d): x / sqrt(mean(x**2 over the last axis) + eps) * gamma
    """
    ### BEGIN SOLUTION
    rms = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)  # (..., 1)
    return x / rms * gamma
    ### END SOLUTION


# %% [test] 2.1

# %% [markdown]
# **LayerNorm vs RMSNorm, side by side.**
#
# | | LayerNorm | RMSNorm |
# |---|---|---|
# | formula | $\dfrac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} \odot \gamma + \beta$ | $\dfrac{x}{\sqrt{\overline{x^2} + \varepsilon}} \odot \gamma$ |
# | statistics per vector | mean and variance | mean square |
# | parameters [LEARNED] | $\gamma$ and $\beta$, $2d$ | $\gamma$, $d$ |
# | adding a constant to $x$ | no effect (centring removes it) | changes the output |
# | multiplying $x$ by a positive constant | no effect (up to $\varepsilon$) | no effect (up to $\varepsilon$) |
#
# The cell below checks the last two rows on one vector, with $\gamma = 1$ and $\beta = 0$, and also
# prints each output's mean and root mean square.

# %% [markdown]
# **Self-check 2.1 — predict, then run.** For each norm, predict the four things the cell prints: the
# output's mean (zero or not), its root mean square, and `True` or `False` for "unchanged by x + 3" and
# "unchanged by 10 x".
#
# <details><summary>Answer</summary>
#
# LayerNorm: mean $+0.000$, root mean square $1.000$, `True`, `True`. RMSNorm: a mean that is not 0
# ($+0.039$ for this vector), root mean square $1.000$, **`False`**, `True`. RMSNorm does not centre, so
# a shift changes its output; both norms divide by a statistic that grows in proportion to $x$, so a
# positive rescaling cancels. The root mean square is 1 for both because, with $\gamma = 1$, each output
# is its input divided by (nearly) its own root mean square; for LayerNorm the input is $x - \mu$,
# whose root mean square is the standard deviation.
#
# </details>

# %% [demo]
def layer_norm(x, gamma, beta, eps=1e-6):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * gamma + beta


x = np.random.default_rng(3).normal(size=8) + 0.5
ones, zeros = np.ones(8), np.zeros(8)
for name, f in (("LayerNorm", lambda v: layer_norm(v, ones, zeros)), ("RMSNorm", lambda v: ref.rms_norm(v, ones))):
    y = f(x)
    print(f"{name:9s}: mean {y.mean():+.3f}, root mean square {np.sqrt((y ** 2).mean()):.3f}, "
          f"unchanged by x + 3: {np.allclose(f(x + 3), y)}, unchanged by 10 x: {np.allclose(f(10 * x), y)}")

# %% [markdown]
# Both outputs have root mean square 1; only LayerNorm's also has mean 0. Two limits of the last row:
# a *negative* constant flips the sign of both outputs, and a tiny $x$ is not fully rescaled, because
# $\varepsilon$ then dominates the mean square (for $10^{-4} x$ the RMSNorm output has root mean square
# 0.13, not 1). In published comparisons the two norms reach comparable quality, and RMSNorm is
# cheaper: one statistic instead of two, and no bias.

# %% [markdown]
# ## 2.3 GELU
#
# The feed-forward network needs a nonlinearity between its two linear maps. ReLU, $\max(0, x)$,
# cuts every negative input to 0 and has a kink at 0. **GELU** weights each input by how likely a
# standard normal variable is to fall below it: $\operatorname{GELU}(x) = x\,\Phi(x)$. It is smooth,
# close to ReLU far from 0, and lets small negative inputs through a little (its minimum is about
# $-0.17$, near $x = -0.75$). GPT-2 and this course use its tanh approximation (BERT's code has used
# both forms):
#
# $$\operatorname{GELU}(x) = \tfrac{1}{2}\, x \Big(1 + \tanh\!\Big(\sqrt{2/\pi}\,\big(x + 0.044715\, x^3\big)\Big)\Big).$$
#
# ### Exercise 2.2 — `gelu(x)`
#
# Elementwise, for any shape. Note the cube: $0.044715\,x^3$.

# %% [solution] gelu
def gelu(x):
    """GELU, tanh form, elementwise.

    Inputs:  x of any shape (float).
    Returns: an array of the same shape: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
    """
    ### BEGIN SOLUTION
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))
    ### END SOLUTION


# %% [test] 2.2

# %% [markdown]
# Left: GELU against ReLU. Right: how far the tanh form is from the exact $x\,\Phi(x)$: never more
# than $5 \times 10^{-4}$, which is why the approximation is used freely (and why a checker that
# compares to $10^{-6}$ can tell the two apart).

# %% [demo]
import math

xs = np.linspace(-4, 4, 401)
exact = 0.5 * xs * (1 + np.vectorize(math.erf)(xs / np.sqrt(2)))
fig, (left, right) = plotting.figure(1, 2, width=4.4, height=3.0)
plotting.curves({"ReLU (for reference)": (xs, np.maximum(0, xs)), "GELU (tanh form)": (xs, ref.gelu(xs))}, ax=left,
                xlabel="x", ylabel="activation", title="GELU is a smooth ReLU", colors=[plotting.COLORS["highlight"]])
plotting.curves({"tanh form - exact": (xs, ref.gelu(xs) - exact)}, ax=right, xlabel="x", ylabel="difference",
                title="the tanh approximation's error")
plt.show()

# %% [markdown]
# ## 2.4 Padding, and the mask that hides it
#
# Sentences in a batch have different lengths, but arrays are rectangular. So short sentences are
# **padded** with a special token, `<pad>`, up to the longest one:
#
# ```
# the   cat   sat    on     the    mat
# dogs  bark  <pad>  <pad>  <pad>  <pad>
# ```
#
# A pad is not a word. No real token may draw information from it, so every pad must be **hidden
# as a key**: a column of the scores that gets $-\infty$ before the softmax, and so exactly zero
# weight. The mask depends only on the keys, so it has one entry per key, with two empty axes in
# front of the key axis, one for the heads and one for the queries:
#
# $$M_{b,\,\cdot,\,\cdot,\,j} = \begin{cases} -\infty & \text{token } j \text{ of sentence } b \text{ is a pad} \\ 0 & \text{otherwise} \end{cases} \qquad \text{shape } (B, 1, 1, n).$$
#
# Broadcasting stretches it over the scores `(B, h, m, n)`: every head and every query sees the same
# hidden columns. (Pads still *ask* questions as queries: their rows are computed, then ignored,
# because every later attention, including the decoder's cross-attention (Lesson 4), hides them as
# keys. What must never happen is a real token *looking at* a pad.) The rule, hide every pad, is
# [CONFIG]; the mask array itself is [STATE], built from each batch's tokens.
#
# ### Exercise 2.3 — `padding_mask(tokens, pad_id)`
#
# Use `np.where` to build the 0/-inf values, then add the two axes, e.g. with `[..., None, None, :]`.

# %% [markdown]
# **Self-check 2.2 — explain why.** Why does the mask need the shape $(B, 1, 1, n)$? What would go wrong
# with a mask of shape $(B, n)$ added to scores of shape $(B, h, m, n)$?
#
# <details><summary>Answer</summary>
#
# Broadcasting lines up *trailing* axes, so the batch axis of a $(B, n)$ mask lands on the query axis
# $m$: query $i$ of every sentence gets sentence $i$'s pads. Unless $m = B$ (or one of them is 1), the
# addition raises an error. With $B = 1$ it happens to be right. With $m = B > 1$ it is silently wrong:
# for two sentences of length 2, `[5, <pad>]` and `[7, 8]`, and equal scores, query 1 of the first
# sentence uses the second sentence's mask and puts weight 0.5 on its own pad, and query 0 of the
# second sentence uses the first sentence's mask and loses its real key `8`. (With $m = 1$ and $B > 1$
# there is no error either: the sum silently grows to $(B, h, B, n)$.) The two size-1 axes of
# $(B, 1, 1, n)$ make the mask broadcast over the heads and the queries instead, and keep $B$ on the
# batch axis.
#
# </details>

# %% [solution] padding_mask
def padding_mask(tokens, pad_id):
    """Additive mask that hides the pad tokens as keys.

    Inputs:  tokens (..., n) integer ids; pad_id the id used for padding.
    Returns: (..., 1, 1, n) float mask: -inf where tokens == pad_id, 0.0 elsewhere;
             broadcastable to multi-head scores (..., h, m, n).
    """
    ### BEGIN SOLUTION
    tokens = np.asarray(tokens)
    return np.where(tokens == pad_id, -np.inf, 0.0)[..., None, None, :]
    ### END SOLUTION


# %% [test] 2.3

# %% [markdown]
# ## 2.5 Multi-head attention
#
# One attention operation gives each query one weighted average. But a token may need several
# things at once: the word before it, the verb of its clause, the other mentions of the same
# name. **Multi-head attention** runs $h$ [CONFIG] smaller attentions in parallel, each with its own
# view of the tokens, and combines their results.
#
# **Project.** Learned matrices $W_q, W_k, W_v \in \mathbb{R}^{d_{\text{model}} \times d_{\text{model}}}$
# [LEARNED] turn the inputs into queries, keys and values. In self-attention all three come from the
# same sequence $X$; in cross-attention (Lesson 4) the queries come from $X$ and the keys and values
# from another sequence $Y$:
#
# $$Q = X W_q, \qquad K = Y W_k, \qquad V = Y W_v \qquad (Y = X \text{ for self-attention}).$$
#
# **Split.** Head $k$ ($k = 0, \dots, h - 1$) owns the $d_k = d_{\text{model}} / h$ consecutive columns
# $k \cdot d_k$ to $(k + 1) \cdot d_k - 1$ of $Q$, $K$ and $V$. Arrange them as a head axis:
# `(..., T, d_model)` $\to$ reshape to `(..., T, h, d_k)` $\to$ swap the two axes before the last to
# get `(..., h, T, d_k)`.
#
# **Attend.** Lesson 1's `scaled_dot_product_attention` broadcasts over leading axes, so one call
# attends in every head at once, scaling by $\sqrt{d_k}$ (the width *of a head*). The weights have
# shape `(..., h, m, n)`.
#
# **Merge and project.** Undo the split (swap back to `(..., T, h, d_k)`, reshape to
# `(..., T, d_model)`), which places the heads side by side, then multiply by $W_o$ [LEARNED]. Each head
# only filled its own $d_k$ columns; $W_o$ is what mixes them:
#
# $$\operatorname{MHA}(X, Y) = \big[\,\text{head}_0 \;\big|\; \cdots \;\big|\; \text{head}_{h-1}\,\big]\, W_o, \qquad \text{head}_k = \operatorname{Attention}\big(Q^{(k)}, K^{(k)}, V^{(k)}\big).$$
#
# The figure follows the queries through these steps for $T = 3$ tokens, $d_{\text{model}} = 8$ and
# $h = 2$ heads of width $d_k = 4$: head 0's columns are light, head 1's dark. $K$ and $V$ are split
# the same way.
#
# ![Multi-head split and merge with T = 3 tokens, d_model = 8 and 2 heads of width d_k = 4: Q (3, 8) is reshaped to (3, 2, 4) and its middle axes swapped, giving (2, 3, 4), so head k gets columns k*d_k to (k+1)*d_k - 1 of every token; attention runs in every head at once, giving weights (2, 3, 3); merging swaps back and reshapes to (3, 8), and W_o mixes the heads](../figures/multi_head_split.svg)
#
# *Split, attend, merge: $Q$ `(3, 8)` → `(3, 2, 4)` → `(2, 3, 4)`, attention in both heads at once, then back to `(3, 8)` and $W_o$.*
#
# The same steps in shapes, for any leading axes:
#
# | step | shape (self-attention, $m = n = T$) |
# |---|---|
# | inputs $X$ | `(..., T, d_model)` |
# | $Q, K, V$ | `(..., T, d_model)` each |
# | split heads | `(..., h, T, d_k)` each |
# | weights | `(..., h, T, T)` |
# | heads' outputs | `(..., h, T, d_k)` |
# | merged, then $\cdot W_o$ | `(..., T, d_model)` |
#
# **Why the swap matters.** A bare reshape of `(T, d_model)` to `(h, T, d_k)` is legal NumPy, and
# wrong: it fills head 0 with the first $T \cdot d_k$ numbers of the whole matrix, mixing tokens
# together. The cell below takes the figure's sizes and numbers the entries so that you can follow
# them: token $t$ holds $8t, \dots, 8t + 7$.

# %% [markdown]
# **Self-check 2.3 — predict, then run.** Token $t$ holds the numbers $8t, \dots, 8t + 7$. What will
# head 0 hold after reshape-then-swap, and what after a bare reshape to `(h, T, d_k)`?
#
# <details><summary>Answer</summary>
#
# Reshape-then-swap gives head 0 the rows `[0 1 2 3]`, `[8 9 10 11]`, `[16 17 18 19]`: columns 0–3 of
# every token, the light columns of the figure. The bare reshape gives `[0 1 2 3]`, `[4 5 6 7]`,
# `[8 9 10 11]`: all of token 0 and half of token 1, so head 0's "token 1" row is really the second
# half of token 0, and head 1 gets the rest of token 1 and all of token 2.
#
# </details>

# %%
T, d_model, h = 3, 8, 2  # the figure's sizes: d_k = 4
x = np.arange(T * d_model).reshape(T, d_model)  # token t holds 8t .. 8t+7
right = np.swapaxes(x.reshape(T, h, d_model // h), 0, 1)  # (h, T, d_k)
wrong = x.reshape(h, T, d_model // h)  # legal, but not a split into heads
print("tokens:\n", x)
print("head 0, reshape then swap (columns 0-3 of every token):\n", right[0])
print("head 0, bare reshape (tokens mixed up):\n", wrong[0])

# %% [markdown]
# ### Exercise 2.4 — `MultiHeadAttention.__call__`
#
# The constructor is written for you; write `__call__`. When `key_value_input` is `None`, use
# `query_input` for the keys and values too. Pass `mask` on unchanged: it may be a padding mask
# `(..., 1, 1, n)` or, from Lesson 3 on, a 2-D causal mask `(m, m)` or a decoder mask `(..., 1, m, m)`;
# all of them already broadcast to `(..., h, m, n)`, so do not add axes to it. You may call
# `scaled_dot_product_attention` (Lesson 1). The test builds your class, gives it random weights, and
# compares it with the reference in self and cross mode, batched, masked and in float32.

# %% [solution] multi_head_attention
class MultiHeadAttention:
    """Multi-head attention, for self-attention and cross-attention.

    Attributes: W_q, W_k, W_v, W_o (d_model, d_model) [LEARNED], used as x @ W;
                n_heads, d_model and d_k = d_model // n_heads [CONFIG].
    """

    def __init__(self, d_model, n_heads, rng=None):
        if d_model % n_heads:
            raise ValueError(f"n_heads={n_heads} must divide d_model={d_model}")
        rng = np.random.default_rng(rng)
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        scale = 1.0 / np.sqrt(d_model)
        self.W_q = rng.normal(0.0, scale, size=(d_model, d_model))
        self.W_k = rng.normal(0.0, scale, size=(d_model, d_model))
        self.W_v = rng.normal(0.0, scale, size=(d_model, d_model))
        self.W_o = rng.normal(0.0, scale, size=(d_model, d_model))

    def __call__(self, query_input, key_value_input=None, mask=None):
        """Self-attention (key_value_input=None) or cross-attention.

        Inputs:  query_input     (..., m, d_model)
                 key_value_input (..., n, d_model), or None to use query_input
                 mask            additive, broadcastable to (..., h, m, n), or None
        Returns: (output (..., m, d_model), weights (..., h, m, n))
        """
        ### BEGIN SOLUTION
        if key_value_input is None:
            key_value_input = query_input
        h, d_k = self.n_heads, self.d_k

        def split(x):  # (..., T, d_model) -> (..., h, T, d_k)
            return np.swapaxes(x.reshape(*x.shape[:-1], h, d_k), -2, -3)

        Q = split(query_input @ self.W_q)
        K = split(key_value_input @ self.W_k)
        V = split(key_value_input @ self.W_v)
        heads, weights = scaled_dot_product_attention(Q, K, V, mask)  # (..., h, m, d_k), (..., h, m, n)
        merged = np.swapaxes(heads, -2, -3)  # (..., m, h, d_k)
        merged = merged.reshape(*merged.shape[:-2], self.d_model)  # (..., m, d_model)
        return merged @ self.W_o, weights
        ### END SOLUTION


# %% [test] 2.4

# %% [markdown]
# ## 2.6 What the heads look at
#
# Trained heads often take on readable jobs. To see what such heads do, without training, we build
# the weights of a 4-head layer by hand for the sentence `the cat sat on the mat <pad> <pad>`.
# Each token's input vector has a *word part* (a one-hot code of the word) and a *position part*
# (a one-hot code of its position); each head's $W_q$ and $W_k$ read one of the parts:
#
# * **head 0** matches position $p$'s query to the key of position $p - 1$: *look at the previous token*;
# * **head 1** does the same with $p + 1$: *look at the next token*, which only an encoder can do;
# * **head 2** matches word parts: *look at every copy of my own word* (the two `the`s find each other);
# * **head 3** has $W_q = 0$, so all scores are equal: *spread evenly over the sentence*.
#
# Blue heatmaps are encoder self-attention; rows are queries, columns keys; hatched cells are
# masked. The layer is called with the padding mask of the sentence.

# %% [markdown]
# **Self-check 2.4 — predict, then run.** In head 1 ("next token"), what does the row of the query
# `mat` look like, given that its next token is a pad? What does every row of head 3 look like? And
# what will the last line print?
#
# <details><summary>Answer</summary>
#
# The key that `mat` asks for is hidden, and all the other keys score 0 in head 1, so the row is
# uniform: $1/6 \approx 0.167$ on each of the six words and exactly 0 on both pads. Every row of head 3
# is that same row, because all its scores are 0 and only the mask tells the keys apart. The last line
# prints `0.0`: no pad key gets any weight, in any head, from any query.
#
# </details>

# %% [demo]
words = "the cat sat on the mat <pad> <pad>".split()
vocab = ["<pad>", "the", "cat", "sat", "on", "mat"]
tokens = np.array([vocab.index(w) for w in words])  # pad_id = 0
n, d_model, n_heads = len(tokens), 32, 4
d_k = d_model // n_heads  # 8: one feature per word id, or one per position
x = np.zeros((n, d_model))
x[np.arange(n), tokens] = 1.0  # word part: features 0-7
x[np.arange(n), 8 + np.arange(n)] = 1.0  # position part: features 8-15

mha = ref.MultiHeadAttention(d_model, n_heads, rng=0)
mha.W_q[:], mha.W_k[:] = 0.0, 0.0
sharp = 12.0  # how strongly a query prefers its match
for p in range(n):
    mha.W_k[8 + p, [p, d_k + p]] = 1.0  # heads 0 and 1: keys announce their position
    if p >= 1:
        mha.W_q[8 + p, p - 1] = sharp  # head 0: position p asks for p - 1
    if p + 1 < n:
        mha.W_q[8 + p, d_k + p + 1] = sharp  # head 1: position p asks for p + 1
for w in range(len(vocab)):
    mha.W_q[w, 2 * d_k + w], mha.W_k[w, 2 * d_k + w] = sharp, 1.0  # head 2: same word
# head 3: its columns of W_q stay 0, so every score is 0

_, weights = mha(x, mask=ref.padding_mask(tokens, pad_id=0))  # (4, 8, 8)
jobs = ["previous token", "next token", "same word", "everything"]
fig, axes = plotting.figure(2, 2, width=4.4, height=3.8)
for k, ax in enumerate(axes.ravel()):
    plotting.heatmap(weights[k], rows=words, cols=words, kind="encoder", ax=ax, title=f"head {k}: {jobs[k]}")
plt.show()
print("largest weight on a <pad> key, over all heads and queries:", weights[..., tokens == 0].max())

# %% [markdown]
# Note what the mask does: the `<pad>` columns are exactly 0 in every head, and when a head asks for a
# pad (head 1 at `mat`, whose next token is a pad), the softmax has nowhere to put the weight it
# wanted, so it spreads it over the visible keys. A head with no match at all (head 0 at the first
# `the`) does the same.

# %% [markdown]
# **Measured: one head instead of four.** The course's ablation ladder (Lesson 10, §10.15; `make ablations`
# trains it, and the results are shipped with the course, so this cell only reads them) trains the whole
# model of Lessons 6–9 on their reversal task, 300 steps, three seeds per row, with one piece removed at a
# time. Its row with one head keeps $d_{model} = 64$, so the
# single head has $d_k = 64$ instead of four heads of 16. On reversal it matches the full model: each target
# position needs one lookup, the source position $n - 1 - t$, and one head can make it. What the row does not
# show: that several heads never help; the heads above look at different things at once, and the ladder has
# no task that needs several lookups per position.

# %% [demo]
from encdec.plotting.ablations import ablation_curves, table_rows

shipped = {r["name"]: r for r in table_rows()}  # encdec/data/ablations.json, written by `make ablations`
for name in ("full model", "one head"):
    r = shipped[name]
    print(f"{name:>10}: exact match {r['exact_match']:.1%} (seeds {r['exact_match_min']:.1%} to "
          f"{r['exact_match_max']:.1%}), held-out loss {r['final_loss']:.3f}")
ablation_curves(rows=["full model", "one head"])
plt.show()

# %% [markdown]
# ## 2.7 The feed-forward network
#
# Attention moves information *between* positions. The feed-forward network then processes each
# position *on its own*, with the same weights everywhere: widen to $d_{ff}$ [CONFIG] (commonly
# $4\,d_{\text{model}}$), apply GELU, narrow back:
#
# $$\operatorname{FFN}(x) = \operatorname{GELU}(x W_1 + b_1)\, W_2 + b_2, \qquad W_1 \in \mathbb{R}^{d_{\text{model}} \times d_{ff}},\; W_2 \in \mathbb{R}^{d_{ff} \times d_{\text{model}}}.$$
#
# $W_1, b_1, W_2, b_2$ are [LEARNED]. Without the GELU the two maps would collapse into one linear
# map. With $d_{ff} = 4\,d_{\text{model}}$ the FFN holds about two thirds of an encoder block's parameters:
# $2\, d_{\text{model}} d_{ff} = 8\, d_{\text{model}}^2$, against $4\, d_{\text{model}}^2$ for attention (the
# biases and the two norm gains add only $7\, d_{\text{model}}$).
#
# ### Exercise 2.5 — `FeedForward.__call__`
#
# Use your `gelu`. `@` works on any leading axes, so `x` of shape `(..., T, d_model)` needs no reshaping.

# %% [solution] feed_forward
class FeedForward:
    """Position-wise feed-forward network: GELU(x W1 + b1) W2 + b2.

    Attributes: W1 (d_model, d_ff), b1 (d_ff,), W2 (d_ff, d_model), b2 (d_model,) [LEARNED].
    """

    def __init__(self, d_model, d_ff, rng=None):
        rng = np.random.default_rng(rng)
        self.d_model, self.d_ff = d_model, d_ff
        self.W1 = rng.normal(0.0, 1.0 / np.sqrt(d_model), size=(d_model, d_ff))
        self.b1 = np.zeros(d_ff)
        self.W2 = rng.normal(0.0, 1.0 / np.sqrt(d_ff), size=(d_ff, d_model))
        self.b2 = np.zeros(d_model)

    def __call__(self, x):
        """Inputs:  x (..., T, d_model).
        Returns: (..., T, d_model), each position transformed independently.
        """
        ### BEGIN SOLUTION
        hidden = gelu(x @ self.W1 + self.b1)  # (..., T, d_ff)
        return hidden @ self.W2 + self.b2
        ### END SOLUTION


# %% [test] 2.5

# %% [markdown]
# ## 2.8 The pre-norm encoder block
#
# Now the two sublayers go together, each **pre-norm**: the sublayer reads a normalised copy of
# $x$, and its output is added to the *un-normalised* $x$:
#
# $$x \leftarrow x + \operatorname{MHA}\big(\operatorname{RMSNorm}(x;\ \gamma_1),\ \text{mask}\big), \qquad x \leftarrow x + \operatorname{FFN}\big(\operatorname{RMSNorm}(x;\ \gamma_2)\big).$$
#
# The original transformer of 2017 was **post-norm**, $x \leftarrow \operatorname{Norm}(x + \operatorname{Sublayer}(x))$:
# the norm sits on the residual path itself, and deep post-norm stacks need a careful learning-rate
# warm-up to train well (Xiong et al., 2020). Pre-norm leaves the residual path a clean identity from
# the first block to the last, which is why modern models (GPT-2 onwards, T5, Llama) use it.
#
# Two things the encoder block must **not** have: a causal mask (the encoder reads the whole source
# at once, so every token sees every other) and attention to pads (the padding mask is passed to
# the self-attention).
#
# ### Exercise 2.6 — `EncoderBlock.__call__`
#
# Use your `rms_norm`, `self.self_attn` and `self.ffn`. (The test gives your block reference
# sublayers with random weights and uses the reference `rms_norm`, so a mistake in an earlier
# exercise is not charged again here.)

# %% [solution] encoder_block
class EncoderBlock:
    """Pre-norm encoder block: bidirectional self-attention, then the feed-forward network, each
    reading its own RMSNorm of x and added back to x.

    Attributes: self_attn (MultiHeadAttention), ffn (FeedForward),
                norm1_gamma, norm2_gamma (d_model,) [LEARNED].
    """

    def __init__(self, d_model, n_heads, d_ff, rng=None):
        rng = np.random.default_rng(rng)
        self.d_model = d_model
        self.self_attn = MultiHeadAttention(d_model, n_heads, rng)
        self.ffn = FeedForward(d_model, d_ff, rng)
        self.norm1_gamma = np.ones(d_model)
        self.norm2_gamma = np.ones(d_model)

    def __call__(self, x, mask=None):
        """Inputs:  x    (..., n, d_model) the source states
                 mask the source padding mask (..., 1, 1, n), or None
        Returns: (..., n, d_model)
        """
        ### BEGIN SOLUTION
        attn_out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=mask)
        x = x + attn_out
        return x + self.ffn(rms_norm(x, self.norm2_gamma))
        ### END SOLUTION


# %% [test] 2.6

# %% [markdown]
# **Two experiments on a block.** Take a block with random weights and a sentence of 6 words
# followed by 2 pads, with its padding mask. Change one input vector, and measure how far each
# position's output moves: left, change the **last word**; right, change the **last pad**.

# %% [markdown]
# **Self-check 2.5 — predict, then run.** Which of the eight bars will be above 0 when you edit the
# last word, and which when you edit the last pad? Will the *other* pad move in either case?
#
# <details><summary>Answer</summary>
#
# Editing the last word moves all eight bars, the pads included (from 0.15 to 0.41 at the other
# positions, 2.60 at the edited word): every query, a pad's too, may look at every real word. Editing
# the last pad moves only that pad (3.49); the six words and the other pad change by exactly 0.0,
# because no query, not even a pad's, may look at a pad key.
#
# </details>

# %% [demo]
rng = np.random.default_rng(5)
block = ref.EncoderBlock(d_model=16, n_heads=4, d_ff=32, rng=5)
tokens = np.array([7, 3, 9, 4, 8, 5, 0, 0])
x = rng.normal(size=(8, 16))
mask = ref.padding_mask(tokens, pad_id=0)
base = block(x, mask)
fig, axes = plotting.figure(1, 2, width=4.4, height=3.0)
for ax, edited, what in zip(axes, (5, 7), ("the last word", "a pad")):
    x2 = x.copy()
    x2[edited] += rng.normal(size=16)
    moved = np.abs(block(x2, mask) - base).max(axis=-1)
    plotting.bars(moved, labels=["w0", "w1", "w2", "w3", "w4", "w5", "pad", "pad"], ax=ax, role="source",
                  highlight=edited, ylabel="largest change in the output", title=f"edit {what} (red)")
    print(f"edit {what}: changes at the 6 words and 2 pads = {np.round(moved, 2)}")
plt.show()

# %% [markdown]
# * Left, the last word: every position moves, the first one included. Attention in the encoder is
#   bidirectional, so the past reads the future. (In the decoder of Lesson 3 it will not.)
# * Right, a pad: no real word moves, not by a single bit, and neither does the other pad. Only the
#   edited pad's own row does, because its own input changed (its residual, its query, its
#   feed-forward input). The padding mask gave every pad key a weight of exactly 0.

# %% [markdown]
# The whole encoder is $N_{\text{enc}}$ such blocks and a final RMSNorm. With the reference blocks,
# a 2-block encoder over a batch of two padded sentences:

# %%
rng = np.random.default_rng(6)
src = np.array([[7, 3, 9, 4, 0, 0], [5, 5, 8, 2, 6, 1]])  # (B, n), pad_id = 0
x = rng.normal(size=src.shape + (16,))  # stands in for embeddings + positions (Lesson 6)
blocks = [ref.EncoderBlock(16, 4, 32, rng=i) for i in range(2)]
src_mask = ref.padding_mask(src, pad_id=0)  # (B, 1, 1, n), computed once, used by every block
for block in blocks:
    x = block(x, src_mask)
H_enc = ref.rms_norm(x, np.ones(16))  # the final norm
print("H_enc:", H_enc.shape, "  mask:", src_mask.shape)

# %% [markdown]
# ## 2.9 The steps of an encoder block, in order
#
# ### Exercise 2.7 — order the steps
#
# Here are the steps one token's vector goes through inside a pre-norm encoder block, shuffled.
# Put them in the order they happen.
#
# 1. normalise the sum with RMSNorm (norm2_gamma)
# 2. add the feed-forward output back (the second residual) and pass the result on
# 3. multi-head self-attention over the normalised states, with the padding mask
# 4. normalise the block's input x with RMSNorm (norm1_gamma)
# 5. add the attention output back to x (the first residual)
# 6. the feed-forward network, on each position separately
#
# Practise with the widget (instant feedback, no grade), then write your answer as a list of the
# step numbers above, in order, in the answer cell: for example `encoder_block_order = [4, ...]`.

# %% [demo]
from encdec.checks.lesson02 import ENCODER_BLOCK_ORDER

ENCODER_BLOCK_ORDER.widget()

# %% [solution] encoder_block_order
encoder_block_order = [...]  # your answer: the step numbers in order
### BEGIN SOLUTION
encoder_block_order = [4, 3, 5, 1, 6, 2]
### END SOLUTION

# %% [test] 2.7

# %% [markdown]
# ## Summary
#
# * **RMSNorm** divides each vector by its root mean square (over the last axis, $\varepsilon$ inside
#   the root) and multiplies by a learned gain. Unlike LayerNorm it does not centre and has no bias.
# * **GELU** is a smooth ReLU; the course uses its tanh form, $\tfrac12 x(1 + \tanh(\sqrt{2/\pi}(x + 0.044715x^3)))$.
# * A **padding mask** of shape $(B, 1, 1, n)$ puts $-\infty$ on pad *keys*, so no token ever attends
#   to padding: the pad columns get weight exactly 0.
# * **Multi-head attention** projects, splits into $h$ heads of width $d_k = d_{\text{model}}/h$
#   (reshape, then swap axes), attends in every head at once (scaling by $\sqrt{d_k}$), merges, and
#   mixes the heads with $W_o$. `key_value_input` switches it from self- to cross-attention.
# * The **pre-norm encoder block** is $x + \operatorname{MHA}(\operatorname{Norm}(x))$, then
#   $x + \operatorname{FFN}(\operatorname{Norm}(x))$: bidirectional, blind to padding, shape-preserving.
#
# **Next — Lesson 3, The decoder stack.** The writer. Its self-attention is the same multi-head
# attention with one more mask, the causal mask, so each position sees only the tokens written so
# far; you will combine it with the target's padding mask, see the causal property by experiment, and
# turn the decoder's last states into logits with the tied output head.
