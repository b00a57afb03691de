"""What a capstone run is configured with: TrainConfig, its presets DEFAULT and SMOKE (the dates task),
and NUMBERS and NUMBERS_SMOKE (the numbers task, `--task numbers`)."""

import dataclasses
from dataclasses import dataclass

from .. import dates
from .. import number_words as numbers
from ..model import ModelConfig
from .tasks import get as get_task


@dataclass(frozen=True)
class TrainConfig:
    """Everything [CONFIG] about a capstone run. DEFAULT reaches >= 99% test exact match."""

    steps: int = 800
    batch_size: int = 128  # the global batch, split across processes under DDP
    lr: float = 2e-3  # peak; linear warm-up, then cosine decay to lr * min_lr_ratio
    warmup: int = 100
    min_lr_ratio: float = 0.02
    weight_decay: float = 0.01  # on matrices only, not on gammas and biases
    betas: tuple = (0.9, 0.98)
    grad_clip: float = 1.0
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 256
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    dropout: float = 0.0  # residual, attention and embedding dropout while training (0: none)
    seed: int = 0
    dtype: str = "float32"  # float64 for exact comparisons (the DDP test)
    bf16: bool = False  # bf16 autocast for the forward pass (meant for GPUs)
    eval_every: int = 200  # validation exact match every this many steps (0: only at the end)
    n_valid: int = 500  # validation examples used during training
    n_test: int = dates.N_TEST  # test examples in the final figure
    checkpoint_every: int = 200
    task: str = "dates"  # the task trained on (encdec.capstone.tasks): "dates" or "numbers"

    def model_config(self):
        task = get_task(self.task)
        return ModelConfig(vocab_size=task.VOCAB_SIZE, d_model=self.d_model, n_heads=self.n_heads,
                           d_ff=self.d_ff, n_encoder_layers=self.n_encoder_layers,
                           n_decoder_layers=self.n_decoder_layers, pad_id=task.PAD, dropout=self.dropout)

    def to_dict(self):
        d = dataclasses.asdict(self)
        d["betas"] = list(self.betas)
        return d


DEFAULT = TrainConfig()
SMOKE = TrainConfig(steps=150, batch_size=64, warmup=20, eval_every=0, n_valid=100, n_test=200,
                    checkpoint_every=50)
# The numbers task: English number words -> German (encdec.number_words); docs/capstone.md, "The numbers task"
NUMBERS = TrainConfig(task="numbers", steps=600, warmup=60, n_test=numbers.N_TEST, n_valid=numbers.N_VALID)
NUMBERS_SMOKE = dataclasses.replace(SMOKE, task="numbers")
PRESETS = {("dates", False): DEFAULT, ("dates", True): SMOKE,
           ("numbers", False): NUMBERS, ("numbers", True): NUMBERS_SMOKE}
