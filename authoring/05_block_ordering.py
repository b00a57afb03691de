# %% [markdown]
# # Lesson 5 — Block ordering
#
# *Encoder–Decoder Transformers, from NumPy to GPU · Lesson 5 of 10*
#
# You now have every part of a decoder block: masked self-attention (Lesson 3), cross-attention
# (Lesson 4), the feed-forward network and RMSNorm (Lesson 2). This lesson puts them together, in the
# one order that works, and shows by experiment what goes wrong when the order, the mask or the place
# of the norm is different.
#
# **Learning goals.** By the end of this lesson you can
#
# 1. list, in order, what a token meets inside one decoder block, and say why each step comes where it does;
# 2. write the pre-norm `DecoderBlock.__call__`: self-attention, cross-attention, feed-forward, each
#    with its own norm and a residual;
# 3. write the post-norm variant of 2017 and say what moved;
# 4. count the parameters cross-attention adds to a block, $4d^2 + d$;
# 5. show with a measurement what a wrong order, a missing causal mask and post-norm do.
#
# **How exercises work.** As before: replace each `raise NotImplementedError()` with your code, run
# the cell, then run the test cell below it; the test names the likely misconception and ends with your
# score. Tags: **[LEARNED]** changed by training, **[CONFIG]** chosen before training, **[STATE]**
# computed while the model runs. Figures follow the course's [figure key](../FIGURE_KEY.md).

# %% [setup] setup
# Run this cell first. It checks your environment and loads what the lesson needs.
from encdec.env import check_environment

check_environment()
import numpy as np
import matplotlib.pyplot as plt
from encdec import plotting
import encdec as ref  # the course's reference implementation, used by the figures

# From earlier lessons, the course's own versions (so a slip there costs nothing here):
from encdec import MultiHeadAttention, FeedForward, rms_norm, create_causal_mask, padding_mask

np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## Recap of Lesson 4
#
# Cross-attention takes its queries from the decoder and its keys and values from the encoder output
# $H_{\text{enc}}$. Its weights are $m \times n$, one distribution over the source per target position;
# it uses the source padding mask and no causal mask. Keys and values depend only on $H_{\text{enc}}$,
# so they are computed once per source sentence and reused at every decoding step.

# %% [markdown]
# ## 5.1 What a token meets in one decoder block
#
# Follow one target position through one decoder block. It arrives as a vector in the **residual
# stream**, the running state that every sublayer reads from and adds to. Three sublayers each read a
# normalised copy of the stream and add their result back: masked causal self-attention, cross-attention
# and the position-wise feed-forward network. Then the stream leaves for the next block.
#
# ### Exercise 5.1 — order the steps (1 point)
#
# The five things a token meets in one decoder block, shuffled. Put them in order.
#
# 1. cross-attention: queries from the decoder, keys and values from the encoder output, plus residual add
# 2. the result passes on to the next decoder block
# 3. the decoder hidden states arrive from the previous block (or from the embeddings, in block 1)
# 4. position-wise feed-forward network, plus residual add
# 5. masked causal self-attention over the decoder positions, plus residual add
#
# Practise with the widget (instant feedback, no grade), then write your answer as a list of the step
# numbers above, in order, in the answer cell.

# %% [demo]
from encdec.checks.lesson05 import BLOCK_ORDER

BLOCK_ORDER.widget()

# %% [solution] block_order
### BEGIN SOLUTION
block_order = [3, 5, 1, 4, 2]
### END SOLUTION

# %% [test] test_block_order points=1
# Tests for Exercise 5.1 (1 point).
from encdec.checks.lesson05 import check_block_order

check_block_order(points=1)

