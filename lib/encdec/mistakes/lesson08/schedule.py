"""Exercise 8.3, warmup_schedule: the mistakes of the warm-up, then inverse-square-root, learning rate."""

from .. import mistake


# -- Exercise 8.3 warmup_schedule --------------------------------------------------------------------------
@mistake("warmup_schedule", "max_instead_of_min",
         "max(...) picks the larger branch: the rate then falls at first and rises without bound. "
         "The schedule follows the smaller of the two: min(step^-0.5, step * warmup_steps^-1.5).")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):
    return factor * d_model**-0.5 * max(step**-0.5, step * warmup_steps**-1.5)


@mistake("warmup_schedule", "warmup_exponent_half",
         "the warm-up branch uses warmup_steps^-0.5 instead of warmup_steps^-1.5. The two branches "
         "must meet at step = warmup_steps: step * warmup^-1.5 = warmup^-0.5 there.")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-0.5)


@mistake("warmup_schedule", "linear_ramp_to_one",
         "the warm-up ramp is step / warmup_steps. It meets the decay branch step^-0.5 far too early, at "
         "step = warmup_steps^(2/3), and there the rate is warmup_steps^(1/6) times the intended peak (for "
         "a warm-up of 4000: at step 252, about 4 times too high). Use step * warmup_steps^-1.5: it "
         "meets step^-0.5 exactly at step = warmup_steps.")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    return factor * d_model**-0.5 * min(step**-0.5, step / warmup_steps)


@mistake("warmup_schedule", "no_d_model_scale",
         "the factor d_model^-0.5 is missing, so wider models get the same, too large, rate. "
         "Multiply by d_model**-0.5.")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    return factor * min(step**-0.5, step * warmup_steps**-1.5)


@mistake("warmup_schedule", "d_model_scale_inverted",
         "the rate is multiplied by sqrt(d_model) instead of divided by it: d_model**-0.5, with the "
         "minus sign, so wider models take smaller steps.")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    return factor * d_model**0.5 * min(step**-0.5, step * warmup_steps**-1.5)


@mistake("warmup_schedule", "factor_ignored",
         "the `factor` argument is never used. It scales the whole schedule: "
         "lr = factor * d_model^-0.5 * min(...).")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    return d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


@mistake("warmup_schedule", "step_from_zero",
         "step is shifted by one (step + 1), as if steps counted from 0. In this schedule steps count "
         "from 1: the first update uses step = 1.")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    s = step + 1
    return factor * d_model**-0.5 * min(s**-0.5, s * warmup_steps**-1.5)


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("warmup_schedule", "decay_one_over_step",
         "after the warm-up the rate decays as 1/step, not 1/sqrt(step): min(step^-0.5, step * warmup^-1.5).")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    return factor * d_model**-0.5 * min(1.0 / step, step * warmup_steps**-1.5)


@mistake("warmup_schedule", "d_model_on_one_branch",
         "d_model^-0.5 multiplies only the decay branch, inside the min: it scales the whole schedule, "
         "factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5).")
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):  # noqa: F811
    return factor * min(d_model**-0.5 * step**-0.5, step * warmup_steps**-1.5)
