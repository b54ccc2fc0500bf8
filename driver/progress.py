"""
Progress lines on stderr for long tool runs (`shardc-run`): a line per stage, only when
the run is slow, so short runs and stdout stay as they are.

    shardc-run: [2.0 s] pass 3/14 spmd-partition (running for 2.0 s)
    shardc-run: [6.3 s] pass 3/14 spmd-partition: 6.1 s
    shardc-run: [6.9 s] running level S on 8 devices (running for 2.0 s)
    shardc-run: [9.4 s] done

A tool marks where each stage starts with `step("...")` (the previous stage ends there);
code that runs outside a tool (the Python API, tests) calls the same functions and they
do nothing, because no reporter is active. When a line is printed:

* stderr is not a terminal (CI logs, pipes): a stage gets a line once it has itself run
  for `after` seconds (printed then, by a watcher thread, while it still runs), and a
  second line with its duration when it ends. Fast stages of a slow run print nothing.
* stderr is a terminal: once the whole run is `after` seconds old, the current stage and
  every later one get a line as they start.
* Either way, a run that printed anything ends with `done` (a failed run with its error
  message instead); a run that stays under `after` prints nothing at all.

`after` is 2 s, or `$SHARDC_PROGRESS_AFTER` (seconds; 0 prints every stage at once:
tests use it); `--quiet` (`enabled=False`) turns progress off.

Time comes from `clock` (default: the module's `default_clock`, `time.monotonic` unless
a test replaces it), so tests drive a reporter with a fake clock and `poll()` instead of sleeping;
`watch=False` runs no watcher thread (then `poll()` is what announces a slow stage).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

DEFAULT_AFTER = 2.0
"""Seconds a stage (or, on a terminal, the run) must last before progress is printed."""

ENV_AFTER = "SHARDC_PROGRESS_AFTER"

default_clock: Callable[[], float] = time.monotonic
"""The clock of new reporters that are given none (tests replace it with a fake one)."""


def default_after() -> float:
    text = os.environ.get(ENV_AFTER)
    if text is None:
        return DEFAULT_AFTER
    try:
        return max(0.0, float(text))
    except ValueError:
        return DEFAULT_AFTER


class Progress:
    """The reporter of one run; see the module docstring. Thread-safe."""

    def __init__(
        self,
        prog: str,
        stream: TextIO | None = None,
        after: float | None = None,
        tty: bool | None = None,
        clock: Callable[[], float] | None = None,
        watch: bool = True,
    ) -> None:
        self.prog = prog
        self.clock = clock if clock is not None else default_clock
        self.stream = stream if stream is not None else sys.stderr
        self.after = default_after() if after is None else after
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            tty = bool(isatty and isatty())
        self.tty = tty
        self.lines: list[str] = []
        """Every line printed, for tests."""
        self._t0 = self.clock()
        self._cond = threading.Condition()
        self._stage: str | None = None
        self._started = self._t0
        self._announced = False
        self._closed = False
        self._thread: threading.Thread | None = None
        if self.after > 0 and watch:
            self._thread = threading.Thread(target=self._watch, name="shardc-progress", daemon=True)
            self._thread.start()

    # -- the tool's side ----------------------------------------------------------------

    def step(self, what: str) -> None:
        """The stage `what` starts now (the previous one ends)."""
        with self._cond:
            if self._closed:
                return
            now = self.clock()
            self._end_stage(now)
            self._stage, self._started, self._announced = what, now, False
            if now >= self._deadline_locked():
                self._announce(now)
            self._cond.notify_all()

    def close(self, ok: bool = True) -> None:
        """End the run: `done` if anything was printed and it succeeded (not `ok`: silent,
        the tool's error message follows)."""
        with self._cond:
            if self._closed:
                return
            now = self.clock()
            if ok:
                self._end_stage(now)
            self._stage = None
            self._closed = True
            if self.lines and ok:
                self._print(f"[{now - self._t0:.1f} s] done")
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=1.0)

    def poll(self) -> None:
        """Announce the current stage if it has run past its deadline (what the watcher
        thread does when it wakes; tests with a fake clock call it themselves)."""
        with self._cond:
            self._poll_locked()

    # -- internals (called with the lock held) ------------------------------------------

    def _deadline_locked(self) -> float:
        """When the current stage gets its line."""
        if self.tty:
            return self._t0 + self.after
        return self._started + self.after

    def _announce(self, now: float, *, late: bool = False) -> None:
        """Print the current stage's line (`late`: by the watcher, while it runs)."""
        assert self._stage is not None
        self._announced = True
        extra = f" (running for {now - self._started:.1f} s)" if late else ""
        self._print(f"[{now - self._t0:.1f} s] {self._stage}{extra}")

    def _end_stage(self, now: float) -> None:
        if self._stage is not None and self._announced and not self.tty:
            self._print(f"[{now - self._t0:.1f} s] {self._stage}: {now - self._started:.1f} s")

    def _print(self, text: str) -> None:
        line = f"{self.prog}: {text}"
        self.lines.append(line)
        try:
            print(line, file=self.stream, flush=True)
        except (OSError, ValueError):  # a closed or broken stderr must not end the run
            pass

    def _watch(self) -> None:
        with self._cond:
            while not self._closed:
                if self._stage is None or self._announced:
                    self._cond.wait()
                    continue
                wait = self._poll_locked()
                if wait is not None:
                    self._cond.wait(wait)

    def _poll_locked(self) -> float | None:
        """Announce a stage past its deadline; else the seconds left until it (None: no
        stage waiting)."""
        if self._closed or self._stage is None or self._announced:
            return None
        now = self.clock()
        deadline = self._deadline_locked()
        if now >= deadline:
            self._announce(now, late=True)
            return None
        return deadline - now


_active: Progress | None = None
_active_lock = threading.Lock()


def step(what: str) -> None:
    """Mark the start of a stage of the active run (nothing if no reporter is active)."""
    p = _active
    if p is not None:
        p.step(what)


def active() -> Progress | None:
    return _active


@contextmanager
def reporting(
    prog: str,
    *,
    enabled: bool = True,
    stream: TextIO | None = None,
    after: float | None = None,
    tty: bool | None = None,
    clock: Callable[[], float] | None = None,
    watch: bool = True,
) -> Iterator[Progress | None]:
    """Make a reporter active for the body (none if not `enabled`)."""
    global _active
    if not enabled:
        yield None
        return
    p = Progress(prog, stream=stream, after=after, tty=tty, clock=clock, watch=watch)
    with _active_lock:
        previous, _active = _active, p
    ok = False
    try:
        yield p
        ok = True
    finally:
        with _active_lock:
            _active = previous
        p.close(ok)


__all__ = ["DEFAULT_AFTER", "ENV_AFTER", "Progress", "active", "reporting", "step"]
