"""
`shardc-opt`: the opt-style driver, on xDSL's `xDSLOptMain`.

It keeps xDSL's flags and pass registry and changes what happens on bad input: every
error is one located diagnostic on stderr with exit status 1, and nothing is written
(not even earlier `--split-input-file` chunks) unless the whole run succeeded.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence

from shardc.diagnostics import DiagnosticError, OpPassError, SourceText, error_at
from shardc.dialects import register_dialects
from shardc.driver import registry
from shardc.parsing import parse_and_verify, verify_module
from shardc.tools.cli import run_tool
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException
from xdsl.xdsl_opt_main import xDSLOptMain

SPLIT_MARKER = "// -----"


class ShardcOptMain(xDSLOptMain):
    """xDSL's opt driver with shardc's dialects and passes and located diagnostics."""

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
                verify_module(module, note=f"after pass '{previous.name}'")
            if following is not None and self.args.print_between_passes:
                print(f"// IR after {previous.name}:")
                Printer(stream=sys.stdout).print_op(module)
                print()

        try:
            self.pipeline = PassPipeline.parse_spec(
                self.available_passes, self.args.passes, verify_after
            )
        except (ValueError, ArgSpecParseError) as e:
            raise DiagnosticError(pipeline_diagnostic(self.args.passes, e)) from None

    def read_input(self) -> tuple[str, str]:
        """The input text and the name diagnostics use for it."""
        name = self.args.input_file
        if name is None or name == "-":
            data = sys.stdin.buffer.read()
            try:
                return data.decode("utf-8"), "<stdin>"
            except UnicodeDecodeError as e:
                raise DiagnosticError(_undecodable(data, "<stdin>", e)) from None
        try:
            with open(name, "rb") as f:
                data = f.read()
        except OSError as e:
            reason = e.strerror or str(e)
            raise DiagnosticError(f"{name}:1:1: error: cannot read the file: {reason}") from None
        try:
            return data.decode("utf-8"), name
        except UnicodeDecodeError as e:
            raise DiagnosticError(_undecodable(data, name, e)) from None

    def chunks(self, text: str) -> list[tuple[str, int]]:
        """The input split at `// -----` (if asked), each with its first line's offset."""
        if not self.args.split_input_file:
            return [(text, 0)]
        return split_chunks(text)

    def process_chunk(self, text: str, filename: str, line_offset: int) -> str:
        module = parse_and_verify(self.ctx, text, filename, line_offset)
        try:
            self.pipeline.apply(self.ctx, module)
        except OpPassError as e:
            raise error_at(e.op, e.message, filename) from None
        except DiagnosticException as e:
            # A pass failed without naming an op: report it at the start of the input.
            start = SourceText(filename, text, line_offset)
            raise DiagnosticError(start.format(0, str(e))) from None
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
        write_output(self.args.output_file, result)


def write_output(path: str, text: str) -> None:
    """
    Write `text` to `path` all at once: a regular file is replaced atomically (a temporary
    file renamed over it, so a reader never sees half of it); a device or pipe such as
    /dev/null or /dev/stdout is written directly (renaming over it would replace it).
    """
    try:
        if os.path.exists(path) and not os.path.isfile(path):
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            return
        tmp = f"{path}.tmp{os.getpid()}"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    except OSError as e:
        reason = e.strerror or str(e)
        raise DiagnosticError(
            f"{path}:1:1: error: cannot write the output file: {reason}"
        ) from None


def split_chunks(text: str) -> list[tuple[str, int]]:
    """
    Split at every line that starts with `// -----` (the whole line is the marker, as the
    rest of it is a comment anyway), keeping each chunk's lines whole so that its
    diagnostics give the file's line and column numbers: (chunk, lines before it).
    """
    chunks: list[tuple[str, int]] = []
    current: list[str] = []
    start = 0
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.lstrip().startswith(SPLIT_MARKER):
            chunks.append(("\n".join(current) + "\n", start))
            current, start = [], i + 1
        else:
            current.append(line)
    chunks.append(("\n".join(current), start))
    return chunks


def _undecodable(data: bytes, name: str, error: UnicodeDecodeError) -> str:
    """A located diagnostic for input that is not UTF-8."""
    line_start = data.rfind(b"\n", 0, error.start) + 1
    line_end = data.find(b"\n", error.start)
    source = data[line_start : line_end if line_end != -1 else len(data)]
    before = data[line_start : error.start].decode("utf-8", errors="replace")
    line = data.count(b"\n", 0, error.start) + 1
    return (
        f"{name}:{line}:{len(before) + 1}: error: invalid UTF-8 byte 0x{data[error.start]:02x}\n"
        f"{source.decode('utf-8', errors='replace')}\n{' ' * len(before)}^"
    )


PIPELINE_NAME = "<pass-pipeline>"


def pipeline_diagnostic(spec: str, error: Exception) -> str:
    """
    A bad `-p` as one MLIR-style diagnostic located in the pipeline text:
    `<pass-pipeline>:1:col: error: message`, the pipeline and a caret.
    """
    message = str(error)
    col = 1
    if isinstance(error, ArgSpecParseError):
        # xDSL: "Error parsing ...:\npass-pipeline:1:14\n<spec>\n<caret>\n<why>"
        if found := re.search(r"pass-pipeline:\d+:(\d+)", message):
            col = int(found.group(1))
        lines = [line.strip() for line in message.splitlines() if line.strip()]
        message = lines[-1] if lines else message
    elif found := re.fullmatch(r"Unrecognized passes: \[(.*)\]", message):
        names = re.findall(r"'([^']*)'", found.group(1))
        name = names[0] if names else ""
        col = _find_word(spec, name)
        message = f"unknown pass '{name}'"
    elif found := re.fullmatch(
        r"Provided arguments \[(.*)\] not found in expected arguments \[(.*)\]", message
    ):
        given = re.findall(r'"([^"]*)"', found.group(1))
        expected = re.findall(r'"([^"]*)"', found.group(2))
        name = (given[0] if given else "").replace("_", "-")
        col = _find_word(spec, name)
        known = ", ".join(e.replace("_", "-") for e in expected) or "none"
        message = f"unknown pass option '{name}' (the pass's options: {known})"
    elif found := re.fullmatch(r"Incompatible types: given \((.*?),?\), expected (.*)", message):
        value = found.group(1).strip("'\"")
        expected = re.sub(r"<class '(\w+)'>", r"\1", found.group(2))
        col = _find_word(spec, value, after="=")
        message = f"invalid pass option value '{value}': expected {expected}"
    caret = " " * (col - 1) + "^"
    return f"{PIPELINE_NAME}:1:{col}: error: invalid pass pipeline: {message}\n{spec}\n{caret}"


def _find_word(spec: str, word: str, after: str = "") -> int:
    """The 1-based column of `word` as a whole token of `spec` (1 if absent)."""
    if word:
        pattern = re.escape(after) + r"\s*[\"']?(" + re.escape(word) + r")(?![\w-])"
        if found := re.search(r"(?<![\w-])" + pattern if not after else pattern, spec):
            return found.start(1) + 1
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    def body() -> int:
        ShardcOptMain(argv).run()
        return 0

    return run_tool("shardc-opt", body)


if __name__ == "__main__":
    sys.exit(main())
