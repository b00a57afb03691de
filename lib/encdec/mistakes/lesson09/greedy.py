"""Exercise 9.1, greedy_decode: the mistakes of greedy decoding without a cache (and `_greedy_banning`,
greedy decoding with a chosen set of ids banned)."""

import numpy as np

from .. import mistake
from .shared import _banned, _greedy_


# -- Exercise 9.1 greedy_decode ----------------------------------------------------------------------------
@mistake("greedy_decode", "never_stops_at_eos",
         "decoding does not stop at EOS: it always runs max_len steps, so the output goes on after "
         "the sentence has ended. Stop a row at its first EOS (pad it from there on) and stop the "
         "loop once every row has produced EOS.")
def greedy_decode(model, src, bos_id, eos_id, max_len):
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    H_enc, src_mask = model.encode(src2)
    tgt_in = np.full((src2.shape[0], 1), bos_id)
    for _ in range(max_len):
        logits = _banned(model.decode(tgt_in, H_enc, src_mask)[:, -1], [model.config.pad_id, bos_id])
        tgt_in = np.concatenate([tgt_in, np.argmax(logits, axis=-1)[:, None]], axis=1)
    out = tgt_in[:, 1:]
    return out[0] if single else out


@mistake("greedy_decode", "first_position_logits",
         "the next token is read from the logits of the first position (logits[:, 0]) instead of the "
         "last. Position t predicts token t + 1, so after feeding BOS y1 ... y_t the prediction for "
         "the next token sits at the last position: logits[:, -1].")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    tgt_in = np.full((src2.shape[0], 1), bos_id)
    out = np.zeros((src2.shape[0], 0), dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        logits = _banned(model.decode(tgt_in, H_enc, src_mask)[:, 0], [pad, bos_id])
        nxt = np.where(done, pad, np.argmax(logits, axis=-1))
        out = np.concatenate([out, nxt[:, None]], axis=1)
        done = done | (nxt == eos_id)
        if done.all():
            break
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
    return out[0] if single else out


@mistake("greedy_decode", "bos_in_output",
         "the output starts with BOS. BOS is only the decoder's first input, never a generated "
         "token: return the tokens generated after it.")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    tgt_in = np.full((src2.shape[0], 1), bos_id)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        logits = _banned(model.decode(tgt_in, H_enc, src_mask)[:, -1], [pad, bos_id])
        nxt = np.where(done, pad, np.argmax(logits, axis=-1))
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
        done = done | (nxt == eos_id)
        if done.all():
            break
    return tgt_in[0] if single else tgt_in


@mistake("greedy_decode", "pad_not_banned",
         "the pad id is allowed as an output; only BOS is banned. The pad is never a real next token: set "
         "the logits of both model.config.pad_id and bos_id to -inf before taking the argmax.")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _greedy_banning(model, src, bos_id, eos_id, max_len, lambda pad: [bos_id])


@mistake("greedy_decode", "bos_not_banned",
         "BOS is allowed as an output; only the pad id is banned. BOS is only the decoder's first input, never "
         "a next token: set the logits of both bos_id and model.config.pad_id to -inf before the argmax.")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _greedy_banning(model, src, bos_id, eos_id, max_len, lambda pad: [pad])


def _greedy_banning(model, src, bos_id, eos_id, max_len, banned):
    """Greedy decoding (no cache) with the ids banned(pad_id) set to -inf at every step."""
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    tgt_in = np.full((src2.shape[0], 1), bos_id)
    out = np.zeros((src2.shape[0], 0), dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        logits = np.array(model.decode(tgt_in, H_enc, src_mask)[:, -1], dtype=np.float64)
        logits[:, banned(pad)] = -np.inf
        nxt = np.where(done, pad, np.argmax(logits, axis=-1))
        out = np.concatenate([out, nxt[:, None]], axis=1)
        done = done | (nxt == eos_id)
        if done.all():
            break
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
    return out[0] if single else out


@mistake("greedy_decode", "special_tokens_not_banned",
         "BOS and pad are allowed as outputs. Neither is ever a real next token: set their logits to "
         "-inf before taking the argmax.")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _greedy_banning(model, src, bos_id, eos_id, max_len, lambda pad: [])


@mistake("greedy_decode", "eos_left_out",
         "the final EOS is left out of the output. Keep it: it is a generated token, and it is how "
         "the caller (and the loss) knows the sentence ended rather than ran out of max_len.")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    tgt_in = np.full((src2.shape[0], 1), bos_id)
    out = np.zeros((src2.shape[0], 0), dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        logits = _banned(model.decode(tgt_in, H_enc, src_mask)[:, -1], [pad, bos_id])
        nxt = np.where(done, pad, np.argmax(logits, axis=-1))
        done = done | (nxt == eos_id)
        out = np.concatenate([out, np.where(nxt == eos_id, pad, nxt)[:, None]], axis=1)
        if done.all():
            break
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
    keep = max(int(np.max(np.sum(out != pad, axis=1))), 1)
    out = out[:, :keep]
    return out[0] if single else out


@mistake("greedy_decode", "finished_rows_keep_writing",
         "a row that has produced EOS keeps generating tokens while the other rows finish. After its "
         "first EOS a row must hold pad_id only: np.where(done, pad_id, next_token).")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    tgt_in = np.full((src2.shape[0], 1), bos_id)
    out = np.zeros((src2.shape[0], 0), dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        logits = _banned(model.decode(tgt_in, H_enc, src_mask)[:, -1], [pad, bos_id])
        nxt = np.argmax(logits, axis=-1)
        out = np.concatenate([out, nxt[:, None]], axis=1)
        done = done | (nxt == eos_id)
        if done.all():
            break
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
    return out[0] if single else out


@mistake("greedy_decode", "stops_when_one_row_ends",
         "the loop stops as soon as one row produces EOS, cutting the other rows short. Stop when "
         "every row is done: done.all(), not done.any().")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    tgt_in = np.full((src2.shape[0], 1), bos_id)
    out = np.zeros((src2.shape[0], 0), dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        logits = _banned(model.decode(tgt_in, H_enc, src_mask)[:, -1], [pad, bos_id])
        nxt = np.where(done, pad, np.argmax(logits, axis=-1))
        out = np.concatenate([out, nxt[:, None]], axis=1)
        done = done | (nxt == eos_id)
        if done.any():
            break
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
    return out[0] if single else out


@mistake("greedy_decode", "only_newest_token_fed",
         "only the newest token is fed to the decoder at each step, so it forgets everything it "
         "wrote before (and reads every token at position 0). Without a KV cache the decoder must "
         "see the whole prefix BOS y1 ... y_t at every step.")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    last = np.full((src2.shape[0], 1), bos_id)
    out = np.zeros((src2.shape[0], 0), dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for _ in range(max_len):
        logits = _banned(model.decode(last, H_enc, src_mask)[:, -1], [pad, bos_id])
        nxt = np.where(done, pad, np.argmax(logits, axis=-1))
        out = np.concatenate([out, nxt[:, None]], axis=1)
        done = done | (nxt == eos_id)
        if done.all():
            break
        last = nxt[:, None]
    return out[0] if single else out


@mistake("greedy_decode", "padded_to_max_len",
         "the output always has max_len columns, padded after every row has ended. Return only the "
         "steps that were taken: L is the step at which the last row produced EOS (or max_len).")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(src2)
    tgt_in = np.full((src2.shape[0], 1), bos_id)
    out = np.full((src2.shape[0], max_len), pad, dtype=np.int64)
    done = np.zeros(src2.shape[0], dtype=bool)
    for t in range(max_len):
        logits = _banned(model.decode(tgt_in, H_enc, src_mask)[:, -1], [pad, bos_id])
        nxt = np.where(done, pad, np.argmax(logits, axis=-1))
        out[:, t] = nxt
        done = done | (nxt == eos_id)
        if done.all():
            break
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
    return out[0] if single else out


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("greedy_decode", "one_step_short",
         "the loop runs max_len - 1 times, so a row that needs all max_len tokens is cut one short. Generate "
         "up to max_len tokens: for _ in range(max_len).")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _greedy_(model, src, bos_id, eos_id, max_len, steps=lambda n: n - 1)


@mistake("greedy_decode", "source_padding_ignored",
         "the decoder gets a source mask of zeros, so it attends to the source pads: pass the src_mask that "
         "model.encode returns (-inf at the pad positions) to every decode call.")
def greedy_decode(model, src, bos_id, eos_id, max_len):  # noqa: F811
    return _greedy_(model, src, bos_id, eos_id, max_len, mask=np.zeros_like)
