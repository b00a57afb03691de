# %% [markdown]
# # Lesson 4 — Cross-attention
#
# *Encoder–Decoder Transformers, from NumPy to GPU · Lesson 4 of 10*
#
# ![The course map: the whole encoder–decoder transformer drawn bottom to top, with this lesson's part, the cross-attention sublayer of every decoder block and the encoder output H_enc that feeds its keys and values, outlined in red and the rest faded](../figures/course_map_04.svg)
#
# *The course map. In red: cross-attention, and the encoder output $H_{\text{enc}}$ that feeds it in every decoder block. The [figure key](../FIGURE_KEY.md) explains the shapes.*
#
# The encoder has read the source sentence; the decoder can read what it has written so far. One
# operation connects the two: **cross-attention**, in which the decoder asks and the encoder answers.
#
# **Learning goals.** By the end of this lesson you can
#
# 1. say where cross-attention's queries, keys and values come from, and why its attention-weight
#    matrix is $m \times n$ (target by source) rather than square;
# 2. write cross-attention with the encoder's padding mask, and say why it needs no causal mask;
# 3. split multi-head attention into `project_kv` (once per source sentence) and `attend` (once per
#    decoding step), and write `attend`;
# 4. compute cross-attention one decoding step at a time, reusing the encoder's keys and values, and
#    measure what that saves;
# 5. read an alignment heatmap and an alignment diagram.
#
# **How exercises work.** As in the earlier lessons: replace each `raise NotImplementedError()` with
# your code, run the cell, then run the test cell below it. The test names the likely misconception
# when something is wrong; its last line is your score. As in Lesson 1, return new arrays and leave
# the arrays passed to your functions unchanged.
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
import encdec as ref  # the course's reference implementation, used by the figures

# From earlier lessons, the course's own versions (so a slip there costs nothing here):
from encdec import softmax, MultiHeadAttention, split_heads, merge_heads, padding_mask

np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## Recap of Lesson 3
#
# The decoder writes the output $y_1, \dots, y_m$ one token at a time. Its first sublayer is masked
# causal self-attention over the target positions: position $i$ may look at positions $j \le i$ and
# nothing later, which is what lets all $m$ positions train in one pass. The decoder block has a
# slot for a second sublayer, between self-attention and the feed-forward network, that reads the
# encoder's memory $H_{\text{enc}}$. Lesson 3 left that slot empty. This lesson fills it.

