"""The ablation ladder: its variants, its runs, the shipped results and their table and figure."""

import json
import subprocess

import numpy as np
import pytest
import torch

from nbtools import ROOT
from encdec import ablation_runs, ablations, torch_model
from encdec.model import ModelConfig, shift_right
from encdec.plotting import ablations as plots
from encdec.toy import ReverseTask

CONFIG = ModelConfig(vocab_size=13, d_model=32, n_heads=4, d_ff=64)


def _twin_name(name):
    for i in range(3):
        name = name.replace(f"norm_gammas.{i}", f"norm{i + 1}_gamma")
    return name


def _batch(size=8):
    src, tgt = ReverseTask(10, 3, 8).batch(0, size)
    return torch.from_numpy(src), torch.from_numpy(shift_right(tgt, 1)), tgt


def test_the_full_model_is_the_torch_twin_weight_for_weight_and_logit_for_logit():
    variant = ablations.build(ablations.FULL, CONFIG, seed=3).double()
    twin = torch_model.Seq2Seq(CONFIG, seed=3).double()
    ours = {_twin_name(k): p for k, p in variant.named_parameters()}
    theirs = dict(twin.named_parameters())
    assert set(ours) == set(theirs) and all(torch.equal(ours[k], theirs[k]) for k in theirs)
    src, tgt_in, _ = _batch()
    torch.testing.assert_close(variant(src, tgt_in), twin(src, tgt_in), rtol=0, atol=1e-12)
    assert torch.equal(variant.greedy_decode(src, 1, 2, 9), twin.greedy_decode(src, 1, 2, 9))


@pytest.mark.parametrize("ablation", ablations.LADDER, ids=lambda a: a.name)
def test_every_row_builds_and_trains_a_step(ablation):
    model = ablations.build(ablation, CONFIG, seed=0)
    src, tgt_in, tgt = _batch()
    logits = model(src, tgt_in)
    assert logits.shape == (*tgt.shape, CONFIG.vocab_size) and torch.isfinite(logits).all()
    logits.sum().backward()
    assert all(p.grad is not None for p in model.parameters())


def test_each_row_changes_what_it_says():
    by = ablations.BY_NAME
    assert sum(a != ablations.FULL for a in ablations.LADDER) == len(ablations.LADDER) - 1 == 9
    full = ablations.build(ablations.FULL, CONFIG)
    decoder_only = ablations.build(by["no cross-attention (decoder-only)"], CONFIG)
    assert not any("cross" in k for k, _ in decoder_only.named_parameters())
    assert len(decoder_only.decoder) == CONFIG.n_encoder_layers + CONFIG.n_decoder_layers
    assert ablations.build(by["one head"], CONFIG).decoder[0].self_attn.n_heads == 1
    src, tgt_in, _ = _batch()
    perm = torch.tensor([2, 1, 0, 3, 4, 5, 6, 7])  # swap the first and third source tokens
    swapped = src.clone()
    swapped[:, :8] = src[:, perm]
    no_pos = ablations.build(by["no positions"], CONFIG).eval()
    rows = (src[:, 0] != 0) & (src[:, 2] != 0)
    torch.testing.assert_close(no_pos(src, tgt_in)[rows], no_pos(swapped, tgt_in)[rows])  # a bag of tokens
    assert not torch.allclose(full(src, tgt_in)[rows], full(swapped, tgt_in)[rows])
    for name in ("no 1/sqrt(d_k)", "no residuals", "no norm", "post-norm"):
        other = ablations.build(by[name], CONFIG)
        assert not torch.allclose(other(src, tgt_in), full(src, tgt_in)), name
    with pytest.raises(ValueError, match="norm must be"):
        ablations.Ablation(norm="middle")


