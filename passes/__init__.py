"""
One module per pass (or small family of passes), each a `ModulePass` with its patterns;
local rewrites are `RewritePattern`s run by xDSL's `PatternRewriteWalker`, global
algorithms (propagation, partitioning, combining, scheduling) stay algorithms.
`canonicalization_patterns/` holds the patterns xDSL's `canonicalize` runs, one module
per dialect; `rewrite_utils`, `device_values` and `block_order` are shared helpers.
"""