# %% [markdown]
# ## 4.1 Two sequences, one attention
#
# The decoder holds states $H_{\text{dec}} \in \mathbb{R}^{m \times d}$ for the $m$ target positions
# written so far [STATE]. The encoder has produced $H_{\text{enc}} \in \mathbb{R}^{n \times d}$ for the
# $n$ source positions [STATE]. The two lengths need not be equal: a 6-word English sentence can
# become a 9-word French one.
#
# Cross-attention takes its three inputs from different places:
#
# $$Q = \operatorname{RMSNorm}(H_{\text{dec}};\ \gamma_2)\, W_q, \qquad K = H_{\text{enc}}\, W_k, \qquad V = H_{\text{enc}}\, W_v,$$
#
# with $W_q, W_k, W_v$ [LEARNED], a set of its own, separate from the decoder's self-attention weights.
# In the model the decoder states are normalised first, by the block's own RMSNorm with the gain
# $\gamma_2$ = `norm2_gamma` (the pre-norm block of Lesson 5); $H_{\text{enc}}$ is already normalised,
# by the encoder's final norm. The exercises below start from the normalised states, or from $Q$ itself.
# The **queries come from the decoder** (what am I looking for?), the **keys and values come from the
# encoder** (what does the source offer, and what do I take from it?). The rest is the attention of
# Lesson 1:
#
# $$\operatorname{CrossAttention}(Q, K, V) = \operatorname{softmax}\!\Big(\frac{Q K^\top}{\sqrt{d_k}} + M_{\text{pad}}\Big)\, V .$$
#
# | quantity | shape | comes from |
# |---|---|---|
# | $Q$ | `(m, d_k)` | decoder, one query per target position |
# | $K$, $V$ | `(n, d_k)`, `(n, d_v)` | encoder, one key and value per source position |
# | scores, weights | `(m, n)`: **rectangular** | row $i$: target position $i$ against every source position |
# | output | `(m, d_v)` | one vector per target position |
#
# ![Cross-attention with m = 4 target positions and n = 6 source positions: queries come from the decoder states, normalised by RMSNorm with the gain norm2_gamma, through W_q, keys and values from the encoder output H_enc through W_k and W_v; the weights form a rectangular m by n matrix whose last 2 source columns, padding, are hidden by the source padding mask, and every row sums to 1 over the source](../figures/cross_attention_flow.svg)
#
# *Cross-attention's data flow in one head: $Q$ from the normalised decoder states, $K$ and $V$ from $H_{\text{enc}}$, $m \times n$ weights with the source pads hatched. Merging the heads and $W_o$ come in §4.3.*
#
# Three facts follow from the shapes.
#
# * **The softmax runs over the source axis** (the last). Row $i$ is target position $i$'s distribution
#   over the source and sums to 1. Columns sum to nothing in particular: one source word may be read by
#   several target words, or by almost none (the softmax gives every unmasked key some weight).
# * **There is no causal mask.** A causal mask hides the *future of the sequence being written*, so
#   that training cannot peek at the answer. The source is not being written: it is the input, known
#   in full before the first target word. Hiding part of it would only throw information away. (And
#   "target $i$ sees source $j \le i$" means nothing when the two sequences are in different languages.)
# * **The encoder padding mask stays.** A batch of source sentences of different lengths is padded to
#   a common $n$. Pad positions carry no meaning, so $M_{\text{pad}}$ puts $-\infty$ in their columns,
#   for every target row. It is the same mask the encoder used on its own self-attention (Lesson 2).

# %% [markdown]
# **Self-check 4.1 — explain why.** In training the decoder is fed the whole target at once. Why
# does cross-attention need no causal mask to stop position $t$ from seeing later target words?
#
# <details><summary>Answer</summary>
#
# Its keys and values come only from $H_{\text{enc}}$, which the encoder computes from the source
# alone, so no target token is among them. Its query at position $t$ comes from that position's
# decoder state, which the causal mask of the decoder's self-attention has already limited to the
# target tokens up to $t$. So no path runs from a later target word through cross-attention; a
# causal mask there would only hide parts of the source.
#
# </details>

# %% [markdown]
# ### Exercise 4.1 — `cross_attention(Q, K, V, mask=None)`
#
# Write it for any leading batch dimensions. It is the formula above; what the test checks is that it
# handles $m \neq n$, $d_k \neq n$ and a padding mask that broadcasts from `(..., 1, n)` or
# `(..., 1, 1, n)`. You may use `softmax` (imported in the first cell).

# %% [solution] cross_attention
def cross_attention(Q, K, V, mask=None):
    """Decoder queries attend to encoder keys and values.

    Inputs:  Q    (..., m, d_k) queries from the decoder, one per target position
             K    (..., n, d_k) keys from the encoder, one per source position
             V    (..., n, d_v) values from the encoder
             mask the encoder padding mask, additive, broadcastable to (..., m, n); or None
    Returns: (output (..., m, d_v), weights (..., m, n)); each row of weights sums to 1 over the source.
    """
    ### BEGIN SOLUTION
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)  # (..., m, n): target rows, source columns
    if mask is not None:
        scores = scores + mask  # pad columns become -inf; no causal mask
    weights = softmax(scores, axis=-1)  # over the n source positions
    return weights @ V, weights
    ### END SOLUTION


# %% [test] 4.1

