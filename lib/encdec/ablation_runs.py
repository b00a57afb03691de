"""The ablation ladder, trained: every row of encdec.ablations.LADDER on the reversal task, 3 seeds each.

    make ablations                                   # the whole ladder -> lib/encdec/data/ablations.json
    python -m encdec.ablation_runs --smoke --only "one head" --out runs/ablations-smoke.json

Task: reversal (encdec.toy.ReverseTask), the task of Lessons 6-9, with 10 letters and lengths 3 to
12 ("cafebgid" -> "digbefac"): every target position must find its source position, n - 1 - t, by
position alone, so the pieces that carry position (positions, attention, residual paths) are put to
work, and the ladder trains in about 20 s a run on one CPU thread. Each run: its own seed for the
weights and the batches; AdamW, warm-up and cosine decay, gradient clipping, as the capstone.

Recorded for every run: the plain cross-entropy of each 10th training batch, and at every evaluation
step the exact match (greedy decoding, whole sequence right) and the cross-entropy on a fixed
held-out set of sequences (teacher forcing, no label smoothing), the final figures and the seconds
the run took. Held-out sequences are drawn from their own generator; the shortest ones (10^3
sequences of length 3) are also drawn in training, the longer ones almost never (10^12 of length 12).
"""

import argparse
import dataclasses
import datetime as dt
import json
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from .ablations import BY_NAME, LADDER, build
from .model import ModelConfig, shift_right
from .optim import warmup_cosine_schedule
from .toy import BOS, EOS, PAD, ReverseTask

SHIPPED = Path(__file__).resolve().parent / "data" / "ablations.json"


@dataclass(frozen=True)
class RunConfig:
    """Everything [CONFIG] about one run of the ladder, but the ablation and the seed."""

    steps: int = 300
    batch_size: int = 64
    lr: float = 3e-3  # peak
    warmup: int = 30  # steps of linear warm-up (0 in the "no warm-up" row)
    min_lr_ratio: float = 0.02
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 128
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    n_letters: int = 10
    min_len: int = 3
    max_len: int = 12
    eval_every: int = 50
    n_eval: int = 500

    def task(self):
        return ReverseTask(self.n_letters, self.min_len, self.max_len)

    def model_config(self):
        return ModelConfig(vocab_size=self.task().vocab_size, d_model=self.d_model, n_heads=self.n_heads,
                           d_ff=self.d_ff, n_encoder_layers=self.n_encoder_layers,
                           n_decoder_layers=self.n_decoder_layers, pad_id=PAD)


DEFAULT = RunConfig()
SMOKE = RunConfig(steps=20, eval_every=10, n_eval=50)
SEEDS = (0, 1, 2)


def _tensors(src, tgt):
    return torch.from_numpy(src), torch.from_numpy(shift_right(tgt, BOS)), torch.from_numpy(tgt)


def _cross_entropy(logits, tgt, smoothing=0.0):
    return F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=PAD, label_smoothing=smoothing)


@torch.no_grad()
def evaluate(model, held_out):
    """(exact match, cross-entropy) on a held-out (src, tgt) pair of arrays, in one forward pass.

    Greedy decoding writes the target exactly if and only if, fed the target (teacher forcing), the
    model's argmax (pad and <bos> excluded, as greedy_decode excludes them) is the target token at
    every position up to its <eos>: then each greedy step sees the same prefix as teacher forcing.
    So this exact match is greedy decoding's, without the decoding loop (`greedy_exact_match`
    decodes, and the tests check that the two agree).
    """
    model.eval()
    src, tgt_in, tgt = _tensors(*held_out)
    logits = model(src, tgt_in)
    loss = float(_cross_entropy(logits, tgt))
    logits[..., [PAD, BOS]] = float("-inf")
    right = (logits.argmax(-1) == tgt) | (tgt == PAD)
    model.train()
    return float(right.all(dim=1).float().mean()), loss


@torch.no_grad()
def greedy_exact_match(model, held_out, task):
    """Exact match of real greedy decoding (the final figure of each run)."""
    model.eval()
    out = model.greedy_decode(torch.from_numpy(held_out[0]), BOS, EOS, held_out[1].shape[1]).numpy()
    model.train()
    return float(np.mean([task.decode(o) == task.decode(t) for o, t in zip(out, held_out[1])]))


