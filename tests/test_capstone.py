"""The capstone: the dates task, the training script (smoke run, report, resume) and the parity
of the three implementations (NumPy float64, torch on the CPU, torch on CUDA)."""

import dataclasses
import datetime as dt
import importlib
import json
import subprocess
import sys

import numpy as np
import pytest
import torch

import encdec
from encdec import capstone, dates
from encdec.capstone import parity
from encdec import torch_model as tm
from encdec.checks.fixtures import randomize

pytestmark = pytest.mark.lesson10
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                                  reason="no CUDA GPU on this machine"))]


# -- the dates task ------------------------------------------------------------------------------------
HAND_WRITTEN = [  # (text as a person writes it, the ISO date it means)
    ("2 Dec 2026", "2026-12-02"),
    ("02 Dec 2026", "2026-12-02"),
    ("december 2nd, 2026", "2026-12-02"),
    ("December 2, 2026", "2026-12-02"),
    ("Wednesday, 2 December 2026", "2026-12-02"),
    ("Wed 02 Dec 2026", "2026-12-02"),
    ("02/12/2026", "2026-12-02"),
    ("2/12/2026", "2026-12-02"),
    ("02.12.2026", "2026-12-02"),
    ("02-12-2026", "2026-12-02"),
    ("2026/12/02", "2026-12-02"),
    ("20261202", "2026-12-02"),
    ("DEC 2 2026", "2026-12-02"),
    ("2-dec-2026", "2026-12-02"),
    ("the 1st of march, 2001", "2001-03-01"),
    ("23rd of July 2023", "2023-07-23"),
    ("february 29th, 2024", "2024-02-29"),
    ("Mar 11, 1999", "1999-03-11"),
    ("11th of November 1950", "1950-11-11"),
    ("Friday, 31 December 2049", "2049-12-31"),
    ("12/02/2026", "2026-02-12"),
]


@pytest.mark.parametrize("text,iso", HAND_WRITTEN)
def test_hand_written_dates_are_renderings_of_their_iso_date(text, iso):
    date = dt.date.fromisoformat(iso)
    assert text in {dates.render(date, f) for f in dates.FORMAT_NAMES}


def test_numeric_dates_are_day_first():
    assert dates.render(dt.date(2026, 12, 2), "dd/mm/Y") == "02/12/2026"
    assert dates.render(dt.date(2026, 2, 12), "dd/mm/Y") == "12/02/2026"
    numeric = [(s, t) for s, t, f in dates.examples("test") if f in ("dd/mm/Y", "d/m/Y", "dd.mm.Y", "dd-mm-Y")]
    assert len(numeric) > 300
    for source, target in numeric:
        day, month, year = source.replace(".", "/").replace("-", "/").split("/")
        assert target == f"{year}-{int(month):02d}-{int(day):02d}", source


def test_ordinals():
    got = [dates.ordinal(d) for d in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 30, 31)]
    assert got == ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "30th", "31st"]


def test_splits_are_disjoint_and_cover_every_date():
    splits = dates.split_dates(seed=0)
    train, valid, test = (set(splits[k]) for k in ("train", "valid", "test"))
    assert not train & valid and not train & test and not valid & test
    assert len(train | valid | test) == len(dates.all_dates()) == 100 * 365 + 25  # 1950..2049, 25 leap days
    assert (len(valid), len(test)) == (dates.N_VALID, dates.N_TEST)
    assert dates.split_dates(seed=0) == splits and dates.split_dates(seed=1)["test"] != splits["test"]


def test_no_held_out_text_or_date_appears_in_training_batches():
    held_out = dates.examples("valid") + dates.examples("test")
    held_texts = {s for s, _, _ in held_out}
    held_dates = {t for _, t, _ in held_out}
    batches = dates.TrainingBatches(seed=0)
    for step in range(1, 40):
        sources, targets = batches.texts(step, 128)
        assert not held_texts & set(sources) and not held_dates & set(targets)


def test_held_out_sets_are_fixed_and_cover_every_format():
    test = dates.examples("test")
    assert test == dates.examples("test") and len(test) == dates.N_TEST
    counts = {f: sum(1 for *_, g in test if g == f) for f in dates.FORMAT_NAMES}
    assert min(counts.values()) >= len(test) // len(dates.FORMAT_NAMES)
    assert {f for *_, f in dates.examples("test", n=18)} == set(dates.FORMAT_NAMES)