# %% [markdown]
# **Self-check 4.2 — explain why.** A student's `cross_attention` returns weights whose columns sum
# to 1 and whose rows do not. What went wrong, and why is it wrong?
#
# <details><summary>Answer</summary>
#
# The softmax ran over axis $-2$, so each source position spread its weight over the target
# positions. Each target position needs a distribution over the source, so the softmax must run
# along the last axis, and then every row sums to 1. The test names this mistake
# `softmax_over_decoder_axis`.
#
# </details>

# %% [markdown]
# Here is the shape of it: $m = 4$ target positions attend to $n = 6$ source positions. On the right
# the last source position is padding. Its column is hatched (exactly 0), and every row still sums to
# 1: the weight it would have had is shared among the real source tokens.

# %% [markdown]
# **Self-check 4.3 — predict, then run.** Without the mask (left panel), how much weight will the
# `<pad>` column get in each row: none, a trace, or about as much as a real word?
#
# <details><summary>Answer</summary>
#
# About as much as a real word: 0.073, 0.158, 0.016 and 0.288 in rows 0 to 3, and for target 3 that
# is almost the largest weight in its row (0.288 against 0.290). A pad's encoder state is an ordinary
# vector, and attention cannot tell that it means nothing unless the mask hides it.
#
# </details>

# %% [demo]
rng = np.random.default_rng(4)
m, n, d_k = 4, 6, 8
H_dec, H_enc = rng.normal(size=(m, d_k)), rng.normal(size=(n, d_k))
W_q, W_k, W_v = (rng.normal(size=(d_k, d_k)) / np.sqrt(d_k) for _ in range(3))
Q, K, V = H_dec @ W_q, H_enc @ W_k, H_enc @ W_v
pad = np.where(np.arange(n) == n - 1, -np.inf, 0.0)  # source position 5 is padding
_, w_full = ref.cross_attention(Q, K, V)
_, w_pad = ref.cross_attention(Q, K, V, pad)
targets, sources = [f"target {i}" for i in range(m)], [f"source {j}" for j in range(n - 1)] + ["<pad>"]
fig, (left, right) = plotting.figure(1, 2, width=4.6, height=3.0)
plotting.heatmap(w_full, targets, sources, kind="cross", ax=left, annotate=True,
                 title="4 x 6 cross-attention weights", row_label="query (decoder)", col_label="key (encoder)")
plotting.heatmap(w_pad, targets, sources, kind="cross", ax=right, annotate=True,
                 title="with the source padding mask", row_label="", col_label="key (encoder)")
plt.show()
print("row sums, no mask:  ", w_full.sum(axis=-1))
print("row sums, with mask:", w_pad.sum(axis=-1))
print("column sums (no rule):", w_pad.sum(axis=-2))

# %% [markdown]
# ## 4.2 What cross-attention learns: alignment
#
# Nobody tells a translation model which source word goes with which target word. The only signal is
# the loss on the next target token. Yet in trained models some cross-attention heads end up with
# weights that roughly *align* the two sentences: to write a word, look at the words it translates.
# (Other heads spread out or look at neighbouring words, so attention is a soft, imperfect alignment,
# not a word aligner.) Translating "The cat sat" into "Le chat était assis", such a head typically
#
# * looks at "cat" to write "chat": a word-for-word match;
# * looks at "sat" for both "était" and "assis": one English word becomes two French words;
# * looks at "The" to write "Le", and partly at "cat", whose gender decides between *le* and *la*.
#
# This is a soft alignment: a distribution per target word, not a one-to-one table, which is exactly
# what each row of the attention-weight matrix is. To see the mechanism at work without training a
# model, the cell below writes the queries and keys by hand. Each has three meaning directions
# (determiner, *cat*, *sit*); "Le" asks for a determiner and a little of the noun's gender; "était"
# asks mostly for the verb. A trained model learns projections $W_q, W_k$ that produce vectors like
# these, in many more dimensions, from the loss alone. Each row is labelled with the word its
# position writes; that position's own input is the word before it (Lesson 3: position $t$, counting
# from 0, reads `<bos>`, $y_1, \dots, y_t$ and writes $y_{t+1}$).

