"""A diagnosis describes the code the student wrote: answers written as students write them, each with a
slip whose output some other slip shares, and the words their feedback must (and must not) use."""

import contextlib
import io

import numpy as np
import pytest

from encdec.attention import create_causal_mask, softmax
from encdec.checks import lesson01, lesson03, lesson06, lesson09, lesson10


def feedback(exercise, answer, hidden=True):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        score = exercise.checker(answer, points=exercise.points, hidden=hidden)
    return float(score), out.getvalue()


def scores_keys_first(Q, K, V, mask=None):
    scores = K @ np.swapaxes(Q, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, axis=-1)
    return weights @ V, weights


def causal_keys_first(x, W_q, W_k, W_v):
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    scores = K @ np.swapaxes(Q, -1, -2) / np.sqrt(Q.shape[-1]) + create_causal_mask(x.shape[-2])
    weights = softmax(scores, axis=-1)
    return weights @ V, weights


@pytest.mark.lesson01
def test_keys_first_product_is_named_as_the_product_not_as_swapped_weights():
    score, text = feedback(lesson01.SCALED_DOT_PRODUCT_ATTENTION, scores_keys_first)
    assert score < 4 and ("keys first" in text or "`K` and `Q` exchanged in `K @ np.swapaxes(Q, -1, -2)`" in text), text


@pytest.mark.lesson03
def test_keys_first_in_causal_attention_is_not_called_a_swap_of_its_weights_alone():
    score, text = feedback(lesson03.CAUSAL_SELF_ATTENTION, causal_keys_first)
    assert score < 3 and "K Q^T" in text and "keys first" in text, text


def count_zero_as_none(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):
    n_decoder_layers = n_decoder_layers or n_encoder_layers
    d = d_model
    block = 4 * d * d + 2 * d * d_ff + d_ff + d
    return vocab_size * d + n_encoder_layers * (block + 2 * d) + n_decoder_layers * (block + 4 * d * d + 3 * d) + 2 * d


@pytest.mark.lesson06
def test_zero_decoder_layers_read_as_none_fails_a_visible_case_and_says_why():
    score, text = feedback(lesson06.PARAMETER_COUNT, count_zero_as_none, hidden=False)
    assert score < 3 and "is None" in text and "n_decoder_layers=0" in text, text
    assert "docstring lists" not in text


def greedy_banning_bos_only(model, src, bos_id, eos_id, max_len):
    src = np.asarray(src)
    single = src.ndim == 1
    rows = src[None] if single else src
    H_enc, src_mask = model.encode(rows)
    tgt_in = np.full((rows.shape[0], 1), bos_id)
    out, done = np.zeros((rows.shape[0], 0), dtype=np.int64), np.zeros(rows.shape[0], dtype=bool)
    for _ in range(max_len):
        logits = np.array(model.decode(tgt_in, H_enc, src_mask)[:, -1])
        logits[:, bos_id] = -np.inf
        token = np.where(done, model.config.pad_id, logits.argmax(axis=-1))
        out = np.concatenate([out, token[:, None]], axis=1)
        done |= token == eos_id
        if done.all():
            break
        tgt_in = np.concatenate([tgt_in, token[:, None]], axis=1)
    return out[0] if single else out


@pytest.mark.lesson09
def test_banning_only_bos_is_told_the_pad_is_allowed_not_that_both_are():
    score, text = feedback(lesson09.GREEDY_DECODE, greedy_banning_bos_only)
    assert score < 3 and "pad id is allowed as an output; only BOS is banned" in text, text
    assert "BOS and pad are allowed" not in text


def clip_before_backward(model, optimizer, src, tgt, bos_id, lr, max_norm):
    import torch
    for group in optimizer.param_groups:
        group["lr"] = lr
    tgt_in = torch.cat([torch.full_like(tgt[:, :1], bos_id), tgt[:, :-1]], dim=1)
    logits = model(src, tgt_in)
    keep = tgt != model.config.pad_id
    loss = torch.nn.functional.cross_entropy(logits[keep], tgt[keep])
    optimizer.zero_grad()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    loss.backward()
    optimizer.step()
    return loss.item(), norm.item()


@pytest.mark.lesson10
def test_clipping_before_backward_is_not_told_it_clipped_after_the_step():
    score, text = feedback(lesson10.TORCH_TRAIN_STEP, clip_before_backward, hidden=False)
    assert score < 3 and "before loss.backward()" in text, text


def causal_without_weights(x, W_q, W_k, W_v):
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]) + create_causal_mask(x.shape[-2])
    return softmax(scores, axis=-1) @ V


@pytest.mark.lesson03
def test_returning_one_array_for_a_pair_is_not_read_as_wrong_weights():
    score, text = feedback(lesson03.CAUSAL_SELF_ATTENTION, causal_without_weights)
    assert score == 0 and "expected a tuple of 2 (output, weights), got ndarray" in text
    assert "sums to" not in text, text
