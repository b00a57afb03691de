"""Lesson 1, Attention from scratch: the concepts asked before and after the lesson."""

import numpy as np

from .. import attention, layers
from .items import Concept, choice, number


def _softmax_rows(scores):
    """(stable softmax rounded to 3 decimals, the naive formula's result ('nan' when it breaks))."""
    x = np.asarray(scores, dtype=np.float64)
    with np.errstate(all="ignore"):
        naive = np.exp(x) / np.sum(np.exp(x))
    stable = tuple(np.round(attention.softmax(x), 3))
    return stable, ("nan" if np.isnan(naive).any() else tuple(np.round(naive, 3)))


def _weights(m, n, d_k, batch=()):
    """The shape of scaled_dot_product_attention's weights and the axis along which they sum to 1."""
    r = np.random.default_rng(0)
    Q, K, V = r.normal(size=(*batch, m, d_k)), r.normal(size=(*batch, n, d_k)), r.normal(size=(*batch, n, 2))
    _, w = attention.scaled_dot_product_attention(Q, K, V)
    return w.shape, "rows" if np.allclose(w.sum(-1), 1) else "columns"


def _score_std(d_k, pairs=200_000):
    r = np.random.default_rng(1)
    return float(np.sum(r.normal(size=(pairs, d_k)) * r.normal(size=(pairs, d_k)), axis=-1).std())


def _same_token_outputs():
    """Whether two positions holding the same vector get the same output (no mask, no positions)."""
    r = np.random.default_rng(2)
    x = r.normal(size=(8, 6))
    x[7] = x[2]
    out, _ = attention.scaled_dot_product_attention(x, x, x)
    return "same" if np.allclose(out[2], out[7]) else "different"


