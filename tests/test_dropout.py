"""Dropout: the function's convention, the model's train and eval modes, the gradients through the
masks, decoding without dropout, the torch twin and the capstone flag."""

import copy
import dataclasses
import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import encdec
from encdec import capstone, dates, dropout, softmax_cross_entropy
from encdec import torch_model as tm
from encdec.checks.fixtures import randomize

pytestmark = pytest.mark.lesson08
t = torch.from_numpy
BOS, EOS = 1, 2
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                                  reason="no CUDA GPU on this machine"))]


def with_dropout(model, rate, seed=11):
    """A copy of `model` (same weights) with ModelConfig.dropout = rate and a seeded mask generator."""
    twin = encdec.Seq2Seq(dataclasses.replace(model.config, dropout=rate), rng=0)
    twin.load_parameters(model.parameters())
    twin.dropout_rng = np.random.default_rng(seed)
    return twin


def next_draw(rng):
    """The generator's next uniform number, drawn from a copy: shows whether rng was used."""
    return copy.deepcopy(rng).random()


# -- the function ------------------------------------------------------------------------------------
def test_dropout_keeps_where_u_is_at_least_rate_and_rescales():
    # default_rng(0).random(6) = [0.637, 0.270, 0.041, 0.017, 0.813, 0.913]: kept where u >= 0.5
    got = dropout(np.arange(1.0, 7.0), 0.5, np.random.default_rng(0))
    np.testing.assert_array_equal(got, [2.0, 0.0, 0.0, 0.0, 10.0, 12.0])
    # default_rng(3).random((2, 3)) = [[0.086, 0.237, 0.801], [0.582, 0.094, 0.433]]: kept where u >= 0.25
    got = dropout(np.arange(1.0, 7.0).reshape(2, 3), 0.25, np.random.default_rng(3))
    np.testing.assert_array_equal(got, [[0.0, 0.0, 3 / 0.75], [4 / 0.75, 0.0, 6 / 0.75]])


def test_dropout_draws_rng_random_of_x_shape_exactly_once():
    x = np.random.default_rng(1).normal(size=(2, 3, 4))
    rng, ref = np.random.default_rng(5), np.random.default_rng(5)
    got = dropout(x, 0.3, rng)
    keep = ref.random(x.shape) >= 0.3
    np.testing.assert_array_equal(got, x * keep / 0.7)
    assert rng.random() == ref.random()  # nothing more was drawn


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple), rate=st.floats(0.01, 0.95),
       seed=st.integers(0, 2**32 - 1))
def test_every_entry_is_dropped_or_scaled_by_one_over_keep_probability(shape, rate, seed):
    x = np.random.default_rng(seed).normal(size=shape) + 3.0  # never 0, so a zero means dropped
    out = dropout(x, rate, np.random.default_rng(seed + 1))
    assert out.shape == x.shape
    kept = out != 0
    np.testing.assert_array_equal(kept, np.random.default_rng(seed + 1).random(shape) >= rate)
    np.testing.assert_allclose(out[kept], x[kept] / (1 - rate), rtol=1e-15)


@pytest.mark.parametrize("rate", [0.1, 0.5, 0.9])
def test_dropout_preserves_the_expectation(rate):
    """Each entry is x / (1 - p) with probability 1 - p, else 0: mean x, variance x^2 p / (1 - p).
    The mean of N draws is within 5 standard errors of x (a false alarm about once in 10^5 runs)."""
    N = 20_000
    x = np.linspace(-2.0, 3.0, 8)
    draws = dropout(np.broadcast_to(x, (N, 8)), rate, np.random.default_rng(42))
    standard_error = np.abs(x) * math.sqrt(rate / (1 - rate) / N)
    assert np.all(np.abs(draws.mean(axis=0) - x) <= 5 * standard_error)
    dropped = np.mean(draws == 0)  # a binomial proportion over N * 8 entries
    assert abs(dropped - rate) <= 5 * math.sqrt(rate * (1 - rate) / draws.size)


def test_eval_mode_and_rate_zero_are_the_identity_and_draw_nothing():
    x = np.random.default_rng(2).normal(size=(3, 5))
    rng = np.random.default_rng(9)
    before = next_draw(rng)
    assert dropout(x, 0.5, rng, training=False) is x
    assert dropout(x, 0.0, rng) is x
    assert dropout(x, 0, rng, training=True) is x
    assert next_draw(rng) == before


