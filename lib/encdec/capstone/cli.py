"""The capstone: train the PyTorch twin on the dates task, on a GPU when there is one, and check
that NumPy, torch on the CPU and torch on the GPU compute the same function, up to rounding.

    python -m encdec.capstone                    # default run: cuda when available, else CPU
    python -m encdec.capstone --smoke            # the CI configuration (well under a minute)
    python -m encdec.capstone --task numbers     # English number words -> German (encdec.number_words)
    python -m encdec.capstone --resume           # continue from runs/capstone/checkpoint.pt
    torchrun --nproc_per_node=2 -m encdec.capstone   # data-parallel: NCCL on GPUs, gloo on CPU

The run writes OUT/report.json (device, steps, wall time, tokens/s, exact-match accuracy on the
test split, chrF and BLEU, parity figures), OUT/checkpoint.pt (resumable) and OUT/model.npz (the weights in
float32 with their config, loadable without pickle; `--export PATH` copies it elsewhere).
"""

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import torch

from .config import PRESETS
from .devices import DeviceUnavailable, device_name, pick_device, processes_from_env
from .report import evaluate_and_report, summary_lines
from .tasks import TASKS
from .training import train


def dropout_rate(text):
    """argparse type of --dropout: a float in [0, 1)."""
    rate = float(text)
    if not 0 <= rate < 1:
        raise argparse.ArgumentTypeError(f"a dropout rate lies in [0, 1), got {text}")
    return rate


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m encdec.capstone", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=sorted(TASKS), default="dates",
                   help="dates (default: human dates -> ISO) or numbers (English number words -> German)")
    p.add_argument("--device", default=None, help="cuda, cuda:1, cpu (default: cuda when available, else cpu)")
    p.add_argument("--smoke", action="store_true", help="the small CI configuration (well under a minute)")
    p.add_argument("--steps", type=int, help="training steps (default 800, numbers 600; smoke 150)")
    p.add_argument("--batch-size", type=int, help="global batch size (default 128; smoke 64)")
    p.add_argument("--seed", type=int, help="seed for the weights, the splits and the batches (default 0)")
    p.add_argument("--dtype", choices=["float32", "float64"], help="training precision (default float32)")
    p.add_argument("--dropout", type=dropout_rate, metavar="RATE",
                   help="residual, attention and embedding dropout rate while training (default 0)")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast (for GPUs); reported separately")
    p.add_argument("--out", default=None,
                   help="output folder (default runs/capstone; runs/capstone-numbers for --task numbers)")
    p.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt if it exists")
    p.add_argument("--stop-at", type=int, help="stop after this step, as an interrupted run would")
    p.add_argument("--export", help="also copy the trained weights (.npz, about 1 MB) to this path")
    p.add_argument("--threads", type=int, default=1,
                   help="CPU threads per process (default 1: the matrices are small, so more threads gain "
                        "little, and they slow down badly when other programs share the cores)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p.parse_args(argv)


def config_from_args(args):
    base = PRESETS[getattr(args, "task", "dates"), bool(args.smoke)]
    changes = {k: v for k, v in (("steps", args.steps), ("batch_size", args.batch_size), ("seed", args.seed),
                                  ("dtype", args.dtype), ("dropout", args.dropout)) if v is not None}
    if args.bf16:
        changes["bf16"] = True
    return dataclasses.replace(base, **changes)


def main(argv=None):
    started = time.perf_counter()
    args = parse_args(argv)
    if args.out is None:
        args.out = "runs/capstone" if args.task == "dates" else f"runs/capstone-{args.task}"
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
