"""Progress lines of long runs (`driver/progress.py`, `shardc-run`): stderr only, only when slow."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from shardc.driver import progress
from shardc.tools import shardc_run

ROOT = Path(__file__).resolve().parents[2]
MLP = str(ROOT / "examples" / "megatron_mlp.mlir")


class FakeClock:
    """A clock that moves only when a test says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def test_fast_stages_print_nothing() -> None:
    out = io.StringIO()
    with progress.reporting("tool", stream=out, after=10.0, tty=False):
        progress.step("a")
        progress.step("b")
    assert out.getvalue() == ""


def test_after_zero_prints_every_stage_and_done() -> None:
    out = io.StringIO()
    with progress.reporting("tool", stream=out, after=0.0, tty=False):
        progress.step("a")
        progress.step("b")
    lines = out.getvalue().splitlines()
    assert [ln.split("] ", 1)[1] for ln in lines] == ["a", "a: 0.0 s", "b", "b: 0.0 s", "done"]
    assert all(ln.startswith("tool: [") for ln in lines)


def test_a_slow_stage_is_announced_while_it_runs_and_timed_when_it_ends() -> None:
    out = io.StringIO()
    clock = FakeClock()
    with progress.reporting(
        "tool", stream=out, after=0.05, tty=False, clock=clock, watch=False
    ) as p:
        assert p is not None
        progress.step("fast one")
        clock.advance(0.01)
        progress.step("slow one")
        clock.advance(0.04)
        p.poll()
        assert p.lines == []  # not yet past its deadline
        clock.advance(0.02)
        assert p.lines == []  # step() does not print a running stage: the watcher (poll) does
        p.poll()
        assert p.lines == ["tool: [0.1 s] slow one (running for 0.1 s)"]
        p.poll()
        assert len(p.lines) == 1  # announced once
        progress.step("fast two")
    text = out.getvalue()
    assert "fast" not in text
    assert "slow one: " in text and text.rstrip().endswith("] done")


def test_on_a_terminal_every_stage_after_the_threshold_gets_a_line() -> None:
    out = io.StringIO()
    clock = FakeClock()
    with progress.reporting("tool", stream=out, after=0.05, tty=True, clock=clock, watch=False):
        progress.step("first")
        clock.advance(0.2)
        progress.active().poll()  # type: ignore[union-attr]
        progress.step("second")
        progress.step("third")
    stages = [ln.split("] ", 1)[1] for ln in out.getvalue().splitlines()]
    assert stages[0].startswith("first (running for")
    assert stages[1:] == ["second", "third", "done"]  # no duration lines on a terminal


def test_no_reporter_outside_a_tool(capsys: pytest.CaptureFixture[str]) -> None:
    assert progress.active() is None
    progress.step("nothing")  # a no-op
    import shardc

    shardc.compile(Path(MLP).read_text(), pipeline="spmd-pipeline")
    assert capsys.readouterr().err == ""


def test_quiet_flag_and_disabled_reporter() -> None:
    with progress.reporting("tool", enabled=False) as p:
        assert p is None and progress.active() is None
        progress.step("x")


def test_shardc_run_reports_stages_on_stderr_only(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(progress.ENV_AFTER, "0")
    assert shardc_run.main([MLP, "-p", "spmd-pipeline", "--check"]) == 0
    cap = capsys.readouterr()
    err = cap.err
    assert "shardc-run: [" not in cap.out
    for needle in (
        "parsing ",
        "pass 1/13 spmd-propagate",
        "pass 13/13 schedule",
        "running level S on 8 devices",
        "checking: running the level-G program",
        "] done",
    ):
        assert needle in err, err
    # --quiet: nothing on stderr, the same stdout
    assert shardc_run.main([MLP, "-p", "spmd-pipeline", "--check", "--quiet"]) == 0
    quiet = capsys.readouterr()
    assert quiet.err == "" and quiet.out == cap.out


def test_shardc_run_short_run_prints_nothing_extra(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(progress.ENV_AFTER, raising=False)
    assert shardc_run.main([MLP, "-p", "spmd-pipeline"]) == 0
    assert capsys.readouterr().err == ""


def test_shardc_run_slow_stage_is_reported(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stage forced to be slow (the run) prints its line while it runs, and its time."""
    from shardc.interpreter.devices import Executor

    real_run = Executor.run
    clock = FakeClock()

    def slow_run(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        clock.advance(0.4)
        progress.active().poll()  # type: ignore[union-attr]  (what the watcher does)
        return real_run(self, *args, **kwargs)

    monkeypatch.setattr(progress, "default_clock", clock)
    monkeypatch.setattr(Executor, "run", slow_run)
    monkeypatch.setenv(progress.ENV_AFTER, "0.2")
    assert shardc_run.main([MLP, "--timing-only"]) == 0
    err = capsys.readouterr().err
    assert "running level G on 1 device (timing only) (running for" in err, err
    assert "parsing" not in err  # fast stages stay silent
    assert err.rstrip().endswith("] done")


def test_bad_env_value_falls_back_to_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(progress.ENV_AFTER, "soon")
    assert progress.default_after() == progress.DEFAULT_AFTER


def test_shardc_run_level_t_kernel_reports_its_stage(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(progress.ENV_AFTER, "0")
    kernel = str(ROOT / "tests" / "filecheck" / "dialects" / "tpu" / "ring_all_gather.mlir")
    assert shardc_run.main([kernel]) == 0
    cap = capsys.readouterr()
    assert "running level T on 4 devices" in cap.err and "shardc-run: [" not in cap.out


def test_a_failed_run_ends_with_its_error_not_done(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(progress.ENV_AFTER, "0")
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @main() {\n  %x = hlo.bogus : tensor<4xf32>\n}\n")
    assert shardc_run.main([str(bad)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("shardc-run: [") and "parsing" in err[0]
    assert "] done" not in "\n".join(err)
    assert "error: Operation hlo.bogus is not registered" in err[1]