@pytest.mark.parametrize("rate", [-0.1, 1.0, 1.5, float("nan"), "0.1", None])
@pytest.mark.parametrize("training", [True, False])
def test_a_rate_outside_zero_one_is_a_value_error_naming_it(rate, training):
    with pytest.raises(ValueError, match=r"\[0, 1\)") as info:
        dropout(np.ones(3), rate, np.random.default_rng(0), training=training)
    assert repr(rate) in str(info.value)


def test_dropout_needs_a_generator():
    with pytest.raises(ValueError, match="Generator"):
        dropout(np.ones(3), 0.5, None)


# -- the configuration and the modes --------------------------------------------------------------------
def test_model_config_dropout_is_validated_and_serialised():
    config = encdec.ModelConfig(vocab_size=9, dropout=0.1)
    assert config.to_dict()["dropout"] == 0.1
    assert encdec.ModelConfig(vocab_size=9).dropout == 0.0
    for bad in (-0.2, 1.0, "0.1"):
        with pytest.raises(ValueError, match="dropout"):
            encdec.ModelConfig(vocab_size=9, dropout=bad)


def test_a_config_without_the_dropout_key_loads_with_dropout_off(tmp_path):
    old = {"vocab_size": 9, "d_model": 8, "n_heads": 2, "d_ff": 12, "n_encoder_layers": 1,
           "n_decoder_layers": 1, "pad_id": 0, "eps": 1e-6}  # a config written before dropout existed
    assert encdec.ModelConfig(**old).dropout == 0.0
    with np.load(capstone.PRETRAINED, allow_pickle=False) as data:  # the shipped weights, in the old format
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(str(arrays.pop("__meta__")))
    meta["model_config"].pop("dropout", None)
    np.savez(tmp_path / "old.npz", __meta__=np.array(json.dumps(meta)), **arrays)
    model, _ = capstone.load_weights(tmp_path / "old.npz")
    assert model.config.dropout == 0.0 and not model.training


def test_modes_are_switched_like_pytorch(small_model):
    model = with_dropout(small_model, 0.2)
    assert model.training and model.dropout_rate() == 0.2  # training mode by default, as in torch
    assert model.eval() is model and not model.training and model.dropout_rate() == 0.0
    assert model.train() is model and model.training
    assert model.train(False) is model and not model.training


def test_the_mask_generator_is_spawned_from_the_constructor_rng_without_using_it():
    config = encdec.ModelConfig(vocab_size=9, d_model=8, n_heads=2, d_ff=12, dropout=0.3)
    a, b = encdec.Seq2Seq(config, rng=4), encdec.Seq2Seq(config, rng=4)
    assert next_draw(a.dropout_rng) == next_draw(b.dropout_rng)
    assert next_draw(encdec.Seq2Seq(config, rng=5).dropout_rng) != next_draw(a.dropout_rng)
    # the caller's generator gives the weights, and nothing else: it draws on as it would without dropout
    caller = np.random.default_rng(8)
    model = encdec.Seq2Seq(config, rng=caller)
    r = np.random.default_rng(8)
    embedding = r.normal(0.0, 1.0 / np.sqrt(8), size=(9, 8))
    blocks = [encdec.EncoderBlock(8, 2, 12, r) for _ in range(2)] + [encdec.DecoderBlock(8, 2, 12, r) for _ in range(2)]
    np.testing.assert_array_equal(model.embedding, embedding)
    np.testing.assert_array_equal(model.decoder[1].ffn.W2, blocks[-1].ffn.W2)
    assert caller.random() == r.random()


# -- the NumPy model ---------------------------------------------------------------------------------
def test_eval_mode_is_bit_identical_to_rate_zero(small_model, batch):
    src, tgt = batch
    tgt_in = encdec.shift_right(tgt, BOS)
    model = with_dropout(small_model, 0.5).eval()
    before = next_draw(model.dropout_rng)
    np.testing.assert_array_equal(model(src, tgt_in), small_model(src, tgt_in))
    np.testing.assert_array_equal(encdec.forward_with_cache(model, src, tgt_in)[0], small_model(src, tgt_in))
    H, mask = model.encode(src)
    _, cross = model.decode(tgt_in, H, mask, return_attention=True)
    _, cross0 = small_model.decode(tgt_in, H, mask, return_attention=True)
    for a, b in zip(cross, cross0):
        np.testing.assert_array_equal(a, b)
    assert next_draw(model.dropout_rng) == before


