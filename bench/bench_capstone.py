"""The capstone's figures: training throughput against torch.nn.Transformer, time to >= 99% exact
match, and NumPy against torch forward time on the same weights.

1. Throughput. The capstone model (encdec.torch_model.Seq2Seq) and a torch.nn.Transformer of the
   same size (pre-norm, d_model 64, 4 heads, d_ff 256, 2+2 layers, GELU, no dropout, the same
   embedding, positions and tied head around it) train on the same batches of the dates task with
   the same AdamW and loss. They alternate in blocks of steps, so a busy machine slows both alike;
   each model's figure is its median block. The ratio is capstone / nn.Transformer (>= 1 means
   the capstone model is at least as fast).
2. Time to >= 99%: the default `make capstone` configuration, with the validation exact match
   measured every 100 steps; the figure is the training time (evaluation excluded) until it first
   reaches 99%, then the test exact match at the end. Skipped in quick mode, where the last
   runs/capstone/report.json is shown instead when there is one.
3. NumPy (float64) against torch (float32 and float64) forward passes on the same trained
   weights and the same batch of 128 test examples.

Everything runs in a child process with one thread per process, the capstone's CPU default. On a
machine with a CUDA GPU, the throughput is measured there too (same batches, TF32 off), against
nn.Transformer on the same GPU and against the CPU; the time to >= 99% then runs on the GPU, as
`make capstone` does.
"""

import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THROUGHPUT = "Capstone training throughput (CPU, same batches of 128, AdamW, one thread)"
GPU_THROUGHPUT = "Capstone training throughput on the GPU ({name}; same batches of 128, AdamW, TF32 off)"
TIME_TO_99 = "Capstone time to >= 99% exact match (default configuration)"
FORWARD = "NumPy vs torch CPU forward, same weights (batch of 128 test dates)"


