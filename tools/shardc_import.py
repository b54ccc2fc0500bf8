"""`shardc-import`: StableHLO / XLA HLO text to `hlo` + `spmd` (issue 5; not implemented yet)."""

from __future__ import annotations

import sys


def main() -> int:
    print("shardc-import: not implemented yet", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
