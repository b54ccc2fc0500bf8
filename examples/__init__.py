"""Example programs in DESIGN.md's syntax (copies of `shared/examples`), shipped as data."""

from pathlib import Path

EXAMPLES_DIR = Path(__file__).parent
