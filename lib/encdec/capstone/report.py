"""The report of a finished run: exact match on the validation and test splits (overall, by group, the
first errors), chrF and BLEU, the parity figures, OUT/report.json and OUT/model.npz, and the summary
lines the command line prints."""

import json
import shutil
import time
from pathlib import Path

import numpy as np
import torch

from .checkpoints import export_weights
from .devices import device_name, processes_from_env
from .evaluation import exact_match
from .metrics import scores
from .parity import parity_report
from .tasks import get as get_task
from .tasks import info as task_info


def evaluate_and_report(model, state, config, out, device, started, export=None, log=print):
    """Exact match on the validation and test splits, parity figures, report.json and model.npz."""
    out = Path(out)
    task, about = get_task(config.task), task_info(config.task)
    test = task.examples("test", config.seed, config.n_test)
    valid = task.examples("valid", config.seed, config.n_valid)
    valid_em = exact_match(model, valid, device, task=task)[0]
    test_em, by_group, preds = exact_match(model, test, device, task=task)
    metrics = scores(preds, [t for _, t, _ in test])
    if valid_em >= 0.99 and state["time_to_99_valid_s"] is None:
        state["time_to_99_valid_s"] = state["train_time_s"]
    parity = parity_report(model, test, bf16_device=device if config.bf16 else None, task=task)
    hist = state["history"]
    report = {
        "task": about.description, "task_name": config.task,
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
        f"test_exact_match_by_{about.group}": dict(sorted(by_group.items())),
        "test_chrf": metrics["chrf"], "test_bleu": metrics["bleu"],
        "metrics": {**metrics, "note": "sacrebleu on the detokenised strings; BLEU on characters "
                                       "(tokenize='char'), chrF with sacrebleu's defaults"},
        "time_to_99_valid_s": state["time_to_99_valid_s"],
        "test_errors": [{"source": s, "target": t, "predicted": p}
                        for (s, t, _), p in zip(test, preds) if p != t][:20],
        "parity": parity,
        "history": hist,
    }
    npz = export_weights(model, out / "model.npz", config,
                         {"test_exact_match": test_em, "test_chrf": metrics["chrf"], "test_bleu": metrics["bleu"],
                          "steps": state["step"], "device": report["device_name"]})
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
        f"chrF, BLEU        test {report['test_chrf']:.2f}, {report['test_bleu']:.2f} (sacrebleu; BLEU on characters)",
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
