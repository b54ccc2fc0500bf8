"""
Level S over MPI (issue 17): `mpirun -n K shardc-run FILE ...` spreads the program's N
devices over K ranks, N divisible by K, rank r running devices [r*N/K, (r+1)*N/K).

This is the one module that imports `mpi4py` (the optional `shardc[mpi]` extra), and only
when a `World` is made: `running_under_mpi` reads the launcher's environment without
importing it, so a plain run never loads MPI.

* Communicators are built once per run from the mesh groups of the program's collectives:
  one per distinct set of ranks that some group spans (`Comm.Create_group`, created by
  every rank in one global order, so creation cannot deadlock); a group's messages carry
  its tag. Groups within one rank never touch MPI.
* Messages are pickled once, sent as bytes (`Isend`), received after `Iprobe` (any size);
  `bytes_sent` counts them (bench/mpi_scaling.py reports it).
* Failure handling, so that nothing hangs and each message appears once:
  `agree` (an allgather) ends the setup phase that every rank does alike, so a bad flag or
  input is reported by rank 0 only; an exception inside the distributed run is printed by
  the rank that raised it, which then aborts the job (`abort`); a deadlock is reported by
  every rank that waits (`mpi_rendezvous`), then `finish` (a non-blocking allreduce of each
  rank's status, polled with the timeout) lets every rank learn that the run failed.
"""

from __future__ import annotations

import os
import pickle
import sys
import time
from collections.abc import Iterable
from typing import Any

import numpy as np
from shardc.diagnostics import DiagnosticError
from shardc.dialects import collective as coll
from shardc.interpreter.mpi_liveness import Liveness
from xdsl.ir import Operation

SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS")
"""Set by Open MPI's, MPICH's and PMIx launchers in each rank's environment."""

DEFAULT_TIMEOUT = 300.0
"""Seconds without progress, while every other rank waits too, before a waiting rank
reports a deadlock (`SHARDC_MPI_TIMEOUT`; a rank computing a long op is no deadlock:
`mpi_liveness`)."""


def running_under_mpi() -> bool:
    """True when launched by mpirun with more than one rank (no MPI import)."""
    for name in SIZE_VARIABLES:
        value = os.environ.get(name)
        if value is not None and value.isdigit():
            return int(value) > 1
    return False


def timeout_from_env() -> float:
    text = os.environ.get("SHARDC_MPI_TIMEOUT")
    if not text:
        return DEFAULT_TIMEOUT
    try:
        return float(text)
    except ValueError:
        raise DiagnosticError(
            f"shardc-run: error: SHARDC_MPI_TIMEOUT={text!r} is not a number of seconds"
        ) from None


_WORLD: World | None = None


def world() -> World:
    """The process's world (made on first use: imports mpi4py)."""
    global _WORLD
    if _WORLD is None:
        _WORLD = World()
    return _WORLD