def test_train_mode_drops_and_is_reproducible_with_the_same_seed(small_model, batch):
    src, tgt = batch
    tgt_in = encdec.shift_right(tgt, BOS)
    a, b = with_dropout(small_model, 0.2, seed=3), with_dropout(small_model, 0.2, seed=3)
    first = a(src, tgt_in)
    np.testing.assert_array_equal(first, b(src, tgt_in))  # same seed, same masks
    assert np.abs(first - small_model(src, tgt_in)).max() > 1e-3  # dropout did something
    assert np.abs(a(src, tgt_in) - first).max() > 1e-3  # the next call draws new masks
    a.dropout_rng = np.random.default_rng(3)
    np.testing.assert_array_equal(a(src, tgt_in), first)  # re-seeding reproduces


def test_train_mode_drops_in_the_three_places(small_model, batch):
    """Embeddings plus positions; every sublayer's output before its residual add; attention weights
    after the softmax. One generator, in the order the model meets them."""
    src, tgt = batch
    tgt_in = encdec.shift_right(tgt, BOS)
    p = 0.3
    model = with_dropout(small_model, p, seed=21)
    got = model(src, tgt_in)
    rng = np.random.default_rng(21)
    src_mask = encdec.padding_mask(src, 0)
    x = dropout(model.embed(src), p, rng)
    for block in model.encoder:
        n1 = encdec.rms_norm(x, block.norm1_gamma)
        Q, K, V = (encdec.split_heads(n1 @ W, 4) for W in (block.self_attn.W_q, block.self_attn.W_k, block.self_attn.W_v))
        _, w = encdec.scaled_dot_product_attention(Q, K, V, src_mask)
        x = x + dropout(encdec.merge_heads(dropout(w, p, rng) @ V) @ block.self_attn.W_o, p, rng)
        x = x + dropout(block.ffn(encdec.rms_norm(x, block.norm2_gamma)), p, rng)
    H = encdec.rms_norm(x, model.encoder_norm_gamma)
    y = dropout(model.embed(tgt_in), p, rng)
    for block in model.decoder:
        y = y + dropout(block.self_attn(encdec.rms_norm(y, block.norm1_gamma), mask=model.decoder_mask(tgt_in),
                                        dropout_rate=p, dropout_rng=rng)[0], p, rng)
        y = y + dropout(block.cross_attn(encdec.rms_norm(y, block.norm2_gamma), H, mask=src_mask,
                                         dropout_rate=p, dropout_rng=rng)[0], p, rng)
        y = y + dropout(block.ffn(encdec.rms_norm(y, block.norm3_gamma)), p, rng)
    expected = encdec.rms_norm(y, model.decoder_norm_gamma) @ model.embedding.T
    np.testing.assert_allclose(got, expected, atol=1e-12, rtol=0)


def test_attention_returns_the_weights_before_dropout(rng):
    mha = encdec.MultiHeadAttention(8, 2, rng=0)
    q, kv = rng.normal(size=(3, 8)), rng.normal(size=(5, 8))
    out, w = mha(q, kv, dropout_rate=0.5, dropout_rng=np.random.default_rng(1))
    out0, w0 = mha(q, kv)
    np.testing.assert_array_equal(w, w0)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, atol=1e-12)
    assert np.abs(out - out0).max() > 1e-3


def test_blocks_on_their_own_drop_nothing_by_default(rng):
    enc, dec = encdec.EncoderBlock(8, 2, 12, rng=0), encdec.DecoderBlock(8, 2, 12, rng=1)
    randomize(enc.parameters(), rng)
    randomize(dec.parameters(), rng)
    x, H = rng.normal(size=(2, 4, 8)), rng.normal(size=(2, 5, 8))
    causal = encdec.create_causal_mask(4)
    np.testing.assert_array_equal(enc(x), enc(x, dropout_rate=0.0, dropout_rng=None))
    np.testing.assert_array_equal(dec(x, H, causal)[0], dec(x, H, causal, dropout_rate=0.0)[0])
    assert np.abs(enc(x, dropout_rate=0.5, dropout_rng=np.random.default_rng(0)) - enc(x)).max() > 1e-3
    out, weights = dec(x, H, causal, dropout_rate=0.5, dropout_rng=np.random.default_rng(0))
    assert np.abs(out - dec(x, H, causal)[0]).max() > 1e-3
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-12)  # the weights before dropout


