"""
`shardc-opt`: the opt-style driver, on xDSL's `xDSLOptMain`.

It keeps xDSL's flags and pass registry and changes what happens on bad input: every
error is one located diagnostic on stderr with exit status 1, and nothing is written
(not even earlier `--split-input-file` chunks) unless the whole run succeeded.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from io import StringIO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException
from xdsl.xdsl_opt_main import xDSLOptMain

from shardc.dialects import register_dialects
from shardc.passes import registry
from shardc.passes.errors import OpPassError
from shardc.tools.source import DiagnosticError, SourceMap, parse_and_verify, verify_module

SPLIT_MARKER = "// -----"


class ShardcOptMain(xDSLOptMain):
    """xDSL's opt driver with shardc's dialects and passes and located diagnostics."""

    source_map: SourceMap | None = None

    def __init__(self, args: Sequence[str] | None = None):
        self._argv = args
        super().__init__(description="shardc modular optimizer driver", args=args)

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        register_dialects(self.ctx)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in registry.all_passes().items():
            self.register_pass(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.prog = "shardc-opt"

    def setup_pipeline(self) -> None:
        def verify_after(
            previous: ModulePass | None, module: ModuleOp, following: ModulePass | None
        ) -> None:
            if previous is None:
                return  # the input was verified right after parsing
            if not self.args.disable_verify:
                assert self.source_map is not None
                try:
                    verify_module(module, self.source_map)
                except DiagnosticError as e:
                    raise DiagnosticError(f"after pass '{previous.name}': {e}") from None
            if following is not None and self.args.print_between_passes:
                print(f"// IR after {previous.name}:")
                Printer(stream=sys.stdout).print_op(module)
                print()

        try:
            self.pipeline = PassPipeline.parse_spec(
                self.available_passes, self.args.passes, verify_after
            )
        except (ValueError, ArgSpecParseError) as e:
            raise DiagnosticError(
                f"shardc-opt: error: invalid pass pipeline '{self.args.passes}': {e}"
            ) from None

    def read_input(self) -> tuple[str, str]:
        """The input text and the name diagnostics use for it."""
        name = self.args.input_file
        if name is None or name == "-":
            return sys.stdin.read(), "<stdin>"
        try:
            with open(name, encoding="utf-8") as f:
                return f.read(), name
        except (OSError, UnicodeDecodeError) as e:
            raise DiagnosticError(f"shardc-opt: error: cannot read '{name}': {e}") from None

    def chunks(self, text: str) -> list[tuple[str, int]]:
        """The input split at `// -----` (if asked), each with its first line's offset."""
        if not self.args.split_input_file:
            return [(text, 0)]
        pieces = text.split(SPLIT_MARKER)
        out: list[tuple[str, int]] = []
        offset = 0
        for piece in pieces:
            out.append((piece, offset))
            offset += piece.count("\n")
        return out

    def process_chunk(self, text: str, filename: str, line_offset: int) -> str:
        module, self.source_map = parse_and_verify(self.ctx, text, filename, line_offset)
        try:
            self.pipeline.apply(self.ctx, module)
        except OpPassError as e:
            raise self.source_map.error_at(e.op, e.message) from None
        except DiagnosticException as e:
            raise DiagnosticError(f"{filename}: error: {e}") from None
        return self.output_resulting_program(module)

    def run(self) -> None:
        text, filename = self.read_input()
        outputs: list[str] = []
        for chunk, line_offset in self.chunks(text):
            try:
                outputs.append(self.process_chunk(chunk, filename, line_offset))
            except DiagnosticError as e:
                if not (self.args.verify_diagnostics or self.args.parsing_diagnostics):
                    raise
                outputs.append(f"{e}\n")
        result = f"{SPLIT_MARKER}\n".join(outputs)
        if self.args.output_file is None:
            sys.stdout.write(result)
            return
        tmp = f"{self.args.output_file}.tmp{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(result)
        os.replace(tmp, self.args.output_file)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        ShardcOptMain(argv).run()
    except DiagnosticError as e:
        print(e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug in shardc: say so in one line, keep the details opt-in
        if os.environ.get("SHARDC_DEBUG"):
            traceback.print_exc()
        print(
            f"shardc-opt: internal error: {type(e).__name__}: {e} "
            "(set SHARDC_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 1
    except SystemExit as e:  # argparse's usage errors exit 2; bad input here exits 1
        return 1 if e.code == 2 else int(e.code or 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
