#!/usr/bin/env python3
"""Compares builds of `tunnelprobe trace` in one interleaved run: each round times the bare libpcap loop
(scripts/bench/pcaploop.c, built by bench-trace.sh or by hand) and then one build, for every build, the
order of the builds alternating from round to round, so that a machine whose speed drifts treats them
alike. Prints, per build, the median ratio (trace's packets per second, whole process, over the loop's)
and the median wall time. The capture is any pcap (scripts/bench/tracegen.c makes the benchmark's).

  scripts/bench/trace-ab.py PCAPLOOP CAPTURE ROUNDS BINARY [BINARY...]
"""
import os, statistics, subprocess, sys, tempfile, time

loop_bin, capture, rounds, binaries = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
ratios = {b: [] for b in binaries}
walls = {b: [] for b in binaries}
with tempfile.TemporaryDirectory() as out:
    for i in range(rounds):
        for b in (binaries if i % 2 == 0 else binaries[::-1]):
            # pcaploop prints: packets, seconds (open to close, inside the process), packets per second, bytes
            loop = float(subprocess.run([loop_bin, capture], capture_output=True, text=True, check=True).stdout.split()[1])
            start = time.perf_counter()
            subprocess.run([b, "trace", capture, "--quiet", "--out", os.path.join(out, str(binaries.index(b)))],
                           stdout=subprocess.DEVNULL, check=True)
            wall = time.perf_counter() - start
            ratios[b].append(loop / wall)
            walls[b].append(wall * 1000)
for b in binaries:
    print(f"{b}: ratio median {statistics.median(ratios[b]):.3f} (min {min(ratios[b]):.2f}, max {max(ratios[b]):.2f}), "
          f"wall median {statistics.median(walls[b]):.1f} ms (min {min(walls[b]):.1f})")
