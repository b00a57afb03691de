"""The capstone: train the PyTorch twin on the dates task, on a GPU when there is one, and check
that NumPy, torch on the CPU and torch on the GPU compute the same function, up to rounding.

    python -m encdec.capstone                    # default run: cuda when available, else CPU
    python -m encdec.capstone --smoke            # the CI configuration (well under a minute)
    python -m encdec.capstone --resume           # continue from runs/capstone/checkpoint.pt
    torchrun --nproc_per_node=2 -m encdec.capstone   # data-parallel: NCCL on GPUs, gloo on CPU

The run writes OUT/report.json (device, steps, wall time, tokens/s, exact-match accuracy on the
test split, parity figures), OUT/checkpoint.pt (resumable) and OUT/model.npz (the weights in
float32 with their config, loadable without pickle; `--export PATH` copies it elsewhere).

Data parallelism: every process rebuilds the same global batch from the step number and takes
its own contiguous slice of rows. Each process's loss is its share of the sum over the global
batch's target tokens, scaled so that DDP's gradient average is the gradient of the single-process
loss: the same global batch gives the same weights, whatever the world size, up to rounding (the
all-reduce adds the processes' gradients in another order than one process's sum).

Parity (see `parity_report`): NumPy float64 against torch float64 on the CPU, with the trained
weights moved losslessly, must agree to 1e-9 in the logits; torch float32 on the CPU against
torch float32 on CUDA (TF32 disabled) is reported as max |delta logits| and whether greedy
outputs on the test split are identical. bf16 autocast is reported on its own, never mixed in.
"""

import argparse
import copy
import dataclasses
import json
import math
import os
import platform
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from . import dates
from .decoding import greedy_decode as numpy_greedy_decode
from .model import ModelConfig, shift_right
from .optim import warmup_cosine_schedule
from .torch_model import Seq2Seq, load_numpy_parameters, numpy_parameters, to_numpy

PRETRAINED = Path(__file__).resolve().parent / "data" / "capstone_dates.npz"
NUMPY_TORCH_TOLERANCE = 1e-9  # float64 against float64: only rounding differs (sum order, exp and tanh)
BF16_TOLERANCE = 0.5  # max |delta logits|, bf16 autocast vs float32 (bf16 keeps 8 significant bits, 7 stored)


# -- configuration -------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainConfig:
    """Everything [CONFIG] about a capstone run. DEFAULT reaches >= 99% test exact match."""

    steps: int = 800
    batch_size: int = 128  # the global batch, split across processes under DDP
    lr: float = 2e-3  # peak; linear warm-up, then cosine decay to lr * min_lr_ratio
    warmup: int = 100
    min_lr_ratio: float = 0.02
    weight_decay: float = 0.01  # on matrices only, not on gammas and biases
    betas: tuple = (0.9, 0.98)
    grad_clip: float = 1.0
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 256
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    dropout: float = 0.0  # residual, attention and embedding dropout while training (0: none)
    seed: int = 0
    dtype: str = "float32"  # float64 for exact comparisons (the DDP test)
    bf16: bool = False  # bf16 autocast for the forward pass (meant for GPUs)
    eval_every: int = 200  # validation exact match every this many steps (0: only at the end)
    n_valid: int = 500  # validation examples used during training
    n_test: int = dates.N_TEST  # test examples in the final figure
    checkpoint_every: int = 200

    def model_config(self):
        return ModelConfig(vocab_size=dates.VOCAB_SIZE, d_model=self.d_model, n_heads=self.n_heads,
                           d_ff=self.d_ff, n_encoder_layers=self.n_encoder_layers,
                           n_decoder_layers=self.n_decoder_layers, pad_id=dates.PAD, dropout=self.dropout)

    def to_dict(self):
        d = dataclasses.asdict(self)
        d["betas"] = list(self.betas)
        return d


DEFAULT = TrainConfig()
SMOKE = TrainConfig(steps=150, batch_size=64, warmup=20, eval_every=0, n_valid=100, n_test=200,
                    checkpoint_every=50)


