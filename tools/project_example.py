"""Make the course's example run of Lesson 10's project (§10.16): lib/encdec/data/project_example.npz.

    python tools/project_example.py        # about half a minute of training on one CPU thread

It runs the lesson's own training loop, the cell of authoring/10_capstone.py that starts with
"# The project's training loop", with the course's functions in place of a student's (nothing of a
student's is defined here), on two configurations within the project's budget: a model smaller than
the default at a peak learning rate of 4e-3, and, as the experiment, the same at 2e-3. The first run's
weights are exported with capstone.export_weights (float32, no pickle), with its loss history and the
report the project asks for in the file's summary; encdec.checks.lesson10.example_report() reads it.
Training on the CPU with one thread is deterministic: the same file comes out on every run of this script.
"""

import dataclasses
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

import torch  # noqa: E402

from encdec import capstone  # noqa: E402
from encdec.checks import lesson10  # noqa: E402

MARK = "# The project's training loop."
RUN = dict(steps=300, batch_size=128, lr=4e-3, warmup=30, d_model=32, d_ff=128)
EXPERIMENT = dict(RUN, lr=2e-3)


def training_loop_source():
    """The source of the lesson's cell that defines train_run."""
    text = (ROOT / "authoring" / "10_capstone.py").read_text(encoding="utf-8")
    cells = text.split("\n# %%")
    found = [c.split("\n", 1)[1] for c in cells if c.split("\n", 1)[1].startswith(MARK)]
    if len(found) != 1:
        raise SystemExit(f"expected one cell of authoring/10_capstone.py starting with {MARK!r}, found {len(found)}")
    return found[0]


def main():
    torch.set_num_threads(1)
    namespace = {"__name__": "project_example", "time": time, "torch": torch, "capstone": capstone,
                 "yours_or_ours": lesson10.yours_or_ours}
    exec(compile(training_loop_source(), "authoring/10_capstone.py: the project's training loop", "exec"), namespace)
    train_run = namespace["train_run"]
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="project-example-") as folder:
        os.chdir(folder)
        try:
            config = dataclasses.replace(capstone.NUMBERS, **RUN)
            experiment = dataclasses.replace(capstone.NUMBERS, **EXPERIMENT)
            run, other = train_run(config, "example"), train_run(experiment, "example-experiment")
            read = lesson10.read_run(Path(run["checkpoint"]))
        finally:
            os.chdir(here)
    print("run:", run)
    print("experiment:", other)
    report = {key: run[key] for key in ("task", "steps", "lr", "warmup", "final_loss", "test_exact_match")}
    report["experiment"] = (f"the same run (d_model {config.d_model}, d_ff {config.d_ff}, {config.steps} steps of "
                            f"{config.batch_size}, warm-up {config.warmup}) at a peak learning rate of "
                            f"{experiment.lr:g} instead of {config.lr:g}")
    report["finding"] = (f"at {config.lr:g}: final loss {run['final_loss']:.4f}, test exact match "
                         f"{run['test_exact_match']:.1%}; at {experiment.lr:g}: final loss {other['final_loss']:.4f}, "
                         f"test exact match {other['test_exact_match']:.1%}. One seed each: a difference smaller than "
                         "the spread between seeds would need more runs to mean anything.")
    summary = {"steps": read["steps"], "history": {"step": list(range(1, len(read["losses"]) + 1)),
                                                   "loss": [float(x) for x in read["losses"]]},
               "report": report, "seconds": run["seconds"], "experiment_seconds": other["seconds"],
               "device": f"CPU, one thread ({platform.processor() or platform.machine()})",
               "made_by": "python tools/project_example.py"}
    path = capstone.export_weights(read["model"], lesson10.EXAMPLE_RUN, config, summary)
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