# %% [markdown]
# ## 5.2 Why this order
#
# With $X$ the block's input (`(..., m, d_model)`), the pre-norm decoder block computes
#
# $$\begin{aligned}
# H_1 &= X + \operatorname{SelfAttn}\big(\operatorname{RMSNorm}_1(X);\ M_{\text{causal}}\big) && \text{read what has been written}\\
# H_2 &= H_1 + \operatorname{CrossAttn}\big(\operatorname{RMSNorm}_2(H_1),\ H_{\text{enc}};\ M_{\text{pad}}\big) && \text{read the source}\\
# H_3 &= H_2 + \operatorname{FFN}\big(\operatorname{RMSNorm}_3(H_2)\big) && \text{think, position by position}
# \end{aligned}$$
#
# and returns $H_3$, plus the cross-attention weights for plotting.
#
# * **Self-attention comes first.** In block 1 the state of position $t$ is just the embedding of the
#   token written at $t$: it knows nothing of the words around it. Causal self-attention mixes in the
#   target written so far, so the position knows *where it is in the translation* before it asks the
#   source anything.
# * **Cross-attention comes second**, because its query should be that informed state: "having written
#   *Le chat*, which source words matter now?" Put it first, and every query is built from one token
#   alone: the two occurrences of "the" in a sentence would ask the source exactly the same question.
#   Section 5.4 measures it.
# * **The feed-forward network comes last.** It works on each position separately and cannot move
#   information between positions; placed after both attentions, it refines what they gathered from the
#   target and from the source.
# * **Every sublayer is wrapped the same way**:
#   $x \leftarrow x + \operatorname{Sublayer}(\operatorname{RMSNorm}(x))$. Each has its own norm gain,
#   `norm1_gamma`, `norm2_gamma`, `norm3_gamma` [LEARNED]. The residual path $x \to x$ is never
#   normalised, so every block can pass its input through unchanged: a clean identity path from the
#   top of the stack to the bottom.
# * **$H_{\text{enc}}$ is used as it is.** The encoder normalised it once, at its end; every decoder block
#   reads the same $H_{\text{enc}}$. `norm2_gamma` normalises the decoder side only, the input of the queries.
#
# The masks arrive as arguments, built for each batch by a [CONFIG] rule: `self_attn_mask`, the
# causal mask plus target padding, broadcastable to `(..., h, m, m)`; `cross_attn_mask`, the source
# padding mask `(..., 1, 1, n)`.

# %% [markdown]
# ## 5.3 The pre-norm decoder block
#
# ### Exercise 5.2 — `DecoderBlock.__call__` (4 points)
#
# Write the three sublayers of the block, in order, as in the equations above. The sublayers are
# objects you call: `self.self_attn(query_input, key_value_input=None, mask=None)` and
# `self.cross_attn(...)` return `(output, weights)`; `self.ffn(x)` returns the output. `rms_norm(x, gamma)`
# is imported in the first cell. The test copies random weights and three different random norm gains
# into your block, so that mixing up the norms shows.

# %% [solution] DecoderBlock
class DecoderBlock:
    """Pre-norm decoder block: masked self-attention, cross-attention, feed-forward, each with a residual.

    Attributes: self_attn, cross_attn (MultiHeadAttention) and ffn (FeedForward), whose weights are
    [LEARNED]; norm1_gamma, norm2_gamma, norm3_gamma (d_model,) [LEARNED], one RMSNorm gain per sublayer.
    """

    def __init__(self, d_model, n_heads, d_ff, rng=None):
        rng = np.random.default_rng(rng)
        self.d_model = d_model
        self.self_attn = MultiHeadAttention(d_model, n_heads, rng)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, rng)
        self.ffn = FeedForward(d_model, d_ff, rng)
        self.norm1_gamma = np.ones(d_model)
        self.norm2_gamma = np.ones(d_model)
        self.norm3_gamma = np.ones(d_model)

    def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
        """One decoder block, pre-norm.

        Inputs:  x               (..., m, d_model) decoder states
                 encoder_output  (..., n, d_model) H_enc, used as it is
                 self_attn_mask  causal (plus target padding), broadcastable to (..., h, m, m)
                 cross_attn_mask source padding, broadcastable to (..., h, m, n)
        Returns: (output (..., m, d_model), cross_weights (..., h, m, n)).
        """
        ### BEGIN SOLUTION
        out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
        x = x + out  # H_1
        out, cross_weights = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output, mask=cross_attn_mask)
        x = x + out  # H_2
        x = x + self.ffn(rms_norm(x, self.norm3_gamma))  # H_3
        return x, cross_weights
        ### END SOLUTION


# %% [test] test_DecoderBlock points=4
# Tests for Exercise 5.2, DecoderBlock.__call__ (4 points).
from encdec.checks.lesson05 import check_decoder_block

hidden = False
### BEGIN HIDDEN TESTS
hidden = True
### END HIDDEN TESTS
check_decoder_block(points=4, hidden=hidden)

