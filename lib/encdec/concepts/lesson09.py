"""Lesson 9, Decoding: the concepts asked before and after the lesson."""

import numpy as np

from .. import decoding
from .items import Concept, choice, number


def _normalised(log_p, length, alpha=1.0):
    return log_p / length ** alpha


CONCEPTS = [
    Concept(
        "next-token-logits",
        pre=choice(
            "Greedy decoding has fed the decoder `<bos>` $y_1\\, y_2\\, y_3$. Which logits give the next token, "
            "$y_4$?",
            ["Those of the last position, the one fed $y_3$.",
             "Those of the first position, the one fed `<bos>`.",
             "The mean of the logits over all positions.",
             "Those of a fifth position, fed a pad."],
            answer="a",
            explanation="Position j predicts token j + 1: after feeding <bos> y1 y2 y3 the prediction for y4 sits "
                        "at the last position. The earlier positions predict tokens already chosen.",
            mistakes=["greedy_decode/first_position_logits"]),
        post=number(
            "After feeding `<bos>` and 5 generated tokens, the decoder returns logits of shape $(1, 6, V)$. At "
            "which index of the position axis, counting from 0, are the logits of the next token?",
            5,
            explanation="The positions are 0 (<bos>) to 5 (the fifth generated token); the last one, index 5 "
                        "(or -1), predicts the next token.",
            mistakes=["greedy_decode/first_position_logits"]),
    ),
    Concept(
        "temperature",
        pre=choice(
            "Sampling draws from $\\operatorname{softmax}(z / T)$. What does $T = 0.5$ do, compared with "
            "$T = 1$?",
            ["It flattens the distribution: unlikely tokens are drawn more often.",
             "It sharpens the distribution: the likeliest tokens get more of the probability.",
             "Nothing: the temperature only rescales the logits, and the softmax undoes that.",
             "It makes every allowed token equally likely."],
            answer="b",
            explanation="Dividing by T < 1 spreads the logits further apart, which sharpens the softmax (T -> 0 is "
                        "greedy); T > 1 squeezes them together and flattens it. A common scale of the logits is "
                        "not undone by the softmax: only a common shift is.",
            mistakes=["sample_next_token/temperature_multiplies", "sample_next_token/temperature_ignored",
                      "sample_next_token/uniform_over_the_allowed_tokens"]),
        post=number(
            "Two tokens with logits $z = [2, 0]$, sampled at temperature $T = 2$: what is the probability of the "
            "first token? (Two decimals.)",
            0.73, tolerance=0.01,
            explanation="z / T = [1, 0]; softmax gives e / (e + 1) = 0.731 to the first token. At T = 1 it would "
                        "get 0.881: the higher temperature flattened the distribution.",
            mistakes=["sample_next_token/temperature_multiplies"],
            compute=lambda: float(decoding.next_token_distribution(np.array([2.0, 0.0]), temperature=2.0)[0])),
    ),
    Concept(
        "nucleus",
        pre=choice(
            "Top-p (nucleus) sampling with $p = 0.9$ draws only from which tokens?",
            ["The smallest set of most probable tokens whose total probability reaches 0.9.",
             "The most probable tokens whose running total stays below 0.9.",
             "The most probable 90 % of the vocabulary, by count.",
             "Every token whose own probability is at least 0.9."],
            answer="a",
            explanation="Sort by decreasing probability and keep tokens until their total reaches p, the token "
                        "that carries it over p included; then renormalise and draw. Stopping below p would drop "
                        "that token (and with one dominant token keep nothing).",
            mistakes=["sample_next_token/nucleus_without_the_crossing_token",
                      "sample_next_token/nucleus_from_the_least_probable"]),
        post=number(
            "The next-token probabilities are $[0.5, 0.3, 0.15, 0.05]$ and `top_p` is $0.7$. How many tokens "
            "stay in the nucleus?",
            2,
            explanation="0.5 alone does not reach 0.7; 0.5 + 0.3 = 0.8 does. The nucleus is the first two tokens, "
                        "renormalised to 0.625 and 0.375.",
            mistakes=["sample_next_token/nucleus_without_the_crossing_token"],
            compute=lambda: int(np.count_nonzero(decoding.next_token_distribution(
                np.log(np.array([0.5, 0.3, 0.15, 0.05])), top_p=0.7)))),
    ),
    Concept(
        "length-normalisation",
        pre=choice(
            "Beam search ranks finished hypotheses by $\\log P(y) / |y|^{\\alpha}$ rather than by $\\log P(y)$. "
            "Why?",
            ["Every token adds a log-probability of at most 0, so raw totals favour short outputs.",
             "To turn log-probabilities back into probabilities.",
             "To make every score positive.",
             "To penalise long outputs, which are more often wrong."],
            answer="a",
            explanation="A sequence that stops early has fewer negative terms in its total, so the raw total "
                        "prefers short outputs. Dividing by the length (alpha = 1: the mean log-probability per "
                        "token) compares hypotheses of different lengths fairly.",
            mistakes=["beam_search/no_length_normalisation", "beam_search/alpha_ignored"]),
        post=choice(
            "Two finished hypotheses: A has 2 tokens and $\\log P = -1.2$; B has 5 tokens and $\\log P = -2.0$. "
            "With $\\alpha = 1$, which does beam search return first?",
            ["A: its total log-probability is higher.", "B: its normalised score is higher.",
             "Both tie.", "Neither: B is longer than the beam allows."],
            answer="b",
            explanation="A scores -1.2 / 2 = -0.6, B scores -2.0 / 5 = -0.4: B is better per token and comes "
                        "first, although its raw total is lower.",
            mistakes=["beam_search/no_length_normalisation"],
            compute=lambda: "A" if _normalised(-1.2, 2) > _normalised(-2.0, 5) else "B",
            values=["A", "B", "tie", "neither"]),
    ),
    Concept(
        "kv-cache",
        pre=choice(
            "With a KV cache, what does each decoding step feed through the decoder's blocks?",
            ["The whole prefix again, with the cached keys and values added to it.",
             "Only the newest token; its query attends over the cached keys and values of the earlier "
             "positions and its own.",
             "Only the newest token, attending to its own key and value alone.",
             "Only `<bos>`, at every step."],
            answer="b",
            explanation="Because of the causal mask the earlier positions never change, so their keys and values "
                        "are kept; each step pushes one token through the blocks and appends one row to every "
                        "self-attention cache. Cross-attention's keys and values are computed once.",
            mistakes=["decode_step/attends_to_itself_only", "cached_greedy_decode/whole_prefix_fed_again",
                      "cached_greedy_decode/bos_fed_every_step"]),
        post=number(
            "Without a cache, generating $L = 12$ tokens pushes $1 + 2 + \\dots + 12 = 78$ positions through "
            "the decoder. How many times fewer positions does cached decoding push?",
            6.5, tolerance=0.01,
            explanation="Cached decoding pushes one position per step, 12 in all: 78 / 12 = 6.5 times fewer, "
                        "(L + 1) / 2 in general. Attention still reads every cached key, so a step's attention "
                        "cost grows by one key per step."),
    ),
]
