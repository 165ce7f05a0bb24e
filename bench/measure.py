"""Small measuring tools shared by the benchmarks: a process's own peak memory and CPU."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcessFigures:
    wall_seconds: float
    exit_code: int
    own_peak_rss_mb: float  # the process itself, not its children
    own_cpu_seconds: float


def _read_status_hwm(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _read_cpu(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def run_measured(
    command: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> ProcessFigures:
    """Runs `command`, sampling the process's own peak RSS and CPU until it exits."""
    started = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    peak, cpu = 0.0, 0.0
    while process.poll() is None:
        peak = max(peak, _read_status_hwm(process.pid) or 0.0)
        cpu = max(cpu, _read_cpu(process.pid) or 0.0)
        time.sleep(0.05)
    return ProcessFigures(time.perf_counter() - started, process.returncode, peak, cpu)


def median_wall(
    command: list[str], *, runs: int, env: dict[str, str] | None = None, cwd: Path | None = None
) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(
            command,
            env=env,
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        times.append(time.perf_counter() - started)
    times.sort()
    return times[len(times) // 2]


def peak_rss_of_child(
    command: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> float:
    """Peak RSS (MB) of one child, from the kernel's own accounting at exit."""
    process = subprocess.Popen(
        command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, _, usage = os.wait4(process.pid, 0)
    process.returncode = 0
    return usage.ru_maxrss / 1024
