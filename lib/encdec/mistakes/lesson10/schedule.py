"""Exercise 10.2, lr_at: the mistakes of the warm-up + cosine learning-rate schedule."""

import math

from .. import mistake


# -- Exercise 10.2 lr_at ---------------------------------------------------------------------------------------
@mistake("lr_at", "one_step_late",
         "the schedule is one step late: step 1 gets the rate of a step 0, which is 0, so the first "
         "update does nothing, and the peak comes one step after warmup_steps. Steps count from 1 here: "
         "the warm-up is peak_lr * step / warmup_steps, which reaches peak_lr exactly at step = warmup_steps.")
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):
    step = step - 1
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    progress = min((step - warmup_steps) / (total_steps - warmup_steps), 1.0)
    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * progress))


@mistake("lr_at", "one_step_early",
         "the warm-up is one step early, as if steps counted from 0: step 1 already gets 2 * peak_lr / "
         "warmup_steps, and the last warm-up step overshoots the peak. Steps count from 1 here: the "
         "warm-up is peak_lr * step / warmup_steps, which reaches peak_lr exactly at step = warmup_steps.")
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    if step <= warmup_steps:
        return peak_lr * (step + 1) / warmup_steps
    progress = min((step - warmup_steps) / (total_steps - warmup_steps), 1.0)
    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * progress))


@mistake("lr_at", "cosine_without_half",
         "the decay uses cos(pi * progress) alone, which runs from 1 down to -1: half way through the "
         "decay the rate is already min_lr, and then it goes below it (negative rates make training "
         "climb the loss). The cosine schedule is min_lr + (peak_lr - min_lr) * (1 + cos(pi * progress)) / 2, "
         "which runs from peak_lr to min_lr.")
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    progress = min((step - warmup_steps) / (total_steps - warmup_steps), 1.0)
    return min_lr + (peak_lr - min_lr) * math.cos(math.pi * progress)


@mistake("lr_at", "decay_from_step_zero",
         "the cosine's progress is counted from step 0 (step / total_steps), not from the end of the "
         "warm-up, so the rate drops below peak_lr the moment the warm-up ends. Count the decay's "
         "progress from the end of the warm-up: (step - warmup_steps) / (total_steps - warmup_steps).")
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    progress = min(step / total_steps, 1.0)
    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * progress))


@mistake("lr_at", "min_lr_ignored",
         "the decay ends at 0, not at min_lr: min_lr never enters the formula. Decay the distance "
         "between the peak and the floor, min_lr + (peak_lr - min_lr) * (1 + cos(pi * progress)) / 2.")
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    progress = min((step - warmup_steps) / (total_steps - warmup_steps), 1.0)
    return 0.5 * peak_lr * (1 + math.cos(math.pi * progress))


@mistake("lr_at", "no_clamp_after_the_end",
         "after total_steps the cosine keeps going and the rate climbs back up towards peak_lr. Clamp "
         "the progress at 1, so that every step after the end gets min_lr.")
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    progress = (step - warmup_steps) / (total_steps - warmup_steps)
    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * progress))


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("lr_at", "progress_over_total",
         "the decay's progress is divided by total_steps, not by the length of the decay, total_steps - "
         "warmup_steps: the rate never reaches min_lr by the last step. p = (step - warmup_steps) / "
         "(total_steps - warmup_steps), at most 1.")
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    progress = min((step - warmup_steps) / total_steps, 1.0)
    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * progress))


@mistake("lr_at", "warmup_from_min_lr",
         "the warm-up rises from min_lr instead of from 0: min_lr + (peak_lr - min_lr) * step / warmup_steps. "
         "min_lr is where the decay ends; the warm-up is peak_lr * step / warmup_steps.")
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):  # noqa: F811
    if step <= warmup_steps:
        return min_lr + (peak_lr - min_lr) * step / warmup_steps
    progress = min((step - warmup_steps) / (total_steps - warmup_steps), 1.0)
    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * progress))