# %% [demo]
source_words = ["The", "cat", "sat"]
target_words = ["Le", "chat", "était", "assis"]
#                      determiner  cat   sit
K_words = np.array([[1.0, 0.0, 0.0],   # The
                    [0.0, 1.0, 0.0],   # cat
                    [0.0, 0.0, 1.0]])  # sat
Q_words = 4.0 * np.array([[1.0, 0.55, 0.0],   # Le: a determiner, and the noun's gender
                          [0.0, 1.0, 0.0],    # chat
                          [0.0, 0.15, 1.0],   # était: the verb (and a little of its subject)
                          [0.0, 0.0, 1.0]])   # assis
_, alignment = ref.cross_attention(Q_words, K_words, K_words)
fig, (left, right) = plotting.figure(1, 2, width=4.4, height=3.0)
plotting.heatmap(alignment, target_words, source_words, kind="cross", ax=left, annotate=True,
                 title="weights: target rows, source columns", row_label="target (query)", col_label="source (key)")
plotting.alignment(source_words, target_words, alignment, ax=right, title="the same weights as links")
plt.show()

# %% [markdown]
# Move the slider to walk along the target sentence, as the decoder does while writing it. For each
# target word the bars show its distribution over the source words (they sum to 1); the word it
# reads most is drawn in red.

# %% [demo]
import ipywidgets as widgets


def show_target_position(t=0):
    fig, ax = plotting.figure(width=4.2, height=2.6)
    w = alignment[t]
    plotting.bars(w, labels=source_words, ax=ax, role="cross", highlight=int(np.argmax(w)), ylabel="weight",
                  title=f'writing "{target_words[t]}": reads "{source_words[int(np.argmax(w))]}" most')
    ax.set_ylim(0, 1)
    plt.show()


widgets.interact(show_target_position,
                 t=widgets.IntSlider(value=0, min=0, max=len(target_words) - 1, description="target position"));

# %% [markdown]
# **Measured: without cross-attention.** The course's ablation ladder (Lesson 10, §10.15; `make ablations`
# trains it, and the results are shipped with the course, so this cell only reads them) trains the whole
# model of Lessons 6–9 on their reversal task, 300 steps, three seeds per row, with one piece removed at a
# time. Its decoder-only row has no encoder and no
# cross-attention: one stack of 4 causal blocks reads the source, then `<bos>`, then the target, as one
# sequence (the design of the decoder-only models of Appendix B), with fewer parameters (no cross-attention
# weights). On reversal it matches the encoder–decoder: a decoder-only model reads the source too, through
# causal self-attention. What the row does not show: that the two designs are equal in general; the ladder
# has one task, with short inputs, and measures neither long inputs nor other tasks.

# %% [demo]
from encdec.plotting.ablations import ablation_curves, table_rows

shipped = {r["name"]: r for r in table_rows()}  # encdec/data/ablations.json, written by `make ablations`
for name in ("full model", "no cross-attention (decoder-only)"):
    r = shipped[name]
    print(f"{name:>33}: exact match {r['exact_match']:.1%} (seeds {r['exact_match_min']:.1%} to "
          f"{r['exact_match_max']:.1%}), held-out loss {r['final_loss']:.3f}")
ablation_curves(rows=["full model", "no cross-attention (decoder-only)"])
plt.show()

