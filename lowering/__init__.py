"""
`lower-to-tpu` (level S to level T): `lower_to_tpu` builds one kernel per function and
lowers collectives to ring algorithms of remote DMAs and semaphores; `compute` tiles hlo
compute ops into double-buffered VMEM blocks; `movement` turns data-movement ops into
DMAs; `emit` is what they share; `level_s_summary` records what a kernel's report needs
from the level-S program (`shardc.level_s`).
"""
