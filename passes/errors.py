"""The error a pass raises about one op, so that tools can report it at the op's location."""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.utils.exceptions import PassFailedException


class OpPassError(PassFailedException):
    """A pass cannot handle `op`: the message says why (never a silently wrong program)."""

    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op = op
        self.message = message