# %% [markdown]
# ## 5.4 Experiment: the wrong order
#
# Take the target "the cat saw the dog", in which "the" appears twice, and one decoder block with
# random weights. The inputs are the token embeddings alone, without positions, to isolate the effect
# of the order. Left: the correct block. Right: the same weights with cross-attention moved before
# self-attention. The heatmaps show head 0's cross-attention weights, one row per target word.
#
# In the wrong order the two rows for "the" (rows 0 and 3) are identical: cross-attention sees each
# token alone, so both ask the source the same question and get the same answer. In the right order
# self-attention has already told row 3 that it follows "the cat saw", and its question differs.
# (With position encodings the two rows would differ a little, by position; they would still know
# nothing of the words around them.)

# %% [demo]
d, h = 32, 4
block = ref.DecoderBlock(d, h, 64, rng=0)
r = np.random.default_rng(0)
words = ["the", "cat", "saw", "the", "dog"]
vocab = {w: r.normal(size=d) for w in dict.fromkeys(words)}
x_words = np.stack([vocab[w] for w in words])  # (5, d): embeddings only
H_enc_demo = r.normal(size=(6, d))  # a 6-token source
causal = ref.create_causal_mask(len(words))


def block_cross_first(block, x, H_enc, self_attn_mask):
    """The wrong order, with the block's own weights: cross-attention, then self-attention, then the FFN."""
    out, w = block.cross_attn(ref.rms_norm(x, block.norm2_gamma), H_enc)
    x = x + out
    out, _ = block.self_attn(ref.rms_norm(x, block.norm1_gamma), mask=self_attn_mask)
    x = x + out
    return x + block.ffn(ref.rms_norm(x, block.norm3_gamma)), w


y_right, w_right = block(x_words, H_enc_demo, causal)
y_wrong, w_wrong = block_cross_first(block, x_words, H_enc_demo, causal)
rows = [f"{w} ({i})" for i, w in enumerate(words)]
cols = [f"src {j}" for j in range(6)]
fig, (left, right) = plotting.figure(1, 2, width=4.8, height=3.2)
plotting.heatmap(w_right[0], rows, cols, kind="cross", ax=left, annotate=True, title="self, then cross (right)")
plotting.heatmap(w_wrong[0], rows, cols, kind="cross", ax=right, annotate=True, title="cross, then self (wrong)",
                 row_label="")
plt.show()
print("largest difference between the rows of 'the (0)' and 'the (3)', over all heads:")
print(f"  right order: {np.abs(w_right[:, 0] - w_right[:, 3]).max():.3f}   "
      f"wrong order: {np.abs(w_wrong[:, 0] - w_wrong[:, 3]).max():.3f}")
print(f"the block's outputs differ by up to {np.abs(y_right - y_wrong).max():.2f} between the two orders")

# %% [markdown]
# ## 5.5 Experiment: the missing mask
#
# The causal mask is what makes training honest: position $t$ is trained to predict the token at $t$,
# so it must not see it. The test: change the last target word ("dog" becomes "cat") and measure how
# far each position's output moves. With the mask, only the last position moves. Without it, every
# position moves, because each one reads the future: during training the model could copy the answer
# instead of learning to predict it, and at generation time, when there is no future to read, it
# would fail.

# %% [demo]
x_edited = x_words.copy()
x_edited[-1] = vocab["cat"]
fig, axes = plotting.figure(1, 2, width=4.2, height=2.8)
for ax, mask, name in ((axes[0], causal, "with the causal mask"), (axes[1], None, "without it")):
    moved = np.abs(block(x_words, H_enc_demo, mask)[0] - block(x_edited, H_enc_demo, mask)[0]).max(axis=-1)
    plotting.bars(moved, labels=rows, ax=ax, highlight=[i for i in range(4) if moved[i] > 1e-12],
                  ylabel="largest change of the output", title=name)
    ax.set_xlabel("position (the last one was edited)")
plt.show()