def test_one_pass_exact_match_is_greedy_decodings():
    """Teacher-forced argmax right at every position <=> greedy decoding writes the target."""
    model = ablations.build(ablations.FULL, CONFIG, seed=1).double().eval()
    task = ReverseTask(10, 3, 8)
    src = task.batch(5, 32)[0]
    out = model.greedy_decode(torch.from_numpy(src), 1, 2, 9).numpy()
    tgt = np.zeros((32, 9), dtype=np.int64)  # targets := what greedy decoding writes, up to its EOS if any
    for i, row in enumerate(out):
        row = list(row[: list(row).index(2) + 1]) if 2 in row else list(row)
        tgt[i, :len(row)] = row
    assert ablation_runs.evaluate(model, (src, tgt))[0] == 1.0
    assert ablation_runs.greedy_exact_match(model, (src, tgt), task) == 1.0
    tgt[0, 0] = 3 if tgt[0, 0] != 3 else 4
    assert ablation_runs.evaluate(model, (src, tgt))[0] == pytest.approx(1 - 1 / len(tgt))


# -- the shipped results ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shipped():
    return json.loads(ablation_runs.SHIPPED.read_text())


def test_the_shipped_results_hold_every_row_and_seed(shipped):
    assert ablation_runs.SHIPPED.stat().st_size < 300_000
    assert [r["name"] for r in shipped["rows"]] == [a.name for a in ablations.LADDER]
    assert shipped["seeds"] == list(ablation_runs.SEEDS) and shipped["config"]["steps"] == ablation_runs.DEFAULT.steps
    for row in shipped["rows"]:
        assert row["ablation"] == ablations.BY_NAME[row["name"]].to_dict()
        assert [r["seed"] for r in row["runs"]] == shipped["seeds"]
        for run in row["runs"]:
            assert len(run["eval_step"]) == len(run["exact_match"]) == len(run["eval_loss"])
            assert len(run["train_step"]) == len(run["train_loss"]) and run["eval_step"][-1] == shipped["config"]["steps"]
            assert all(0 <= em <= 1 for em in run["exact_match"]) and run["final_loss"] == run["eval_loss"][-1]
            assert run["final_exact_match"] == pytest.approx(run["exact_match"][-1], abs=0.01)  # greedy vs one pass
        ems = [r["final_exact_match"] for r in row["runs"]]
        assert row["exact_match"]["min"] == pytest.approx(min(ems)) and row["exact_match"]["max"] == pytest.approx(max(ems))
    measured = shipped["measured"]
    assert {"date", "machine", "load_average", "jobs"} <= set(measured)


def test_the_full_model_learns_the_task_and_positions_are_needed(shipped):
    rows = {r["name"]: r for r in shipped["rows"]}
    assert rows["full model"]["exact_match"]["min"] >= 0.9
    assert rows["no positions"]["exact_match"]["max"] <= 0.1


def test_the_table_and_the_figure_draw_from_the_shipped_file_without_training(monkeypatch):
    import matplotlib
    matplotlib.use("Agg")
    monkeypatch.setattr(ablation_runs, "run", lambda *a, **k: pytest.fail("the plot trained a model"))
    table = plots.ablation_table()
    for a in ablations.LADDER:
        assert a.name in table
    fig = plots.ablation_curves()
    em_ax, loss_ax = fig.axes[:2]
    assert len(em_ax.lines) == len(loss_ax.lines) == len(ablations.LADDER)
    assert loss_ax.get_yscale() == "log"
    fig2 = plots.ablation_curves(rows=["full model", "no positions"])
    assert len(fig2.axes[0].lines) == 2
    with pytest.raises(ValueError, match="no row named"):
        plots.ablation_curves(rows=["no such row"])
    rows = plots.table_rows()
    assert rows[0]["name"] == "full model" and rows[0]["exact_match_min"] <= rows[0]["exact_match"]


@pytest.mark.slow
def test_make_ablations_runs_one_row_in_smoke_mode(tmp_path):
    out = tmp_path / "smoke.json"
    done = subprocess.run(["make", "--no-print-directory", "ablations",
                           f"ABLATIONS_ARGS=--smoke --only 'one head' --jobs 1 --out {out}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(out.read_text())
    assert [r["name"] for r in doc["rows"]] == ["one head"] and doc["config"]["steps"] == ablation_runs.SMOKE.steps
    assert doc["rows"][0]["runs"][0]["seconds"] < 60
    plots.ablation_table(doc)  # a smoke document draws too