# -- the models ------------------------------------------------------------------------------------
def reference_transformer(config):
    """torch.nn.Transformer with the capstone's size, wrapped like the capstone model."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    from encdec import sinusoidal_positions

    def gelu_tanh(x):  # the capstone model's activation, so that only the implementations differ
        return F.gelu(x, approximate="tanh")

    class Reference(nn.Module):
        def __init__(self):
            super().__init__()
            c = config.model_config()
            self.d_model, self.pad_id = c.d_model, c.pad_id
            self.embedding = nn.Parameter(torch.randn(c.vocab_size, c.d_model) / math.sqrt(c.d_model))
            self.transformer = nn.Transformer(
                c.d_model, c.n_heads, c.n_encoder_layers, c.n_decoder_layers, c.d_ff, dropout=0.0,
                activation=gelu_tanh, batch_first=True, norm_first=True)
            self.register_buffer("positions", torch.from_numpy(sinusoidal_positions(512, c.d_model)).float())

        def embed(self, tokens):
            return self.embedding[tokens] * math.sqrt(self.d_model) + self.positions[: tokens.shape[-1]]

        def forward(self, src, tgt_in):
            m = tgt_in.shape[-1]
            causal = torch.triu(torch.full((m, m), float("-inf"), device=src.device), 1)
            src_pad = torch.zeros(src.shape, device=src.device).masked_fill(src == self.pad_id, float("-inf"))
            tgt_pad = torch.zeros(tgt_in.shape, device=src.device).masked_fill(tgt_in == self.pad_id, float("-inf"))
            h = self.transformer(self.embed(src), self.embed(tgt_in), tgt_mask=causal,
                                 src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_pad,
                                 memory_key_padding_mask=src_pad)
            return h @ self.embedding.T  # (B, m, V), tied head

    return Reference()


# -- measurements (in the child process) ----------------------------------------------------------------
def throughput(steps_per_block, blocks, device="cpu"):
    """{name: (tokens/s per block, parameters)} for the capstone model and nn.Transformer on `device`."""
    import torch

    from encdec import capstone, dates

    config = capstone.DEFAULT
    procs = capstone.Processes()
    batches = dates.TrainingBatches(config.seed)
    torch.manual_seed(0)
    if torch.device(device).type == "cuda":
        capstone.tf32_disabled()  # as in training and in the parity figures
    models = {"capstone": capstone.build_model(config, device),
              "nn.Transformer": reference_transformer(config).to(device)}
    optimizers = {k: capstone.build_optimizer(m, config) for k, m in models.items()}
    rates = {k: [] for k in models}
    step = {k: 0 for k in models}

    def train(name, n):
        model, opt = models[name], optimizers[name]
        tokens = 0
        start = time.perf_counter()
        for _ in range(n):
            step[name] += 1  # both models see batch 1, 2, 3, ... in the same order
            src, tgt_in, tgt, (n_target, n_source) = capstone.global_batch(batches, step[name], config, procs, device)
            loss = capstone.loss_and_stats(model, src, tgt_in, tgt, n_target)[0]
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            opt.step()
            tokens += n_target + n_source
        if torch.device(device).type == "cuda":
            torch.cuda.synchronize()  # the GPU runs ahead of Python: count only finished work
        return tokens / (time.perf_counter() - start)

    for name in models:  # warm-up: first calls allocate and pick kernels
        train(name, 5)
    for _ in range(blocks):
        for name in models:
            rates[name].append(train(name, steps_per_block))
    return {k: (rates[k], sum(p.numel() for p in models[k].parameters())) for k in models}


def time_to_99(out):
    import dataclasses

    from encdec import capstone

    started = time.perf_counter()
    config = dataclasses.replace(capstone.DEFAULT, eval_every=100)
    model, state = capstone.train(config, out, progress=False)
    report = capstone.evaluate_and_report(model, state, config, out, next(model.parameters()).device, started)
    return {k: report[k] for k in ("time_to_99_valid_s", "train_time_s", "wall_time_s", "test_exact_match",
                                    "tokens_per_s", "device_name", "steps")}


def forward_times(repeats):
    import numpy as np
    import torch

    from encdec import capstone, dates, shift_right
    from encdec import torch_model as tm

    model, _ = capstone.load_weights()
    test = dates.examples("test", n=128)
    src, tgt = dates.encode_pairs([s for s, _, _ in test], [t for _, t, _ in test])
    tgt_in = shift_right(tgt, dates.BOS)
    np_model = tm.to_numpy(model)
    twin64 = tm.from_numpy(np_model, dtype=torch.float64)
    s, t = torch.from_numpy(src), torch.from_numpy(tgt_in)

    def best(fn):
        fn()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return min(times)

    with torch.no_grad():
        result = {"numpy float64": best(lambda: np_model(src, tgt_in)),
                  "torch float64": best(lambda: twin64(s, t)),
                  "torch float32": best(lambda: model(s, t))}
        diff = float(np.max(np.abs(np_model(src, tgt_in) - twin64(s, t).numpy())))
    return result, diff


def gpu_name():
    import torch
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def child(task, arg):
    import torch
    torch.set_num_threads(1)
    if task == "throughput":
        return throughput(*arg)
    if task == "gpu":
        return gpu_name()
    if task == "time_to_99":
        return time_to_99(arg)
    if task == "forward":
        return forward_times(arg)
    raise ValueError(f"unknown task {task!r}")


def in_child(task, arg):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, __file__, task, json.dumps(arg)], env=env, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"bench_capstone {task} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- rows ------------------------------------------------------------------------------------------------
def run(quick=False):
    rows = []
    rates = in_child("throughput", [10, 3] if quick else [25, 6])
    median = {k: statistics.median(v[0]) for k, v in rates.items()}
    for name, (_, params) in rates.items():
        rows.append({"group": THROUGHPUT, "name": f"{name} ({params:,} parameters)", "value": median[name],
                     "unit": "tokens/s", "note": "median of alternating blocks"})
    rows.append({"group": THROUGHPUT, "name": "capstone / nn.Transformer", "value": median["capstone"] / median["nn.Transformer"],
                 "unit": "x", "note": ">= 1: the capstone model trains at least as fast"})

    gpu = in_child("gpu", None)
    if gpu:
        blocks = [10, 3] if quick else [50, 6]
        on_gpu = in_child("throughput", blocks + ["cuda"])
        gpu_median = {k: statistics.median(v[0]) for k, v in on_gpu.items()}
        group = GPU_THROUGHPUT.format(name=gpu)
        for name in on_gpu:
            rows.append({"group": group, "name": name, "value": gpu_median[name], "unit": "tokens/s",
                         "note": "median of alternating blocks"})
        rows.append({"group": group, "name": "capstone / nn.Transformer, same GPU",
                     "value": gpu_median["capstone"] / gpu_median["nn.Transformer"], "unit": "x"})
        rows.append({"group": group, "name": "capstone, GPU / CPU (one thread)",
                     "value": gpu_median["capstone"] / median["capstone"], "unit": "x",
                     "note": "batches of 128 are small: the GPU waits on Python and kernel launches"})

    if quick:
        saved = ROOT / "runs" / "capstone" / "report.json"
        if saved.exists():
            r = json.loads(saved.read_text())
            note = f"from {saved.relative_to(ROOT)} ({r['device_name']})"
            rows += [{"group": TIME_TO_99, "name": "wall time of make capstone", "value": r["wall_time_s"], "unit": "s", "note": note},
                     {"group": TIME_TO_99, "name": "test exact match", "value": r["test_exact_match"], "unit": "", "note": note}]
        else:
            rows.append({"group": TIME_TO_99, "name": "skipped in quick mode", "value": "-", "unit": "",
                         "note": "run `make bench` (or `make capstone` first)"})
    else:
        r = in_child("time_to_99", str(ROOT / "runs" / "bench-capstone"))
        where = r["device_name"]
        rows += [
            {"group": TIME_TO_99, "name": "training time to >= 99% validation exact match",
             "value": r["time_to_99_valid_s"] if r["time_to_99_valid_s"] is not None else "not reached",
             "unit": "s", "note": f"{where}; checked every 100 steps"},
            {"group": TIME_TO_99, "name": f"training time, all {r['steps']} steps", "value": r["train_time_s"],
             "unit": "s", "note": f"{r['tokens_per_s']:,.0f} tokens/s"},
            {"group": TIME_TO_99, "name": "wall time, with evaluation and parity", "value": r["wall_time_s"], "unit": "s"},
            {"group": TIME_TO_99, "name": "test exact match (2000 held-out dates)", "value": r["test_exact_match"], "unit": ""},
        ]
        import torch
        if not torch.cuda.is_available():
            rows.append({"group": TIME_TO_99, "name": "on a GPU", "value": "-", "unit": "",
                         "note": "no CUDA GPU here: run `make gpu-check` on a machine with one"})

    times, diff = in_child("forward", 3 if quick else 10)
    for name, seconds in times.items():
        rows.append({"group": FORWARD, "name": name, "value": seconds * 1000, "unit": "ms"})
    rows.append({"group": FORWARD, "name": "numpy float64 / torch float64", "value": times["numpy float64"] / times["torch float64"],
                 "unit": "x", "note": f"max |delta logits| {diff:.1e}"})
    rows.append({"group": FORWARD, "name": "numpy float64 / torch float32", "value": times["numpy float64"] / times["torch float32"],
                 "unit": "x"})
    return rows


if __name__ == "__main__":
    task, arg = sys.argv[1], json.loads(sys.argv[2])
    print(json.dumps(child(task, arg)))
