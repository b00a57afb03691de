"""Exercise 6.2, embed: the mistakes of the scaled embedding plus the position encodings."""

import numpy as np

from ...layers import sinusoidal_positions
from .. import mistake


# -- Exercise 6.2 embed ----------------------------------------------------------------------------------
@mistake("embed", "no_scale",
         "the embedding rows are not multiplied by sqrt(d_model). E is initialised with variance "
         "1/d_model, so the entries of its rows (RMS 1/sqrt(d_model)) are about sqrt(d_model/2) times "
         "smaller than those of the position encodings (RMS 0.71), which would drown them. "
         "Use E[tokens] * sqrt(d_model) + PE.")
def embed(model, tokens):
    d = model.config.d_model
    return model.embedding[tokens] + sinusoidal_positions(tokens.shape[-1], d)


@mistake("embed", "positions_scaled_too",
         "the sum (E[tokens] + PE) is scaled, so the positions are multiplied by sqrt(d_model) too. "
         "Scale the embedding rows only, then add the positions: E[tokens] * sqrt(d_model) + PE.")
def embed(model, tokens):  # noqa: F811
    d = model.config.d_model
    return (model.embedding[tokens] + sinusoidal_positions(tokens.shape[-1], d)) * np.sqrt(d)


@mistake("embed", "divided_by_sqrt_d",
         "the embedding rows are divided by sqrt(d_model) instead of multiplied by it: the "
         "scale brings entries of variance 1/d_model up to unit variance, the same order as the positions.")
def embed(model, tokens):  # noqa: F811
    d = model.config.d_model
    return model.embedding[tokens] / np.sqrt(d) + sinusoidal_positions(tokens.shape[-1], d)


@mistake("embed", "scaled_by_d",
         "the embedding rows are multiplied by d_model instead of sqrt(d_model). Each entry has "
         "standard deviation 1/sqrt(d_model); multiplying by sqrt(d_model) makes it 1.")
def embed(model, tokens):  # noqa: F811
    d = model.config.d_model
    return model.embedding[tokens] * d + sinusoidal_positions(tokens.shape[-1], d)


@mistake("embed", "no_positions",
         "the position encodings are never added, so the model cannot tell a token's place in the "
         "sequence (attention by itself ignores order). Add sinusoidal_positions(T, d_model).")
def embed(model, tokens):  # noqa: F811
    return model.embedding[tokens] * np.sqrt(model.config.d_model)


@mistake("embed", "positions_by_token_id",
         "the position encodings are indexed by the token ids (PE[tokens]). PE is indexed by the "
         "position in the sequence, 0, 1, ..., T-1, whatever the token there: add "
         "sinusoidal_positions(T, d_model) for T = tokens.shape[-1].")
def embed(model, tokens):  # noqa: F811
    d = model.config.d_model
    return model.embedding[tokens] * np.sqrt(d) + sinusoidal_positions(model.config.vocab_size, d)[tokens]


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("embed", "sin_cos_swapped",
         "the even columns of the position encodings hold cosines and the odd ones sines: the other way "
         "round. PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(...).")
def embed(model, tokens):
    d = model.config.d_model
    pos = np.arange(tokens.shape[-1])[:, None]
    angles = pos / 10000.0 ** (np.arange(0, d, 2) / d)
    pe = np.zeros((tokens.shape[-1], d))
    pe[:, 0::2] = np.cos(angles)
    pe[:, 1::2] = np.sin(angles[:, : d // 2])
    return model.embedding[tokens] * np.sqrt(d) + pe


@mistake("embed", "positions_from_one",
         "the positions count from 1: the first token gets PE[1]. Positions count from 0: add "
         "PE[0 .. T-1], sinusoidal_positions(T, d_model).")
def embed(model, tokens):  # noqa: F811
    d, T = model.config.d_model, tokens.shape[-1]
    return model.embedding[tokens] * np.sqrt(d) + sinusoidal_positions(T + 1, d)[1:]
