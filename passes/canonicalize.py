"""
Canonicalization patterns for `hlo` and `collective` ops.

They are attached to the ops through `HasCanonicalizationPatternsTrait`, so xDSL's own
`canonicalize` pass (which adds folding of constants and dead-code elimination) runs them.
"""

from __future__ import annotations
