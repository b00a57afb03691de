"""Make the state of Lesson 10's capstone run after 200 steps (§10.7): lib/encdec/data/capstone_dates_200.npz.

    python tools/capstone_200.py           # 200 steps on one CPU thread: under a minute on a quiet core
    python tools/capstone_200.py --check   # train again and compare with the shipped file, bit for bit

On a CPU, §10.7 trains only the first 10 steps live and then loads this file: the weights of the same
run after 200 steps, and the loss history of those 200 steps. It is made by the very call the lesson
made before, `capstone.train(config, out, "cpu", stop_at=200)` with the lesson's config (capstone.DEFAULT
without validation while training) and its seed, on one thread as in the lesson. The weights are
exported with capstone.export_weights (float32 exactly as trained, no pickle; capstone.load_weights reads
them back), the history is in the file's summary. Training on the CPU with one thread is deterministic:
the same file comes out on every run on the same machine (another CPU may round the last bits
differently; --check says whether it does).
"""

import dataclasses
import os
import platform
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from encdec import capstone  # noqa: E402

STEPS = 200
PATH = capstone.PRETRAINED.parent / "capstone_dates_200.npz"
CONFIG = dataclasses.replace(capstone.DEFAULT, eval_every=0)  # §10.7's config: no validation while training


def train():
    """(model, state) of the lesson's run after STEPS steps, on one CPU thread."""
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="capstone-200-") as out:
        return capstone.train(CONFIG, out, "cpu", stop_at=STEPS, progress=False)


def main(argv):
    model, state = train()
    history = {key: state["history"][key] for key in ("step", "loss", "token_accuracy")}
    if "--check" in argv:
        shipped, meta = capstone.load_weights(PATH)
        same = all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), shipped.state_dict().values()))
        same_history = meta["summary"]["history"] == history
        print(f"weights {'identical' if same else 'DIFFERENT'}, history {'identical' if same_history else 'DIFFERENT'} "
              f"to {PATH.relative_to(ROOT)}")
        return 0 if same and same_history else 1
    summary = {"steps": state["step"], "history": history,
               "train_time_s": round(state["train_time_s"], 1),
               "device": f"CPU, one thread ({platform.processor() or platform.machine()}), torch {torch.__version__}",
               "made_by": "python tools/capstone_200.py"}
    path = capstone.export_weights(model, PATH, CONFIG, summary)
    print(f"{STEPS} steps in {state['train_time_s']:.0f} s: loss {history['loss'][0]:.4f} -> {history['loss'][-1]:.4f}")
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
