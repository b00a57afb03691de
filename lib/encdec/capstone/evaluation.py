"""How well a trained capstone model does: greedy predictions and exact match on the dates task."""

import numpy as np
import torch

from .. import dates
from .devices import bf16_autocast


@torch.no_grad()
def predict(model, sources, device=None, batch_size=500, bf16=False):
    """Greedy ISO outputs (strings) for a list of source texts."""
    device = device or next(model.parameters()).device
    out = []
    for i in range(0, len(sources), batch_size):
        src = torch.from_numpy(dates.pad_batch([dates.encode(s) for s in sources[i:i + batch_size]])).to(device)
        with bf16_autocast(device, bf16):
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
