"""Attention against PyTorch's own kernels, in float64, to 1e-10."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import encdec
from encdec import (MultiHeadAttention, create_causal_mask, cross_attention, padding_mask,
                    scaled_dot_product_attention, softmax)

TOL = 1e-10
t = torch.from_numpy


@pytest.mark.parametrize("shape,axis", [((5,), -1), ((3, 7), -1), ((3, 7), 0), ((2, 3, 4, 5), 1)])
def test_softmax_matches_torch(rng, shape, axis):
    x = rng.normal(size=shape) * 5
    np.testing.assert_allclose(softmax(x, axis=axis), torch.softmax(t(x), dim=axis).numpy(), atol=TOL, rtol=0)


def test_softmax_is_stable_for_large_logits(rng):
    x = rng.normal(size=(4, 9)) * 1e3
    out = softmax(x)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, torch.softmax(t(x), dim=-1).numpy(), atol=TOL, rtol=0)


def test_softmax_accepts_float32_and_returns_float64(rng):
    x = rng.normal(size=(3, 4)).astype(np.float32)
    out = softmax(x)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, torch.softmax(t(x.astype(np.float64)), -1).numpy(), atol=TOL)


def test_fully_masked_row_gives_zero_weights_not_nan():
    x = np.array([[0.0, 1.0, 2.0], [-np.inf, -np.inf, -np.inf]])
    out = softmax(x)
    np.testing.assert_array_equal(out[1], 0.0)
    np.testing.assert_allclose(out[0].sum(), 1.0)


def test_attention_with_a_fully_masked_query_row_outputs_zeros(rng):
    Q, K, V = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    mask = np.zeros((3, 5))
    mask[1] = -np.inf
    out, w = scaled_dot_product_attention(Q, K, V, mask)
    assert not np.isnan(out).any() and not np.isnan(w).any()
    np.testing.assert_array_equal(out[1], 0.0)
    np.testing.assert_array_equal(w[1], 0.0)


def torch_sdpa(Q, K, V, mask=None):
    return F.scaled_dot_product_attention(t(Q), t(K), t(V), attn_mask=None if mask is None else t(mask)).numpy()


@pytest.mark.parametrize("lead", [(), (2,), (2, 3)])
@pytest.mark.parametrize("m,n,d_k,d_v", [(4, 6, 3, 5), (5, 5, 8, 8), (1, 7, 2, 3)])
def test_sdpa_matches_torch(rng, lead, m, n, d_k, d_v):
    Q, K, V = rng.normal(size=lead + (m, d_k)), rng.normal(size=lead + (n, d_k)), rng.normal(size=lead + (n, d_v))
    out, w = scaled_dot_product_attention(Q, K, V)
    assert out.shape == lead + (m, d_v) and w.shape == lead + (m, n)
    np.testing.assert_allclose(out, torch_sdpa(Q, K, V), atol=TOL, rtol=0)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-12)


def test_sdpa_with_causal_and_padding_masks_matches_torch(rng):
    B, h, m, d_k = 2, 3, 5, 4
    Q, K, V = (rng.normal(size=(B, h, m, d_k)) for _ in range(3))
    tokens = np.array([[5, 6, 7, 0, 0], [5, 6, 7, 8, 9]])
    mask = create_causal_mask(m) + padding_mask(tokens, 0)  # (B, 1, m, m)
    out, w = scaled_dot_product_attention(Q, K, V, mask)
    np.testing.assert_allclose(out, torch_sdpa(Q, K, V, np.broadcast_to(mask, (B, h, m, m)).copy()), atol=TOL)
    assert np.all(w[0, :, :, 3:] == 0.0)
    assert np.all(np.triu(w[1, 0], 1) == 0.0)


def test_sdpa_large_logits_match_torch(rng):
    Q, K, V = rng.normal(size=(4, 8)) * 30, rng.normal(size=(6, 8)) * 30, rng.normal(size=(6, 3))
    out, _ = scaled_dot_product_attention(Q, K, V)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, torch_sdpa(Q, K, V), atol=TOL, rtol=0)


def test_sdpa_float32_inputs_computed_in_float64(rng):
    Q, K, V = (rng.normal(size=(3, 4)).astype(np.float32) for _ in range(3))
    out, _ = scaled_dot_product_attention(Q, K, V)
    assert out.dtype == np.float64
    ref = torch_sdpa(*(a.astype(np.float64) for a in (Q, K, V)))
    np.testing.assert_allclose(out, ref, atol=TOL)


def test_cross_attention_is_rectangular_and_rows_sum_to_one(rng):
    m, n, d = 4, 6, 8
    Q, K, V = rng.normal(size=(m, d)), rng.normal(size=(n, d)), rng.normal(size=(n, d))
    src = np.array([3, 4, 5, 6, 0, 0])
    out, w = cross_attention(Q, K, V, padding_mask(src, 0)[..., 0, :, :])
    assert w.shape == (m, n)
    np.testing.assert_allclose(w.sum(-1), 1.0)
    assert np.all(w[:, 4:] == 0.0)
    np.testing.assert_allclose(out, torch_sdpa(Q, K, V, np.broadcast_to(padding_mask(src, 0)[0, 0], (m, n)).copy()), atol=TOL)


def test_causal_mask_values():
    mask = create_causal_mask(4)
    assert mask.shape == (4, 4)
    for i in range(4):
        for j in range(4):
            assert mask[i, j] == (0.0 if j <= i else -np.inf)


def test_padding_mask_shape_and_values():
    tokens = np.array([[4, 5, 0], [6, 0, 0]])
    mask = padding_mask(tokens, pad_id=0)
    assert mask.shape == (2, 1, 1, 3)
    np.testing.assert_array_equal(mask[:, 0, 0], [[0, 0, -np.inf], [0, -np.inf, -np.inf]])


def copy_into_torch_mha(mha):
    d = mha.d_model
    ref = torch.nn.MultiheadAttention(d, mha.n_heads, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        ref.in_proj_weight.copy_(t(np.concatenate([mha.W_q.T, mha.W_k.T, mha.W_v.T])))
        ref.out_proj.weight.copy_(t(mha.W_o.T))
    return ref


@pytest.mark.parametrize("n_heads", [1, 2, 4])
def test_mha_self_attention_matches_torch_multiheadattention(rng, n_heads):
    d, B, m = 8, 3, 5
    mha = MultiHeadAttention(d, n_heads, rng=rng)
    x = rng.normal(size=(B, m, d))
    out, w = mha(x)
    ref_out, ref_w = copy_into_torch_mha(mha)(t(x), t(x), t(x), average_attn_weights=False)
    np.testing.assert_allclose(out, ref_out.detach().numpy(), atol=TOL)
    np.testing.assert_allclose(w, ref_w.detach().numpy(), atol=TOL)
    assert w.shape == (B, n_heads, m, m)


def test_mha_cross_attention_with_padding_matches_torch(rng):
    d, h, B, m, n = 12, 3, 2, 4, 6
    mha = MultiHeadAttention(d, h, rng=rng)
    x, enc = rng.normal(size=(B, m, d)), rng.normal(size=(B, n, d))
    src = np.array([[3, 4, 5, 0, 0, 0], [3, 4, 5, 6, 7, 8]])
    out, w = mha(x, key_value_input=enc, mask=padding_mask(src, 0))
    ref_out, ref_w = copy_into_torch_mha(mha)(t(x), t(enc), t(enc), key_padding_mask=t(src == 0),
                                               average_attn_weights=False)
    np.testing.assert_allclose(out, ref_out.detach().numpy(), atol=TOL)
    np.testing.assert_allclose(w, ref_w.detach().numpy(), atol=TOL)
    assert w.shape == (B, h, m, n)


def test_mha_causal_matches_torch(rng):
    d, h, m = 8, 2, 5
    mha = MultiHeadAttention(d, h, rng=rng)
    x = rng.normal(size=(m, d))
    out, _ = mha(x, mask=create_causal_mask(m))
    ref, _ = copy_into_torch_mha(mha)(t(x)[None], t(x)[None], t(x)[None], attn_mask=t(create_causal_mask(m)))
    np.testing.assert_allclose(out, ref[0].detach().numpy(), atol=TOL)


def test_mha_unbatched_equals_each_batch_element(rng):
    mha = MultiHeadAttention(8, 2, rng=rng)
    x = rng.normal(size=(3, 5, 8))
    out, _ = mha(x)
    for b in range(3):
        np.testing.assert_allclose(mha(x[b])[0], out[b], atol=1e-13)


def test_split_and_merge_heads_are_inverse(rng):
    x = rng.normal(size=(2, 5, 12))
    heads = encdec.split_heads(x, 3)
    assert heads.shape == (2, 3, 5, 4)
    np.testing.assert_array_equal(heads[:, 1], x[..., 4:8])
    np.testing.assert_array_equal(encdec.merge_heads(heads), x)


def test_rng_makes_weights_reproducible():
    a = MultiHeadAttention(8, 2, rng=np.random.default_rng(3))
    b = MultiHeadAttention(8, 2, rng=np.random.default_rng(3))
    c = MultiHeadAttention(8, 2, rng=np.random.default_rng(4))
    np.testing.assert_array_equal(a.W_q, b.W_q)
    assert not np.array_equal(a.W_q, c.W_q)
