"""Lesson 2, The encoder stack: the concepts asked before and after the lesson."""

import numpy as np

from .. import attention, layers
from .items import Concept, choice, number


def _hidden_scores(tokens, pad_id, heads, queries):
    """How many entries of scores (B, heads, queries, n) the padding mask sets to -inf."""
    tokens = np.asarray(tokens)
    scores = np.zeros((tokens.shape[0], heads, queries, tokens.shape[-1]))
    return int(np.isinf(scores + attention.padding_mask(tokens, pad_id)).sum())


def _moved_by_editing_the_last_word(n=6, d=8):
    """The positions of an encoder block's output (no pads, the encoder's mask) that move when the
    last word's input changes."""
    block = layers.EncoderBlock(d_model=d, n_heads=2, d_ff=16, rng=3)
    x = np.random.default_rng(4).normal(size=(n, d))
    mask = attention.padding_mask(np.arange(1, n + 1), pad_id=0)
    edited = x.copy()
    edited[-1] += 1.0
    moved = np.abs(block(edited, mask) - block(x, mask)).max(axis=-1) > 1e-12
    return tuple(int(i) for i in np.flatnonzero(moved))


CONCEPTS = [
    Concept(
        "rms-norm",
        pre=choice(
            "RMSNorm and LayerNorm both rescale each token's vector over its features. What does RMSNorm "
            "leave out?",
            ["The learned per-feature gain.",
             "Centring (subtracting the mean) and the bias.",
             "The small $\\varepsilon$ that keeps the division safe.",
             "Nothing: they are two names for one function."],
            answer="b",
            explanation="RMSNorm divides x by sqrt(mean(x^2) + eps) over the last axis and multiplies by a learned "
                        "gain. It does not subtract the mean and has no bias; LayerNorm does both.",
            mistakes=["rms_norm/layer_norm", "rms_norm/gamma_forgotten", "rms_norm/eps_ignored"]),
        post=choice(
            "`rms_norm(x, gamma)` with $x = [2, 2, 2, 2]$ and a gain of all ones ($\\varepsilon$ negligible). "
            "What comes out?",
            ["$[0, 0, 0, 0]$", "$[0.5, 0.5, 0.5, 0.5]$", "$[1, 1, 1, 1]$", "$[2, 2, 2, 2]$"],
            answer="c",
            explanation="The root mean square of [2, 2, 2, 2] is 2, so every entry becomes 2 / 2 = 1. LayerNorm "
                        "would give 0 (it subtracts the mean, 2, first); dividing by the sum of squares' root, "
                        "sqrt(16) = 4, would give 0.5.",
            mistakes=["rms_norm/layer_norm", "rms_norm/sum_not_mean", "rms_norm/no_sqrt"],
            compute=lambda: layers.rms_norm(np.full(4, 2.0), np.ones(4)),
            values=[np.zeros(4), np.full(4, 0.5), np.ones(4), np.full(4, 2.0)], tolerance=1e-4),
    ),
    Concept(
        "gelu",
        pre=choice(
            "Which describes GELU, the activation of the feed-forward network?",
            ["$\\max(0, x)$: zero for every negative input.",
             "A number between 0 and 1 that says how much of $x$ to keep.",
             "Smooth: close to $x$ for large positive $x$, close to 0 for large negative $x$, and slightly "
             "negative for small negative $x$.",
             "The identity: it passes $x$ through unchanged."],
            answer="c",
            explanation="GELU(x) = x * Phi(x), in the course's tanh form 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 "
                        "x^3))): x times a gate between 0 and 1. The gate is smooth, so small negative inputs come "
                        "through a little, as small negative outputs. ReLU cuts them to exactly 0.",
            mistakes=["gelu/relu", "gelu/cdf_only"]),
        post=number(
            "What is $\\mathrm{GELU}(-0.5)$, to two decimals?",
            -0.15, tolerance=0.01,
            explanation="0.5 * (-0.5) * (1 + tanh(sqrt(2/pi) * (-0.5 - 0.0056))) = -0.154: slightly negative. "
                        "ReLU would give 0.",
            mistakes=["gelu/relu"],
            compute=lambda: float(layers.gelu(np.array(-0.5)))),
    ),
    Concept(
        "padding-mask",
        pre=choice(
            "For token ids of shape $(B, n)$ the padding mask has shape $(B, 1, 1, n)$. What does it hide?",
            ["Every pad as a key: a column of the scores, in every head and for every query.",
             "Every pad as a query: a row of the scores.",
             "Every pad both as a query and as a key.",
             "Every position after the first pad, like a causal mask."],
            answer="a",
            explanation="No real token may draw information from a pad, so a pad is hidden as a key: -inf in its "
                        "column of the scores. The two empty axes let the one mask broadcast over the heads and the "
                        "queries of scores (B, h, m, n). Pads still ask questions as queries; nothing reads them.",
            mistakes=["padding_mask/hides_queries", "padding_mask/no_new_axes", "padding_mask/one_new_axis"]),
        post=number(
            "Multi-head scores of shape $(2, 4, 5, 5)$: two sentences, $h = 4$ heads, 5 queries, 5 keys. The "
            "first sentence ends in 2 pads, the second has none. After adding the padding mask, how many "
            "entries of the scores are $-\\infty$?",
            40,
            explanation="Each pad hides one key column in every head and for every query: 2 pads x 4 heads x 5 "
                        "queries = 40. The second sentence has no pad, so nothing of it is hidden.",
            mistakes=["padding_mask/hides_queries", "padding_mask/one_new_axis"],
            compute=lambda: _hidden_scores([[5, 6, 7, 0, 0], [5, 6, 7, 8, 9]], 0, heads=4, queries=5)),
    ),
    Concept(
        "head-width",
        pre=number(
            "Multi-head attention with $d_{model} = 256$ and $h = 8$ heads splits the queries, keys and values "
            "into heads. What is the width $d_k$ of one head?",
            32,
            explanation="The heads share the model's width: d_k = d_model / h = 256 / 8 = 32, and each head's "
                        "scores are divided by sqrt(d_k), the width of one head.",
            mistakes=["MultiHeadAttention/scale_by_d_model", "MultiHeadAttention/one_big_head"],
            compute=lambda: attention.split_heads(np.zeros((3, 256)), 8).shape[-1]),
        post=choice(
            "Multi-head attention with $d_{model} = 96$ and $h = 4$ heads. By what are each head's scores "
            "divided?",
            ["$\\sqrt{96}$", "$\\sqrt{24}$", "$\\sqrt{4}$", "the square root of the number of keys"],
            answer="b",
            explanation="Each head compares vectors of width d_k = d_model / h = 96 / 4 = 24, so its scores are "
                        "divided by sqrt(24). Dividing by sqrt(d_model) over-shrinks them by a factor sqrt(h).",
            mistakes=["MultiHeadAttention/scale_by_d_model", "scaled_dot_product_attention/scale_by_num_keys"],
            compute=lambda: attention.MultiHeadAttention(96, 4, rng=0).d_k,
            values=[96, 24, 4, "keys"]),
    ),
    Concept(
        "pre-norm-residual",
        pre=choice(
            "Which line is one sublayer of the course's pre-norm encoder block?",
            ["`x = rms_norm(x + attention(x))`",
             "`x = x + attention(rms_norm(x))`",
             "`x = rms_norm(x) + attention(rms_norm(x))`",
             "`x = attention(rms_norm(x))`"],
            answer="b",
            explanation="Pre-norm: the sublayer reads a normalised copy of x and its output is added to x itself, "
                        "un-normalised, so the residual stream passes through the block unchanged apart from what "
                        "the sublayers add. rms_norm(x + ...) is the post-norm block of 2017.",
            mistakes=["EncoderBlock/post_norm", "EncoderBlock/residual_from_normed", "EncoderBlock/no_residual"]),
        post=choice(
            "In the pre-norm encoder block, what is the feed-forward network's output added to?",
            ["The residual stream $x$ as the attention sublayer left it (attention's output already added).",
             "The normalised copy of $x$ that the feed-forward network read.",
             "The block's input from before the attention sublayer.",
             "Nothing: the feed-forward output replaces $x$."],
            answer="a",
            explanation="The block is x = x + attention(norm1(x)), then x = x + ffn(norm2(x)): the second sum adds "
                        "to the stream that already holds the attention's contribution. Adding to the normalised "
                        "copy would rescale the stream at every sublayer.",
            mistakes=["EncoderBlock/residual_from_normed", "EncoderBlock/no_residual",
                      "EncoderBlock/ffn_reads_unnormalised"]),
    ),
    Concept(
        "bidirectional",
        pre=choice(
            "Which mask does the encoder's self-attention use?",
            ["The causal mask and the padding mask, added.",
             "Only the causal mask.",
             "Only the padding mask: every token may look at every real token, before and after it.",
             "No mask at all, pads included."],
            answer="c",
            explanation="The encoder reads a source that is known in full, so its attention is bidirectional: "
                        "only the pads are hidden. Causal masks belong to the decoder, which must not read the "
                        "targets it is about to predict.",
            mistakes=["EncoderBlock/causal_mask", "EncoderBlock/mask_ignored", "encode/causal_encoder"]),
        post=choice(
            "In an encoder block reading a sentence of 6 words (no pads), you change the input of the last word "
            "only. Which positions' outputs change?",
            ["All six.", "Only the last.", "None of them.", "The first five."],
            answer="a",
            explanation="Every query may look at the last word, so every position's weighted average changes (and "
                        "the last word's own input changes too). With a causal mask only the last position would "
                        "move.",
            mistakes=["EncoderBlock/causal_mask"],
            compute=_moved_by_editing_the_last_word,
            values=[(0, 1, 2, 3, 4, 5), (5,), (), (0, 1, 2, 3, 4)]),
    ),
]