def test_training_batches_are_a_function_of_the_step():
    a, b = dates.TrainingBatches(0), dates.TrainingBatches(0)
    src, tgt = a.batch(7, 16)
    np.testing.assert_array_equal(src, b.batch(7, 16)[0])
    np.testing.assert_array_equal(tgt, b.batch(7, 16)[1])
    assert not np.array_equal(tgt, a.batch(8, 16)[1])
    assert tgt.shape == (16, dates.TARGET_LEN) and np.all(np.sum(tgt == dates.EOS, axis=1) == 1)
    assert src.shape[1] == max(np.sum(src != dates.PAD, axis=1))  # padded to the longest source


def test_encoding_round_trips_and_reserves_pad_bos_eos():
    assert (dates.PAD, dates.BOS, dates.EOS) == (0, 1, 2) and dates.VOCAB_SIZE == 70
    ids = dates.encode("2026-12-02", eos=True)
    assert ids[-1] == dates.EOS and min(ids[:-1]) >= 3
    assert dates.decode([dates.BOS] + ids + [dates.PAD, 5]) == "2026-12-02"
    with pytest.raises(ValueError, match="'é'"):
        dates.encode("2 décembre 2026")
    with pytest.raises(ValueError, match="unknown format"):
        dates.render(dt.date(2026, 12, 2), "yy")


# -- parity ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def random_twin():
    """A torch twin with random weights everywhere (gammas and biases too), float32."""
    config = dataclasses.replace(capstone.DEFAULT, d_model=32, n_heads=4, d_ff=64).model_config()
    np_model = encdec.Seq2Seq(config, rng=3)
    randomize(np_model.parameters(), np.random.default_rng(5), scale=0.3)
    return tm.from_numpy(np_model, dtype=torch.float32)


def test_numpy_float64_matches_torch_float64_to_1e_9(random_twin, one_thread):
    result = capstone.numpy_torch_parity(random_twin, dates.examples("test", n=24))
    assert result["max_abs_diff_logits"] <= 1e-9 and result["passed"]
    assert result["greedy_identical"]


def test_numpy_torch_parity_detects_a_lossy_weight_transfer(random_twin, monkeypatch):
    lossy = tm.numpy_parameters(random_twin)
    lossy["decoder.1.cross_attn.W_v"][0, 0] += 1e-6
    monkeypatch.setattr(parity, "to_numpy", lambda m: encdec.Seq2Seq(m.config).load_parameters(lossy))
    result = capstone.numpy_torch_parity(random_twin, dates.examples("test", n=8))
    assert not result["passed"] and result["max_abs_diff_logits"] > 1e-9


@pytest.mark.parametrize("device", DEVICES)
def test_cpu_float32_matches_device_float32(random_twin, device, one_thread):
    result = capstone.device_parity(random_twin, dates.examples("test", n=64), device, n_logits=32)
    assert result["max_abs_diff_logits"] < 1e-4
    assert result["greedy_identical"] and result["greedy_differences"] == 0


def test_bf16_autocast_has_its_own_figure_and_tolerance(random_twin, one_thread):
    result = capstone.bf16_report(random_twin, dates.examples("test", n=16), "cpu", n_logits=16)
    assert result["tolerance"] == capstone.BF16_TOLERANCE > capstone.NUMPY_TORCH_TOLERANCE
    assert 0 < result["max_abs_diff_logits"]  # bf16 really ran: float32 would give exactly 0
    assert 0.0 <= result["greedy_agreement"] <= 1.0


def test_rms_norm_closed_form_backward_equals_autograd_of_the_plain_formula():
    r = torch.Generator().manual_seed(0)
    x = (torch.randn(2, 3, 8, generator=r, dtype=torch.float64) * 3).requires_grad_()
    gamma = (torch.rand(8, generator=r, dtype=torch.float64) + 0.5).requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b: tm.RMSNormFunction.apply(a, b, 1e-6), (x, gamma))
    g = torch.randn(2, 3, 8, generator=r, dtype=torch.float64)
    plain = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * gamma
    expected = torch.autograd.grad(plain, (x, gamma), g)
    got = torch.autograd.grad(tm.RMSNormFunction.apply(x, gamma, 1e-6), (x, gamma), g)
    for e, o in zip(expected, got):
        torch.testing.assert_close(o, e, rtol=1e-12, atol=1e-12)


