"""Adam against torch.optim.Adam; the schedules' shapes; learning on a tiny task."""

import numpy as np
import torch

import encdec
from encdec import Adam, warmup_cosine_schedule, warmup_schedule


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
