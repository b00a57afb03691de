"""The whole model: NumPy equals the torch twin, weights move losslessly, and its properties hold."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import encdec
from encdec import torch_model as tm
from encdec.checks.fixtures import randomize

t = torch.from_numpy


def test_numpy_forward_equals_torch_twin(small_model, batch):
    src, tgt = batch
    tgt_in = encdec.shift_right(tgt, bos_id=1)
    logits = small_model(src, tgt_in)
    twin = tm.from_numpy(small_model)
    ref = twin(t(src), t(tgt_in)).detach().numpy()
    assert logits.shape == (2, 5, 17)
    np.testing.assert_allclose(logits, ref, atol=1e-10, rtol=0)


def test_cross_attention_weights_match_twin(small_model, batch):
    src, tgt = batch
    H, mask = small_model.encode(src)
    _, cross = small_model.decode(tgt, H, mask, return_attention=True)
    twin = tm.from_numpy(small_model)
    Ht, maskt = twin.encode(t(src))
    _, cross_t = twin.decode(t(tgt), Ht, maskt, return_attention=True)
    for a, b in zip(cross, cross_t):
        np.testing.assert_allclose(a, b.detach().numpy(), atol=1e-10)


def test_weight_transfer_is_lossless_both_ways(small_model):
    twin = tm.from_numpy(small_model)
    back = tm.to_numpy(twin)
    for name, p in small_model.parameters().items():
        np.testing.assert_array_equal(back.parameters()[name], p)
    assert set(twin.state_dict()) == set(small_model.parameters())


def test_torch_initialised_model_transfers_to_numpy_and_agrees(batch):
    config = encdec.ModelConfig(vocab_size=17, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=2)
    twin = tm.Seq2Seq(config, seed=0).double()
    np_model = tm.to_numpy(twin)
    src, tgt = batch
    np.testing.assert_allclose(np_model(src, tgt), twin(t(src), t(tgt)).detach().numpy(), atol=1e-10)


def test_parameter_count_formula_matches_the_model():
    for V, d, h, d_ff, ne, nd in [(17, 16, 4, 24, 2, 2), (50, 32, 8, 64, 3, 1), (5, 8, 1, 8, 1, 0)]:
        model = encdec.Seq2Seq(vocab_size=V, d_model=d, n_heads=h, d_ff=d_ff, n_encoder_layers=ne, n_decoder_layers=nd)
        assert model.num_parameters() == encdec.parameter_count(V, d, d_ff, ne, nd)
        twin = tm.Seq2Seq(model.config)
        assert sum(p.numel() for p in twin.parameters()) == model.num_parameters()


def test_shift_right():
    tgt = np.array([[5, 6, 2, 0], [7, 8, 9, 2]])
    np.testing.assert_array_equal(encdec.shift_right(tgt, 1), [[1, 5, 6, 2], [1, 7, 8, 9]])
    np.testing.assert_array_equal(encdec.shift_right(np.array([4, 2]), 1), [1, 4])


def test_embedding_is_scaled_by_sqrt_d_and_tied_to_the_head(small_model):
    d = small_model.config.d_model
    tokens = np.array([3, 4])
    expected = small_model.embedding[tokens] * np.sqrt(d) + encdec.sinusoidal_positions(2, d)
    np.testing.assert_allclose(small_model.embed(tokens), expected)
    src, tgt_in = np.array([3, 4]), np.array([1, 3])  # token 5 is not read anywhere
    before = small_model(src, tgt_in)
    small_model.embedding[5] += 0.5  # so only the output head's column 5 can move
    after = small_model(src, tgt_in)
    changed = np.abs(after - before).max(axis=0) > 1e-9
    np.testing.assert_array_equal(changed, np.arange(17) == 5)


# -- metamorphic properties ------------------------------------------------------------------------
tokens = st.lists(st.integers(3, 16), min_size=1, max_size=6)


@settings(max_examples=25, deadline=None)
@given(src=tokens, tgt=tokens, position=st.integers(0, 5), new_token=st.integers(3, 16))
def test_editing_a_future_target_token_never_changes_earlier_outputs(small_model_session, src, tgt, position, new_token):
    model = small_model_session
    if position >= len(tgt):
        return
    edited = list(tgt)
    edited[position] = new_token
    a = model(np.array(src), np.array(tgt))
    b = model(np.array(src), np.array(edited))
    np.testing.assert_allclose(a[:position], b[:position], atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(src=tokens, tgt=tokens, extra_src=st.integers(1, 3), extra_tgt=st.integers(0, 3))
def test_appending_pad_tokens_never_changes_non_pad_outputs(small_model_session, src, tgt, extra_src, extra_tgt):
    model = small_model_session
    a = model(np.array(src), np.array(tgt))
    b = model(np.array(src + [0] * extra_src), np.array(tgt + [0] * extra_tgt))
    np.testing.assert_allclose(a, b[: len(tgt)], atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(src=tokens, pad_fill=st.integers(3, 16))
def test_pad_positions_content_never_reaches_non_pad_outputs(small_model_session, src, pad_fill):
    """Editing what sits in the encoder's pad positions (their hidden states) changes nothing."""
    model = small_model_session
    padded = np.array(src + [0, 0])
    H, mask = model.encode(padded)
    H2 = H.copy()
    H2[len(src):] += pad_fill  # garbage in the pad rows of the memory
    tgt = np.array([1, 5, 6])
    np.testing.assert_allclose(model.decode(tgt, H, mask), model.decode(tgt, H2, mask), atol=1e-12)


