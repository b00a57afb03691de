"""The numbers task (English number words -> German) and the capstone trained on it: the words, the split
by number, the batches, the metrics, `--task numbers`, the shipped weights and the lesson's helpers."""

import json
import re

import numpy as np
import pytest
import torch

from encdec import capstone
from encdec import number_words as numbers
from encdec.capstone import metrics, translation

pytestmark = pytest.mark.lesson10


# -- the words -------------------------------------------------------------------------------------
@pytest.mark.parametrize("n,en,de", [
    (0, "zero", "null"),
    (7, "seven", "sieben"),
    (11, "eleven", "elf"),
    (17, "seventeen", "siebzehn"),
    (30, "thirty", "dreißig"),
    (71, "seventy one", "einundsiebzig"),
    (97, "ninety seven", "siebenundneunzig"),
    (101, "one hundred and one", "einhunderteins"),
    (432, "four hundred and thirty two", "vierhundertzweiunddreißig"),
    (1100, "one thousand one hundred", "eintausendeinhundert"),
    (1234, "one thousand two hundred and thirty four", "eintausendzweihundertvierunddreißig"),
    (9999, "nine thousand nine hundred and ninety nine", "neuntausendneunhundertneunundneunzig"),
])
def test_words_of_known_numbers(n, en, de):
    assert (numbers.english(n), numbers.german(n)) == (en, de)


def test_every_number_has_clean_words_and_no_two_numbers_share_them():
    english = [numbers.english(n) for n in numbers.all_numbers()]
    german = [numbers.german(n) for n in numbers.all_numbers()]
    assert len(english) == len(set(english)) == len(set(german)) == 10_000
    assert set("".join(english)) <= numbers.ENGLISH_CHARS and set("".join(german)) <= numbers.GERMAN_CHARS
    assert all(e == " ".join(e.split()) for e in english)  # no double, leading or trailing spaces
    assert {"ß", "ö", "ü"} <= set("".join(german))
    numbers.english.cache_clear(), numbers.german.cache_clear()
    assert [numbers.german(n) for n in (5, 12, 9999)] == ["fünf", "zwölf", german[9999]]  # deterministic


def test_numbers_outside_the_range_are_refused():
    for bad in (-1, 10_000, 3.0, True, "5"):
        with pytest.raises(ValueError, match="0..9999"):
            numbers.english(bad)


def test_the_longest_source_and_target_are_the_declared_ones():
    src = max(len(numbers.encode(numbers.english(n))) for n in numbers.all_numbers())
    tgt = max(len(numbers.encode(numbers.german(n), eos=True)) for n in numbers.all_numbers())
    assert (src, tgt) == (numbers.MAX_SOURCE_LEN, numbers.TARGET_LEN)


# -- splits and batches ----------------------------------------------------------------------------
def test_the_split_is_disjoint_by_number_and_covers_the_range():
    splits = numbers.split_numbers(seed=0)
    train, valid, test = (set(splits[k]) for k in ("train", "valid", "test"))
    assert not train & valid and not train & test and not valid & test
    assert train | valid | test == set(numbers.all_numbers())
    assert (len(valid), len(test)) == (numbers.N_VALID, numbers.N_TEST)
    assert numbers.split_numbers(seed=0) == splits and numbers.split_numbers(seed=1)["test"] != splits["test"]
    for name in numbers.RANGES:  # every range is held out in part
        assert any(numbers.range_name(n) == name for n in test)


def test_no_held_out_number_appears_in_training_batches_in_any_wording():
    held = {n for split in ("valid", "test") for n in numbers.split_numbers()[split]}
    held_words = {numbers.english(n) for n in held} | {numbers.german(n) for n in held}
    batches = numbers.TrainingBatches(seed=0)
    seen = set()
    for step in range(1, 60):
        seen |= set(batches.numbers_of(step, 128))
        sources, targets = batches.texts(step, 128)
        assert not held_words & (set(sources) | set(targets))
    assert not held & seen
    shares = np.mean([[numbers.range_name(n) == r for r in numbers.RANGES] for n in seen], axis=0)
    assert shares[0] > 0.005  # the numbers below 100 are drawn, not left to their 1% of the range