# %% [markdown]
# ## 4.3 Multi-head cross-attention, split in two
#
# In Lesson 2 you wrote `MultiHeadAttention.__call__(query_input, key_value_input=None, mask=None)`.
# With `key_value_input = H_enc` it already is cross-attention: queries from `query_input`, keys and
# values from `key_value_input`, each split into $h$ heads of width $d_k = d_{\text{model}} / h$, and
# the weights of shape `(..., h, m, n)`.
#
# What is new is *when* each part is computed. While a translator writes, the decoder runs once per
# new target word, and every time it asks the same encoder output $H_{\text{enc}}$. Keys and values
# depend only on $H_{\text{enc}}$, so recomputing them at every step repeats identical work. We split
# the call in two:
#
# | method | computes | how often |
# |---|---|---|
# | `project_kv(H_enc)` | $K = H_{\text{enc}} W_k$, $V = H_{\text{enc}} W_v$, split into heads: `(..., h, n, d_k)` each | **once** per source sentence; kept as [STATE] |
# | `attend(query_input, K, V, mask)` | $Q = \text{query\_input}\, W_q$ split into heads; cross-attention per head; heads merged; $\cdot\, W_o$ | once per decoding step |
#
# `__call__` is now just the two halves in a row. The class below inherits `__init__` and the weights
# $W_q, W_k, W_v, W_o$ [LEARNED] from Lesson 2's `MultiHeadAttention`; `project_kv` is written for you.
#
# Shapes inside `attend`. The split and merge of Lesson 2 are imported in the first cell as two
# functions: `split_heads(x, n_heads)`, `(..., T, d_model) -> (..., h, T, d_k)` (reshape, then swap
# the two middle axes), and `merge_heads(x)`, its inverse:
#
# $$\underbrace{\text{query\_input}}_{(\dots,\,m,\,d_{\text{model}})} \xrightarrow{\;W_q,\ \text{split}\;} \underbrace{Q}_{(\dots,\,h,\,m,\,d_k)} \xrightarrow{\;\text{cross\_attention}(Q, K, V, \text{mask})\;} \underbrace{\text{heads}}_{(\dots,\,h,\,m,\,d_k)} \xrightarrow{\;\text{merge},\ W_o\;} \underbrace{\text{output}}_{(\dots,\,m,\,d_{\text{model}})}$$
#
# The padding mask from `padding_mask(src_tokens, pad_id)` has shape `(..., 1, 1, n)`: it broadcasts
# over the heads and over the $m$ query rows, so one mask serves every head and every target position.
#
# ### Exercise 4.2 — `CrossAttention.attend(query_input, K, V, mask=None)`
#
# Write the body of `attend`. You may call your `cross_attention` from Exercise 4.1 on the per-head
# arrays (while this exercise is checked the reference `cross_attention` takes its place, so a slip in
# Exercise 4.1 is not charged twice). Do not project `query_input` into keys or values: $K$ and $V$ arrive
# ready-made from the encoder side.

# %% [solution] CrossAttention
class CrossAttention(MultiHeadAttention):
    """Multi-head attention in cross mode, split in two halves so the encoder side is computed once.

    Inherits from MultiHeadAttention: W_q, W_k, W_v, W_o (d_model, d_model) [LEARNED], used as x @ W;
    n_heads, d_model, d_k = d_model // n_heads [CONFIG].
    """

    def project_kv(self, key_value_input):
        """Keys and values of the encoder output, split into heads. Done once per source sentence.

        Inputs:  key_value_input (..., n, d_model), normally H_enc.
        Returns: K, V, each (..., h, n, d_k) [STATE].
        """
        K = split_heads(key_value_input @ self.W_k, self.n_heads)  # (..., h, n, d_k)
        V = split_heads(key_value_input @ self.W_v, self.n_heads)  # (..., h, n, d_k)
        return K, V

    def attend(self, query_input, K, V, mask=None):
        """Queries from the decoder attend to keys and values already projected by project_kv.

        Inputs:  query_input (..., m, d_model) decoder states
                 K, V        (..., h, n, d_k) from project_kv(H_enc)
                 mask        the source padding mask, broadcastable to (..., h, m, n), e.g. (..., 1, 1, n)
        Returns: (output (..., m, d_model), weights (..., h, m, n)).
        """
        ### BEGIN SOLUTION
        Q = split_heads(query_input @ self.W_q, self.n_heads)  # (..., h, m, d_k)
        heads, weights = cross_attention(Q, K, V, mask)  # (..., h, m, d_k), (..., h, m, n)
        return merge_heads(heads) @ self.W_o, weights  # (..., m, d_model)
        ### END SOLUTION

    def __call__(self, query_input, key_value_input=None, mask=None):
        """Both halves in a row: cross-attention to key_value_input, or self-attention when it is None."""
        if key_value_input is None:
            key_value_input = query_input
        K, V = self.project_kv(key_value_input)
        return self.attend(query_input, K, V, mask)


