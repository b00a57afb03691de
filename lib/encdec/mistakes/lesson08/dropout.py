"""Exercise 8.6, dropout: the mistakes of inverted dropout."""

import numpy as np

from .. import mistake


# -- Exercise 8.6 dropout ----------------------------------------------------------------------------------
# The checker calls each one with a seeded generator (or, for an answer that keeps u < 1 - rate, a generator
# that gives 1 - u), so every entry below is one wrong idea in either convention.
@mistake("dropout", "no_rescale",
         "the kept entries are not scaled up: x * keep. Then the expected output is (1 - rate) * x, not x, "
         "and the model would see larger activations at evaluation than in training. Inverted dropout "
         "divides the kept entries by the keep probability: x * keep / (1 - rate).")
def dropout(x, rate, rng, training=True):
    if not training or rate == 0:
        return x
    keep = rng.random(x.shape) >= rate
    return x * keep


@mistake("dropout", "scaled_by_one_over_rate",
         "the kept entries are divided by rate, not by 1 - rate. An entry is kept with probability "
         "1 - rate, so x * keep / (1 - rate) has expectation x; dividing by rate only works at rate 0.5.")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training or rate == 0:
        return x
    keep = rng.random(x.shape) >= rate
    return x * keep / rate


@mistake("dropout", "scaled_by_keep_probability",
         "the kept entries are multiplied by 1 - rate instead of divided by it, which shrinks the "
         "expectation to (1 - rate)^2 * x. Divide: x * keep / (1 - rate).")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training or rate == 0:
        return x
    keep = rng.random(x.shape) >= rate
    return x * keep * (1 - rate)


@mistake("dropout", "keeps_with_probability_rate",
         "an entry is kept where u < rate, so it survives with probability rate: at rate 0.1 nine entries "
         "in ten are dropped instead of one. rate is the probability of dropping: keep where u >= rate.")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training or rate == 0:
        return x
    keep = rng.random(x.shape) < rate
    return x * keep / (1 - rate)


@mistake("dropout", "applied_in_eval_mode",
         "entries are dropped in eval mode too (training=False is ignored). Evaluation and decoding must "
         "see the whole, deterministic model: with training=False return x unchanged and draw nothing.")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if rate == 0:
        return x
    keep = rng.random(x.shape) >= rate
    return x * keep / (1 - rate)


@mistake("dropout", "rescaled_at_evaluation",
         "this is the original, non-inverted dropout: kept entries unscaled in training and x * (1 - rate) "
         "at evaluation. The exercise asks for inverted dropout, which scales by 1 / (1 - rate) in "
         "training, so that eval mode (and decoding) is simply x, untouched.")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training:
        return x * (1 - rate)
    if rate == 0:
        return x
    keep = rng.random(x.shape) >= rate
    return x * keep


@mistake("dropout", "mask_broadcast_over_rows",
         "the mask is drawn with shape x.shape[-1:] and broadcast, so every row (every position of every "
         "sequence) drops the same features. Draw one independent number per entry: "
         "u = rng.random(x.shape).")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training or rate == 0:
        return x
    keep = rng.random(x.shape[-1:]) >= rate
    return x * keep / (1 - rate)


@mistake("dropout", "draws_when_off",
         "the output is right, but your function draws random numbers even when it returns x unchanged "
         "(training=False or rate 0). That moves the generator on, so every later mask differs from the "
         "reference. Return x before drawing anything when dropout is off.")
def dropout(x, rate, rng, training=True):  # noqa: F811
    u = rng.random(x.shape)
    if not training or rate == 0:
        return x
    return x * (u >= rate) / (1 - rate)


@mistake("dropout", "two_draws",
         "the generator is drawn twice (2 * x.size numbers) and the mask comes from the second draw. Draw "
         "u = rng.random(x.shape) exactly once: the same seed must give the same mask as the reference.")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training or rate == 0:
        return x
    u = rng.random(x.shape)
    keep = rng.random(u.shape) >= rate
    return x * keep / (1 - rate)


@mistake("dropout", "one_number_for_the_whole_array",
         "one random number decides for the whole array, so either every entry is dropped or none is. "
         "Dropout decides entry by entry, independently: one number per entry, u = rng.random(x.shape).")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training or rate == 0:
        return x
    if rng.random() < rate:
        return np.zeros_like(x)
    return x / (1 - rate)


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("dropout", "keeps_where_u_at_least_keep_probability",
         "an entry is kept where u >= 1 - rate: it survives with probability rate, not 1 - rate. Keep "
         "where u >= rate (probability 1 - rate), then scale by 1 / (1 - rate).")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training or rate == 0:
        return x
    u = rng.random(np.shape(x))
    return x * (u >= 1.0 - rate) / (1.0 - rate)


@mistake("dropout", "rescaled_by_kept_fraction",
         "the kept entries are divided by the fraction actually kept in this draw, not by 1 - rate: the "
         "scale then changes from call to call. Inverted dropout divides by the keep probability 1 - rate.")
def dropout(x, rate, rng, training=True):  # noqa: F811
    if not training or rate == 0:
        return x
    keep = rng.random(np.shape(x)) >= rate
    return x * keep / max(float(np.mean(keep)), 1e-12)
