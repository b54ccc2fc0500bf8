"""
The hardware model shared by `schedule` and the interpreter: chip presets (`chips`), and
the cost of every op and collective on a chip and mesh (`cost`).
"""