CONCEPTS = [
    Concept(
        "stable-softmax",
        pre=choice(
            "A numerically stable softmax subtracts each row's maximum from the row before taking `exp`. "
            "What does that subtraction change?",
            ["The result: the largest weight becomes exactly 1, the others shrink with it.",
             "Nothing in the exact result (one constant subtracted from a whole row cancels), but the largest "
             "exponent becomes $e^0 = 1$, so nothing overflows.",
             "The result is shifted by the maximum, which has to be added back at the end.",
             "It makes the weights sum to 1, which the plain formula does not guarantee."],
            answer="b",
            explanation="softmax(x - c) = softmax(x) for any constant c: e^(-c) cancels between numerator and "
                        "denominator. Choosing c = the row maximum keeps every exponent at most 0, so exp never "
                        "overflows, and the sum is at least 1.",
            mistakes=["softmax/no_max_shift", "softmax/divided_by_max"]),
        post=choice(
            "One row of scores is $[1000, 1001, 1002]$. What do the stable softmax and the plain formula "
            "$e^{x_j} / \\sum_k e^{x_k}$ return in float64?",
            ["Both return $[0.090, 0.245, 0.665]$.",
             "Stable: $[0.090, 0.245, 0.665]$; plain: `nan` everywhere.",
             "Stable: $[0, 0, 1]$; plain: `nan` everywhere.",
             "Both return `nan` everywhere."],
            answer="b",
            explanation="exp(1000) overflows to inf and inf/inf is nan, so the plain formula breaks. Subtracting "
                        "the maximum gives the scores [-2, -1, 0], whose softmax is the same as that of [1, 2, 3]: "
                        "[0.090, 0.245, 0.665], because a shift of the whole row changes nothing.",
            mistakes=["softmax/no_max_shift"],
            compute=lambda: _softmax_rows([1000, 1001, 1002]),
            values=[((0.09, 0.245, 0.665), (0.09, 0.245, 0.665)), ((0.09, 0.245, 0.665), "nan"),
                    ((0.0, 0.0, 1.0), "nan"), ("nan", "nan")]),
    ),
    Concept(
        "scale-sqrt-dk",
        pre=choice(
            "Why does attention divide the scores $QK^\\top$ by $\\sqrt{d_k}$?",
            ["To make each row of attention weights sum to one.",
             "The spread of a dot product of two width-$d_k$ vectors grows like $\\sqrt{d_k}$; dividing keeps "
             "it the same at every width, so the softmax does not saturate.",
             "To take the average over the $d_k$ products in each dot product.",
             "To normalise each query by the number of keys it is scored against."],
            answer="b",
            explanation="A dot product of d_k independent unit-variance products has variance d_k and standard "
                        "deviation sqrt(d_k). Wide scores saturate the softmax: nearly all weight on one key and "
                        "vanishing gradients. Dividing by sqrt(d_k) brings the spread back to about 1. The softmax, "
                        "not the scale, is what makes each row sum to 1.",
            mistakes=["scaled_dot_product_attention/no_scale", "scaled_dot_product_attention/scale_by_d_k",
                      "scaled_dot_product_attention/scale_by_num_keys"]),
        post=number(
            "Queries and keys have independent standard-normal entries and width $d_k = 256$. What is the "
            "standard deviation of one unscaled score $q \\cdot k$?",
            16, tolerance=0.5,
            explanation="The score is a sum of 256 independent products of variance 1, so its variance is 256 "
                        "and its standard deviation sqrt(256) = 16. Divided by sqrt(d_k) = 16 it is back to 1.",
            compute=lambda: _score_std(256)),
    ),
    Concept(
        "additive-mask",
        pre=choice(
            "How does attention hide a key, such as a future token or a pad?",
            ["It multiplies that key's weight by 0 after the softmax.",
             "It adds $-1$ to that key's score before the softmax.",
             "It adds $-\\infty$ to that key's score before the softmax.",
             "It sets that key's score to 0 before the softmax."],
            answer="c",
            explanation="An additive mask holds 0 where a key may be seen and -inf where it is hidden, added to "
                        "the scores before the softmax: exp(-inf) = 0, so the hidden key gets exactly zero weight "
                        "and the visible weights still sum to 1. Zeroing after the softmax leaves rows that sum to "
                        "less than 1; -1 or a score of 0 only lowers a weight.",
            mistakes=["scaled_dot_product_attention/mask_after_softmax", "padding_mask/minus_one",
                      "padding_mask/multiplicative"]),
        post=number(
            "One query's scores over four keys are $[0, 0, 1, 3]$, and the mask $[0, 0, 0, -\\infty]$ hides the "
            "fourth key. What weight does the third key get? (Two decimals.)",
            0.58, tolerance=0.01,
            explanation="The mask makes the scores [0, 0, 1, -inf]; the softmax gives e/(1 + 1 + e) = 0.576 to the "
                        "third key, 0.212 to each of the first two and exactly 0 to the hidden one.",
            mistakes=["scaled_dot_product_attention/mask_after_softmax"],
            compute=lambda: float(attention.softmax(np.array([0, 0, 1, 3.0]) + np.array([0, 0, 0, -np.inf]))[2])),
    ),
    Concept(
        "weights-shape",
        pre=choice(
            "Attention with $m = 3$ queries and $n = 5$ keys (width $d_k = 4$) and values of width $d_v = 2$. "
            "What are the attention weights?",
            ["A $3 \\times 5$ matrix whose rows each sum to 1.",
             "A $5 \\times 3$ matrix whose rows each sum to 1.",
             "A $3 \\times 5$ matrix whose columns each sum to 1.",
             "A $3 \\times 2$ matrix whose rows each sum to 1."],
            answer="a",
            explanation="Row i holds query i's weights over the n keys: an m x n matrix, each row a distribution "
                        "over the keys (the softmax runs along the key axis). The value width d_v shapes the "
                        "output, (m, d_v), not the weights.",
            mistakes=["scaled_dot_product_attention/softmax_over_queries"],
            compute=lambda: _weights(3, 5, 4),
            values=[((3, 5), "rows"), ((5, 3), "rows"), ((3, 5), "columns"), ((3, 2), "rows")]),
        post=choice(
            "`Q` has shape `(2, 4, 6)` (a batch of two, four queries each) and `K`, `V` have shape `(2, 7, 6)`. "
            "What shape do the weights of `scaled_dot_product_attention(Q, K, V)` have?",
            ["`(2, 4, 7)`", "`(2, 7, 4)`", "`(2, 4, 4)`", "`(7, 4, 2)`"],
            answer="a",
            explanation="Leading batch axes are carried along; each of the 2 sequences gets a 4 x 7 matrix, one "
                        "row per query and one column per key. Transposing K with .T would reverse all its axes; "
                        "only the last two are swapped.",
            mistakes=["scaled_dot_product_attention/transpose_only_2d", "scaled_dot_product_attention/q_at_k"],
            compute=lambda: _weights(4, 7, 6, batch=(2,))[0],
            values=[(2, 4, 7), (2, 7, 4), (2, 4, 4), (7, 4, 2)]),
    ),
    Concept(
        "order-blind",
        pre=choice(
            "Self-attention without a mask and without position encodings reads a sentence, then the same "
            "tokens shuffled. How do the two outputs compare?",
            ["They are unrelated: every output changes when the order changes.",
             "They are the same vectors, shuffled the same way: attention alone ignores order.",
             "Every position of both gets the same output vector.",
             "Only the first position's output changes."],
            answer="b",
            explanation="Each output is a weighted average over all keys, and the weights depend only on the "
                        "vectors, not on where they sit. Shuffling the rows of Q, K and V together shuffles the "
                        "outputs the same way: a bag of words. Order has to be added to the inputs.",
            mistakes=["embed/no_positions"]),
        post=choice(
            "Without position encodings, the same token sits at positions 2 and 7 of a sentence. What outputs "
            "does unmasked self-attention give those two positions?",
            ["Different outputs, because they sit at different places.",
             "The same output.",
             "Outputs that differ by a rotation.",
             "No output for the second one: a repeated token is hidden."],
            answer="b",
            explanation="With no positions, the two rows are the same vector: the same query against the same keys "
                        "gives the same weights and the same output. Sinusoidal encodings make the two rows differ.",
            mistakes=["embed/no_positions"],
            compute=_same_token_outputs,
            values=["different", "same", "rotated", "hidden"]),
    ),
    Concept(
        "sinusoidal-pairs",
        pre=choice(
            "How are the columns of the sinusoidal position encodings arranged?",
            ["Each column $j$ has its own frequency $1/10000^{j/d}$.",
             "All the sines come first, then all the cosines.",
             "Columns $2i$ and $2i+1$ share one frequency: a sine in the even column, a cosine of the same "
             "angle in the odd one.",
             "Cosines in the even columns, sines in the odd ones, each with its own frequency."],
            answer="c",
            explanation="PE[pos, 2i] = sin(pos / 10000^(2i/d)) and PE[pos, 2i+1] = cos of the same angle. Because "
                        "a pair shares its angle, moving k positions turns each pair by a fixed angle: offsets are "
                        "easy for attention to read.",
            mistakes=["sinusoidal_positions/column_index_exponent", "sinusoidal_positions/halves_not_interleaved",
                      "sinusoidal_positions/sin_cos_swapped"]),
        post=number(
            "For width $d = 10$, what is $PE_p \\cdot PE_p$, the dot product of a position's encoding with "
            "itself, at any position $p$?",
            5,
            explanation="Each pair of columns holds sin and cos of one angle, and sin^2 + cos^2 = 1. Five pairs give "
                        "5 at every position: d/2.",
            mistakes=["sinusoidal_positions/column_index_exponent"],
            compute=lambda: float(layers.sinusoidal_positions(12, 10)[9] @ layers.sinusoidal_positions(12, 10)[9])),
    ),
]
