"""Data-parallel training on PyTorch's distributed engine: `torchrun --nproc_per_node=2` with the
gloo backend on the CPU gives, after k steps, the weights of one process with the same global batch."""

import os
import subprocess
import sys

import pytest
import torch

from encdec import capstone

pytestmark = [pytest.mark.lesson10, pytest.mark.slow, pytest.mark.xdist_group("heavy")]
STEPS = 4
ARGS = ["--smoke", "--dtype", "float64", "--batch-size", "32", "--stop-at", str(STEPS), "--no-progress",
        "--device", "cpu"]


def run(command, out):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run(command + ARGS + ["--out", str(out)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, torch.load(out / "checkpoint.pt", weights_only=True)


def test_two_gloo_processes_equal_one_process_with_the_same_global_batch(tmp_path):
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                "-m", "encdec.capstone"]
    ddp_out, ddp = run(torchrun, tmp_path / "ddp")
    _, single = run([sys.executable, "-m", "encdec.capstone"], tmp_path / "single")
    assert "2 processes (DDP)" in ddp_out
    assert ddp["step"] == single["step"] == STEPS
    init = capstone.build_model(capstone.config_from_args(capstone.parse_args(ARGS))).state_dict()
    moved = 0.0
    for name, p in single["model"].items():
        assert p.dtype == torch.float64
        torch.testing.assert_close(ddp["model"][name], p, rtol=0, atol=1e-10, msg=name)
        moved = max(moved, float((p - init[name]).abs().max()))
    assert moved > 1e-3  # the weights did move: k steps of real training, not a no-op
    # Each process trained on its half of every batch: without DDP's gradient averaging rank 0's
    # weights would follow its half alone. (A wrong loss scale would hide behind Adam's scale
    # invariance; the next test checks the scale itself.)
    assert ddp["state"]["tokens"] == single["state"]["tokens"]  # global batches counted once


@pytest.mark.parametrize("world_size", [2, 4])
def test_rank_losses_average_to_the_gradient_of_the_global_mean_loss(world_size):
    """What DDP computes, without processes: the mean over ranks of each rank's gradient must be
    the gradient of the single-process loss (Adam would hide a wrong scale, so check it here)."""
    config = capstone.config_from_args(capstone.parse_args(["--smoke", "--dtype", "float64", "--batch-size", "8"]))
    model = capstone.build_model(config)
    batches = capstone.dates.TrainingBatches(config.seed)

    def gradients(procs):
        model.zero_grad()
        src, tgt_in, tgt, (n_target, _) = capstone.global_batch(batches, 3, config, procs, "cpu")
        capstone.loss_and_stats(model, src, tgt_in, tgt, n_target, procs.world_size)[0].backward()
        return {k: p.grad.clone() for k, p in model.named_parameters()}

    single = gradients(capstone.Processes())
    ranks = [gradients(capstone.Processes(rank=r, world_size=world_size)) for r in range(world_size)]
    for name, g in single.items():
        torch.testing.assert_close(sum(r[name] for r in ranks) / world_size, g, rtol=1e-12, atol=1e-14, msg=name)
    rows = [capstone.global_batch(batches, 3, config, capstone.Processes(r, world_size), "cpu")[0]
            for r in range(world_size)]
    assert torch.equal(torch.cat(rows), torch.from_numpy(batches.batch(3, 8)[0]))


def test_batch_must_split_evenly_across_processes():
    config = capstone.config_from_args(capstone.parse_args(["--smoke", "--batch-size", "10"]))
    with pytest.raises(ValueError, match="multiple of the number of processes 4"):
        capstone.global_batch(capstone.dates.TrainingBatches(0), 1, config, capstone.Processes(0, 4), "cpu")
