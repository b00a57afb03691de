"""Lesson 8, Training: the concepts asked before and after the lesson."""

import numpy as np

from .. import attention, loss, optim
from .items import Concept, choice, number


def _smoothed_target(V, eps, target=0):
    """q[target] of label smoothing, read back from the loss's gradient (dlogits = p_hat - q at N = 1)."""
    logits = np.zeros((1, V))
    _, dlogits = loss.softmax_cross_entropy(logits, np.array([target]), label_smoothing=eps)
    return float(1.0 / V - dlogits[0, target])


def _first_adam_step(grad, lr):
    new, _, _ = optim.adam_update(np.array([0.0]), np.array([float(grad)]), np.zeros(1), np.zeros(1), 1, lr)
    return float(abs(new[0]))


def _peak_step(d_model, warmup_steps, last):
    rates = [optim.warmup_schedule(step, d_model, warmup_steps) for step in range(1, last + 1)]
    return int(np.argmax(rates)) + 1


def _kept_value(value, rate):
    out = attention.dropout(np.full(1000, value), rate, np.random.default_rng(0))
    return float(out[out != 0][0])


CONCEPTS = [
    Concept(
        "label-smoothing",
        pre=choice(
            "Label smoothing with $\\varepsilon$ over a vocabulary of $V$ tokens trains the model towards which "
            "target distribution $q$ ($y$ is the one-hot target)?",
            ["$q = y$", "$q = y + \\varepsilon / V$", "$q = (1 - \\varepsilon)\\, y + \\varepsilon / V$",
             "$q = y + \\varepsilon$"],
            answer="c",
            explanation="Take eps of the target's probability and spread it evenly over all V tokens: q = (1 - eps) "
                        "y + eps / V, still a distribution (it sums to 1). The loss can then only approach the "
                        "entropy H(q), not 0.",
            mistakes=["sequence_cross_entropy/target_not_reduced", "sequence_cross_entropy/smoothing_not_divided"]),
        post=number(
            "With $V = 5$ tokens and $\\varepsilon = 0.1$, what probability does the smoothed target $q$ give "
            "the correct token?",
            0.92, tolerance=1e-6,
            explanation="(1 - 0.1) * 1 + 0.1 / 5 = 0.9 + 0.02 = 0.92; each of the four other tokens gets 0.02.",
            mistakes=["sequence_cross_entropy/target_not_reduced", "sequence_cross_entropy/smoothing_over_the_others"],
            compute=lambda: _smoothed_target(5, 0.1)),
    ),
    Concept(
        "adam-step-size",
        pre=choice(
            "Why does Adam divide its running averages $m$ and $v$ by $1 - \\beta_1^t$ and $1 - \\beta_2^t$?",
            ["To keep the learning rate from changing during training.",
             "Both averages start at 0, so in the first steps they are far too small; the correction makes "
             "the first steps the right length.",
             "To avoid dividing by zero when the gradient is zero.",
             "To make the update go up the gradient in the first steps."],
            answer="b",
            explanation="m and v start at 0: after one step m = (1 - beta1) g, a tenth of the gradient. Dividing "
                        "by 1 - beta^t undoes that start-up bias; it matters in the first steps and fades as t "
                        "grows. eps, not the correction, keeps the division safe.",
            mistakes=["adam_update/no_bias_correction", "adam_update/v_not_corrected"]),
        post=number(
            "Adam ($\\beta_1 = 0.9$, $\\beta_2 = 0.98$, a tiny $\\varepsilon$) takes its first step, $t = 1$, "
            "with learning rate 0.01 and gradient $g = 250$. By how much does the parameter move "
            "(in absolute value)?",
            0.01, tolerance=1e-6,
            explanation="With bias correction m_hat = g and v_hat = g^2 at t = 1, so the step is lr * g / |g| = "
                        "0.01, whatever the gradient's scale. Without the correction it would be about 0.0071.",
            mistakes=["adam_update/no_bias_correction", "adam_update/v_not_corrected"],
            compute=lambda: _first_adam_step(250.0, 0.01)),
    ),
    Concept(
        "warm-up",
        pre=choice(
            "Why does the learning rate of the 2017 schedule warm up (grow linearly over the first steps)?",
            ["At the start the weights are random and Adam's $\\hat v$ rests on a handful of gradients: full-size "
             "steps then can throw the model somewhere it recovers from slowly, or never.",
             "Because the loss is small at the start, so large steps are not needed.",
             "To make the total number of steps smaller.",
             "Because the gradients of the first steps are exactly zero."],
            answer="a",
            explanation="Early updates rest on meaningless attention patterns and a poor estimate of v_hat, so the "
                        "schedule starts small and grows until warmup_steps, then decays like 1/sqrt(step). "
                        "Post-norm models need it most; pre-norm ones are far less sensitive.",
            mistakes=["warmup_schedule/max_instead_of_min"]),
        post=number(
            "`warmup_schedule(step, d_model=256, warmup_steps=300)`: at which step is the learning rate "
            "largest?",
            300,
            explanation="The two branches, step * warmup^-1.5 (rising) and step^-0.5 (falling), meet at step = "
                        "warmup_steps: the peak of the schedule.",
            mistakes=["warmup_schedule/max_instead_of_min", "warmup_schedule/warmup_exponent_half"],
            compute=lambda: _peak_step(256, 300, 1000)),
    ),
    Concept(
        "inverted-dropout",
        pre=choice(
            "Inverted dropout with rate $r$ zeroes each entry with probability $r$. What else does it do?",
            ["Divides the kept entries by $1 - r$ in training; in evaluation it returns its input unchanged.",
             "Divides the kept entries by $r$ in training; in evaluation it returns its input unchanged.",
             "Multiplies the kept entries by $1 - r$, in training and in evaluation alike.",
             "Nothing else, and it runs in evaluation too."],
            answer="a",
            explanation="Scaling the kept entries by 1 / (1 - r) keeps every entry's expectation equal to x, so "
                        "evaluation and decoding can use the whole, deterministic model with nothing dropped and "
                        "no rescaling.",
            mistakes=["dropout/scaled_by_one_over_rate", "dropout/scaled_by_keep_probability",
                      "dropout/applied_in_eval_mode"]),
        post=number(
            "Dropout with rate 0.2 in training: an entry that was 3.0 and is kept comes out as what?",
            3.75, tolerance=1e-9,
            explanation="Kept entries are divided by 1 - 0.2 = 0.8: 3.0 / 0.8 = 3.75, so that on average "
                        "(0.8 * 3.75 + 0.2 * 0) the entry is still 3.0.",
            mistakes=["dropout/no_rescale", "dropout/scaled_by_one_over_rate"],
            compute=lambda: _kept_value(3.0, 0.2)),
    ),
    Concept(
        "one-pass",
        pre=choice(
            "One teacher-forced training step on targets of length $m$ (no pads): how many target positions "
            "are trained, in how many forward passes?",
            ["All $m$ positions, in one forward pass.", "One position per forward pass: $m$ passes.",
             "Only the last position, in one forward pass.", "All $m$ positions, in $m$ passes."],
            answer="a",
            explanation="The decoder reads the targets shifted right and the causal mask keeps each position to its "
                        "prefix, so one pass computes the predictions of all m prefixes and every position adds a "
                        "term to the loss.",
            mistakes=["train_step/targets_fed_unshifted"]),
        post=choice(
            "What makes the logits of position $t$ in that one pass equal to the logits of a pass over its "
            "prefix alone?",
            ["The padding mask.", "The causal mask: position $t$ cannot read any position after $t$.",
             "Dropout being off.", "The encoder output being computed once."],
            answer="b",
            explanation="With the causal mask nothing after position t reaches position t in any block, so the rest "
                        "of the sequence changes nothing there: the one pass gives each position what its prefix "
                        "alone would give, up to rounding.",
            mistakes=["causal_self_attention/no_mask"]),
    ),
    Concept(
        "overfit-check",
        pre=choice(
            "Before a long run you train on one small batch alone, label smoothing and dropout off, and the "
            "loss goes to nearly 0. What does that show?",
            ["The model will generalise to new data.",
             "The set-up is free of bugs.",
             "Data, model, loss, gradient and optimiser are wired so that the model can learn; it proves "
             "neither generalisation nor the absence of a leak.",
             "The learning rate is the best one."],
            answer="c",
            explanation="A model with many more numbers than the batch can memorise it, so a working set-up must "
                        "drive the loss to nearly 0; if it does not, something is broken. Passing shows no more "
                        "than that.",
            mistakes=["train_step/targets_fed_unshifted"]),
        post=choice(
            "A set-up feeds the decoder the targets themselves, unshifted. What does the overfit check on one "
            "batch show?",
            ["It fails: the loss stays high.",
             "It passes, loss near 0: the check cannot catch a decoder that reads the answer.",
             "It crashes with a shape error.",
             "It passes only with dropout on."],
            answer="b",
            explanation="Reading the token it must predict makes the loss fall even faster; the check only proves "
                        "that the set-up can lower the loss. A leak of the answer has to be caught otherwise, on "
                        "held-out data or by generating.",
            mistakes=["train_step/targets_fed_unshifted"]),
    ),
]
