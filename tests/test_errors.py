"""Every ValueError path: bad input fails early with a message that names the shapes."""

import re

import numpy as np
import pytest

import encdec
from encdec import MultiHeadAttention


def raises(match):
    return pytest.raises(ValueError, match=re.escape(match))


def test_attention_shape_errors():
    with raises("Q (3, 4) and K (5, 3) must share the last dimension d_k"):
        encdec.scaled_dot_product_attention(np.ones((3, 4)), np.ones((5, 3)), np.ones((5, 2)))
    with raises("K (5, 4) and V (6, 2) must have the same number of positions n"):
        encdec.scaled_dot_product_attention(np.ones((3, 4)), np.ones((5, 4)), np.ones((6, 2)))
    with raises("batch dimensions of Q (2, 3, 4), K (3, 5, 4) and V (3, 5, 2) do not broadcast"):
        encdec.scaled_dot_product_attention(np.ones((2, 3, 4)), np.ones((3, 5, 4)), np.ones((3, 5, 2)))
    with raises("Q must have at least 2 dimension(s), got shape (4,)"):
        encdec.scaled_dot_product_attention(np.ones(4), np.ones((5, 4)), np.ones((5, 2)))
    with raises("mask of shape (4, 4) does not broadcast to the attention scores of shape (3, 5)"):
        encdec.scaled_dot_product_attention(np.ones((3, 4)), np.ones((5, 4)), np.ones((5, 2)), np.zeros((4, 4)))
    with raises("mask of shape (2, 1, 1, 5) does not broadcast to the attention scores of shape (2, 3, 5)"):
        encdec.cross_attention(np.ones((2, 3, 4)), np.ones((2, 5, 4)), np.ones((2, 5, 2)), np.zeros((2, 1, 1, 5)))
    with raises("mask of shape (3, 3) is boolean"):
        encdec.scaled_dot_product_attention(np.ones((3, 4)), np.ones((3, 4)), np.ones((3, 2)), np.tril(np.ones((3, 3), bool)))


def test_multi_head_attention_errors():
    with raises("n_heads=3 must divide d_model=8"):
        MultiHeadAttention(8, 3)
    mha = MultiHeadAttention(8, 2, rng=0)
    with raises("query_input of shape (3, 6) must end in d_model=8"):
        mha(np.ones((3, 6)))
    with raises("key_value_input of shape (4, 5) must end in d_model=8"):
        mha(np.ones((3, 8)), np.ones((4, 5)))
    with raises("mask of shape (5, 5) does not broadcast to the attention scores of shape (2, 3, 3)"):
        mha(np.ones((3, 8)), mask=np.zeros((5, 5)))


def test_layer_errors():
    with raises("gamma of shape (3,) must have shape (4,) for x (2, 4)"):
        encdec.rms_norm(np.ones((2, 4)), np.ones(3))
    with raises("x must be numeric"):
        encdec.gelu("hello")
    with raises("n and d must be non-negative integers"):
        encdec.sinusoidal_positions(-1, 4)
    with raises("d_model and d_ff must be positive"):
        encdec.FeedForward(4, 0)
    with raises("x of shape (3, 5) must end in d_model=4"):
        encdec.FeedForward(4, 8, rng=0)(np.ones((3, 5)))
    with raises("x of shape (3, 5) must end in d_model=4"):
        encdec.EncoderBlock(4, 2, 8, rng=0)(np.ones((3, 5)))
    with raises("encoder_output of shape (6, 3) must end in d_model=4"):
        encdec.DecoderBlock(4, 2, 8, rng=0)(np.ones((3, 4)), np.ones((6, 3)))
    with raises("x must have at least 2 dimension(s), got shape (4,)"):
        encdec.EncoderBlock(4, 2, 8, rng=0)(np.ones(4))


def test_mask_errors():
    with raises("seq_len must be a positive integer, got 0"):
        encdec.create_causal_mask(0)
    with raises("seq_len must be a positive integer, got 2.5"):
        encdec.create_causal_mask(2.5)
    with raises("tokens must hold integer token ids, got dtype float64"):
        encdec.padding_mask(np.array([1.5, 2.0]), 0)