# %% [test] 4.2

# %% [markdown]
# Each head has its own $m \times n$ attention-weight matrix. Below, 3 target positions attend to a
# source of 6 positions of which the last two are padding, with 4 heads and random (untrained)
# projections: every head hatches the same two columns, because the one `(1, 1, n)` mask broadcasts
# over all of them.

# %% [markdown]
# **Self-check 4.4 — predict, then run.** What shapes will the cell print for `K`, `V` and the
# weights? Here $m = 3$, $n = 6$ (the two pads included), $h = 4$ and $d_{\text{model}} = 16$.
#
# <details><summary>Answer</summary>
#
# `K, V: (4, 6, 4) (4, 6, 4)` and `weights: (4, 3, 6)`. $K$ and $V$ are $(h, n, d_k)$ with
# $d_k = 16 / 4 = 4$, and the weights are rectangular, $(h, m, n)$. The pads still count in $n$: the
# mask hides them but does not remove them.
#
# </details>

# %% [demo]
mha = ref.MultiHeadAttention(d_model=16, n_heads=4, rng=0)
src_tokens = np.array([5, 9, 7, 3, 0, 0])  # 0 is the pad id
H_enc_demo = np.random.default_rng(1).normal(size=(6, 16))
H_dec_demo = np.random.default_rng(2).normal(size=(3, 16))
K_demo, V_demo = mha.project_kv(H_enc_demo)
_, w_heads = mha.attend(H_dec_demo, K_demo, V_demo, padding_mask(src_tokens, pad_id=0))
print("K, V:", K_demo.shape, V_demo.shape, "  weights:", w_heads.shape)
plotting.head_grid(w_heads, rows=[f"target {i}" for i in range(3)],
                   cols=["s0", "s1", "s2", "s3", "<pad>", "<pad>"], kind="cross",
                   title="cross-attention weights per head: (h, m, n) = (4, 3, 6)")
plt.show()

# %% [markdown]
# ## 4.4 Keys and values once, queries every step
#
# When a model generates, the decoder state of position $t$ exists only after the token it reads, the
# one position $t - 1$ predicted, has been chosen, so the decoder works one position at a time. At step
# $t$ its cross-attention needs the query of the new position only: $q_t = h_t W_q$, a single row. The
# keys and values are the same at every step.
#
# Count the multiply-adds for one cross-attention sublayer over $m$ steps, with width $d$:
#
# | work | once per step | over $m$ steps |
# |---|---|---|
# | $K$ and $V$ recomputed at every step | $2 n d^2$ | $2 m n d^2$ |
# | $K$ and $V$ computed once | — | $2 n d^2$ |
# | the query, the scores, the mix, $W_o$ | $2d^2 + 2nd$ | $m(2d^2 + 2nd)$ |
#
# For a 100-word source, a 100-word translation and $d = 512$, recomputing costs about
# $5.3 \times 10^{9}$ multiply-adds per cross-attention sublayer ($5.24 \times 10^{9}$ for $K$ and $V$,
# plus $6.3 \times 10^{7}$ for the per-step work); computing once, $5.2 \times 10^{7}$ for $K$ and $V$
# plus the same $6.3 \times 10^{7}$, about $1.2 \times 10^{8}$ in all: some 46 times less. Lesson 9 builds the full cache for
# decoding (the decoder's own self-attention keys and values grow by one row per step); the
# cross-attention part of it is what you write now.
#
# ### Exercise 4.3 — `cross_attention_step_by_step(mha, H_enc, H_dec, mask=None)`
#
# Compute cross-attention the way a decoder does while generating: call `mha.project_kv(H_enc)`
# **once**, then `mha.attend` once per decoder position $t$, with that position's state alone,
# `H_dec[..., t:t+1, :]`. Join the steps along the position axis. The result must equal
# `mha(H_dec, H_enc, mask)`, all positions at once. (Here the decoder states are given; in Lesson 9 the
# decoder produces them one at a time.) The test counts the calls, and runs your function on a
# reference `MultiHeadAttention`, which has the same two methods as your class.