def run(ablation, config=DEFAULT, seed=0):
    """Train one variant from `seed`; returns its record (JSON-ready)."""
    started = time.perf_counter()
    task = config.task()
    torch.manual_seed(seed)
    model = build(ablation, config.model_config(), seed).train()
    decay = [p for p in model.parameters() if p.ndim >= 2]
    rest = [p for p in model.parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                                   {"params": rest, "weight_decay": 0.0}], lr=config.lr, betas=(0.9, 0.98))
    held_out = task.batch(np.random.default_rng([seed, 999_999]), config.n_eval)
    warmup = config.warmup if ablation.warmup else 0
    rec = {"train_step": [], "train_loss": [], "eval_step": [], "exact_match": [], "eval_loss": []}
    for step in range(1, config.steps + 1):
        lr = float(warmup_cosine_schedule(step, config.lr, warmup, config.steps, config.lr * config.min_lr_ratio))
        for group in optimizer.param_groups:
            group["lr"] = lr
        src, tgt_in, tgt = _tensors(*task.batch(np.random.default_rng([seed, step]), config.batch_size))
        logits = model(src, tgt_in)
        loss = _cross_entropy(logits, tgt, ablation.label_smoothing)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        if step % 10 == 0 or step == 1:
            plain = loss.detach() if not ablation.label_smoothing else _cross_entropy(logits.detach(), tgt)
            rec["train_step"].append(step)
            rec["train_loss"].append(round(float(plain), 5))
        if step % config.eval_every == 0 or step == config.steps:
            em, eval_loss = evaluate(model, held_out)
            rec["eval_step"].append(step)
            rec["exact_match"].append(round(em, 4))
            rec["eval_loss"].append(round(eval_loss, 5))
    greedy = greedy_exact_match(model, held_out, task)
    return {"seed": seed, **rec, "final_exact_match": round(greedy, 4), "final_loss": rec["eval_loss"][-1],
            "parameters": sum(p.numel() for p in model.parameters()),
            "seconds": round(time.perf_counter() - started, 2)}


def _spread(values):
    return {"mean": round(float(np.mean(values)), 5), "min": round(float(np.min(values)), 5),
            "max": round(float(np.max(values)), 5)}


def _run_in_worker(args):
    ablation, config, seed, threads = args
    torch.set_num_threads(threads)
    return run(ablation, config, seed)


def ladder(config=DEFAULT, seeds=SEEDS, names=None, log=print, jobs=1):
    """Every row (or the rows named) for every seed: the results document (JSON-ready).

    jobs: runs at once, each in its own process on one thread (2 on the course's 2-core machine)."""
    ablations = [BY_NAME[n] for n in names] if names else LADDER
    tasks = [(a, config, seed, torch.get_num_threads()) for a in ablations for seed in seeds]
    if jobs > 1:
        import multiprocessing
        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            done = pool.imap(_run_in_worker, tasks)
            records = [_logged(next(done), a, log) for a, _, _, _ in tasks]
    else:
        records = [_logged(run(a, config, seed), a, log) for a, config, seed, _ in tasks]
    rows = []
    for i, ablation in enumerate(ablations):
        runs = records[i * len(seeds):(i + 1) * len(seeds)]
        rows.append({"name": ablation.name, "ablation": ablation.to_dict(), "runs": runs,
                     "exact_match": _spread([r["final_exact_match"] for r in runs]),
                     "final_loss": _spread([r["final_loss"] for r in runs]),
                     "seconds": _spread([r["seconds"] for r in runs]),
                     "parameters": runs[0]["parameters"]})
    return {"task": f"reversal (encdec.toy.ReverseTask: {config.n_letters} letters, lengths "
                    f"{config.min_len}..{config.max_len})",
            "config": dataclasses.asdict(config), "seeds": list(seeds), "rows": rows,
            "measured": {"date": dt.date.today().isoformat(), "machine": _machine(), "jobs": jobs,
                         "threads_per_run": torch.get_num_threads(), "torch": torch.__version__,
                         "load_average": [round(x, 2) for x in os.getloadavg()]}}


def _logged(record, ablation, log):
    log(f"{ablation.name:<36} seed {record['seed']}: exact match {record['final_exact_match']:.1%}, "
        f"loss {record['final_loss']:.4f}, {record['seconds']:.1f} s")
    return record


def _machine():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} cores)"
    except OSError:
        pass
    return f"{platform.machine()} ({os.cpu_count()} cores)"


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m encdec.ablation_runs", description=__doc__.split("\n\n")[0])
    p.add_argument("--smoke", action="store_true", help="20 steps a run, one seed: checks the machinery only")
    p.add_argument("--only", action="append", choices=sorted(BY_NAME), help="this row only (repeatable)")
    p.add_argument("--seeds", default=None, help="comma-separated seeds (default 0,1,2; smoke 0)")
    p.add_argument("--out", default=None, help=f"results file (default {SHIPPED}; smoke runs/ablations-smoke.json)")
    p.add_argument("--threads", type=int, default=1, help="CPU threads per run (default 1)")
    p.add_argument("--jobs", type=int, default=2, help="runs at once, one process each (default 2: two cores)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    seeds = tuple(int(s) for s in args.seeds.split(",")) if args.seeds else ((0,) if args.smoke else SEEDS)
    out = Path(args.out or ("runs/ablations-smoke.json" if args.smoke else SHIPPED))
    results = ladder(SMOKE if args.smoke else DEFAULT, seeds, args.only, log=lambda line: print(line, flush=True),
                     jobs=args.jobs)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"results written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
