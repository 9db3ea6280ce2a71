"""Run a command that obeys file permissions, also when the tests run as root (as they do in CI).

Root ignores read and write permissions (capabilities CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH), so
`chmod -R a-w` or `chmod 000` stops nothing it does. A root process can give those two capabilities up for
good: dropped from its bounding set (prctl PR_CAPBSET_DROP, which needs CAP_SETPCAP, part of Docker's default
set), they are gone from every program it then executes, since a program run by root gets its bounding set
and no more. `obeying_permissions` wraps a command in a small Python program that drops them and then
executes the command; not as root, the command runs as it is.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2
PR_CAPBSET_DROP = 24
DROP_THEN_EXEC = f"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
for cap in ({CAP_DAC_OVERRIDE}, {CAP_DAC_READ_SEARCH}):
    if libc.prctl({PR_CAPBSET_DROP}, cap, 0, 0, 0) != 0:
        sys.exit(f"cannot drop capability {{cap}}: {{os.strerror(ctypes.get_errno())}}")
os.execv(sys.argv[1], sys.argv[1:])
"""


def obeying_permissions(command: list[str]) -> list[str]:
    """`command` so that it runs without the power to ignore file permissions (as root: without CAP_DAC_*)."""
    if os.geteuid() != 0:
        return command
    return [sys.executable, "-c", DROP_THEN_EXEC, *command]


def permissions_not_enforced(tmp: Path) -> str | None:
    """None when a command run through `obeying_permissions` is kept out of a read-only folder; else why not."""
    folder = tmp / "permission-probe"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        probe = subprocess.run(
            obeying_permissions([sys.executable, "-c", "import sys; open(sys.argv[1], 'w')", str(folder / "x")]),
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        folder.chmod(0o755)
    if probe.returncode != 0 and "PermissionError" in probe.stderr:
        return None
    who = "root" if os.geteuid() == 0 else f"uid {os.geteuid()}"
    return f"file permissions cannot be enforced on a command run as {who} here: {probe.stderr.strip()[-300:]}"


def chmod_tree(top: Path, *, writable: bool) -> None:
    """`chmod -R a-w top` (writable=False) or `chmod -R u+w top` (writable=True)."""
    for root, dirs, files in os.walk(top):
        for name in [*dirs, *files]:
            path = Path(root, name)
            mode = path.stat().st_mode
            path.chmod(mode | 0o200 if writable else mode & ~0o222)
    mode = top.stat().st_mode
    top.chmod(mode | 0o200 if writable else mode & ~0o222)
