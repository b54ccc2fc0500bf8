"""Command-line entry points: `shardc-opt`, `shardc-run`, `shardc-import`."""
