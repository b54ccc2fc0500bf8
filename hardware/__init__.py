"""Chip presets, topology and the cost model shared by `schedule` and the interpreter (to come)."""