def test_shipped_checkpoint_is_trained_and_numpy_agrees_with_it(one_thread):
    model, meta = capstone.load_weights()
    assert capstone.PRETRAINED.stat().st_size < 3_000_000
    accuracy, _, _ = capstone.exact_match(model, dates.examples("test", n=300))
    assert accuracy >= 0.99 and meta["summary"]["test_exact_match"] >= 0.99
    result = capstone.numpy_torch_parity(model, dates.examples("test", n=16))
    assert result["passed"] and result["greedy_identical"]


def test_the_shipped_200_step_state_is_the_lessons_run_after_200_steps(one_thread, tmp_path):
    """Lesson 10, §10.7, on a CPU: 10 steps trained live, then this file. Its losses at steps 1 and 10
    are those of the same call trained here (tools/capstone_200.py makes the file, --check retrains
    all 200), and its model is half-trained: better than untrained, short of the complete run."""
    path = capstone.PRETRAINED.parent / "capstone_dates_200.npz"
    half, meta = capstone.load_weights(path)
    shipped = dict(zip(meta["summary"]["history"]["step"], meta["summary"]["history"]["loss"]))
    assert meta["summary"]["steps"] == 200 and max(shipped) == 200 and path.stat().st_size < 3_000_000
    config = dataclasses.replace(capstone.DEFAULT, eval_every=0)
    _, state = capstone.train(config, tmp_path, "cpu", stop_at=10, progress=False)
    here = dict(zip(state["history"]["step"], state["history"]["loss"]))
    assert here[1] == pytest.approx(shipped[1], rel=1e-5) and here[10] == pytest.approx(shipped[10], rel=1e-5)
    assert shipped[200] < shipped[10] / 5
    accuracy, _, _ = capstone.exact_match(half, dates.examples("test", n=100))
    assert 0.0 < accuracy < 0.99


