"""Every backward pass against central finite differences and against torch autograd."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import encdec
from encdec import (attention_backward, gelu_backward, linear_backward, numerical_gradient,
                    rms_norm_backward, softmax_backward, softmax_cross_entropy)
from encdec import torch_model as tm

t = torch.from_numpy


def leaf(a):
    return torch.tensor(a, dtype=torch.float64, requires_grad=True)


def test_softmax_backward_matches_autograd_and_finite_differences(rng):
    x, dout = rng.normal(size=(3, 5)), rng.normal(size=(3, 5))
    p = encdec.softmax(x)
    dx = softmax_backward(dout, p)
    xt = leaf(x)
    torch.softmax(xt, -1).backward(t(dout))
    np.testing.assert_allclose(dx, xt.grad.numpy(), atol=1e-12)
    num = numerical_gradient(lambda: np.sum(encdec.softmax(x) * dout), x)
    assert encdec.relative_error(dx, num) < 1e-8


def test_softmax_backward_along_other_axis(rng):
    x, dout = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    dx = softmax_backward(dout, encdec.softmax(x, axis=0), axis=0)
    xt = leaf(x)
    torch.softmax(xt, 0).backward(t(dout))
    np.testing.assert_allclose(dx, xt.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("masked", [False, True])
def test_attention_backward_matches_autograd_and_finite_differences(rng, masked):
    B, m, n, d_k, d_v = 2, 3, 5, 4, 6
    Q, K, V = rng.normal(size=(B, m, d_k)), rng.normal(size=(B, n, d_k)), rng.normal(size=(B, n, d_v))
    mask = np.where(np.arange(n) >= 3, -np.inf, 0.0) if masked else None
    dout = rng.normal(size=(B, m, d_v))
    out, w = encdec.scaled_dot_product_attention(Q, K, V, mask)
    dQ, dK, dV = attention_backward(dout, Q, K, V, w)
    Qt, Kt, Vt = leaf(Q), leaf(K), leaf(V)
    F.scaled_dot_product_attention(Qt, Kt, Vt, attn_mask=None if mask is None else t(mask)).backward(t(dout))
    for mine, ref in ((dQ, Qt), (dK, Kt), (dV, Vt)):
        np.testing.assert_allclose(mine, ref.grad.numpy(), atol=1e-10)

    def loss():
        return np.sum(encdec.scaled_dot_product_attention(Q, K, V, mask)[0] * dout)

    for arr, grad in ((Q, dQ), (K, dK), (V, dV)):
        assert encdec.relative_error(grad, numerical_gradient(loss, arr)) < 1e-7


@pytest.mark.parametrize("shape", [(5,), (3, 5), (2, 3, 5)])
def test_rms_norm_backward_matches_autograd_and_finite_differences(rng, shape):
    x, gamma, dout = rng.normal(size=shape), rng.uniform(0.5, 1.5, size=shape[-1]), rng.normal(size=shape)
    dx, dgamma = rms_norm_backward(dout, x, gamma)
    xt, gt = leaf(x), leaf(gamma)
    F.rms_norm(xt, (shape[-1],), gt, 1e-6).backward(t(dout))
    np.testing.assert_allclose(dx, xt.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(dgamma, gt.grad.numpy(), atol=1e-10)

    def loss():
        return np.sum(encdec.rms_norm(x, gamma) * dout)

    assert encdec.relative_error(dx, numerical_gradient(loss, x)) < 1e-7
    assert encdec.relative_error(dgamma, numerical_gradient(loss, gamma)) < 1e-7


def test_linear_backward_matches_autograd(rng):
    x, W, b, dout = rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 5)), rng.normal(size=5), rng.normal(size=(2, 3, 5))
    dx, dW, db = linear_backward(dout, x, W)
    xt, Wt, bt = leaf(x), leaf(W), leaf(b)
    (xt @ Wt + bt).backward(t(dout))
    for mine, ref in ((dx, xt), (dW, Wt), (db, bt)):
        np.testing.assert_allclose(mine, ref.grad.numpy(), atol=1e-12)
    assert encdec.relative_error(dW, numerical_gradient(lambda: np.sum((x @ W + b) * dout), W)) < 1e-8


def test_gelu_backward_matches_autograd(rng):
    x, dout = rng.normal(size=(4, 6)) * 3, rng.normal(size=(4, 6))
    xt = leaf(x)
    F.gelu(xt, approximate="tanh").backward(t(dout))
    np.testing.assert_allclose(gelu_backward(dout, x), xt.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("pad_id,smoothing", [(None, 0.0), (0, 0.0), (0, 0.1), (None, 0.25)])
def test_cross_entropy_matches_torch_with_ignore_index_and_label_smoothing(rng, pad_id, smoothing):
    logits = rng.normal(size=(2, 5, 7)) * 3
    targets = np.array([[3, 4, 2, 0, 0], [5, 6, 1, 4, 2]])
    loss, dlogits = softmax_cross_entropy(logits, targets, pad_id=pad_id, label_smoothing=smoothing)
    lt = leaf(logits)
    ref = F.cross_entropy(lt.reshape(-1, 7), t(targets).reshape(-1), label_smoothing=smoothing,
                          ignore_index=-100 if pad_id is None else pad_id)
    ref.backward()
    assert abs(loss - ref.item()) < 1e-12
    np.testing.assert_allclose(dlogits, lt.grad.numpy(), atol=1e-12)
    if pad_id is not None:
        np.testing.assert_array_equal(dlogits[0, 3:], 0.0)


def test_cross_entropy_gradient_is_p_hat_minus_y(rng):
    logits, targets = rng.normal(size=(4, 6)), np.array([1, 2, 3, 4])
    _, dlogits = softmax_cross_entropy(logits, targets)
    np.testing.assert_allclose(dlogits * 4, encdec.softmax(logits) - np.eye(6)[targets], atol=1e-14)


def test_cross_entropy_large_logits_is_finite(rng):
    loss, d = softmax_cross_entropy(rng.normal(size=(3, 5)) * 1e3, np.array([0, 1, 2]))
    assert np.isfinite(loss) and np.all(np.isfinite(d))


def test_cross_entropy_all_pad_is_zero():
    loss, d = softmax_cross_entropy(np.ones((2, 3)), np.array([0, 0]), pad_id=0)
    assert loss == 0.0 and not d.any()


def test_whole_model_gradients_match_torch_autograd(small_model, batch):
    src, tgt = batch
    tgt_in = encdec.shift_right(tgt, 1)
    logits, cache = encdec.forward_with_cache(small_model, src, tgt_in)
    np.testing.assert_array_equal(logits, small_model(src, tgt_in))
    loss, dlogits = softmax_cross_entropy(logits, tgt, pad_id=0, label_smoothing=0.1)
    grads = encdec.model_backward(small_model, dlogits, cache)
    twin = tm.from_numpy(small_model)
    ref = F.cross_entropy(twin(t(src), t(tgt_in)).reshape(-1, 17), t(tgt).reshape(-1), ignore_index=0, label_smoothing=0.1)
    ref.backward()
    assert abs(loss - ref.item()) < 1e-12
    assert set(grads) == set(small_model.parameters())
    for name, p in twin.named_parameters():
        np.testing.assert_allclose(grads[name], p.grad.numpy(), atol=1e-10, err_msg=name)


def test_whole_model_gradient_spot_checks_by_finite_differences(small_model, batch):
    src, tgt = batch
    tgt_in = encdec.shift_right(tgt, 1)
    logits, cache = encdec.forward_with_cache(small_model, src, tgt_in)
    grads = encdec.model_backward(small_model, softmax_cross_entropy(logits, tgt, pad_id=0)[1], cache)
    params = small_model.parameters()

    def loss():
        return softmax_cross_entropy(small_model(src, tgt_in), tgt, pad_id=0)[0]

    for name in ("decoder.1.cross_attn.W_k", "encoder.0.norm1_gamma", "decoder.0.ffn.b1"):
        assert encdec.relative_error(grads[name], numerical_gradient(loss, params[name])) < 1e-6, name


def test_gradient_check_flags_a_wrong_gradient(rng):
    x = rng.normal(size=(3, 4))
    good = 2 * x
    assert encdec.gradient_check(lambda: np.sum(x**2), x, good) < 1e-8
    assert encdec.gradient_check(lambda: np.sum(x**2), x, -good) > 0.5
    assert encdec.gradient_check(lambda: np.sum(x**2), x, good / 3) > 0.1


def test_encdec_backward_is_the_module_of_backward_passes():
    import types
    assert isinstance(encdec.backward, types.ModuleType)
    assert encdec.backward.softmax_backward is encdec.softmax_backward
    assert encdec.model_backward is encdec.training.backward
