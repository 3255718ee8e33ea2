#!/usr/bin/env python3
"""The scan engine's closed-loop query rate against `tunnelprobe serve`, next to dnsperf's, in one run.

Issue 2's target: the engine is never the bottleneck (its rate >= dnsperf's in the same run).

Method (why it is built this way):
- One responder process for the whole comparison, pinned to core 0 with one thread; every generator
  is pinned to core 1. On two cores a generator that shares the responder's core wins by costing
  less CPU, not by keeping the responder busier.
- The responder's own capacity drifts from minute to minute on this virtual machine (earlier runs
  saw 50k to 90k q/s), so generators are not compared across separate runs. Each round runs every
  generator for the same short slice, back to back, and the order rotates between rounds so no
  generator always gets the first or the last slice.
- For every slice the responder's CPU time is read from /proc/<pid>/stat: a responder busy close to
  100 % of its core is the bottleneck, whichever generator drives it.
- For every slice the generator's own CPU time (user + system, all its threads, from the rusage of
  the waited-for child) is divided by the queries it completed: CPU microseconds per query. On two
  cores this is the figure a generator controls: with its core 100 % busy its rate is 1 / (its CPU
  per query), and below the responder's CPU per query it can keep the responder saturated. It is
  printed beside the rate; the ratio and the target are still the rates.
- Generators: dnsperf on a data file of authenticated echo probes (`loadgen --write-queries`), with
  EDNS0 (-e) so its queries and the answers are byte for byte the size of the engine's;
  `engine` = `loadgen --mode prebuilt`, the query engine on probes built before the clock starts as
  dnsperf reads its file first; `pipeline` = `loadgen --mode eventLoop`, every probe built,
  authenticated, sent and its answer judged (what a scan does per query).

Usage: bench-query-rate.py BIN [--rounds N] [--seconds S] [--outstanding Q]
Prints one line per round and a summary; exit status 0 whether or not the target is met.
"""
import argparse
import os
import resource
import re
import statistics
import subprocess
import sys
import tempfile
import time

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime, proc(5) fields 14 and 15


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_slice(command, responder):
    """The generator's rate, the responder's busy fraction over the generator's own measured
    interval (queries completed / rate), so time spent before the clock starts (loadgen building
    its probes) does not count as responder idle time, and the generator's CPU microseconds per
    completed query (its whole process, start-up and, for `engine`, building its probes included)."""
    start_cpu = cpu_seconds(responder)
    start_children = children_cpu()
    out = subprocess.run(command, capture_output=True, text=True).stdout
    used = cpu_seconds(responder) - start_cpu
    generator_cpu = children_cpu() - start_children
    rate = re.search(r"Queries per second:\s+([\d.]+)", out)
    completed = re.search(r"Queries completed:\s+(\d+)", out)
    if not rate or not completed or float(rate.group(1)) == 0 or int(completed.group(1)) == 0:
        return 0.0, 0.0, 0.0
    interval = int(completed.group(1)) / float(rate.group(1))
    return float(rate.group(1)), min(1.0, used / interval), generator_cpu / int(completed.group(1)) * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--outstanding", type=int, default=100)
    args = parser.parse_args()
    work = tempfile.mkdtemp()
    key = os.path.join(work, "k.key")
    with open(key, "w") as f:
        f.write(os.urandom(32).hex() + "\n")
    port = "5399"
    responder = subprocess.Popen(["taskset", "-c", "0", args.bin, "serve", "--domain", "vpn.lab.test", "--key-file", key,
                                  "--listen", f"127.0.0.1:{port}", "--rate-limit", "0", "--threads", "1", "--quiet"])
    try:
        time.sleep(1)
        queries = os.path.join(work, "q.txt")
        common = ["--server", f"127.0.0.1:{port}", "--domain", "vpn.lab.test", "--key-file", key]
        subprocess.run([args.bin, "loadgen", *common, "--write-queries", queries, "--count", "400000"], check=True,
                       capture_output=True)
        s, q = str(args.seconds), str(args.outstanding)
        generators = {
            # -e: EDNS0 like the engine's probes (90-byte queries, 123-byte answers for both); without
            # it dnsperf's queries are 79 bytes and the responder does less work for each.
            "dnsperf": ["taskset", "-c", "1", "dnsperf", "-s", "127.0.0.1", "-p", port, "-d", queries, "-l", s, "-q", q, "-e"],
            "engine": ["taskset", "-c", "1", args.bin, "loadgen", *common, "--duration", s, "--outstanding", q,
                       "--mode", "prebuilt"],
            "pipeline": ["taskset", "-c", "1", args.bin, "loadgen", *common, "--duration", s, "--outstanding", q,
                         "--mode", "eventLoop"],
        }
        names = list(generators)
        rates = {name: [] for name in names}
        busy = {name: [] for name in names}
        cost = {name: [] for name in names}
        for round_index in range(args.rounds):
            order = names[round_index % len(names):] + names[:round_index % len(names)]
            for name in order:
                rate, load, micros = run_slice(generators[name], responder.pid)
                rates[name].append(rate)
                busy[name].append(load)
                cost[name].append(micros)
            line = ", ".join(f"{n} {rates[n][-1] / 1000:.1f}k (responder {busy[n][-1] * 100:.0f} %, "
                             f"{cost[n][-1]:.1f} us CPU/query)" for n in names)
            print(f"round {round_index + 1} [{' > '.join(order)}]: {line}", flush=True)
        print("summary (q/s; ratio to dnsperf per round, then its median and the rounds at or above 1):")
        for name in names:
            ratios = [r / d for r, d in zip(rates[name], rates["dnsperf"]) if d > 0]
            print(f"  {name:9s} median {statistics.median(rates[name]) / 1000:.1f}k, responder busy median "
                  f"{statistics.median(busy[name]) * 100:.0f} %, generator CPU median "
                  f"{statistics.median(cost[name]):.2f} us/query"
                  + ("" if name == "dnsperf" else
                     f", ratio median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}), "
                     f">= dnsperf in {sum(r >= 1 for r in ratios)}/{len(ratios)} rounds"))
        print(f"  load average at the end: {os.getloadavg()[0]:.2f}")
    finally:
        responder.terminate()
        responder.wait()


if __name__ == "__main__":
    sys.exit(main())
