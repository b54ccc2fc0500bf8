"""
The reference interpreter (levels G and S; level T comes with issue 6/8).

Layout: `values` (dtypes, literals, accumulation, conversions, random inputs),
`hlo_impls` (xDSL `InterpreterFunctions` for every hlo/spmd op), `collectives` (group
semantics of every collective), `devices` (the N-device executor), `io` (signatures,
input validation, split/assemble), `errors`.
"""