# -- the package -----------------------------------------------------------------------------------------
def test_parity_module_imports_without_the_training_loop():
    """Lesson 10 and `make bench` use the parity report on trained weights: it must not need the loop."""
    code = ("import sys, encdec.capstone.parity; "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('encdec.capstone'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert "encdec.capstone.parity" in loaded
    assert not loaded & {"encdec.capstone.training", "encdec.capstone.checkpoints", "encdec.capstone.report",
                         "encdec.capstone.cli"}, loaded


USED_FROM_OUTSIDE = {  # by Lesson 10, its checker, bench/ and the tests, as encdec.capstone.<name>
    "BF16_TOLERANCE", "DEFAULT", "NUMPY_TORCH_TOLERANCE", "PRETRAINED", "Processes", "SMOKE", "bf16_report",
    "build_model", "build_optimizer", "config_from_args", "device_name", "device_parity", "evaluate_and_report",
    "exact_match", "global_batch", "learning_rate", "load_weights", "loss_and_stats", "main",
    "numpy_torch_parity", "parity_report", "parse_args", "predict", "tf32_disabled", "train"}


def test_every_public_name_is_a_name_of_the_package():
    assert USED_FROM_OUTSIDE <= set(capstone.__all__), USED_FROM_OUTSIDE - set(capstone.__all__)
    for name in capstone.__all__:
        home = importlib.import_module(f"encdec.capstone.{capstone._MODULE_OF[name]}")
        assert getattr(capstone, name) is getattr(home, name), name
    assert capstone.train is capstone.training.train and capstone.parity_report is parity.parity_report
    assert capstone.dates is dates
    with pytest.raises(AttributeError, match="no attribute 'trian'"):
        capstone.trian


# -- the training script ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def smoke_report(tmp_path_factory):
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("smoke")
    try:
        assert capstone.main(["--smoke", "--out", str(out), "--no-progress", "--device", "cpu"]) == 0
    finally:
        torch.set_num_threads(before)
    return json.loads((out / "report.json").read_text()), out


@pytest.mark.slow
@pytest.mark.xdist_group("heavy")
def test_smoke_run_learns(smoke_report):
    report, _ = smoke_report
    assert report["steps"] == capstone.SMOKE.steps
    assert report["loss_first"] > 3.5  # about log(70) = 4.2 at the start
    assert report["loss_last"] < 0.25 * report["loss_first"]
    history = report["history"]
    assert history["token_accuracy"][-1] > history["token_accuracy"][0] + 0.5


@pytest.mark.slow
@pytest.mark.xdist_group("heavy")
def test_report_has_every_field(smoke_report):
    report, out = smoke_report
    for key in ("device", "device_name", "world_size", "steps", "wall_time_s", "train_time_s", "tokens_per_s",
                "test_exact_match", "test_examples", "valid_exact_match", "parity", "config", "history"):
        assert key in report, key
    assert report["device"] == "cpu" and report["tokens_per_s"] > 0 and report["wall_time_s"] > 0
    assert 0.0 <= report["test_exact_match"] <= 1.0 and report["test_examples"] == capstone.SMOKE.n_test
    parity = report["parity"]
    assert parity["numpy_float64_vs_torch_float64_cpu"]["max_abs_diff_logits"] <= 1e-9
    gpu = parity["cpu_float32_vs_cuda_float32"]
    if torch.cuda.is_available():
        assert gpu["available"] and "max_abs_diff_logits" in gpu
    else:
        assert gpu["available"] is False and "no CUDA GPU" in gpu["note"]
    assert "bf16_autocast_vs_float32" not in parity  # only with --bf16, never mixed in
    model, meta = capstone.load_weights(out / "model.npz")
    assert meta["summary"]["test_exact_match"] == report["test_exact_match"]


@pytest.mark.slow
@pytest.mark.xdist_group("heavy")
@pytest.mark.parametrize("dropout", [0.0, 0.2], ids=["no-dropout", "dropout"])
def test_resumed_run_continues_exactly_like_an_uninterrupted_one(tmp_path, one_thread, dropout):
    config = dataclasses.replace(capstone.SMOKE, steps=16, batch_size=16, warmup=4, checkpoint_every=4,
                                 dropout=dropout)
    straight, _ = capstone.train(config, tmp_path / "straight", "cpu", progress=False)
    torch.manual_seed(12345)  # whatever the generator held before, the run seeds and checkpoints its own
    capstone.train(config, tmp_path / "resumed", "cpu", stop_at=9, progress=False)
    saved = torch.load(tmp_path / "resumed" / "checkpoint.pt", weights_only=True)
    assert saved["step"] == 9
    resumed, state = capstone.train(config, tmp_path / "resumed", "cpu", resume=True, progress=False)
    assert state["resumed_from"] == 9 and state["step"] == 16
    for name, p in straight.state_dict().items():
        assert torch.equal(p, resumed.state_dict()[name]), name
    init = capstone.build_model(config).state_dict()
    assert not torch.equal(init["decoder.0.cross_attn.W_q"], resumed.state_dict()["decoder.0.cross_attn.W_q"])


def test_a_checkpoint_from_before_a_config_field_existed_resumes_with_its_default(tmp_path, one_thread):
    config = dataclasses.replace(capstone.SMOKE, steps=4, batch_size=8, warmup=2, checkpoint_every=2)
    capstone.train(config, tmp_path, "cpu", stop_at=2, progress=False)
    path = tmp_path / "checkpoint.pt"
    saved = torch.load(path, weights_only=True)
    del saved["config"]["dropout"], saved["dropout_rng"]  # as written before dropout existed
    torch.save(saved, path)
    _, state = capstone.train(config, tmp_path, "cpu", resume=True, progress=False)
    assert state["resumed_from"] == 2 and state["step"] == 4
    with pytest.raises(ValueError, match="different configuration"):
        capstone.train(dataclasses.replace(config, dropout=0.1), tmp_path, "cpu", resume=True, progress=False)


def test_resume_refuses_a_checkpoint_of_another_configuration(tmp_path, one_thread):
    config = dataclasses.replace(capstone.SMOKE, steps=4, batch_size=8, warmup=2, checkpoint_every=2)
    capstone.train(config, tmp_path, "cpu", stop_at=2, progress=False)
    other = dataclasses.replace(config, lr=1e-3)
    with pytest.raises(ValueError, match="different configuration"):
        capstone.train(other, tmp_path, "cpu", resume=True, progress=False)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_gpu_check_fails_clearly_without_cuda(tmp_path, capsys):
    assert capstone.main(["--device", "cuda", "--out", str(tmp_path), "--smoke"]) == 2
    err = capsys.readouterr().err
    assert "no CUDA GPU" in err and "--device cuda" in err
    assert not (tmp_path / "report.json").exists()


def test_default_configuration_is_the_documented_one():
    c = capstone.DEFAULT
    assert (c.d_model, c.n_heads, c.d_ff, c.n_encoder_layers, c.n_decoder_layers, c.batch_size) == (64, 4, 256, 2, 2, 128)
    assert c.lr == 2e-3 and c.dtype == "float32" and not c.bf16
    args = capstone.parse_args(["--smoke", "--steps", "7", "--batch-size", "8", "--seed", "3"])
    assert capstone.config_from_args(args) == dataclasses.replace(capstone.SMOKE, steps=7, batch_size=8, seed=3)
