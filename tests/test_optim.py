"""Adam against torch.optim.Adam, AdamW against torch.optim.AdamW; the schedules' shapes; learning on a tiny task."""

import numpy as np
import pytest
import torch

import encdec
from encdec import Adam, warmup_cosine_schedule, warmup_schedule
from encdec.optim import AdamW


def test_adam_matches_torch_adam_over_several_steps(rng):
    params = {"w": rng.normal(size=(3, 4)), "b": rng.normal(size=4)}
    tparams = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    opt = Adam(params, lr=0.01, betas=(0.9, 0.98), eps=1e-9)
    topt = torch.optim.Adam(tparams.values(), lr=0.01, betas=(0.9, 0.98), eps=1e-9)
    for _ in range(5):
        grads = {k: rng.normal(size=v.shape) for k, v in params.items()}
        opt.step(grads)
        for k, p in tparams.items():
            p.grad = torch.from_numpy(grads[k])
        topt.step()
    for k in params:
        np.testing.assert_allclose(params[k], tparams[k].detach().numpy(), atol=1e-12)


def test_adam_update_first_step_moves_by_lr_times_sign(rng):
    p, g = rng.normal(size=5), rng.normal(size=5)
    new, m, v = encdec.adam_update(p, g, np.zeros(5), np.zeros(5), t=1, lr=0.1, eps=0.0)
    np.testing.assert_allclose(new, p - 0.1 * np.sign(g))


def test_warmup_schedule_rises_then_decays():
    lrs = [warmup_schedule(s, d_model=64, warmup_steps=100) for s in range(1, 1001)]
    assert int(np.argmax(lrs)) + 1 == 100
    np.testing.assert_allclose(lrs[99], 64**-0.5 * 100**-0.5)
    assert all(a < b for a, b in zip(lrs[:99], lrs[1:100]))
    assert all(a > b for a, b in zip(lrs[100:-1], lrs[101:]))


def test_warmup_cosine_schedule():
    assert warmup_cosine_schedule(5, 1.0, 10, 100) == 0.5
    assert warmup_cosine_schedule(10, 1.0, 10, 100) == 1.0
    np.testing.assert_allclose(warmup_cosine_schedule(55, 1.0, 10, 100), 0.5)
    np.testing.assert_allclose(warmup_cosine_schedule(100, 1.0, 10, 100, min_lr=0.1), 0.1)


def test_numpy_training_learns_to_copy_sequences():
    rng = np.random.default_rng(0)
    model = encdec.Seq2Seq(vocab_size=8, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1,
                           n_decoder_layers=1, rng=0)
    opt = Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(60):
        src = rng.integers(3, 8, size=(16, 4))
        tgt = np.concatenate([src, np.full((16, 1), 2)], axis=1)
        loss, _ = encdec.train_step(model, opt, src, tgt, bos_id=1)
        losses.append(loss)
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])


# -- AdamW: decoupled weight decay, matrices only ---------------------------------------------------------
def _torch_adamw_two_groups(tparams, decayed, **kwargs):
    """torch.optim.AdamW as encdec.capstone.build_optimizer makes it: decay on the listed arrays only."""
    wd = kwargs.pop("weight_decay")
    groups = [{"params": [p for k, p in tparams.items() if k in decayed], "weight_decay": wd},
              {"params": [p for k, p in tparams.items() if k not in decayed], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, **kwargs)


def test_adamw_matches_torch_adamw_over_several_steps_to_1e_10(rng):
    params = {"W": rng.normal(size=(3, 4)), "embedding": rng.normal(size=(5, 3)), "gamma": rng.uniform(0.5, 1.5, 4),
              "b": rng.normal(size=4)}
    tparams = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    opt = AdamW(params, lr=0.05, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.1)
    assert opt.decayed == {"W", "embedding"}
    topt = _torch_adamw_two_groups(tparams, opt.decayed, lr=0.05, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.1)
    for step in range(1, 7):
        grads = {k: rng.normal(size=v.shape) * 10.0 ** rng.integers(-3, 2) for k, v in params.items()}
        lr = 0.05 * step / 6  # a different rate at every step, as a schedule gives
        opt.step(grads, lr=lr)
        for group in topt.param_groups:
            group["lr"] = lr
        for k, p in tparams.items():
            p.grad = torch.from_numpy(grads[k])
        topt.step()
        for k in params:
            np.testing.assert_allclose(params[k], tparams[k].detach().numpy(), rtol=0, atol=1e-10)


def test_adamw_defaults_are_torchs(rng):
    params = {"W": rng.normal(size=(2, 3)), "g": rng.normal(size=3)}
    tparams = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    opt, topt = AdamW(params), torch.optim.AdamW(tparams.values())  # torch decays every parameter by default
    opt.decayed = set(params)
    for _ in range(3):
        grads = {k: rng.normal(size=v.shape) for k, v in params.items()}
        opt.step(grads)
        for k, p in tparams.items():
            p.grad = torch.from_numpy(grads[k])
        topt.step()
    for k in params:
        np.testing.assert_allclose(params[k], tparams[k].detach().numpy(), rtol=0, atol=1e-10)


def test_adamw_decay_is_decoupled_from_the_gradient():
    """With a zero gradient Adam's move is 0/(0 + eps) = 0: only the decay acts, p *= 1 - lr * wd,
    and an undecayed gain does not move at all. Adam with an L2 term would move both by about lr."""
    params = {"W": np.full((2, 2), 3.0), "gamma": np.full(2, 3.0)}
    AdamW(params, lr=0.1, weight_decay=0.5).step({k: np.zeros_like(v) for k, v in params.items()})
    np.testing.assert_allclose(params["W"], 3.0 * (1 - 0.1 * 0.5))
    np.testing.assert_array_equal(params["gamma"], 3.0)


def test_adamw_update_without_decay_is_adam_update(rng):
    p, g, m, v = rng.normal(size=5), rng.normal(size=5), rng.normal(size=5) * 0.1, rng.uniform(0, 1, 5)
    a = encdec.optim.adamw_update(p, g, m, v, 3, 0.01, 0.9, 0.98, 1e-9, weight_decay=0.0)
    b = encdec.adam_update(p, g, m, v, 3, 0.01, 0.9, 0.98, 1e-9)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_adamw_refuses_missing_gradients(rng):
    opt = AdamW({"W": rng.normal(size=(2, 2))})
    with pytest.raises(ValueError, match="no gradient"):
        opt.step({})