def test_training_batches_are_a_function_of_the_step_and_encode_their_texts():
    a, b = numbers.TrainingBatches(0), numbers.TrainingBatches(0)
    src, tgt = a.batch(7, 32)
    np.testing.assert_array_equal(src, b.batch(7, 32)[0])
    np.testing.assert_array_equal(tgt, b.batch(7, 32)[1])
    assert not np.array_equal(tgt, a.batch(8, 32)[1])
    src2, tgt2 = numbers.encode_pairs(*a.texts(7, 32))
    np.testing.assert_array_equal(src, src2)
    np.testing.assert_array_equal(tgt, tgt2)
    assert tgt.shape == (32, numbers.TARGET_LEN) and np.all(np.sum(tgt == numbers.EOS, axis=1) == 1)
    mix = np.array([numbers.range_name(n) for n in a.numbers_of(1, 4000)])
    for name, share in numbers.TRAIN_MIX.items():
        assert abs(np.mean(mix == name) - share) < 0.03


def test_held_out_sets_are_fixed():
    test = numbers.examples("test")
    assert test == numbers.examples("test") and len(test) == numbers.N_TEST
    assert test[:5] == numbers.examples("test", n=5)
    test_numbers = set(numbers.split_numbers()["test"])
    by_words = {numbers.english(n): n for n in test_numbers}
    assert all(by_words[s] in test_numbers and numbers.german(by_words[s]) == t
               and numbers.range_name(by_words[s]) == r for s, t, r in test)
    with pytest.raises(ValueError, match="split must be"):
        numbers.examples("train")


# -- metrics ---------------------------------------------------------------------------------------
REFS = ["vierhundertzweiunddreißig", "einundsiebzig", "null"]


def test_metrics_are_sacrebleus_on_known_strings():
    hyps = ["vierhundertdreiunddreißig", "einundsiebzig", "null"]  # one morpheme wrong
    assert metrics.chrf(hyps, REFS) == pytest.approx(86.0472, abs=1e-3)
    assert metrics.bleu(hyps, REFS) == pytest.approx(90.2371, abs=1e-3)  # on characters
    assert metrics.chrf(REFS, REFS) == pytest.approx(100) and metrics.bleu(REFS, REFS) == pytest.approx(100)
    assert metrics.bleu(REFS, REFS, tokenize="13a") == 0.0  # why BLEU is on characters: one-word sentences
    assert metrics.bleu(["the cat is on the mat"], ["the cat sat on the mat"], "13a") == pytest.approx(37.9918, abs=1e-3)
    s = metrics.scores(hyps, REFS)
    assert s["chrf"] == pytest.approx(86.0472, abs=1e-3) and "tok:char" in s["bleu_signature"]


# -- the capstone on the numbers task --------------------------------------------------------------
def test_task_flag_picks_the_numbers_presets_and_dates_stays_the_default():
    assert capstone.config_from_args(capstone.parse_args([])) == capstone.DEFAULT
    assert capstone.DEFAULT.task == "dates"
    assert capstone.config_from_args(capstone.parse_args(["--task", "numbers"])) == capstone.NUMBERS
    smoke = capstone.config_from_args(capstone.parse_args(["--task", "numbers", "--smoke", "--steps", "9"]))
    assert smoke.task == "numbers" and smoke.steps == 9
    assert capstone.NUMBERS.model_config().vocab_size == numbers.VOCAB_SIZE == 128


@pytest.fixture(scope="module")
def numbers_smoke(tmp_path_factory):
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("numbers-smoke")
    try:
        assert capstone.main(["--task", "numbers", "--smoke", "--out", str(out), "--no-progress",
                              "--device", "cpu"]) == 0
    finally:
        torch.set_num_threads(before)
    return json.loads((out / "report.json").read_text()), out