# -- gradients through the masks ------------------------------------------------------------------------
def seeded_loss(model, src, tgt, seed):
    """The loss of one train-mode forward pass whose masks are drawn from a generator seeded with `seed`."""
    model.dropout_rng = np.random.default_rng(seed)
    return softmax_cross_entropy(model(src, encdec.shift_right(tgt, BOS)), tgt, pad_id=0)[0]


def seeded_gradients(model, src, tgt, seed):
    model.dropout_rng = np.random.default_rng(seed)
    logits, cache = encdec.forward_with_cache(model, src, encdec.shift_right(tgt, BOS))
    return logits, encdec.model_backward(model, softmax_cross_entropy(logits, tgt, pad_id=0)[1], cache)


def test_forward_with_cache_draws_the_masks_model_call_draws(small_model, batch):
    src, tgt = batch
    model = with_dropout(small_model, 0.3)
    logits, _ = seeded_gradients(model, src, tgt, seed=5)
    model.dropout_rng = np.random.default_rng(5)
    np.testing.assert_array_equal(logits, model(src, encdec.shift_right(tgt, BOS)))


@pytest.mark.slow
def test_every_gradient_in_train_mode_matches_finite_differences():
    """All parameters of a tiny model, each forward pass with the same masks (the generator re-seeded)."""
    rate = 0.2
    model = encdec.Seq2Seq(vocab_size=9, d_model=8, n_heads=2, d_ff=12, n_encoder_layers=1, n_decoder_layers=2,
                           dropout=rate, rng=3)
    randomize(model.parameters(), np.random.default_rng(4))
    src = np.array([[3, 4, 5, 6, 0], [7, 8, 3, 4, 5]])
    tgt = np.array([[4, 5, 6, 2], [8, 3, 2, 0]])
    _, grads = seeded_gradients(model, src, tgt, seed=17)
    _, eval_grads = seeded_gradients(model.eval(), src, tgt, seed=17)
    model.train()
    for name, p in model.parameters().items():
        numeric = encdec.numerical_gradient(lambda: seeded_loss(model, src, tgt, seed=17), p)
        assert encdec.relative_error(grads[name], numeric) < 1e-6, name
    # the masks matter: the train-mode gradient is not the eval-mode one
    assert encdec.relative_error(grads["encoder.0.self_attn.W_q"], eval_grads["encoder.0.self_attn.W_q"]) > 1e-3


def test_directional_derivative_of_the_whole_model_in_train_mode(small_model, batch):
    src, tgt = batch
    model = with_dropout(small_model, 0.25)
    _, grads = seeded_gradients(model, src, tgt, seed=8)
    params = model.parameters()
    r = np.random.default_rng(0)
    direction = {k: r.normal(size=p.shape) for k, p in params.items()}
    h = 1e-5

    def shifted(sign):
        for k, p in params.items():
            p += sign * h * direction[k]
        value = seeded_loss(model, src, tgt, seed=8)
        for k, p in params.items():
            p -= sign * h * direction[k]
        return value

    numeric = (shifted(1) - shifted(-1)) / (2 * h)
    analytic = sum(np.sum(grads[k] * direction[k]) for k in params)
    assert abs(numeric - analytic) <= 1e-6 * max(1.0, abs(analytic))


def test_train_step_learns_one_batch_with_dropout():
    model = encdec.Seq2Seq(vocab_size=9, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1,
                           dropout=0.1, rng=0)
    src = np.array([[3, 4, 5, 6], [7, 8, 3, 0]])
    tgt = np.array([[6, 5, 4, 3, 2], [3, 8, 7, 2, 0]])
    optimizer = encdec.Adam(model.parameters(), lr=3e-3)
    losses = [encdec.train_step(model, optimizer, src, tgt, BOS)[0] for _ in range(60)]
    assert model.training
    eval_loss = softmax_cross_entropy(model.eval()(src, encdec.shift_right(tgt, BOS)), tgt, pad_id=0)[0]
    assert eval_loss < 0.3 * losses[0]


