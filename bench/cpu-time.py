#!/usr/bin/python3
"""CPU time (user+sys) and wall time of whole processes, interleaved, medians.

    python3 bench/cpu-time.py [-n 21] -- node -e 0 -- node bin/run.js --help -- node bin/run.js onboard web -n apps

On a machine shared with other jobs, wall time measures the load as much as the program: CPU time
(from wait4's rusage, microsecond resolution; Node cannot read a child's rusage, GNU time rounds to
10 ms) shows what a run costs. NODE_EXTRA_CA_CERTS is unset for every command (see bench/run.ts).
The first command is the baseline of the printed ratios. Stdout and stderr go to /dev/null; 2 warm-up
rounds are not counted.
"""
import os
import statistics
import sys
import time


def main(argv):
    runs = 21
    if len(argv) >= 2 and argv[0] == '-n':
        runs, argv = int(argv[1]), argv[2:]
    cmds, cur = [], None
    for a in argv:
        if a == '--':
            cur = []
            cmds.append(cur)
        elif cur is not None:
            cur.append(a)
    if not cmds or any(not c for c in cmds):
        sys.exit(__doc__)
    env = {k: v for k, v in os.environ.items() if k != 'NODE_EXTRA_CA_CERTS'}
    walls, cpus = [[] for _ in cmds], [[] for _ in cmds]
    devnull = os.open(os.devnull, os.O_WRONLY)
    for i in range(runs + 2):
        for k, cmd in enumerate(cmds):
            started = time.perf_counter()
            pid = os.fork()
            if pid == 0:
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
                try:
                    os.execvpe(cmd[0], cmd, env)
                finally:
                    os._exit(127)
            _, status, usage = os.wait4(pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(f'{" ".join(cmd)} exited {os.waitstatus_to_exitcode(status)}')
            if i >= 2:
                walls[k].append((time.perf_counter() - started) * 1000)
                cpus[k].append((usage.ru_utime + usage.ru_stime) * 1000)
    base_wall, base_cpu = statistics.median(walls[0]), statistics.median(cpus[0])
    for k, cmd in enumerate(cmds):
        w, c = statistics.median(walls[k]), statistics.median(cpus[k])
        print(f'{" ".join(cmd)[:72]:72s}  cpu {c:6.1f} ms ({c / base_cpu:.2f}x)  wall {w:6.1f} ms ({w / base_wall:.2f}x)')


if __name__ == '__main__':
    main(sys.argv[1:])
