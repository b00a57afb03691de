"""Correct implementations that differ from the reference: every checker must accept them."""
