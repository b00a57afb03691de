"""Decoding: cached equals uncached exactly, beam search's contract, sampling's distribution."""

import numpy as np
import pytest

import encdec
from encdec import beam_search, greedy_decode, next_token_distribution, sample_next_token

BOS, EOS = 1, 2


def test_kv_cached_greedy_returns_exactly_the_uncached_tokens(small_model, batch):
    src, _ = batch
    cached = greedy_decode(small_model, src, BOS, EOS, max_len=12, use_cache=True)
    plain = greedy_decode(small_model, src, BOS, EOS, max_len=12, use_cache=False)
    np.testing.assert_array_equal(cached, plain)


def test_kv_cached_step_logits_equal_full_decoder(small_model, batch):
    src, tgt = batch
    tgt_in = encdec.shift_right(tgt, BOS)
    H, mask = small_model.encode(src)
    full = small_model.decode(tgt_in, H, mask)
    cache = encdec.KVCache(small_model, H, mask)
    for step in range(tgt_in.shape[1]):
        logits = encdec.decode_step(small_model, tgt_in[:, step], cache)
        np.testing.assert_allclose(logits[0], full[0, step], atol=1e-12)
        assert cache.self_k[0].shape[-2] == step + 1
    assert cache.cross_k[0].shape[-2] == src.shape[1]


def test_cross_kv_are_computed_once_per_decoding(small_model, batch, monkeypatch):
    src, _ = batch
    calls = []
    block = small_model.decoder[0]
    original = block.cross_attn.project_kv
    monkeypatch.setattr(block.cross_attn, "project_kv", lambda x: calls.append(x.shape) or original(x))
    greedy_decode(small_model, src, BOS, EOS, max_len=6, use_cache=True)
    assert len(calls) == 1


def greedy_model():
    """A model whose output stops: EOS becomes likely after a few tokens."""
    model = encdec.Seq2Seq(vocab_size=9, d_model=16, n_heads=2, d_ff=16, n_encoder_layers=1, n_decoder_layers=1, rng=3)
    opt = encdec.Adam(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(0)
    for _ in range(40):
        src = rng.integers(3, 9, size=(8, 3))
        tgt = np.concatenate([src[:, ::-1], np.full((8, 1), EOS)], axis=1)
        encdec.train_step(model, opt, src, tgt, BOS)
    return model


@pytest.fixture(scope="module")
def trained():
    return greedy_model()


def test_greedy_stops_at_eos_and_pads_after(trained):
    src = np.array([[3, 4, 5], [6, 7, 8]])
    out = greedy_decode(trained, src, BOS, EOS, max_len=10)
    for row in out:
        if EOS in row:
            first = list(row).index(EOS)
            assert np.all(row[first + 1:] == trained.config.pad_id)
    assert not np.isin(out, [BOS]).any()


def test_beam_width_one_equals_greedy(small_model, trained):
    for model in (small_model, trained):
        for src in (np.array([3, 4, 5, 6]), np.array([7, 8, 3])):
            greedy = greedy_decode(model, src, BOS, EOS, max_len=8)
            best, _ = beam_search(model, src, BOS, EOS, beam_width=1, max_len=8)[0]
            np.testing.assert_array_equal(best, greedy[: len(best)])
            assert len(best) == len(greedy[greedy != model.config.pad_id])


def test_beam_results_are_ordered_by_normalised_score(trained):
    results = beam_search(trained, np.array([3, 4, 5]), BOS, EOS, beam_width=4, max_len=6, alpha=0.7)
    assert len(results) == 4
    scores = [s for _, s in results]
    assert scores == sorted(scores, reverse=True)
    for toks, s in results:  # the score is the normalised sum of log-probabilities
        tgt_in = np.concatenate([[BOS], toks[:-1]])
        logits = trained(np.array([3, 4, 5]), tgt_in)
        logits[:, [0, BOS]] = -np.inf
        logp = encdec.log_softmax(logits)[np.arange(len(toks)), toks].sum()
        np.testing.assert_allclose(s, logp / len(toks) ** 0.7, atol=1e-9)


def test_wider_beam_never_scores_worse_than_greedy(trained):
    src = np.array([5, 6, 7])
    greedy_score = beam_search(trained, src, BOS, EOS, 1, 6)[0][1]
    assert beam_search(trained, src, BOS, EOS, 5, 6)[0][1] >= greedy_score - 1e-12


def test_top_k_keeps_exactly_the_k_best():
    logits = np.log(np.array([0.05, 0.4, 0.1, 0.3, 0.15]))
    p = next_token_distribution(logits, top_k=2)
    np.testing.assert_allclose(p, [0, 0.4 / 0.7, 0, 0.3 / 0.7, 0])


def test_top_p_keeps_the_smallest_set_reaching_p():
    probs = np.array([0.05, 0.4, 0.1, 0.3, 0.15])
    p = next_token_distribution(np.log(probs), top_p=0.75)  # 0.4 + 0.3 = 0.7 < 0.75, so add 0.15
    assert set(np.flatnonzero(p)) == {1, 3, 4}
    p = next_token_distribution(np.log(probs), top_p=0.7)  # exactly reached by two tokens
    assert set(np.flatnonzero(p)) == {1, 3}
    p = next_token_distribution(np.log(probs), top_p=0.01)  # the top token is always kept
    np.testing.assert_allclose(p, np.eye(5)[1])


def test_temperature_sharpens_and_flattens(rng):
    logits = rng.normal(size=6)
    cold, warm = next_token_distribution(logits, 0.5), next_token_distribution(logits, 2.0)
    base = encdec.softmax(logits)
    assert cold.max() > base.max() > warm.max()
    np.testing.assert_allclose(next_token_distribution(logits, 0.0), np.eye(6)[np.argmax(logits)])


def test_sample_next_token_frequencies_follow_the_distribution():
    logits = np.log(np.array([0.1, 0.6, 0.3]))
    draws = sample_next_token(np.broadcast_to(logits, (20000, 3)), rng=np.random.default_rng(0))
    freq = np.bincount(draws, minlength=3) / 20000
    np.testing.assert_allclose(freq, [0.1, 0.6, 0.3], atol=0.015)
    a = sample_next_token(logits, rng=np.random.default_rng(5))
    b = sample_next_token(logits, rng=np.random.default_rng(5))
    assert a == b and a.shape == ()


class _EndsAroundFour(encdec.Seq2Seq):
    """EOS grows likelier with every position after the fourth: hypotheses finish at nearby steps."""

    def decode(self, tgt_in, H_enc, src_mask, return_attention=False):
        logits = super().decode(tgt_in, H_enc, src_mask).copy()
        logits[..., EOS] += 1.0 * (np.arange(logits.shape[-2]) - 3.5)
        return logits


def test_beam_search_returns_at_most_beam_width_hypotheses():
    """Several hypotheses can finish in one step; only the beam_width best are returned."""
    model = _EndsAroundFour(vocab_size=9, d_model=8, n_heads=2, d_ff=12, n_encoder_layers=1, n_decoder_layers=1, rng=31)
    seen_more = False
    for width in (2, 3, 4):
        for seed in range(6):
            src = np.random.default_rng(seed).integers(3, 9, size=4)
            results = beam_search(model, src, BOS, EOS, beam_width=width, max_len=9)
            assert len(results) <= width
            scores = [s for _, s in results]
            assert scores == sorted(scores, reverse=True)
            seen_more |= len(results) == width
    assert seen_more
