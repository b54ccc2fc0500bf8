"""
Fuzzing every tool with mutations of the project's own inputs (issue 16): `harness` (the
corpus, the mutations, one tool run classified), `test_tools` (a small hypothesis budget
for CI); `bench/fuzz.py` runs thousands per tool and reports the table.
"""
