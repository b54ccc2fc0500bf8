"""
Deadlock or a long op? (issue 17) A rank whose devices wait cannot tell from its own clock
whether a peer is deadlocked too or merely computing a large op. So each rank tells the
others its state: after `timeout / 4` without progress it publishes "waiting" (with its
progress counter), when it progresses again "computing", when its devices are done
"finished". A rank that has published nothing is computing.

The verdict "deadlock" needs all of: this rank made no progress for `timeout`, every other
rank is waiting or finished, and that has held for `timeout / 4` (so a "computing" sent just
before another rank's "waiting" has time to arrive: a message is sent only after the
sender has been idle that long). A peer that computes for hours is never a deadlock; the
interpreter bounds every loop, so a computing rank ends, in an error (which aborts the
job) or at its next collective.

States travel as small messages on COMM_WORLD under their own tag, numbered by run (a
test runs many programs in one MPI job; a fast rank may already be in the next run).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

WAITING, COMPUTING, FINISHED = 0, 1, 2
STATE_TAG = 17017
"""Point-to-point tag of state messages on COMM_WORLD (no other point-to-point uses it:
the groups' messages travel on their own communicators)."""


class Liveness:
    """This rank's published state and what it knows of the others'."""

    def __init__(self, comm: Any, mpi: Any, rank: int, size: int, timeout: float):
        self.comm, self.MPI = comm, mpi
        self.rank, self.size, self.timeout = rank, size, timeout
        self.run = 0
        self.progress = 0
        self.published = COMPUTING
        self.states: dict[int, dict[int, tuple[int, int]]] = {}
        """run -> rank -> (state, progress counter), the latest heard."""
        self.quiet_since: float | None = None
        """Since when every other rank has been waiting or finished."""
        self._sends: list[tuple[Any, np.ndarray]] = []

    def start_run(self) -> None:
        self.states.pop(self.run, None)
        self.run += 1
        self.progress, self.published, self.quiet_since = 0, COMPUTING, None

    def progressed(self) -> None:
        """This rank's devices moved: a waiting rank says it computes again."""
        self.progress += 1
        if self.published == WAITING:
            self._publish(COMPUTING)

    def stalled(self, idle: float) -> bool:
        """Called while this rank's devices wait (`idle` seconds without progress): True
        when the job is deadlocked (module docstring)."""
        if idle > self.timeout / 4 and self.published != WAITING:
            self._publish(WAITING)
        quiet = self.others_quiet()
        return quiet is not None and idle > self.timeout and quiet > self.timeout / 4

    def finished(self) -> None:
        self._publish(FINISHED)

    def others_quiet(self) -> float | None:
        """Seconds every other rank has been waiting or finished; None if one computes."""
        self._drain()
        heard = self.states.get(self.run, {})
        if any(heard.get(r, (COMPUTING, 0))[0] == COMPUTING for r in self._others()):
            self.quiet_since = None
            return None
        now = time.monotonic()
        if self.quiet_since is None:
            self.quiet_since = now
        return now - self.quiet_since

    def _others(self) -> list[int]:
        return [r for r in range(self.size) if r != self.rank]

    def _publish(self, state: int) -> None:
        self.published = state
        message = np.array([self.run, state, self.progress], dtype=np.int64)
        for r in self._others():
            self._sends.append((self.comm.Isend(message, r, STATE_TAG), message))
        self._sends = [(q, m) for q, m in self._sends if not q.Test()]

    def _drain(self) -> None:
        status = self.MPI.Status()
        while self.comm.Iprobe(self.MPI.ANY_SOURCE, STATE_TAG, status):
            buffer = np.empty(3, dtype=np.int64)
            source = status.Get_source()
            self.comm.Recv(buffer, source, STATE_TAG)
            run, state, progress = (int(x) for x in buffer)
            if run >= self.run:
                self.states.setdefault(run, {})[source] = (state, progress)


__all__ = ["COMPUTING", "FINISHED", "WAITING", "Liveness"]
