"""Norms, activations, positions and blocks against PyTorch, in float64."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import encdec
from encdec import (DecoderBlock, EncoderBlock, FeedForward, create_causal_mask, gelu, padding_mask,
                    rms_norm, sinusoidal_positions)
from encdec import torch_model as tm

TOL = 1e-10
t = torch.from_numpy


@pytest.mark.parametrize("shape", [(6,), (4, 6), (2, 3, 6)])
def test_rms_norm_matches_torch(rng, shape):
    x, gamma = rng.normal(size=shape) * 3, rng.uniform(0.5, 2.0, size=shape[-1])
    np.testing.assert_allclose(rms_norm(x, gamma), F.rms_norm(t(x), (shape[-1],), t(gamma), 1e-6).numpy(), atol=TOL)


def test_rms_norm_near_zero_input_uses_eps(rng):
    x, gamma = rng.normal(size=(3, 5)) * 1e-8, rng.uniform(0.5, 2, size=5)
    np.testing.assert_allclose(rms_norm(x, gamma), F.rms_norm(t(x), (5,), t(gamma), 1e-6).numpy(), atol=TOL)


def test_gelu_matches_torch_tanh_form(rng):
    x = np.concatenate([rng.normal(size=50) * 3, [0.0, -10.0, 10.0, 1e3, -1e3]])
    np.testing.assert_allclose(gelu(x), F.gelu(t(x), approximate="tanh").numpy(), atol=TOL, rtol=1e-12)


def test_sinusoidal_positions_formula():
    n, d = 50, 16
    pe = sinusoidal_positions(n, d)
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    freq = torch.pow(10000.0, -torch.arange(0, d, 2, dtype=torch.float64) / d)
    ref = torch.zeros(n, d, dtype=torch.float64)
    ref[:, 0::2], ref[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
    np.testing.assert_allclose(pe, ref.numpy(), atol=1e-12)
    np.testing.assert_array_equal(pe[0, 0::2], 0.0)
    np.testing.assert_array_equal(pe[0, 1::2], 1.0)


def test_sinusoidal_positions_odd_width():
    pe = sinusoidal_positions(7, 5)
    assert pe.shape == (7, 5)
    np.testing.assert_allclose(pe[3, 4], np.sin(3 / 10000 ** (4 / 5)))
    np.testing.assert_allclose(pe[3, 3], np.cos(3 / 10000 ** (2 / 5)))


def torch_twin(np_block, cls, *args):
    block = cls(*args).double()
    prefix_params = np_block.parameters()
    tm.load_numpy_parameters(block, prefix_params)
    return block


def test_feedforward_matches_torch(rng):
    ffn = FeedForward(8, 20, rng=rng)
    ffn.b1[:] = rng.normal(size=20)
    ffn.b2[:] = rng.normal(size=8)
    x = rng.normal(size=(2, 5, 8))
    ref = F.gelu(t(x) @ t(ffn.W1) + t(ffn.b1), approximate="tanh") @ t(ffn.W2) + t(ffn.b2)
    np.testing.assert_allclose(ffn(x), ref.numpy(), atol=TOL)
    np.testing.assert_allclose(ffn(x), torch_twin(ffn, tm.FeedForward, 8, 20)(t(x)).detach().numpy(), atol=TOL)


def randomize_block(block, rng):
    from encdec.checks.fixtures import randomize
    randomize(block.parameters(), rng)
    return block


def test_encoder_block_matches_twin_with_padding(rng):
    block = randomize_block(EncoderBlock(12, 3, 20, rng=rng), rng)
    x = rng.normal(size=(2, 6, 12))
    src = np.array([[3, 4, 5, 0, 0, 0], [3, 4, 5, 6, 7, 8]])
    out = block(x, mask=padding_mask(src, 0))
    twin = torch_twin(block, tm.EncoderBlock, 12, 3, 20)
    ref = twin(t(x), t(padding_mask(src, 0)))
    np.testing.assert_allclose(out, ref.detach().numpy(), atol=TOL)


def test_decoder_block_matches_twin(rng):
    block = randomize_block(DecoderBlock(12, 3, 20, rng=rng), rng)
    x, enc = rng.normal(size=(2, 4, 12)), rng.normal(size=(2, 6, 12))
    src = np.array([[3, 4, 5, 0, 0, 0], [3, 4, 5, 6, 7, 8]])
    causal, cross = create_causal_mask(4), padding_mask(src, 0)
    out, w = block(x, enc, self_attn_mask=causal, cross_attn_mask=cross)
    twin = torch_twin(block, tm.DecoderBlock, 12, 3, 20)
    ref, ref_w = twin(t(x), t(enc), t(causal), t(cross), need_weights=True)
    np.testing.assert_allclose(out, ref.detach().numpy(), atol=TOL)
    np.testing.assert_allclose(w, ref_w.detach().numpy(), atol=TOL)
    assert w.shape == (2, 3, 4, 6)


def test_decoder_block_order_is_self_then_cross_then_ffn(rng):
    """Rebuild the block by hand from its three sublayers in the documented order."""
    block = randomize_block(DecoderBlock(8, 2, 16, rng=rng), rng)
    x, enc = rng.normal(size=(5, 8)), rng.normal(size=(3, 8))
    causal = create_causal_mask(5)
    h = x + block.self_attn(rms_norm(x, block.norm1_gamma), mask=causal)[0]
    h = h + block.cross_attn(rms_norm(h, block.norm2_gamma), enc)[0]
    h = h + block.ffn(rms_norm(h, block.norm3_gamma))
    np.testing.assert_allclose(block(x, enc, causal)[0], h, atol=1e-13)


def test_post_norm_variant_differs_and_normalises_the_output(rng):
    block = randomize_block(DecoderBlock(8, 2, 16, rng=rng), rng)
    block.norm3_gamma[:] = 1.0
    x, enc = rng.normal(size=(5, 8)) * 4, rng.normal(size=(3, 8))
    post, _ = encdec.decoder_block_post_norm(block, x, enc, create_causal_mask(5))
    pre, _ = block(x, enc, create_causal_mask(5))
    np.testing.assert_allclose(np.sqrt(np.mean(post**2, -1)), 1.0, atol=1e-6)
    assert np.abs(post - pre).max() > 0.1


def test_cross_attention_sublayer_adds_4d2_plus_d_parameters():
    d = 16
    enc_block, dec_block = EncoderBlock(d, 4, 32), DecoderBlock(d, 4, 32)
    n_enc = sum(p.size for p in enc_block.parameters().values())
    n_dec = sum(p.size for p in dec_block.parameters().values())
    assert n_dec - n_enc == 4 * d * d + d
