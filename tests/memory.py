"""A process's own peak of resident memory, from /proc: reset it, do something, read how high it went.

The peak (VmHWM) is a high-water mark since the process started; writing 5 to /proc/<pid>/clear_refs sets it back
to the memory held now (Linux 4.0+), so a test measures what its own step cost, not what the process did before.
"""

from __future__ import annotations

from pathlib import Path


def reset_peak(pid: int | str = "self") -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def peak_mb(pid: int | str = "self") -> float:
    """The peak resident memory since the last `reset_peak`, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM in /proc/{pid}/status")


def rss_mb(pid: int | str = "self") -> float:
    """The resident memory now, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS in /proc/{pid}/status")