@pytest.mark.slow
@pytest.mark.xdist_group("heavy")
def test_numbers_smoke_run_learns_and_reports_the_new_fields(numbers_smoke):
    report, out = numbers_smoke
    assert report["task_name"] == "numbers" and "German" in report["task"]
    assert report["wall_time_s"] < 60 and report["steps"] == capstone.NUMBERS_SMOKE.steps
    assert report["loss_last"] < 0.25 * report["loss_first"]
    for key in ("test_exact_match", "test_chrf", "test_bleu", "metrics", "test_exact_match_by_range", "test_errors",
                "parity", "history", "config"):
        assert key in report, key
    assert set(report["test_exact_match_by_range"]) <= set(numbers.RANGES)
    assert 0 <= report["test_exact_match"] <= 1 and 0 <= report["test_chrf"] <= 100
    assert report["test_chrf"] >= 100 * report["test_exact_match"] - 1e-9  # exact matches score 100 each
    assert report["parity"]["numpy_float64_vs_torch_float64_cpu"]["passed"]
    for error in report["test_errors"]:
        assert error["predicted"] != error["target"]
    model, meta = capstone.load_weights(out / "model.npz", task="numbers")
    assert meta["summary"]["test_chrf"] == report["test_chrf"] and meta["vocab"] == numbers.VOCAB


# -- the shipped weights and the lesson's helpers --------------------------------------------------
STATED_EXACT_MATCH = 0.99  # docs/capstone.md, "The numbers task": 99.6% on the 1,000 test numbers


def test_shipped_numbers_model_reaches_the_stated_exact_match(one_thread):
    model, meta = capstone.load_weights(task="numbers")
    assert capstone.PRETRAINED_NUMBERS.stat().st_size < 3_000_000
    assert meta["train_config"]["task"] == "numbers"
    sample = numbers.examples("test", n=300)
    accuracy, by_range, _ = capstone.exact_match(model, sample, task="numbers")
    assert accuracy >= STATED_EXACT_MATCH and meta["summary"]["test_exact_match"] >= STATED_EXACT_MATCH
    assert by_range["1000-9999"] >= 0.99
    result = capstone.numpy_torch_parity(model, sample[:16], task="numbers")
    assert result["passed"] and result["greedy_identical"]


def test_weights_of_one_task_are_refused_for_the_other():
    with pytest.raises(ValueError, match="numbers task, not of the dates task"):
        capstone.load_weights(capstone.PRETRAINED_NUMBERS, task="dates")
    with pytest.raises(ValueError, match="dates task, not of the numbers task"):
        capstone.load_weights(capstone.PRETRAINED, task="numbers")


def test_translate_your_own_number(one_thread):
    assert translation.translate(432) == "vierhundertzweiunddreißig"
    assert translation.translate("Seventy-One") == "einundsiebzig"
    assert translation.translate("2026") == numbers.german(2026)
    assert translation.english_source("One thousand, two hundred and thirty-four") == numbers.english(1234)


def test_cross_attention_maps_have_one_map_per_layer_and_head(one_thread):
    maps = translation.cross_attention(432)
    assert maps["translation"] == maps["expected"] == "vierhundertzweiunddreißig"
    assert maps["source_tokens"] == numbers.tokens("four hundred and thirty two")
    assert maps["target_tokens"][-1] == "<eos>" and "".join(maps["target_tokens"][:-1]).lstrip("▁") == maps["translation"]
    config = capstone.NUMBERS
    assert len(maps["weights"]) == config.n_decoder_layers
    for w in maps["weights"]:
        assert w.shape == (config.n_heads, len(maps["target_tokens"]), len(maps["source_tokens"]))
        np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-6)
    assert re.fullmatch(r"[a-zßäöü]+", translation.translate(9999))