class World:
    """This rank's view of the job: its devices, the communicators, the messages."""

    def __init__(self) -> None:
        try:
            from mpi4py import MPI
        except ImportError:
            raise DiagnosticError(
                "shardc-run: error: running under mpirun needs mpi4py: pip install 'shardc[mpi]'"
            ) from None
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD
        self.rank: int = self.comm.Get_rank()
        self.size: int = self.comm.Get_size()
        self.timeout = timeout_from_env()
        self.devices = 0
        self.bytes_sent = 0
        self.started = False
        self._group_comm: dict[tuple[int, ...], tuple[Any, int, list[int]]] = {}
        self._sends: list[tuple[Any, bytes]] = []
        self.local_results: dict[int, tuple[Any, ...]] = {}
        """This rank's devices' results of the last level-S run."""
        self.liveness = Liveness(self.comm, MPI, self.rank, self.size, self.timeout)

    def reset(self) -> None:
        """Ready for the next run in this process (a test runs many in one job)."""
        self.started = False
        self.devices = 0
        self.bytes_sent = 0
        self._group_comm = {}
        self.local_results = {}

    @property
    def is_root(self) -> bool:
        return self.rank == 0

    # Devices ------------------------------------------------------------------------

    def set_devices(self, n: int, filename: str) -> range:
        """Spread `n` devices over the ranks; this rank's devices."""
        if n % self.size:
            raise DiagnosticError(
                f"{filename}: error: the program runs on {n} devices, which {self.size} MPI "
                f"ranks cannot share evenly (mpirun -n K needs K to divide {n})"
            )
        self.devices = n
        self.liveness.start_run()
        per = n // self.size
        return range(self.rank * per, (self.rank + 1) * per)

    def rank_of(self, device: int) -> int:
        return device // (self.devices // self.size)

    def devices_of(self, rank: int) -> range:
        per = self.devices // self.size
        return range(rank * per, (rank + 1) * per)

    # Communicators ------------------------------------------------------------------

    def build_communicators(self, ops: Iterable[Operation]) -> None:
        """One communicator per set of ranks a group spans; a tag per group."""
        groups: set[tuple[int, ...]] = set()
        for op in ops:
            if isinstance(op, coll.CollectiveOp):
                groups.update(tuple(g) for g in op.device_groups())
        rank_sets: dict[tuple[int, ...], Any] = {}
        for tag, group in enumerate(sorted(groups)):
            ranks = tuple(sorted({self.rank_of(d) for d in group}))
            if len(ranks) < 2 or self.rank not in ranks:
                continue
            self._group_comm[group] = (ranks, 3 * tag, [])  # 3 channels (mpi_chain)
            rank_sets[ranks] = None
        for ranks in sorted({r for r, _, _ in self._group_comm.values()}):
            mpi_group = self.comm.Get_group().Incl(list(ranks))
            rank_sets[ranks] = self.comm.Create_group(mpi_group, tag=0)
        for group, (ranks, tag, _) in self._group_comm.items():
            self._group_comm[group] = (rank_sets[ranks], tag, list(ranks))

    def send(self, group: tuple[int, ...], payload: Any, channel: int = 0) -> None:
        """`payload` to every other rank of `group` (non-blocking)."""
        self._send(
            group, [r for r in self._group_comm[group][2] if r != self.rank], payload, channel
        )

    def send_to(self, group: tuple[int, ...], rank: int, payload: Any, channel: int) -> None:
        """`payload` to rank `rank` of `group` only (a chained reduction's partial sum)."""
        self._send(group, [rank], payload, channel)

    def _send(self, group: tuple[int, ...], to: list[int], payload: Any, channel: int) -> None:
        comm, tag, ranks = self._group_comm[group]
        data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        for r in to:
            request = comm.Isend([data, self.MPI.BYTE], ranks.index(r), tag + channel)
            self._sends.append((request, data))
            self.bytes_sent += len(data)
        self._sends = [(q, d) for q, d in self._sends if not q.Test()]

    def group_ranks(self, group: tuple[int, ...]) -> list[int]:
        return self._group_comm[group][2]

    def receive(self, group: tuple[int, ...], source: int, channel: int = 0) -> Any | None:
        """The next message of `group` on `channel` from rank `source`, None if none has
        arrived (messages of one channel from one rank arrive in order)."""
        comm, tag, ranks = self._group_comm[group]
        status = self.MPI.Status()
        if not comm.Iprobe(ranks.index(source), tag + channel, status):
            return None
        buffer = bytearray(status.Get_count(self.MPI.BYTE))
        comm.Recv([buffer, self.MPI.BYTE], ranks.index(source), tag + channel)
        return pickle.loads(buffer)

    # Agreement, failure -------------------------------------------------------------

    def agree(self, error: BaseException | None) -> None:
        """
        End of the setup every rank does alike: if any rank failed, rank 0 raises the
        first distinct message and the others exit quietly with status 1.
        """
        messages = self.comm.allgather(None if error is None else str(error))
        failed = [m for m in dict.fromkeys(messages) if m is not None]
        self.started = True
        if not failed:
            return
        if self.is_root:
            raise DiagnosticError("\n".join(failed))
        raise SystemExit(1)

    def finish(self, failed: bool) -> bool:
        """
        After this rank's devices are done (or failed): True if every rank succeeded.
        Waits (polling) for the other ranks; a rank that cannot finish reports itself.
        """
        self.liveness.finished()
        status = np.array([int(failed)], dtype=np.int32)
        out = np.zeros(1, dtype=np.int32)
        request: Any = self.comm.Iallreduce(status, out, op=self.MPI.MAX)
        start, reported = time.monotonic(), False
        while not request.Test():
            if self.liveness.others_quiet() is None:  # another rank computes: no alarm
                start = time.monotonic()
            waited = time.monotonic() - start
            if waited > self.timeout and not reported:
                devs = self.devices_of(self.rank)
                print(
                    f"shardc-run: rank {self.rank} (devices {devs.start}-{devs.stop - 1}) "
                    f"finished, but other ranks have not after {self.timeout:g} s",
                    file=sys.stderr,
                    flush=True,
                )
                reported = True
            if waited > 2 * self.timeout:
                self.abort()
            time.sleep(1e-3)
        if out[0] == 0:  # every meeting completed, so every send was received
            self.MPI.Request.Waitall([q for q, _ in self._sends])
            self._sends = []
        return int(out[0]) == 0

    def progressed(self) -> None:
        self.liveness.progressed()

    def stalled(self, idle: float) -> bool:
        """True when this rank's waiting devices are deadlocked (`mpi_liveness`)."""
        return self.liveness.stalled(idle)

    def abort(self, message: str | None = None) -> None:
        """Print `message` (this rank's failure) and end the whole job at once."""
        if message:
            print(message, file=sys.stderr, flush=True)
        sys.stdout.flush()
        self.comm.Abort(1)

    def gather(self, value: Any) -> list[Any] | None:
        """Every rank's `value` on rank 0 (None elsewhere)."""
        return self.comm.gather(value, root=0)


__all__ = ["World", "running_under_mpi", "world"]
