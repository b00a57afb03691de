import numpy as np
import pytest

from encdec.toy import BOS, EOS, PAD, ReverseTask


def test_reverse_task_targets_are_reversed_sources_ending_in_eos():
    task = ReverseTask(n_letters=5, min_len=2, max_len=6)
    src, tgt = task.batch(0, 50)
    assert src.shape == (50, 6) and tgt.shape == (50, 7)
    for s, t in zip(src, tgt):
        n = int((s != PAD).sum())
        assert 2 <= n <= 6
        np.testing.assert_array_equal(t[:n], s[:n][::-1])
        assert t[n] == EOS and np.all(t[n + 1:] == PAD) and np.all(s[n:] == PAD)
    assert not np.isin(src, [BOS, EOS]).any()


def test_encode_decode_round_trip():
    task = ReverseTask()
    assert task.decode(np.concatenate([task.encode("c a f e"), [EOS, 5]])) == "cafe"
    assert task.vocab_size == 13


def test_bad_configuration():
    with pytest.raises(ValueError, match="n_letters=30"):
        ReverseTask(n_letters=30)