def test_encoder_without_positions_is_permutation_equivariant(small_model, rng):
    x = rng.normal(size=(6, 16))
    perm = rng.permutation(6)
    out = x.copy()
    for block in small_model.encoder:
        out = block(out)
    permuted = x[perm]
    for block in small_model.encoder:
        permuted = block(permuted)
    np.testing.assert_allclose(permuted, out[perm], atol=1e-12)


def test_batch_elements_are_independent(small_model, batch):
    src, tgt = batch
    full = small_model(src, tgt)
    for b in range(2):
        np.testing.assert_allclose(small_model(src[b], tgt[b]), full[b], atol=1e-12)
    other = src.copy()
    other[1, :3] = [15, 15, 15]
    np.testing.assert_allclose(small_model(other, tgt)[0], full[0], atol=1e-12)


def test_extra_leading_dimensions(small_model, batch):
    src, tgt = batch
    stacked = small_model(np.stack([src, src]), np.stack([tgt, tgt]))
    assert stacked.shape == (2, 2, 5, 17)
    np.testing.assert_allclose(stacked[1], small_model(src, tgt), atol=1e-12)


def test_config_eps_reaches_every_norm_in_numpy_twin_and_backward(batch):
    """ModelConfig.eps is the constant of every RMSNorm, inside the blocks too, in both implementations."""
    src, tgt = batch
    tgt_in = encdec.shift_right(tgt, 1)
    small = encdec.Seq2Seq(vocab_size=17, d_model=16, n_heads=4, d_ff=24, eps=1e-6, rng=3)
    large = encdec.Seq2Seq(vocab_size=17, d_model=16, n_heads=4, d_ff=24, eps=10.0, rng=3)
    x = small.embed(src)
    assert np.abs(small.encoder[0](x) - large.encoder[0](x)).max() > 1e-2, "the blocks ignore ModelConfig.eps"
    assert all(b.eps == 10.0 for b in large.encoder + large.decoder)
    twin = tm.from_numpy(large)
    assert all(b.eps == 10.0 for b in list(twin.encoder) + list(twin.decoder))
    with torch.no_grad():
        got = twin(torch.from_numpy(src), torch.from_numpy(tgt_in)).numpy()
    np.testing.assert_allclose(got, large(src, tgt_in), rtol=0, atol=1e-10)
    from encdec.loss import softmax_cross_entropy
    from encdec.training import backward, forward_with_cache
    logits, cache = forward_with_cache(large, src, tgt_in)
    _, dlogits = softmax_cross_entropy(logits, tgt, 0)
    grads = backward(large, dlogits, cache)
    gamma, h = large.decoder[0].norm2_gamma, 1e-6
    loss = lambda: softmax_cross_entropy(large(src, tgt_in), tgt, 0)[0]  # noqa: E731
    gamma[2] += h
    up = loss()
    gamma[2] -= 2 * h
    down = loss()
    gamma[2] += h
    assert abs((up - down) / (2 * h) - grads["decoder.0.norm2_gamma"][2]) < 1e-8
