"""The small random NumPy models of Exercises 10.3 and 10.4 (their torch twins hold the same
weights), and the name of an entry of their parameters flattened in name order, for messages."""

import functools

import numpy as np

from ...model import Seq2Seq
from ..fixtures import PAD, generator, randomize


def _np_model(seed, V=11, d=8, h=2, d_ff=12, ne=1, nd=1, pad_id=PAD):
    m = Seq2Seq(vocab_size=V, d_model=d, n_heads=h, d_ff=d_ff, n_encoder_layers=ne, n_decoder_layers=nd,
                pad_id=pad_id, rng=seed)
    randomize(m, generator(1040 + seed))
    return m


@functools.cache
def _flat_names(sizes=(11, 8, 2, 12, 1, 1)):
    """[(name, shape, start)] of the parameters of _np_model(*, *sizes), flattened in name order."""
    out, start = [], 0
    for name, p in sorted(_np_model(0, *sizes).parameters().items()):
        out.append((name, p.shape, start))
        start += p.size
    return out


def _flat_name(i, sizes=(11, 8, 2, 12, 1, 1)):
    """Entry i of the flattened parameters, as `name[index]`."""
    for name, shape, start in reversed(_flat_names(sizes)):
        if i >= start:
            index = np.unravel_index(i - start, shape)
            return f"`{name}`[{', '.join(str(int(k)) for k in index)}]"
    return f"entry {i}"
