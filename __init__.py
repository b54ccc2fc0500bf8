"""
shardc: a compiler, in Python on xDSL, for tensor programs that run across many chips.

The repository root is this package; its folders are the subpackages named in
DESIGN.md's layout (`dialects`, `passes`, `lowering`, `interpreter`, `hardware`,
`frontends`, `tools`, plus `tests`, `bench` and `examples`).
"""

__version__ = "0.1.0"
