"""Command-line error handling shared by shardc's tools."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable

from shardc.diagnostics import DiagnosticError


def run_tool(prog: str, body: Callable[[], int]) -> int:
    """
    Run a command-line tool's body: every user error ends as one message and exit status 1
    (argparse's usage errors too), never a Python traceback. A bug in shardc is one line
    saying so; `SHARDC_DEBUG=1` shows its traceback.
    """
    try:
        return body()
    except DiagnosticError as e:
        print(e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except SystemExit as e:  # argparse: --help exits 0, a usage error 2 (bad input: 1 here)
        code = e.code if isinstance(e.code, int) else 1
        return 1 if code == 2 else code
    except RecursionError:
        print(f"{prog}: error: the input nests too deeply", file=sys.stderr)
        return 1
    except MemoryError:
        print(
            f"{prog}: error: out of memory: the program's values do not fit in this "
            "machine's memory (use --timing-only for the step time without values)",
            file=sys.stderr,
        )
        return 1
    except Exception as e:
        if os.environ.get("SHARDC_DEBUG"):
            traceback.print_exc()
        print(
            f"{prog}: internal error: {type(e).__name__}: {e} (set SHARDC_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 1
