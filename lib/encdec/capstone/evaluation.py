"""How well a trained capstone model does: greedy predictions and exact match on the dates task (or
another capstone task, `task=`: a name of encdec.capstone.tasks or the task's module)."""

import numpy as np
import torch

from .devices import bf16_autocast
from .tasks import get as get_task


@torch.no_grad()
def predict(model, sources, device=None, batch_size=500, bf16=False, task=None):
    """Greedy outputs (strings: ISO dates by default) for a list of source texts."""
    task = get_task(task)
    device = device or next(model.parameters()).device
    out = []
    for i in range(0, len(sources), batch_size):
        src = torch.from_numpy(task.pad_batch([task.encode(s) for s in sources[i:i + batch_size]])).to(device)
        with bf16_autocast(device, bf16):
            ids = model.greedy_decode(src, task.BOS, task.EOS, max_len=task.TARGET_LEN)
        out.extend(task.decode(row) for row in ids.cpu().numpy())
    return out


def exact_match(model, examples, device=None, bf16=False, task=None):
    """(fraction of exact matches, {group: fraction}, predictions) on (source, target, group) triples;
    the group is a date's format, a number's range."""
    preds = predict(model, [s for s, _, _ in examples], device, bf16=bf16, task=task)
    hits = [p == t for p, (_, t, _) in zip(preds, examples)]
    by_format = {}
    for ok, (_, _, fmt) in zip(hits, examples):
        by_format.setdefault(fmt, []).append(ok)
    return (float(np.mean(hits)), {f: float(np.mean(v)) for f, v in by_format.items()}, preds)
