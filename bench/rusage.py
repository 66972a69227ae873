#!/usr/bin/python3
"""Runs one command and reports its cost: `python3 bench/rusage.py CMD ARGS…`.

The command's stdout and stderr are inherited; after it exits, one line goes to stderr:
`__RUSAGE__ WALL_MS CPU_MS MAXRSS_KIB EXIT`, CPU time being user + sys of the command (and of any
child it waited for) from wait4, which Node cannot read for a child. Wall time is measured here,
around fork and exec, so Python's own start-up is not in it. Used by bench/measure.ts (runCpu).
"""
import os
import sys
import time


def main(argv):
    if not argv:
        sys.exit(__doc__)
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    wall = (time.perf_counter() - started) * 1000
    cpu = (usage.ru_utime + usage.ru_stime) * 1000
    sys.stderr.write(f'\n__RUSAGE__ {wall:.3f} {cpu:.3f} {usage.ru_maxrss} {os.waitstatus_to_exitcode(status)}\n')


if __name__ == '__main__':
    main(sys.argv[1:])
