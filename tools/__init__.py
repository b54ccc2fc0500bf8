"""
Command-line entry points: `shardc-opt`, `shardc-run`, `shardc-import` (flags and printing;
the work is the library driver's, `shardc.driver`), and `cli.run_tool` (one error, exit 1).
Nothing outside this folder imports it.
"""
