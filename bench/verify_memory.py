"""A verification command that prints 1 GiB does not raise claudeloop's memory.

A small driver process runs the real adapter (with the run's redaction) on a command that
prints 1 GiB, then on one that prints 1 KiB; the driver's own peak RSS is compared. The
output file lives in a temporary directory that is deleted afterwards.
"""

from __future__ import annotations

import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.measure import run_measured

BIG = 1024**3
SMALL = 1024
_LINE = 1024  # bytes per printed line, newline included


@dataclass(frozen=True)
class VerifyMemory:
    small_peak_rss_mb: float
    big_peak_rss_mb: float
    big_seconds: float
    big_output_bytes: int

    @property
    def ratio(self) -> float:
        return self.big_peak_rss_mb / self.small_peak_rss_mb


def printer(total: int) -> str:
    """A command printing `total` bytes in lines of 1 KiB, in 1 MiB writes."""
    code = (
        "import sys\n"
        f"line = b'x' * {_LINE - 1} + b'\\n'\n"
        f"block = line * {1024**2 // _LINE}\n"
        f"whole, rest = divmod({total}, len(block))\n"
        "for _ in range(whole): sys.stdout.buffer.write(block)\n"
        "sys.stdout.buffer.write(block[:rest])\n"
    )
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


def drive(total: int, work: Path) -> None:
    """The driver: run one check through the adapter, as the runner would."""
    import anyio

    from claudeloop.adapters.redaction import Redactor
    from claudeloop.adapters.verification_commands import VerificationCommands
    from claudeloop.domain.verification import CheckCommand

    commands = VerificationCommands(
        work, timeout_seconds=3600, redact=Redactor.from_environment().text
    )
    output = work / "verify" / "check.log"
    result = anyio.run(lambda: commands.run(CheckCommand.parse(printer(total)), output=output))
    if not result.passed or result.output_bytes != total or output.stat().st_size != total:
        raise SystemExit(f"unexpected result: {result.exit_code} {result.output_bytes}")
    output.unlink()


def measure(total: int, work: Path) -> tuple[float, float]:
    figures = run_measured(
        [sys.executable, "-m", "bench.verify_memory", "--drive", str(total), str(work)],
        cwd=Path(__file__).parent.parent,
    )
    if figures.exit_code != 0:
        raise RuntimeError(f"the driver for {total} bytes exited with {figures.exit_code}")
    return figures.own_peak_rss_mb, figures.wall_seconds


def run() -> VerifyMemory:
    work = Path(tempfile.mkdtemp(prefix="claudeloop-bench-verify-"))
    try:
        small_mb, _ = measure(SMALL, work)
        big_mb, big_seconds = measure(BIG, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return VerifyMemory(small_mb, big_mb, big_seconds, BIG)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--drive"]:
        drive(int(sys.argv[2]), Path(sys.argv[3]))
    else:
        started = time.perf_counter()
        print(run(), f"in {time.perf_counter() - started:.1f}s")