# -- devices and processes -----------------------------------------------------------------------
class DeviceUnavailable(RuntimeError):
    """The requested device does not exist on this machine."""


@dataclass
class Processes:
    """Where this process sits in a torchrun launch (rank 0 of 1 without one)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def main(self):
        return self.rank == 0


def processes_from_env():
    return Processes(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)),
                     int(os.environ.get("LOCAL_RANK", 0)))


def pick_device(requested=None, local_rank=0):
    """'cuda' when available, else 'cpu'; a requested 'cuda' without a GPU raises DeviceUnavailable."""
    if requested in (None, "auto"):
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(requested)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceUnavailable(
                f"--device {requested} was requested, but torch {torch.__version__} sees no CUDA GPU "
                f"(torch.cuda.is_available() is False). Run on a machine with an NVIDIA GPU and a CUDA "
                f"build of torch, or leave out --device to train on the CPU.")
        if device.index is None:
            device = torch.device("cuda", local_rank)
    return device


def device_name(device):
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return f"CPU: {line.split(':', 1)[1].strip()} ({os.cpu_count()} cores)"
    except OSError:
        pass
    return f"CPU: {platform.processor() or platform.machine()} ({os.cpu_count()} cores)"


def _dtype(name):
    if name not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {name!r}")
    return getattr(torch, name)


def _autocast(device, enabled):
    return torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16, enabled=enabled)


# -- one training step -----------------------------------------------------------------------------
def build_model(config, device="cpu"):
    """The torch twin, initialised from config.seed (the same weights on every process)."""
    model = Seq2Seq(config.model_config(), seed=config.seed)
    return model.to(device=device, dtype=_dtype(config.dtype))


def build_optimizer(model, config):
    """AdamW with weight decay on the matrices (ndim >= 2) only."""
    params = list(model.parameters())
    decay = [p for p in params if p.ndim >= 2]
    rest = [p for p in params if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": config.weight_decay},
              {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=config.lr, betas=config.betas, fused=True)  # one kernel for all


def learning_rate(step, config):
    return float(warmup_cosine_schedule(step, config.lr, config.warmup, config.steps, config.lr * config.min_lr_ratio))


def global_batch(batches, step, config, procs, device):
    """This process's rows of the step's global batch.

    Returns (src (b, n), tgt_in (b, 11), tgt (b, 11), counts) with b = batch_size / world_size;
    counts = (target tokens, source tokens) of the whole global batch: the loss is averaged over
    the global target tokens, whatever the number of processes.
    """
    if config.batch_size % procs.world_size:
        raise ValueError(f"batch_size {config.batch_size} must be a multiple of the number of "
                         f"processes {procs.world_size}")
    src, tgt = batches.batch(step, config.batch_size)  # (B, n), (B, 11)
    counts = (int((tgt != dates.PAD).sum()), int((src != dates.PAD).sum()))
    b = config.batch_size // procs.world_size
    rows = slice(procs.rank * b, (procs.rank + 1) * b)
    src, tgt = src[rows], tgt[rows]
    tgt_in = shift_right(tgt, dates.BOS)
    as_t = lambda a: torch.from_numpy(a).to(device, non_blocking=True)  # noqa: E731
    return as_t(src), as_t(tgt_in), as_t(tgt), counts


def loss_and_stats(model, src, tgt_in, tgt, n_tokens, world_size=1, bf16=False):
    """The loss whose DDP-averaged gradient equals the gradient of the global mean loss.

    Returns (loss, local mean loss (detached), local token accuracy (detached)).
    """
    with _autocast(src.device, bf16):
        logits = model(src, tgt_in)  # (b, m, V)
    logits = logits.float() if bf16 else logits
    loss_sum = F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=dates.PAD, reduction="sum")
    keep = tgt != dates.PAD
    with torch.no_grad():
        local = keep.sum().clamp(min=1)
        mean_loss = loss_sum.detach() / local
        accuracy = ((logits.argmax(-1) == tgt) & keep).sum() / local
    return loss_sum * (world_size / n_tokens), mean_loss, accuracy


# -- evaluation ----------------------------------------------------------------------------------
@torch.no_grad()
def predict(model, sources, device=None, batch_size=500, bf16=False):
    """Greedy ISO outputs (strings) for a list of source texts."""
    device = device or next(model.parameters()).device
    out = []
    for i in range(0, len(sources), batch_size):
        src = torch.from_numpy(dates.pad_batch([dates.encode(s) for s in sources[i:i + batch_size]])).to(device)
        with _autocast(device, bf16):
            ids = model.greedy_decode(src, dates.BOS, dates.EOS, max_len=dates.TARGET_LEN)
        out.extend(dates.decode(row) for row in ids.cpu().numpy())
    return out


def exact_match(model, examples, device=None, bf16=False):
    """(fraction of exact matches, {format: fraction}, predictions) on (source, target, format) triples."""
    preds = predict(model, [s for s, _, _ in examples], device, bf16=bf16)
    hits = [p == t for p, (_, t, _) in zip(preds, examples)]
    by_format = {}
    for ok, (_, _, fmt) in zip(hits, examples):
        by_format.setdefault(fmt, []).append(ok)
    return (float(np.mean(hits)), {f: float(np.mean(v)) for f, v in by_format.items()}, preds)


# -- parity ----------------------------------------------------------------------------------------
def _logits(model, src, tgt_in, device, dtype, bf16=False):
    twin = copy.deepcopy(model).to(device=device, dtype=dtype).eval()
    with torch.no_grad(), _autocast(device, bf16):
        out = twin(torch.from_numpy(src).to(device), torch.from_numpy(tgt_in).to(device))
    return twin, out.to("cpu", torch.float64).numpy()


def _parity_batch(examples):
    src, tgt = dates.encode_pairs([s for s, _, _ in examples], [t for _, t, _ in examples])
    return src, shift_right(tgt, dates.BOS)


def numpy_torch_parity(model, examples):
    """NumPy float64 against torch float64 on the CPU, same weights (moved losslessly).

    Returns {max_abs_diff_logits, tolerance, passed, greedy_identical, examples}.
    """
    src, tgt_in = _parity_batch(examples)
    np_model = to_numpy(model).eval()  # float64 copies of the weights, exactly; no dropout
    twin, torch_logits = _logits(model, src, tgt_in, "cpu", torch.float64)
    diff = float(np.max(np.abs(np_model(src, tgt_in) - torch_logits)))
    np_out = numpy_greedy_decode(np_model, src, dates.BOS, dates.EOS, dates.TARGET_LEN)
    torch_out = predict(twin, [s for s, _, _ in examples], "cpu")
    same = [dates.decode(a) for a in np_out] == torch_out
    return {"compared": "NumPy float64 vs torch float64 on the CPU, same weights",
            "max_abs_diff_logits": diff, "tolerance": NUMPY_TORCH_TOLERANCE,
            "passed": diff <= NUMPY_TORCH_TOLERANCE, "greedy_identical": bool(same), "examples": len(examples)}


def tf32_disabled():
    """Matmuls and convolutions in true float32 on CUDA (TF32 would round their inputs to 10 stored
    mantissa bits, 11 significant, against float32's 23 stored)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


def device_parity(model, examples, device="cuda", n_logits=256):
    """Torch float32 on the CPU against float32 on `device`, TF32 disabled, same weights.

    Returns {max_abs_diff_logits (first n_logits examples), greedy_identical (all examples),
    greedy_differences}.
    """
    tf32_disabled()
    src, tgt_in = _parity_batch(examples[:n_logits])
    cpu_twin, cpu_logits = _logits(model, src, tgt_in, "cpu", torch.float32)
    dev_twin, dev_logits = _logits(model, src, tgt_in, device, torch.float32)
    sources = [s for s, _, _ in examples]
    cpu_out, dev_out = predict(cpu_twin, sources, "cpu"), predict(dev_twin, sources, device)
    differences = sum(a != b for a, b in zip(cpu_out, dev_out))
    return {"compared": f"torch float32 on the CPU vs float32 on {device} (TF32 disabled), same weights",
            "available": True, "device_name": device_name(device),
            "max_abs_diff_logits": float(np.max(np.abs(cpu_logits - dev_logits))),
            "logits_examples": len(src), "greedy_identical": differences == 0,
            "greedy_differences": int(differences), "examples": len(examples)}


def bf16_report(model, examples, device, n_logits=256):
    """bf16 autocast against float32 on the same device: its own figure and its own tolerance."""
    src, tgt_in = _parity_batch(examples[:n_logits])
    _, f32 = _logits(model, src, tgt_in, device, torch.float32)
    twin, bf = _logits(model, src, tgt_in, device, torch.float32, bf16=True)
    diff = float(np.max(np.abs(f32 - bf)))
    sources = [s for s, _, _ in examples]
    agree = np.mean([a == b for a, b in zip(predict(twin, sources, device), predict(twin, sources, device, bf16=True))])
    return {"compared": f"bf16 autocast vs float32 on {device}, same weights", "device_name": device_name(device),
            "max_abs_diff_logits": diff, "tolerance": BF16_TOLERANCE, "passed": diff <= BF16_TOLERANCE,
            "greedy_agreement": float(agree), "examples": len(examples)}


def parity_report(model, examples, n_numpy=64, bf16_device=None):
    """Every parity figure of the capstone (JSON-ready). CUDA figures only where CUDA exists.

    Every figure compares models in eval mode, dropout off: each comparison runs on copies put in
    eval mode (`_logits`, `to_numpy(...).eval()`), whatever the mode of `model`.
    """
    report = {"numpy_float64_vs_torch_float64_cpu": numpy_torch_parity(model, examples[:n_numpy])}
    if torch.cuda.is_available():
        report["cpu_float32_vs_cuda_float32"] = device_parity(model, examples, "cuda")
    else:
        report["cpu_float32_vs_cuda_float32"] = {
            "available": False,
            "note": "no CUDA GPU on this machine, so the CPU/GPU comparison was not run; "
                    "run `make gpu-check` on a machine with a GPU to produce it"}
    if bf16_device is not None:
        report["bf16_autocast_vs_float32"] = bf16_report(model, examples, bf16_device)
    return report


# -- checkpoints ---------------------------------------------------------------------------------
def dropout_generator_state(device):
    """The state of the generator dropout draws from on `device` (torch's default one), to checkpoint."""
    device = torch.device(device)
    return torch.cuda.get_rng_state(device) if device.type == "cuda" else torch.get_rng_state()


def set_dropout_generator_state(device, rng_state):
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.set_rng_state(rng_state.cpu(), device)
    else:
        torch.set_rng_state(rng_state.cpu())


def save_checkpoint(path, model, optimizer, step, config, state):
    tmp = Path(str(path) + ".tmp")
    device = next(model.parameters()).device
    torch.save({"step": step, "config": config.to_dict(), "model": model.state_dict(),
                "optimizer": optimizer.state_dict(), "state": state,
                "dropout_rng": dropout_generator_state(device)}, tmp)
    os.replace(tmp, path)


def load_checkpoint(path, model, optimizer, config, device):
    ckpt = torch.load(path, map_location=device, weights_only=True)
    # a checkpoint written before a field existed holds that field's default
    ckpt["config"] = {**{k: v for k, v in TrainConfig().to_dict().items() if k not in ckpt["config"]},
                      **ckpt["config"]}
    if ckpt["config"] != config.to_dict():
        diff = {k: (ckpt["config"].get(k), v) for k, v in config.to_dict().items() if ckpt["config"].get(k) != v}
        raise ValueError(f"{path} was written with a different configuration (saved, requested): {diff}")
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    if "dropout_rng" in ckpt:
        set_dropout_generator_state(device, ckpt["dropout_rng"])
    return ckpt["step"], ckpt["state"]


def export_weights(model, path, config, summary=None):
    """The weights in float32 with their ModelConfig, as a pickle-free .npz (about 1 MB)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {name: v.astype(np.float32) for name, v in numpy_parameters(model).items()}
    meta = {"model_config": config.model_config().to_dict(), "train_config": config.to_dict(),
            "vocab": dates.VOCAB, "summary": summary or {}}
    np.savez_compressed(path, __meta__=np.array(json.dumps(meta)), **arrays)
    return path


def load_weights(path=None, device="cpu", dtype=torch.float32):
    """A trained torch twin from an exported .npz (default: the checkpoint shipped with the course).

    Returns (model in eval mode, meta dict with model_config, train_config, vocab, summary).
    """
    path = PRETRAINED if path is None else Path(path)
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["__meta__"]))
        params = {k: data[k] for k in data.files if k != "__meta__"}
    if meta["vocab"] != dates.VOCAB:
        raise ValueError(f"{path} was trained with a different vocabulary")
    model = Seq2Seq(ModelConfig(**meta["model_config"])).to(device=device, dtype=dtype)
    return load_numpy_parameters(model, params).eval(), meta


# -- training --------------------------------------------------------------------------------------
def train(config, out="runs/capstone", device=None, resume=False, stop_at=None, progress=True):
    """Train (or continue training) and return (model, state) on every process.

    `state` holds the history, token and time counters. With stop_at, training stops after that
    step (checkpoint written), as an interrupted run would. Under torchrun each process calls
    this; only rank 0 writes files and shows progress.
    """
    procs = processes_from_env()
    device = pick_device(device, procs.local_rank)
    if procs.world_size > 1 and not torch.distributed.is_initialized():
        if device.type == "cuda":
            torch.cuda.set_device(device)
        torch.distributed.init_process_group("nccl" if device.type == "cuda" else "gloo")
    if device.type == "cuda":
        tf32_disabled()
    out = Path(out)
    ckpt_path = out / "checkpoint.pt"
    if procs.main:
        out.mkdir(parents=True, exist_ok=True)
    model = build_model(config, device)
    optimizer = build_optimizer(model, config)
    # dropout's masks come from torch's default generator: seeded per process, so each rank drops its
    # own entries and a run is repeatable; a single process's checkpoint also holds its state (--resume)
    torch.manual_seed(config.seed * 1_000_003 + 1 + procs.rank)
    step, state = 0, {"history": {"step": [], "loss": [], "token_accuracy": [], "valid": []},
                      "tokens": 0, "train_time_s": 0.0, "time_to_99_valid_s": None, "resumed_from": None}
    if resume and ckpt_path.exists():
        step, state = load_checkpoint(ckpt_path, model, optimizer, config, device)
        state["resumed_from"] = step
    ddp = model
    if procs.world_size > 1:
        ddp = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None)
    batches = dates.TrainingBatches(config.seed)
    valid = dates.examples("valid", config.seed, config.n_valid)
    last = config.steps if stop_at is None else min(stop_at, config.steps)
    model.train()  # dropout at config.dropout while training; evaluation and decoding use eval mode
    bar = _progress(config.steps, step, enabled=progress and procs.main)
    hist = state["history"]
    tick, tick_tokens = time.perf_counter(), 0
    while step < last:
        step += 1
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, config)
        src, tgt_in, tgt, (n_target, n_source) = global_batch(batches, step, config, procs, device)
        loss, mean_loss, accuracy = loss_and_stats(ddp, src, tgt_in, tgt, n_target, procs.world_size, config.bf16)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        tick_tokens += n_target + n_source
        if step % 10 == 0 or step == last or step == 1:
            hist["step"].append(step)
            hist["loss"].append(float(mean_loss))  # synchronises with the device
            hist["token_accuracy"].append(float(accuracy))
            now = time.perf_counter()
            state["train_time_s"] += now - tick
            state["tokens"] += tick_tokens
            if bar is not None:
                bar.set_postfix(loss=f"{hist['loss'][-1]:.3f}", acc=f"{hist['token_accuracy'][-1]:.3f}",
                                tok_s=f"{tick_tokens / max(now - tick, 1e-9):,.0f}", refresh=False)
            tick, tick_tokens = now, 0
        if bar is not None:
            bar.update(1)
        paused = time.perf_counter()  # evaluation and checkpoints are not training time
        if config.eval_every and step % config.eval_every == 0 and step < config.steps and procs.main:
            em = exact_match(model.eval(), valid, device, bf16=config.bf16)[0]
            model.train()
            hist["valid"].append([step, em])
            if em >= 0.99 and state["time_to_99_valid_s"] is None:
                state["time_to_99_valid_s"] = state["train_time_s"]
            if bar is not None:
                bar.write(f"step {step}: validation exact match {em:.2%}")
        if procs.main and (step % config.checkpoint_every == 0 or step == last):
            save_checkpoint(ckpt_path, model, optimizer, step, config, state)
        tick += time.perf_counter() - paused
    if bar is not None:
        bar.close()
    state["step"] = step
    return model.eval(), state


def _progress(total, initial, enabled):
    if not enabled:
        return None
    from tqdm.auto import tqdm
    return tqdm(total=total, initial=initial, desc="training", unit="step", file=sys.stderr,
                mininterval=0.5, dynamic_ncols=True)


def evaluate_and_report(model, state, config, out, device, started, export=None, log=print):
    """Exact match on the validation and test splits, parity figures, report.json and model.npz."""
    out = Path(out)
    test = dates.examples("test", config.seed, config.n_test)
    valid = dates.examples("valid", config.seed, config.n_valid)
    valid_em = exact_match(model, valid, device)[0]
    test_em, by_format, preds = exact_match(model, test, device)
    if valid_em >= 0.99 and state["time_to_99_valid_s"] is None:
        state["time_to_99_valid_s"] = state["train_time_s"]
    parity = parity_report(model, test, bf16_device=device if config.bf16 else None)
    hist = state["history"]
    report = {
        "task": "human-written dates -> ISO 8601 (dates.py); greedy decoding",
        "device": torch.device(device).type, "device_name": device_name(device),
        "world_size": processes_from_env().world_size, "threads_per_process": torch.get_num_threads(),
        "torch": torch.__version__,
        "dtype": config.dtype, "bf16_autocast": config.bf16,
        "config": config.to_dict(), "parameters": sum(p.numel() for p in model.parameters()),
        "steps": state["step"], "resumed_from_step": state["resumed_from"],
        "train_time_s": round(state["train_time_s"], 2), "wall_time_s": None,
        "tokens": state["tokens"], "tokens_per_s": round(state["tokens"] / max(state["train_time_s"], 1e-9), 1),
        "loss_first": hist["loss"][0] if hist["loss"] else None,
        "loss_last": float(np.mean(hist["loss"][-5:])) if hist["loss"] else None,
        "valid_exact_match": valid_em, "valid_examples": len(valid),
        "test_exact_match": test_em, "test_examples": len(test),
        "test_exact_match_by_format": by_format,
        "time_to_99_valid_s": state["time_to_99_valid_s"],
        "test_errors": [{"source": s, "target": t, "predicted": p}
                        for (s, t, _), p in zip(test, preds) if p != t][:20],
        "parity": parity,
        "history": hist,
    }
    npz = export_weights(model, out / "model.npz", config,
                         {"test_exact_match": test_em, "steps": state["step"], "device": report["device_name"]})
    if export:
        Path(export).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(npz, export)
        report["exported_to"] = str(export)
    report["wall_time_s"] = round(time.perf_counter() - started, 2)
    (out / "report.json").write_text(json.dumps(report, indent=2))
    return report


def summary_lines(report):
    p = report["parity"]
    npt = p["numpy_float64_vs_torch_float64_cpu"]
    gpu = p["cpu_float32_vs_cuda_float32"]
    lines = [
        f"device            {report['device_name']} (x{report['world_size']})",
        f"steps             {report['steps']}  in {report['train_time_s']:.1f} s of training, "
        f"{report['wall_time_s']:.1f} s in all",
        f"tokens/s          {report['tokens_per_s']:,.0f}",
        f"loss              {report['loss_first']:.3f} -> {report['loss_last']:.4f}",
        f"exact match       test {report['test_exact_match']:.2%} ({report['test_examples']} examples), "
        f"validation {report['valid_exact_match']:.2%}",
        f"NumPy vs torch    max |delta logits| {npt['max_abs_diff_logits']:.2e} (float64, tolerance "
        f"{npt['tolerance']:.0e}), greedy identical: {npt['greedy_identical']}",
    ]
    if gpu.get("available"):
        lines.append(f"CPU vs CUDA       max |delta logits| {gpu['max_abs_diff_logits']:.2e} (float32, TF32 off), "
                     f"greedy identical on {gpu['examples']}: {gpu['greedy_identical']}")
    else:
        lines.append(f"CPU vs CUDA       not measured: {gpu['note']}")
    if "bf16_autocast_vs_float32" in p:
        b = p["bf16_autocast_vs_float32"]
        lines.append(f"bf16 autocast     max |delta logits| {b['max_abs_diff_logits']:.3f} (tolerance "
                     f"{b['tolerance']}), greedy agreement {b['greedy_agreement']:.2%}")
    return lines


# -- command line ------------------------------------------------------------------------------------
def dropout_rate(text):
    """argparse type of --dropout: a float in [0, 1)."""
    rate = float(text)
    if not 0 <= rate < 1:
        raise argparse.ArgumentTypeError(f"a dropout rate lies in [0, 1), got {text}")
    return rate


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m encdec.capstone", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default=None, help="cuda, cuda:1, cpu (default: cuda when available, else cpu)")
    p.add_argument("--smoke", action="store_true", help="the small CI configuration (well under a minute)")
    p.add_argument("--steps", type=int, help="training steps (default 800; smoke 150)")
    p.add_argument("--batch-size", type=int, help="global batch size (default 128; smoke 64)")
    p.add_argument("--seed", type=int, help="seed for the weights, the splits and the batches (default 0)")
    p.add_argument("--dtype", choices=["float32", "float64"], help="training precision (default float32)")
    p.add_argument("--dropout", type=dropout_rate, metavar="RATE",
                   help="residual, attention and embedding dropout rate while training (default 0)")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast (for GPUs); reported separately")
    p.add_argument("--out", default="runs/capstone", help="output folder (default runs/capstone)")
    p.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt if it exists")
    p.add_argument("--stop-at", type=int, help="stop after this step, as an interrupted run would")
    p.add_argument("--export", help="also copy the trained weights (.npz, about 1 MB) to this path")
    p.add_argument("--threads", type=int, default=1,
                   help="CPU threads per process (default 1: the matrices are small, so more threads gain "
                        "little, and they slow down badly when other programs share the cores)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p.parse_args(argv)


def config_from_args(args):
    base = SMOKE if args.smoke else DEFAULT
    changes = {k: v for k, v in (("steps", args.steps), ("batch_size", args.batch_size), ("seed", args.seed),
                                  ("dtype", args.dtype), ("dropout", args.dropout)) if v is not None}
    if args.bf16:
        changes["bf16"] = True
    return dataclasses.replace(base, **changes)


def main(argv=None):
    started = time.perf_counter()
    args = parse_args(argv)
    config = config_from_args(args)
    procs = processes_from_env()
    try:
        device = pick_device(args.device, procs.local_rank)
    except DeviceUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.threads < 1:
        raise SystemExit(f"error: --threads must be at least 1, got {args.threads}")
    torch.set_num_threads(args.threads)
    if procs.main:
        print(f"training on {device_name(device)}"
              + (f", {procs.world_size} processes (DDP)" if procs.world_size > 1 else ""), flush=True)
    model, state = train(config, args.out, device, resume=args.resume, stop_at=args.stop_at,
                         progress=not args.no_progress)
    if procs.main and state["step"] >= config.steps:
        report = evaluate_and_report(model, state, config, args.out, device, started, args.export)
        print("\n".join(summary_lines(report)))
        print(f"report written to {Path(args.out) / 'report.json'}")
    elif procs.main:
        print(f"stopped after step {state['step']} of {config.steps}; checkpoint in "
              f"{Path(args.out) / 'checkpoint.pt'} (continue with --resume)")
    if procs.world_size > 1:
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