# %% [solution] cross_attention_step_by_step
def cross_attention_step_by_step(mha, H_enc, H_dec, mask=None):
    """Cross-attention one decoding step at a time, with the encoder's K and V computed once.

    Inputs:  mha   an attention layer with project_kv and attend (CrossAttention, MultiHeadAttention)
             H_enc (..., n, d_model) encoder output
             H_dec (..., m, d_model) decoder states; row t is the state at decoding step t
             mask  the source padding mask (..., 1, 1, n), the same at every step; or None
    Returns: (output (..., m, d_model), weights (..., h, m, n)), equal to mha(H_dec, H_enc, mask).
    """
    ### BEGIN SOLUTION
    K, V = mha.project_kv(H_enc)  # once: (..., h, n, d_k) each
    outputs, weights = [], []
    for t in range(H_dec.shape[-2]):
        out, w = mha.attend(H_dec[..., t:t + 1, :], K, V, mask)  # (..., 1, d_model), (..., h, 1, n)
        outputs.append(out)
        weights.append(w)
    return np.concatenate(outputs, axis=-2), np.concatenate(weights, axis=-2)
    ### END SOLUTION


# %% [test] 4.3

# %% [markdown]
# Now count and measure it, for one cross-attention sublayer with $n = 128$ source positions and
# $d_{\text{model}} = 128$. Left: the multiply-adds of the table above as the number of decoding steps
# grows. Recomputing grows like $m \cdot 2nd^2$; computing once pays $2nd^2$ a single time and then
# only the small per-step work. Right: the measured time for 32 steps on this machine (best of five
# runs, so that other programs running at the same time disturb it less).

# %% [markdown]
# **Self-check 4.5 — predict, then run.** At $m = 32$ steps, with $n = d = 128$, how many times fewer
# multiply-adds does computing $K$ and $V$ once need: 32 times, about 22 times, or about 2 times?
# Why not exactly 32?
#
# <details><summary>Answer</summary>
#
# About 22 times: the cell prints 21.7x. It is not 32 times, because both versions pay the per-step
# work, $2d^2 + 2nd = 65{,}536$ multiply-adds per step, beside $2nd^2 \approx 4.2$ million for $K$ and
# $V$: $32 \cdot (4{,}194{,}304 + 65{,}536) / (4{,}194{,}304 + 32 \cdot 65{,}536) \approx 21.7$. The
# measured time ratio printed beside it is another matter, as the text below the cell explains.
#
# </details>

# %% [demo]
import time

n_src, d = 128, 128
mha_t = ref.MultiHeadAttention(d_model=d, n_heads=8, rng=0)
r = np.random.default_rng(0)
H_enc_t, H_dec_t = r.normal(size=(n_src, d)), r.normal(size=(32, d))


def decode_time(steps, recompute):
    start = time.perf_counter()
    if not recompute:
        K, V = mha_t.project_kv(H_enc_t)  # once, before the first step
    for t in range(steps):
        if recompute:
            K, V = mha_t.project_kv(H_enc_t)
        mha_t.attend(H_dec_t[t:t + 1], K, V)
    return time.perf_counter() - start


