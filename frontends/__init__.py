"""Importers: StableHLO exported by JAX, and XLA HLO text (to come)."""