def test_model_errors():
    with raises("n_heads=3 must divide d_model=8"):
        encdec.ModelConfig(vocab_size=10, d_model=8, n_heads=3)
    with raises("vocab_size must be at least 2"):
        encdec.ModelConfig(vocab_size=1)
    with raises("pad_id=12 must be a token id below vocab_size=10"):
        encdec.ModelConfig(vocab_size=10, pad_id=12)
    with raises("pass either a ModelConfig or keyword arguments"):
        encdec.Seq2Seq(encdec.ModelConfig(vocab_size=10), d_model=8)
    model = encdec.Seq2Seq(vocab_size=10, d_model=8, n_heads=2, d_ff=8, n_encoder_layers=1, n_decoder_layers=1, rng=0)
    with raises("src of shape (2, 3) holds ids outside [0, 10)"):
        model(np.array([[1, 2, 3], [4, 5, 12]]), np.array([[1, 2], [1, 2]]))
    with raises("embedding: expected shape (10, 8), got (9, 8)"):
        model.load_parameters({**model.parameters(), "embedding": np.zeros((9, 8))})
    with raises("parameter names differ: missing ['embedding']"):
        model.load_parameters({k: v for k, v in model.parameters().items() if k != "embedding"})
    with raises("targets of shape (2, 0) need at least one position"):
        encdec.shift_right(np.zeros((2, 0), dtype=int), 1)


def test_loss_and_backward_errors():
    with raises("targets of shape (3,) must match logits (2, 5) without its last (vocabulary) axis"):
        encdec.softmax_cross_entropy(np.ones((2, 5)), np.array([1, 2, 3]))
    with raises("label_smoothing must lie in [0, 1), got 1.0"):
        encdec.softmax_cross_entropy(np.ones((2, 5)), np.array([1, 2]), label_smoothing=1.0)
    with raises("targets hold ids outside [0, 5) for logits of shape (2, 5)"):
        encdec.softmax_cross_entropy(np.ones((2, 5)), np.array([1, 7]))
    with raises("dout (2, 3) and probs (3, 2) must have the same shape"):
        encdec.softmax_backward(np.ones((2, 3)), np.ones((3, 2)))
    with raises("cannot compare gradients of shapes (2,) and (3,)"):
        encdec.relative_error(np.ones(2), np.ones(3))
    with raises("x must be a float64 numpy array that f reads"):
        encdec.numerical_gradient(lambda: 0.0, [1.0, 2.0])


def test_optimizer_errors():
    with raises("Adam's step t starts at 1"):
        encdec.adam_update(np.ones(2), np.ones(2), np.zeros(2), np.zeros(2), 0, 0.1)
    with raises("grad of shape (3,) must match param (2,)"):
        encdec.adam_update(np.ones(2), np.ones(3), np.zeros(2), np.zeros(2), 1, 0.1)
    with raises("no gradient for parameters ['b']"):
        encdec.Adam({"a": np.ones(2), "b": np.ones(2)}).step({"a": np.ones(2)})
    with raises("step and warmup_steps count from 1"):
        encdec.warmup_schedule(0, 64, 10)


def test_decoding_errors():
    with raises("temperature must be >= 0, got -1"):
        encdec.next_token_distribution(np.ones(4), temperature=-1)
    with raises("top_k must lie in [1, 4] for logits of shape (4,), got 5"):
        encdec.next_token_distribution(np.ones(4), top_k=5)
    with raises("top_p must lie in (0, 1], got 0"):
        encdec.next_token_distribution(np.ones(4), top_p=0)
    model = encdec.Seq2Seq(vocab_size=10, d_model=8, n_heads=2, d_ff=8, n_encoder_layers=1, n_decoder_layers=1, rng=0)
    with raises("beam_search decodes one source sequence of shape (n,), got (2, 3)"):
        encdec.beam_search(model, np.ones((2, 3), dtype=int), 1, 2, 2, 5)
    with raises("beam_width must be at least 1, got 0"):
        encdec.beam_search(model, np.ones(3, dtype=int), 1, 2, 0, 5)
    with raises("src must have shape (n,) or (B, n), got (1, 2, 3)"):
        encdec.greedy_decode(model, np.ones((1, 2, 3), dtype=int), 1, 2, 5)


def test_torch_transfer_errors():
    from encdec import torch_model as tm
    model = encdec.Seq2Seq(vocab_size=10, d_model=8, n_heads=2, d_ff=8, n_encoder_layers=1, n_decoder_layers=1, rng=0)
    twin = tm.from_numpy(model)
    bad = {**model.parameters(), "embedding": np.zeros((10, 4))}
    with raises("embedding: torch shape (10, 8) vs NumPy shape (10, 4)"):
        tm.load_numpy_parameters(twin, bad)
