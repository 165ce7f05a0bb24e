"""A stand-in for `python -m claudeloop` in tests/adapters/fleet/test_forks.py: it says
where it runs and what it was told in a file, writes one byte on the descriptor the
seat names, then exits with the code asked, or 143 at a SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import sys
import time


def main() -> None:
    report, code = sys.argv[1], int(sys.argv[2])
    told = os.environ.get("CLAUDELOOP_FLEET_SYNC")
    if told is not None:
        os.write(int(told), b"!")
    signal.signal(signal.SIGTERM, lambda _n, _f: sys.exit(143))
    with open(report, "w") as out:
        json.dump({"cwd": os.getcwd(), "env": dict(os.environ), "argv": sys.argv}, out)
    if code < 0:
        while True:
            time.sleep(0.05)
    sys.exit(code)


if __name__ == "__main__":
    main()
