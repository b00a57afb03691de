"""The tasks a capstone run can train on, by name (TrainConfig.task, `--task`):

    dates      human-written dates -> ISO 8601 (encdec.dates, characters as tokens); the default
    numbers    English number words -> German number words (encdec.number_words, BPE subwords)

Each task is a module with the same names: PAD, BOS, EOS, VOCAB, VOCAB_SIZE, TARGET_LEN, N_TEST,
encode, decode, pad_batch, encode_pairs, examples(split, seed, n) -> (source, target, group) triples
and TrainingBatches(seed).batch(step, batch_size). `group` is what the report breaks exact match
down by: the date's format, or the number's range.
"""

import importlib
import types
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data"


@dataclass(frozen=True)
class TaskInfo:
    module: str  # the task's module
    description: str  # the report's "task" line
    group: str  # what the third item of an example is: the report's test_exact_match_by_<group>
    pretrained: Path  # the shipped weights, trained on the CPU by `make capstone TASK=<name>`


TASKS = {
    "dates": TaskInfo("encdec.dates", "human-written dates -> ISO 8601 (dates.py); greedy decoding", "format",
                      DATA / "capstone_dates.npz"),
    "numbers": TaskInfo("encdec.number_words", "English number words -> German number words (number_words.py, "
                        "BPE subwords); greedy decoding", "range", DATA / "capstone_numbers.npz"),
}


def info(name):
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; the tasks are {sorted(TASKS)}")
    return TASKS[name]


def get(task=None):
    """The task's module from its name (None: 'dates'); a module passes through unchanged."""
    if isinstance(task, types.ModuleType):
        return task
    return importlib.import_module(info("dates" if task is None else task).module)
