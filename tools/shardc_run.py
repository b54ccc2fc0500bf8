"""`shardc-run`: runs a program on simulated devices (issue 3; not implemented yet)."""

from __future__ import annotations

import sys


def main() -> int:
    print("shardc-run: not implemented yet", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