# %% [markdown]
# ## 5.6 Post-norm: the 2017 arrangement
#
# The original transformer (2017) had the same three sublayers in the same order, with the norm on the
# other side of the residual add:
#
# $$x \leftarrow \operatorname{Norm}\big(x + \operatorname{Sublayer}(x)\big) \qquad\text{(post-norm)}
# \qquad\text{vs.}\qquad x \leftarrow x + \operatorname{Sublayer}\big(\operatorname{Norm}(x)\big) \qquad\text{(pre-norm)}.$$
#
# In post-norm the sublayers read the raw stream and the stream itself is normalised after every
# sublayer; no path through the stack is free of norms. The 2017 model used LayerNorm; here both
# variants use RMSNorm, so the only difference is where the norm sits.
#
# ### Exercise 5.3 — `decoder_block_post_norm(block, x, encoder_output, ...)` (2 points)
#
# Write the post-norm block as a function of a `DecoderBlock`'s weights: the same `self_attn`,
# `cross_attn`, `ffn` and the gains `norm1_gamma`, `norm2_gamma`, `norm3_gamma`, each norm now after its
# sublayer's residual add.

# %% [solution] decoder_block_post_norm
def decoder_block_post_norm(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
    """The post-norm decoder block (2017) with the weights of `block`: x = Norm(x + Sublayer(x)).

    Inputs:  block a DecoderBlock; x (..., m, d_model); encoder_output (..., n, d_model);
             self_attn_mask broadcastable to (..., h, m, m); cross_attn_mask to (..., h, m, n).
    Returns: (output (..., m, d_model), cross_weights (..., h, m, n)).
    """
    ### BEGIN SOLUTION
    out, _ = block.self_attn(x, mask=self_attn_mask)
    x = rms_norm(x + out, block.norm1_gamma)
    out, cross_weights = block.cross_attn(x, encoder_output, mask=cross_attn_mask)
    x = rms_norm(x + out, block.norm2_gamma)
    x = rms_norm(x + block.ffn(x), block.norm3_gamma)
    return x, cross_weights
    ### END SOLUTION


# %% [test] test_decoder_block_post_norm points=2
# Tests for Exercise 5.3 (2 points).
from encdec.checks.lesson05 import check_decoder_block_post_norm

hidden = False
### BEGIN HIDDEN TESTS
hidden = True
### END HIDDEN TESTS
check_decoder_block_post_norm(points=2, hidden=hidden)

# %% [markdown]
# What does the place of the norm change? Stack 24 decoder blocks with random weights and send the same
# input through both arrangements.
#
# * **Left: the size of the stream** (its root-mean-square) after each block. In pre-norm every block
#   *adds* to the stream and nothing shrinks it, so it grows with depth; that is why a pre-norm stack
#   ends with one final RMSNorm (Lesson 6). In post-norm the stream is renormalised after every
#   sublayer and stays at 1.
# * **Right: how much the top still depends on the bottom.** We nudge the input of block 1 by a tiny
#   random amount and measure how far the output of each block moves, relative to the nudge. In
#   pre-norm the identity path carries the nudge up undiminished, and the sublayers add to it. In
#   post-norm every norm rescales it, and it fades with depth. Backpropagation runs the same chain of
#   derivatives the other way, so in post-norm the gradient that reaches the early blocks fades the
#   same way. This is why deep post-norm stacks need a learning-rate warm-up and careful tuning, and
#   why pre-norm became the default.

# %% [demo]
n_blocks = 24
stack = [ref.DecoderBlock(d, h, 64, rng=100 + i) for i in range(n_blocks)]
r = np.random.default_rng(5)
x0, nudge = r.normal(size=(5, d)), r.normal(size=(5, d)) * 1e-6
size, sensitivity = {}, {}
for name in ("pre-norm", "post-norm"):
    a, b, sizes, sens = x0, x0 + nudge, [], []
    for blk in stack:
        if name == "pre-norm":
            a, b = blk(a, H_enc_demo, causal)[0], blk(b, H_enc_demo, causal)[0]
        else:
            a = ref.decoder_block_post_norm(blk, a, H_enc_demo, causal)[0]
            b = ref.decoder_block_post_norm(blk, b, H_enc_demo, causal)[0]
        sizes.append(np.sqrt(np.mean(a ** 2)))
        sens.append(np.linalg.norm(b - a) / np.linalg.norm(nudge))
    size[name] = (np.arange(1, n_blocks + 1), sizes)
    sensitivity[name] = (np.arange(1, n_blocks + 1), sens)
fig, (left, right) = plotting.figure(1, 2, width=4.4, height=3.0)
plotting.curves(size, ax=left, xlabel="block", ylabel="RMS of the stream", title="activation size through depth")
plotting.curves(sensitivity, ax=right, logy=True, xlabel="block", ylabel="change out / change in",
                title="how much the bottom still matters")
plt.show()
print(f"after {n_blocks} blocks: stream RMS {size['pre-norm'][1][-1]:.2f} (pre-norm) vs "
      f"{size['post-norm'][1][-1]:.2f} (post-norm); sensitivity {sensitivity['pre-norm'][1][-1]:.2g} vs "
      f"{sensitivity['post-norm'][1][-1]:.2g}")

# %% [markdown]
# ## 5.7 What cross-attention costs
#
# A decoder block is an encoder block (self-attention and feed-forward, each with a norm) plus one more
# sublayer. Cross-attention has its own complete set of projections $W_q, W_k, W_v, W_o$ [LEARNED]: it
# shares nothing with the block's self-attention, because it asks a different question of different
# inputs. Its norm gain `norm2_gamma` [LEARNED] comes with it.
#
# ### Exercise 5.4 — `cross_attention_params(d_model)` (2 points)
#
# Return the number of [LEARNED] numbers the cross-attention sublayer adds to a decoder block of width
# `d_model`, as a formula. (Count from the attributes of the course's classes: the attention projections
# are used as `x @ W`, with no bias.) The test compares your formula with the parameters of real
# blocks.

# %% [solution] cross_attention_params
def cross_attention_params(d_model):
    """Number of [LEARNED] numbers in the cross-attention sublayer of a decoder block.

    Inputs:  d_model, the model width [CONFIG].
    Returns: an int: W_q, W_k, W_v, W_o and the sublayer's norm gain, together.
    """
    ### BEGIN SOLUTION
    return 4 * d_model * d_model + d_model
    ### END SOLUTION


# %% [test] test_cross_attention_params points=2
# Tests for Exercise 5.4 (2 points).
from encdec.checks.lesson05 import check_cross_attention_params

hidden = False
### BEGIN HIDDEN TESTS
hidden = True
### END HIDDEN TESTS
check_cross_attention_params(points=2, hidden=hidden)

# %% [markdown]
# In a block the size of the original base transformer ($d_{\text{model}} = 512$, 8 heads,
# $d_{ff} = 2048$), counted on a real `DecoderBlock`: the cross-attention sublayer, drawn in red, is a
# quarter of the block. The number of heads changes nothing, since the heads split $d_{\text{model}}$
# rather than add to it.

# %% [demo]
big = ref.DecoderBlock(512, 8, 2048, rng=0)
groups = {"self-attention\n+ norm1": ("self_attn.", "norm1_gamma"),
          "cross-attention\n+ norm2": ("cross_attn.", "norm2_gamma"),
          "feed-forward\n+ norm3": ("ffn.", "norm3_gamma")}
counts = [sum(p.size for name, p in big.parameters().items() if name.startswith(prefixes))
          for prefixes in groups.values()]
fig, ax = plotting.figure(width=5.0, height=3.0)
plotting.bars(np.array(counts) / 1e6, labels=list(groups), ax=ax, highlight=1, ylabel="parameters (millions)",
              title=f"one decoder block, d_model = 512: {sum(counts):,} parameters")
plt.show()
for label, count in zip(groups, counts):
    print(f"{label.replace(chr(10), ' '):28s} {count:>10,}  ({count / sum(counts):.0%})")
print(f"4 d^2 + d = {4 * 512 ** 2 + 512:,}")

# %% [markdown]
# ## Summary
#
# * A token meets, in one decoder block: the incoming states, masked causal self-attention, cross-attention
#   to the encoder, the feed-forward network, each adding to the residual stream, and then the next block.
# * Self-attention comes first so that cross-attention asks the source with a state that knows the
#   target written so far; in the wrong order, equal tokens ask equal questions.
# * Pre-norm, $x + \operatorname{Sublayer}(\operatorname{Norm}(x))$, with one norm per sublayer, keeps an
#   identity path through the stack; post-norm, $\operatorname{Norm}(x + \operatorname{Sublayer}(x))$,
#   keeps activations at unit size but lets the influence of early blocks fade with depth.
# * Without the causal mask, changing a later target token changes earlier outputs: the model could
#   read the answer.
# * Cross-attention adds $4d^2 + d$ parameters per decoder block, whatever the number of heads.
#
# **Next — Lesson 6, Assembling the encoder–decoder.** Embeddings shared by source, target and
# output head, positions, $N$ encoder and $N$ decoder blocks, the final norms, and the whole
# encoder–decoder forward pass, checked against its PyTorch twin.