steps = np.arange(1, 33)
per_step = 2 * d * d + 2 * n_src * d  # the query, the scores, the mix, W_o
counts = {"K, V recomputed every step": (steps, steps * (2 * n_src * d * d + per_step)),
          "K, V computed once": (steps, 2 * n_src * d * d + steps * per_step)}
best = {True: np.inf, False: np.inf}
for _ in range(5):
    for recompute in (True, False):
        best[recompute] = min(best[recompute], decode_time(32, recompute))
fig, (left, right) = plotting.figure(1, 2, width=4.4, height=3.0)
plotting.curves(counts, ax=left, logy=True, xlabel="decoding steps m", ylabel="multiply-adds",
                title=f"work, n = d = {d}")
plotting.bars([best[True] * 1e3, best[False] * 1e3], labels=["recomputed\nevery step", "computed\nonce"],
              ax=right, role="cross", highlight=0, ylabel="time (ms)", title="measured, m = 32 steps")
plt.show()
print(f"multiply-adds at m = 32: {counts['K, V recomputed every step'][1][-1] / counts['K, V computed once'][1][-1]:.1f}x "
      f"fewer when K and V are computed once; measured time: {best[True] / best[False]:.1f}x less")

# %% [markdown]
# The measured ratio is not the count, and it changes from machine to machine and from run to run.
# Both versions pay the fixed cost of their Python and NumPy calls at every step, which pulls the
# ratio below the count; on a busy machine the large projections of the recomputing version can slow
# down more than the small per-step products, which pushes it above. The count is what holds on
# every machine; the timing confirms that computing $K$ and $V$ once is faster.

# %% [markdown]
# ## 4.5 Where Q, K and V come from, in order
#
# ### Exercise 4.4 — order the steps
#
# These are the steps that take a source sentence to the cross-attention output of one decoding step
# $t$, in a decoder that computes the encoder's keys and values once. They are shuffled; put them in
# the order they happen.
#
# 1. score q_t against every key, add the source padding mask, softmax over the source positions
# 2. before the first decoding step, project H_enc into keys K = H_enc W_k and values V = H_enc W_v, and keep them for every step
# 3. mix the values with those weights, project with W_o, add the result to the decoder's residual stream
# 4. the encoder reads the whole source sentence and returns H_enc
# 5. at decoding step t, project the decoder's current state into a query q_t = h_t W_q
#
# Practise with the widget (instant feedback, no grade), then write your answer as a list of the step
# numbers above, in order, in the answer cell.

# %% [demo]
from encdec.checks.lesson04 import QKV_ORDER

QKV_ORDER.widget()

# %% [solution] qkv_order
qkv_order = [...]  # your answer: the step numbers in order
### BEGIN SOLUTION
qkv_order = [4, 2, 5, 1, 3]
### END SOLUTION

# %% [test] 4.4

# %% [markdown]
# ## Summary
#
# * Cross-attention is attention with its inputs taken from two sequences:
#   $Q = \operatorname{RMSNorm}(H_{\text{dec}}) W_q$, $K = H_{\text{enc}} W_k$, $V = H_{\text{enc}} W_v$.
#   Its attention weights are $m \times n$, target rows by source columns, and each row sums to 1 over
#   the source.
# * It uses the encoder's padding mask and no causal mask: the source is input, known in full.
# * Trained on translation alone, some of its heads learn a soft, approximate alignment between the
#   two sentences.
# * $K$ and $V$ depend only on $H_{\text{enc}}$: `project_kv` computes them once per source sentence,
#   and `attend` reuses them at every decoding step, which turns $m$ projections of the source into one.
#
# **Next — Lesson 5, Block ordering.** The standard decoder block puts three sublayers in order:
# masked self-attention, the cross-attention of this lesson, and the feed-forward network, each
# wrapped in RMSNorm and a residual. You will write the block and its 2017 post-norm variant, and
# measure what changes when the order, the mask or the place of the norm changes.
