"""
Canonicalization patterns, one module per dialect (as xDSL's
`xdsl/transforms/canonicalization_patterns/`).

Each dialect attaches its module's patterns to its ops through a
`HasCanonicalizationPatternsTrait` that imports them lazily (dialects sit below passes), so
xDSL's own `canonicalize` pass (which adds constant folding and dead-code elimination)
runs them.
"""