# -- decoding is inference --------------------------------------------------------------------------------
def test_decoding_never_drops_whatever_the_mode(small_model, batch):
    src, _ = batch
    model = with_dropout(small_model, 0.5)
    assert model.training
    before = next_draw(model.dropout_rng)
    for use_cache in (True, False):
        np.testing.assert_array_equal(encdec.greedy_decode(model, src, BOS, EOS, 10, use_cache=use_cache),
                                      encdec.greedy_decode(small_model, src, BOS, EOS, 10, use_cache=use_cache))
    got, ref = (encdec.beam_search(m, src[0], BOS, EOS, beam_width=3, max_len=8) for m in (model, small_model))
    assert [(list(a), s) for a, s in got] == [(list(a), s) for a, s in ref]
    H, mask = small_model.encode(src)
    cache, cache0 = encdec.KVCache(model, H, mask), encdec.KVCache(small_model, H, mask)
    for token in (BOS, 5, 6):
        np.testing.assert_array_equal(encdec.decode_step(model, np.array([token, token]), cache),
                                      encdec.decode_step(small_model, np.array([token, token]), cache0))
    assert model.training  # the mode it came in with
    assert next_draw(model.dropout_rng) == before  # no mask was drawn


def test_decoding_restores_eval_mode_too(small_model, batch):
    model = with_dropout(small_model, 0.5).eval()
    encdec.greedy_decode(model, batch[0], BOS, EOS, 4)
    assert not model.training


# -- the torch twin -----------------------------------------------------------------------------------------
@pytest.fixture
def dropout_model(small_model):
    return with_dropout(small_model, 0.3)


def test_twin_in_eval_mode_equals_numpy(dropout_model, batch):
    src, tgt = batch
    tgt_in = encdec.shift_right(tgt, BOS)
    np_model = dropout_model.eval()
    twin = tm.from_numpy(np_model)
    assert not twin.training and twin.config.dropout == 0.3
    np.testing.assert_allclose(twin(t(src), t(tgt_in)).detach().numpy(), np_model(src, tgt_in), atol=1e-10, rtol=0)
    H, mask = twin.encode(t(src))
    _, cross = twin.decode(t(tgt_in), H, mask, return_attention=True)  # the manual attention path
    _, cross_np = np_model.decode(tgt_in, *np_model.encode(src), return_attention=True)
    for a, b in zip(cross, cross_np):
        np.testing.assert_allclose(a.detach().numpy(), b, atol=1e-10)
    off = tm.from_numpy(with_dropout(dropout_model, 0.0)).eval()
    assert torch.equal(twin(t(src), t(tgt_in)), off(t(src), t(tgt_in)))


def test_twin_modules_read_the_rate_from_the_config(dropout_model):
    twin = tm.from_numpy(dropout_model)
    assert twin.training and twin.dropout == 0.3  # the NumPy model's mode and rate
    assert {m.dropout for m in twin.modules() if hasattr(m, "dropout")} == {0.3}
    assert set(twin.state_dict()) == set(dropout_model.parameters())  # dropout has no parameters
    back = tm.to_numpy(twin.eval())
    assert back.config.dropout == 0.3 and not back.training


def identity_values_attention(p, d_model=8, n_heads=2):
    """Attention whose V is the identity for every head and W_o the identity: its output is the
    (dropped) attention weights themselves, merged over heads."""
    attn = tm.MultiHeadAttention(d_model, n_heads, dropout=p).double()
    d_k = d_model // n_heads
    with torch.no_grad():
        attn.W_v.copy_(torch.eye(d_model))
        attn.W_o.copy_(torch.eye(d_model))
    kv = torch.cat([torch.eye(d_k, dtype=torch.float64)] * n_heads, dim=1)  # (n = d_k, d_model): V = I per head
    return attn, kv


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("need_weights", [False, True], ids=["fused", "manual"])
def test_twin_attention_dropout_drops_the_weights_at_the_rate_and_rescales(need_weights, device):
    p, B, m = 0.3, 400, 5
    attn, kv = identity_values_attention(p)
    attn, kv = attn.to(device), kv.to(device)
    q = torch.randn(B, m, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0)).to(device)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        out, weights = attn(q, kv, need_weights=need_weights)
    _, w = attn.eval()(q, kv, need_weights=True)
    merged = tm.merge_heads(w)  # (B, m, d_model): the weights of head h in columns h*d_k:(h+1)*d_k
    kept = out != 0
    assert abs(kept.double().mean().item() - (1 - p)) <= 5 * math.sqrt(p * (1 - p) / out.numel())
    torch.testing.assert_close(out[kept], merged[kept] / (1 - p), rtol=1e-12, atol=1e-14)
    if need_weights:
        torch.testing.assert_close(weights, w, rtol=0, atol=0)  # returned before dropout


