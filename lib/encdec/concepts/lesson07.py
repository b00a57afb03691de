"""Lesson 7, Backpropagation: the concepts asked before and after the lesson."""

import numpy as np

from .. import attention, backward, loss
from .items import Concept, choice, number


def _target_gradient(probs, target):
    """dL/dz at the target of one position whose softmax output is `probs`."""
    _, dlogits = loss.softmax_cross_entropy(np.log(np.array([probs])), np.array([target]))
    return float(dlogits[0, target])


def _tokens_averaged_over(targets, pad_id, V=5):
    """N, the number the mean loss divides by, read back from the gradient at a real position."""
    targets = np.asarray(targets)
    logits = np.zeros(targets.shape + (V,))
    _, dlogits = loss.softmax_cross_entropy(logits, targets, pad_id=pad_id)
    real = np.argwhere(targets != pad_id)[0]
    p_minus_y = 1.0 / V - 1.0  # at the target entry, with uniform probabilities
    return round(p_minus_y / float(dlogits[tuple(real)][targets[tuple(real)]]))


def _central_difference(f, x0, h):
    x = np.array([x0])
    return float(backward.numerical_gradient(lambda: f(x[0]), x, h=h)[0])


def _softmax_backward_of_constant(c=2.0):
    return backward.softmax_backward(np.full(3, c), attention.softmax(np.array([0.0, 1.0, 2.0])))


def _dgamma(shape=(2, 3, 4)):
    r = np.random.default_rng(0)
    x, dout = r.normal(size=shape), r.normal(size=shape)
    return backward.rms_norm_backward(dout, x, np.ones(shape[-1]))[1].shape


_P = attention.softmax(np.array([0.0, 1.0, 2.0]))

