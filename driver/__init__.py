"""
The library driver: what `shardc-run` and the Python API (`shardc.compile`, `shardc.run`)
both do, so that neither imports the other and the command line only parses flags and
prints.

* `compiling`: a pass pipeline applied with verification after every pass and what each
  pass changed (`compile_module`, `with_chip`).
* `execution`: running a (compiled) program at its level, G or S on the device
  interpreter and T on the level-T simulator, timed on a chip (`execute`).
* `checking`: comparing outputs with a reference (`compare`, `reference_outputs`);
  `tolerance` the tolerance per output element, from a rounding analysis of the
  reference run (`RoundingBounds`).
* `reporting`: the run's report and its summary text (`Report`, `make_report`).
* `files`: reading programs and input arrays, writing outputs atomically.
* `progress`: progress lines of long runs (a tool turns them on; a library call is quiet).
* `registry`: every pass and pipeline the tools can run, by name (it sits here, above
  `lowering/`, because it names `lower-to-tpu` and `tpu-pipeline`).

What a later stage needs from an earlier one travels in the IR, not in side tables: a
kernel's level-S collectives in `shardc.level_s` (`lowering.level_s_summary`), source
positions in `Operation.location` (`shardc.diagnostics`).
"""