SUBLAYERS = [("encoder", "self_attn"), ("encoder", "ffn"),
             ("decoder", "self_attn"), ("decoder", "cross_attn"), ("decoder", "ffn")]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind,sublayer", SUBLAYERS)
def test_twin_residual_dropout_drops_each_sublayer_output_at_the_rate(kind, sublayer, device):
    """Residual dropout only (attention dropout 0), every other sublayer silenced (its output matrix
    zeroed): out - x = dropout(that sublayer's output), kept entries scaled by 1 / (1 - p)."""
    p, B, m, n, d = 0.4, 200, 5, 4, 8
    gen = torch.Generator().manual_seed(0)
    if kind == "encoder":
        block = tm.EncoderBlock(d, 2, 16, gen, dropout=p).double()
    else:
        block = tm.DecoderBlock(d, 2, 16, gen, dropout=p).double()
    names = ("self_attn", "ffn") if kind == "encoder" else ("self_attn", "cross_attn", "ffn")
    with torch.no_grad():
        for name in names:
            module = getattr(block, name)
            if name == "ffn":
                module.b1.normal_(generator=gen)
                module.b2.normal_(generator=gen)
            else:
                module.dropout = 0.0  # attention dropout off: only the residual dropout is measured
            if name != sublayer:
                (module.W2 if name == "ffn" else module.W_o).zero_()
                if name == "ffn":
                    module.b2.zero_()
    block = block.to(device)
    x = torch.randn(B, m, d, dtype=torch.float64, generator=gen).to(device)
    H = torch.randn(B, n, d, dtype=torch.float64, generator=gen).to(device)
    causal = torch.triu(torch.full((m, m), float("-inf"), dtype=torch.float64, device=device), 1)
    args = (x,) if kind == "encoder" else (x, H, causal)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        out = block(*args)
    out = (out if kind == "encoder" else out[0]) - x
    with torch.no_grad():  # the sublayer's own output, undropped, read from the block in eval mode
        block.eval()
        gamma = {"self_attn": block.norm1_gamma, "cross_attn": block.norm2_gamma,
                 "ffn": block.norm2_gamma if kind == "encoder" else block.norm3_gamma}[sublayer]
        h = tm._rms(x, gamma)
        if sublayer == "ffn":
            f = block.ffn(h)
        elif sublayer == "self_attn":
            f = block.self_attn(h, mask=None if kind == "encoder" else causal)[0]
        else:
            f = block.cross_attn(h, H)[0]
    kept = out != 0
    assert abs(kept.double().mean().item() - (1 - p)) <= 5 * math.sqrt(p * (1 - p) / out.numel())
    torch.testing.assert_close(out, torch.where(kept, f / (1 - p), torch.zeros_like(out)), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_twin_embedding_dropout_drops_at_the_rate(device):
    p = 0.2
    config = encdec.ModelConfig(vocab_size=9, d_model=8, n_heads=2, d_ff=12, n_encoder_layers=0, dropout=p)
    twin = tm.Seq2Seq(config, seed=0).double().to(device)
    src = torch.randint(3, 9, (300, 7), generator=torch.Generator().manual_seed(0)).to(device)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        H, _ = twin.encode(src)  # no encoder block: H_enc = RMSNorm(dropout(embedding + positions))
    dropped = (H == 0).double().mean().item()
    assert abs(dropped - p) <= 5 * math.sqrt(p * (1 - p) / H.numel())


def test_twin_in_train_mode_has_the_numpy_models_expectation(dropout_model, batch):
    """Both in train mode, N independent copies of the batch in one pass: the mean logits of NumPy
    and torch agree within 5 standard errors of their difference, entry by entry."""
    src, tgt = batch
    tgt_in = encdec.shift_right(tgt, BOS)
    N = 400
    srcs, tgts = np.broadcast_to(src, (N,) + src.shape).copy(), np.broadcast_to(tgt_in, (N,) + tgt_in.shape).copy()
    np_logits = dropout_model(srcs, tgts)
    twin = tm.from_numpy(dropout_model)
    with torch.random.fork_rng(), torch.no_grad():
        torch.manual_seed(0)
        torch_logits = twin(t(srcs), t(tgts)).numpy()
    diff = np_logits.mean(axis=0) - torch_logits.mean(axis=0)
    se = np.sqrt((np_logits.var(axis=0, ddof=1) + torch_logits.var(axis=0, ddof=1)) / N)
    assert np.all(np.abs(diff) <= 5 * se + 1e-12), np.max(np.abs(diff) / se)
    eval_logits = dropout_model.eval()(src, tgt_in)
    assert np.abs(torch_logits.mean(axis=0) - eval_logits).max() > 5 * se.max()  # dropout really ran


@pytest.mark.parametrize("device", DEVICES)
def test_twin_greedy_decode_never_drops(dropout_model, batch, device):
    src = t(batch[0]).to(device)
    twin, off = (tm.from_numpy(m, device=device) for m in (dropout_model, with_dropout(dropout_model, 0.0)))
    assert twin.training
    assert torch.equal(twin.greedy_decode(src, BOS, EOS, 10), off.greedy_decode(src, BOS, EOS, 10))
    assert twin.training


# -- the capstone --------------------------------------------------------------------------------------------
def test_capstone_dropout_flag_reaches_the_model():
    args = capstone.parse_args(["--smoke", "--dropout", "0.15"])
    config = capstone.config_from_args(args)
    assert config == dataclasses.replace(capstone.SMOKE, dropout=0.15)
    assert capstone.config_from_args(capstone.parse_args([])).dropout == 0.0 == capstone.DEFAULT.dropout
    model = capstone.build_model(config)
    assert model.config.dropout == 0.15 and all(b.dropout == 0.15 for b in model.decoder)
    for bad in ("1.5", "-0.1", "abc"):
        with pytest.raises(SystemExit):
            capstone.parse_args(["--dropout", bad])


def test_capstone_parity_runs_with_dropout_off():
    config = dataclasses.replace(capstone.DEFAULT, d_model=16, n_heads=4, d_ff=24, dropout=0.5).model_config()
    np_model = encdec.Seq2Seq(config, rng=3)
    randomize(np_model.parameters(), np.random.default_rng(5), scale=0.3)
    twin = tm.from_numpy(np_model, dtype=torch.float32)
    assert twin.training
    result = capstone.numpy_torch_parity(twin, dates.examples("test", n=8))
    assert result["passed"] and result["greedy_identical"]
    assert twin.training  # the model handed in keeps its mode


@pytest.mark.slow
def test_capstone_trains_a_couple_of_steps_with_dropout(tmp_path):
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        config = dataclasses.replace(capstone.SMOKE, steps=2, batch_size=8, warmup=1, checkpoint_every=2,
                                     d_model=16, n_heads=2, d_ff=32, dropout=0.3)
        weights = []
        for run, (outside_seed, rate, seed) in enumerate([(1, 0.3, 0), (2, 0.3, 0), (1, 0.0, 0)]):
            with torch.random.fork_rng():
                torch.manual_seed(outside_seed)  # the run seeds dropout's generator itself
                model, _ = capstone.train(dataclasses.replace(config, dropout=rate, seed=seed),
                                          tmp_path / str(run), "cpu", progress=False)
            weights.append(model.state_dict()["decoder.0.ffn.W1"])
            assert not model.training  # handed back for evaluation
        assert torch.equal(weights[0], weights[1])  # repeatable, whatever torch's generator held before
        assert not torch.equal(weights[0], weights[2])  # the masks changed the updates
        assert capstone.main(["--smoke", "--steps", "2", "--batch-size", "8", "--dropout", "0.1", "--no-progress",
                              "--device", "cpu", "--out", str(tmp_path / "run")]) == 0
    finally:
        torch.set_num_threads(before)
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["config"]["dropout"] == 0.1
    assert report["parity"]["numpy_float64_vs_torch_float64_cpu"]["passed"]  # parity in eval mode
