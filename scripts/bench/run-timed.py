#!/usr/bin/env python3
"""Runs a command (stdout to /dev/null) and prints its wall time, user and system CPU time in seconds
and its maximum RSS in KiB: "WALL USER SYS RSS". The wall time is taken with a monotonic clock around
spawn and wait (microseconds), where GNU time's %e gives hundredths, a tenth of a 0.1 s run.

  scripts/bench/run-timed.py COMMAND [ARGUMENT...]
"""
import os, sys, time

null = os.open(os.devnull, os.O_WRONLY)
actions = [(os.POSIX_SPAWN_DUP2, null, 1)]
start = time.perf_counter_ns()
pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ, file_actions=actions)
_, status, usage = os.wait4(pid, 0)
wall = (time.perf_counter_ns() - start) / 1e9
print(f"{wall:.6f} {usage.ru_utime:.6f} {usage.ru_stime:.6f} {usage.ru_maxrss}")
sys.exit(os.waitstatus_to_exitcode(status))
