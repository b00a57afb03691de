"""Kinds of slip named since batch v (each written as a student would, each diagnosis read from the checker with
its catalog emptied; right answers written otherwise keep full marks): a helper's list default that earlier calls
fill (defaults.py), a `return` indented into a loop (streams.py), a reduction given no axis and a slice given one
index (default_axes.py), a gather written for one sequence and a batch's boolean mask used to index one (m, m)
array (indexing.py), a normalisation along a fixed axis where the case asks for another (properties.py), one
`None` where two belong (size_one_axes.py), and a factor on one operand of a min (factors.py)."""

import numpy as np

from encdec.checks import lesson01, lesson04, lesson07
from test_repair import feedback, no_catalog, time_enough  # noqa: F401 (fixtures)


def _steps(mha, H_dec, K, V, mask, outputs=[], weights=[]):
    for t in range(H_dec.shape[-2]):
        out, w = mha.attend(H_dec[..., t:t + 1, :], K, V, mask)
        outputs.append(out)
        weights.append(w)
    return outputs, weights


def step_by_step_with_a_list_default(mha, H_enc, H_dec, mask=None):
    K, V = mha.project_kv(H_enc)
    outputs, weights = _steps(mha, H_dec, K, V, mask)
    return np.concatenate(outputs, axis=-2), np.concatenate(weights, axis=-2)


def test_a_helpers_list_default_is_named(no_catalog, time_enough):
    no_catalog("cross_attention_step_by_step")
    score, text = feedback(lesson04.check_cross_attention_step_by_step, step_by_step_with_a_list_default)
    assert score < lesson04.CROSS_ATTENTION_STEP_BY_STEP.points
    assert "`_steps` has the default `outputs=[]`, `weights=[]`" in text, text


def step_by_step_returning_early(mha, H_enc, H_dec, mask=None):
    K, V = mha.project_kv(H_enc)
    outputs, weights = [], []
    for t in range(H_dec.shape[-2]):
        out, w = mha.attend(H_dec[..., t:t + 1, :], K, V, mask)
        outputs.append(out)
        weights.append(w)
        return np.concatenate(outputs, axis=-2), np.concatenate(weights, axis=-2)


def test_a_return_inside_the_loop_is_named(no_catalog, time_enough):
    no_catalog("cross_attention_step_by_step")
    score, text = feedback(lesson04.check_cross_attention_step_by_step, step_by_step_returning_early)
    assert score < lesson04.CROSS_ATTENTION_STEP_BY_STEP.points
    assert "is indented inside the loop, so the function returns during the first pass" in text, text


def step_by_step_sliced_in_front(mha, H_enc, H_dec, mask=None):
    K, V = mha.project_kv(H_enc)
    pairs = [mha.attend(H_dec[t:t + 1], K, V, mask) for t in range(H_dec.shape[-2])]
    return np.concatenate([o for o, _ in pairs], axis=-2), np.concatenate([w for _, w in pairs], axis=-2)


def test_a_slice_of_the_first_axis_is_named(no_catalog, time_enough):
    no_catalog("cross_attention_step_by_step")
    score, text = feedback(lesson04.check_cross_attention_step_by_step, step_by_step_sliced_in_front)
    assert score < lesson04.CROSS_ATTENTION_STEP_BY_STEP.points
    assert "With `H_dec[..., t:t + 1, :]` in place of `H_dec[t:t + 1]` there" in text, text


def rms_backward_with_one_mean(dout, x, gamma, eps=1e-6):
    r = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    g = dout * gamma
    dx = r * g - x * r ** 3 * (g * x).mean()
    dgamma = (dout * x * r).reshape(-1, x.shape[-1]).sum(axis=0)
    return dx, dgamma


def test_a_reduction_with_no_axis_is_named(no_catalog, time_enough):
    no_catalog("rms_norm_backward")
    score, text = feedback(lesson07.check_rms_norm_backward, rms_backward_with_one_mean)
    assert score < lesson07.RMS_NORM_BACKWARD.points
    assert "With axis=-1, keepdims=True added to `(g * x).mean()` there" in text, text


def cross_entropy_gathered_for_one_sequence(logits, targets, pad_id=None):
    z = logits - logits.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    keep = np.ones(targets.shape) if pad_id is None else (targets != pad_id).astype(float)
    n = keep.sum()
    if n == 0:
        return 0.0, np.zeros_like(logits)
    rows = np.arange(targets.shape[-1])
    loss = float(-(logp[rows, targets] * keep).sum() / n)
    grad = np.exp(logp)
    grad[rows, targets] -= 1.0
    return loss, grad * keep[..., None] / n


def test_a_gather_for_one_sequence_is_named(no_catalog, time_enough):
    no_catalog("softmax_cross_entropy")
    score, text = feedback(lesson07.check_softmax_cross_entropy, cross_entropy_gathered_for_one_sequence)
    assert score < lesson07.SOFTMAX_CROSS_ENTROPY.points
    assert "`logp[rows, targets]` is a gather written for one sequence" in text, text
    assert "np.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]" in text, text


def softmax_summed_over_the_last_axis(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_a_normalisation_along_a_fixed_axis_points_at_the_axis_argument(no_catalog, time_enough):
    no_catalog("softmax")
    score, text = feedback(lesson01.check_softmax, softmax_summed_over_the_last_axis)
    assert score < lesson01.SOFTMAX.points
    assert "use the `axis` argument in every step that takes an axis" in text, text
    assert "not each row" not in text, text


def decoder_mask_by_boolean_index(tgt_in, pad_id):
    m = tgt_in.shape[-1]
    mask = np.triu(np.full((m, m), -np.inf), k=1)
    mask[:, tgt_in == pad_id] = -np.inf
    return mask[None]


def test_a_batchs_boolean_index_into_one_mask_is_named(no_catalog, time_enough):
    from encdec.checks import lesson03
    no_catalog("decoder_mask")
    score, text = feedback(lesson03.check_decoder_mask, decoder_mask_by_boolean_index)
    assert score < lesson03.DECODER_MASK.points
    assert "with the boolean array `tgt_in == pad_id`, which has shape (2, 5)" in text, text


def decoder_mask_one_axis_short(tgt_in, pad_id):
    from encdec.attention import create_causal_mask
    pads = np.where(tgt_in == pad_id, -np.inf, 0.0)[..., None, :]
    return create_causal_mask(tgt_in.shape[-1]) + pads


def test_one_none_where_two_belong_is_named(no_catalog, time_enough):
    from encdec.checks import lesson03
    no_catalog("decoder_mask")
    score, text = feedback(lesson03.check_decoder_mask, decoder_mask_one_axis_short)
    assert score < lesson03.DECODER_MASK.points
    assert "[..., None, None, :]` in place of" in text, text


def schedule_with_the_factor_on_one_side(step, d_model, warmup_steps, factor=1.0):
    rising = factor * step * warmup_steps ** -1.5
    falling = step ** -0.5
    return d_model ** -0.5 * min(falling, rising)


def test_a_factor_on_one_operand_of_a_min_is_named(no_catalog, time_enough):
    from encdec.checks import lesson08
    no_catalog("warmup_schedule")
    score, text = feedback(lesson08.check_warmup_schedule, schedule_with_the_factor_on_one_side)
    assert score < lesson08.WARMUP_SCHEDULE.points
    assert "With `factor *` added to `falling = step ** (-0.5)` there" in text, text
