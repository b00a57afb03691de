"""What several of Lesson 9's mistake modules share: `_banned`, the logits with some ids set to -inf, and
`_greedy_`, greedy decoding (with the reference cache or without) with one part replaceable."""

import numpy as np

from ...decoding import KVCache as KVCache_
from ...decoding import decode_step as decode_step_


def _banned(logits, ids):
    logits = np.array(logits, dtype=np.float64)
    logits[..., list(ids)] = -np.inf
    return logits


def _greedy_(model, src, bos_id, eos_id, max_len, steps=None, mask=None, cached=False):
    """Greedy decoding as the course writes it, with one part replaceable: the number of steps, the
    source mask given to the decoder."""
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    if mask is not None:
        src_mask = mask(src_mask)
    cache = KVCache_(model, H_enc, src_mask) if cached else None
    tgt_in = np.full((src2.shape[0], 1), bos_id)
    out = np.zeros((src2.shape[0], 0), dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len if steps is None else steps(max_len)):
        logits = decode_step_(model, tgt_in[:, -1], cache) if cached else model.decode(tgt_in, H_enc, src_mask)[:, -1]
        nxt = np.where(done, pad, np.argmax(_banned(logits, [pad, bos_id]), axis=-1))
        out = np.concatenate([out, nxt[:, None]], axis=1)
        done = done | (nxt == eos_id)
        if done.all():
            break
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
    return out[0] if single else out