CONCEPTS = [
    Concept(
        "cross-entropy-gradient",
        pre=choice(
            "The loss at one position is $\\ell = -\\log \\hat p_y$ with $\\hat p = \\operatorname{softmax}(z)$ "
            "and $y$ the one-hot target. What is $\\partial \\ell / \\partial z$?",
            ["$y - \\hat p$", "$\\hat p - y$", "$\\hat p$", "$-1/\\hat p_y$ at the target, 0 elsewhere"],
            answer="b",
            explanation="Through the softmax the gradient of -log p_y is p_hat - y: the predicted probabilities, "
                        "minus 1 at the target. Raising the target's logit lowers the loss, so its entry is "
                        "negative; y - p_hat has the sign flipped.",
            mistakes=["softmax_cross_entropy/sign_flipped", "softmax_cross_entropy/gradient_without_the_target"]),
        post=number(
            "At one position the model predicts $\\hat p = [0.7, 0.2, 0.1]$ and the target is token 0. What is "
            "$\\partial \\ell / \\partial z_0$?",
            -0.3, tolerance=1e-6,
            explanation="p_hat - y at the target: 0.7 - 1 = -0.3. The other two entries are 0.2 and 0.1.",
            mistakes=["softmax_cross_entropy/sign_flipped", "softmax_cross_entropy/gradient_without_the_target"],
            compute=lambda: _target_gradient([0.7, 0.2, 0.1], 0)),
    ),
    Concept(
        "pad-averaging",
        pre=number(
            "A padded batch holds 12 target positions, 5 of them pads. The loss is the mean over the real "
            "tokens: by what number is the summed loss divided?",
            7,
            explanation="N counts the real (non-pad) targets: 12 - 5 = 7. Dividing by every position would make "
                        "batches with more padding look better than they are.",
            mistakes=["softmax_cross_entropy/pads_in_denominator", "softmax_cross_entropy/pads_counted"],
            compute=lambda: _tokens_averaged_over([[3, 4, 2, 0, 0, 0], [3, 1, 4, 2, 0, 0]], pad_id=0)),
        post=choice(
            "What does the gradient of that mean loss hold at a pad position?",
            ["$(\\hat p - y) / N$, like every other position.",
             "$\\hat p - y$, not divided by $N$.",
             "Exactly 0.",
             "$\\hat p / N$."],
            answer="c",
            explanation="A pad adds nothing to the loss, so nothing flows back from it: its gradient is exactly 0. "
                        "The real positions get (p_hat - y) / N.",
            mistakes=["softmax_cross_entropy/pad_gradient_kept"]),
    ),
    Concept(
        "central-difference",
        pre=choice(
            "A gradient check by central differences estimates $\\partial f / \\partial x_i$ as:",
            ["$(f(x + h e_i) - f(x)) / h$",
             "$(f(x + h e_i) - f(x - h e_i)) / (2h)$",
             "$(f(x + h e_i) - f(x - h e_i)) / h$",
             "$(f(x + h) - f(x - h)) / (2h)$, moving every entry of $x$ at once"],
            answer="b",
            explanation="One entry at a time, nudged both ways: the two evaluations are 2h apart, and the h^2 terms "
                        "of their Taylor expansions cancel, so the error shrinks like h^2. The one-sided difference "
                        "only like h; moving every entry at once measures a directional derivative.",
            mistakes=["numerical_gradient/forward_difference", "numerical_gradient/divided_by_h",
                      "numerical_gradient/all_entries_at_once"]),
        post=number(
            "The central difference of $f(x) = x^3$ at $x = 2$ with $h = 0.1$: what does it give?",
            12.01, tolerance=1e-6,
            explanation="(2.1^3 - 1.9^3) / 0.2 = (9.261 - 6.859) / 0.2 = 12.01. The true slope is 12: the error, "
                        "h^2 = 0.01, shrinks like h squared.",
            mistakes=["numerical_gradient/divided_by_h", "numerical_gradient/forward_difference"],
            compute=lambda: _central_difference(lambda v: v ** 3, 2.0, 0.1)),
    ),
    Concept(
        "softmax-backward",
        pre=choice(
            "The backward pass of $p = \\operatorname{softmax}(x)$ along one row, given the upstream gradient "
            "$\\bar p$:",
            ["$\\bar x = p \\odot (1 - p) \\odot \\bar p$, the Jacobian's diagonal",
             "$\\bar x = \\bar p - \\langle \\bar p, p \\rangle$",
             "$\\bar x = p \\odot (\\bar p - \\langle \\bar p, p \\rangle)$",
             "$\\bar x = p \\odot (\\bar p - \\sum_k \\bar p_k)$"],
            answer="c",
            explanation="Every output depends on every input: the Jacobian is diag(p) - p p^T, and its transpose "
                        "applied to p_bar is p * (p_bar - sum(p_bar * p)). Its diagonal alone misses the "
                        "off-diagonal terms.",
            mistakes=["softmax_backward/diagonal_only", "softmax_backward/no_leading_p", "softmax_backward/unweighted_sum"]),
        post=choice(
            "The upstream gradient of a softmax row is the same number $c = 2$ in every entry, and "
            "$p = \\operatorname{softmax}([0, 1, 2])$. What is $\\bar x$?",
            ["All zeros.", "$2p$.", "$2\\,p \\odot (1 - p)$.", "2 in every entry."],
            answer="a",
            explanation="p * (c - sum(c p)) = p * (c - c) = 0: adding the same amount to every output changes no "
                        "input's effect, because the softmax ignores a constant shift. The diagonal-only formula "
                        "would give 2 p (1 - p).",
            mistakes=["softmax_backward/diagonal_only", "softmax_backward/no_leading_p"],
            compute=_softmax_backward_of_constant,
            values=[np.zeros(3), 2 * _P, 2 * _P * (1 - _P), np.full(3, 2.0)]),
    ),
    Concept(
        "shared-gradients",
        pre=choice(
            "$E$ embeds the source tokens, embeds the target tokens and is the tied output head. Its gradient "
            "is:",
            ["the sum of the three shares.", "the mean of the three shares.", "the output head's share alone.",
             "the share computed last, which overwrites the others."],
            answer="a",
            explanation="An array used in several places gets the sum of the gradients from every use: E_bar is "
                        "complete only when all three shares are in.",
            mistakes=[]),
        post=choice(
            "RMSNorm's gain $\\gamma$ (one number per feature) multiplies every position of an input of shape "
            "$(2, 3, 4)$. What shape has $\\bar\\gamma$?",
            ["$(4,)$, the sum over every position.", "$(2, 3, 4)$, one row per position.", "a scalar",
             "$(3, 4)$, summed over the batch only."],
            answer="a",
            explanation="gamma is shared by all 2 x 3 positions, so its gradient sums their shares: d numbers, "
                        "shape (4,), like gamma itself. A gradient has the shape of its array.",
            mistakes=["rms_norm_backward/dgamma_not_summed"],
            compute=_dgamma,
            values=[(4,), (2, 3, 4), (), (3, 4)]),
    ),
]
