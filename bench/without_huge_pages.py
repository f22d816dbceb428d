"""Runs a command with transparent huge pages switched off for it and its children
(`prctl(PR_SET_THP_DISABLE)`), so one build's figures can be compared with and without the huge pages
its vector arrays ask for:

    python3 bench/without_huge_pages.py target/release/quiver-bench vector ...
"""

import ctypes
import os
import sys

PR_SET_THP_DISABLE = 41

if len(sys.argv) < 2:
    sys.exit("usage: without_huge_pages.py COMMAND [ARG...]")
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0:
    sys.exit(f"prctl(PR_SET_THP_DISABLE): {os.strerror(ctypes.get_errno())}")
os.execvp(sys.argv[1], sys.argv[1:])
