"""KV cache vs recompute: greedy decoding time over output length, NumPy reference, one CPU process.

Without a cache every step runs the decoder over the whole prefix (step t costs ~t positions,
L tokens cost ~L^2 / 2); with it every step feeds one new token and attends over the cached keys
and values (~L positions in all), and cross-attention's K, V are computed once. Both runs decode
the same sources with the same model and must return the same tokens; EOS is disabled (an id no
token has) so that every run generates exactly L tokens.

The timings run in a child process with one BLAS thread: the matrices are tiny, and a thread pool
spinning up for each of them measures the machine's scheduler, not the algorithm.
"""

import json
import os
import subprocess
import sys
import time

BOS, NO_EOS = 1, -1
GROUP = "KV cache: greedy decoding, cached vs recomputed (NumPy, d_model=64, 2+2 layers, batch 4, source 24)"


def _best_time(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def measure(lengths, repeats):
    """{L: (seconds recomputing, seconds cached)}; raises if the two ever return different tokens."""
    import numpy as np

    from encdec import Seq2Seq, greedy_decode

    model = Seq2Seq(vocab_size=32, d_model=64, n_heads=4, d_ff=256, n_encoder_layers=2, n_decoder_layers=2, rng=0)
    src = np.random.default_rng(0).integers(3, 32, size=(4, 24))
    times = {}
    for L in lengths:
        cached = greedy_decode(model, src, BOS, NO_EOS, L, use_cache=True)
        plain = greedy_decode(model, src, BOS, NO_EOS, L, use_cache=False)
        if not np.array_equal(cached, plain) or cached.shape[1] != L:
            raise AssertionError(f"cached and uncached decoding differ at L={L}")
        t_plain = _best_time(lambda: greedy_decode(model, src, BOS, NO_EOS, L, use_cache=False), repeats)
        t_cached = _best_time(lambda: greedy_decode(model, src, BOS, NO_EOS, L, use_cache=True), repeats)
        times[L] = (t_plain, t_cached)
    return times


def run(quick=False):
    lengths = (8, 16) if quick else (8, 16, 32, 64, 128)
    repeats = 1 if quick else 3
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, __file__, json.dumps([lengths, repeats])], env=env,
                          capture_output=True, text=True, check=True)
    times = json.loads(proc.stdout.strip().splitlines()[-1])
    rows = []
    for L in lengths:
        t_plain, t_cached = times[str(L)]
        rows += [
            {"group": GROUP, "name": f"recompute, {L} tokens", "value": t_plain, "unit": "s"},
            {"group": GROUP, "name": f"KV cache, {L} tokens", "value": t_cached, "unit": "s",
             "note": "identical tokens"},
            {"group": GROUP, "name": f"speed-up at {L} tokens", "value": t_plain / t_cached, "unit": "x",
             "note": "recompute / cached, side by side, one BLAS thread"},
        ]
    return rows


if __name__ == "__main__":
    lengths, repeats = json.loads(sys.argv[1]) if len(sys.argv) > 1 else ([8, 16], 1)
    print(json.dumps({L: t for L, t in measure(lengths, repeats).items()}))
