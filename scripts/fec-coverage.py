#!/usr/bin/env python3
"""Coverage of simulate's cluster-aware intervals against the exact binomial values, over many seeds.

    scripts/fec-coverage.py [CASES] [BINARY]

The unit test (FECAdviceTests) checks 40 seeded cases; 40 cases are a small sample of an interval's
coverage (an exact 95 % interval covers 38 of 40 or more only about two times in three). This script
runs the same cases, i.i.d. loss q from 1 % to 20 % with full groups (flush timeout 60 s, no ARQ), for
CASES cases (default 400; case i has q = 0.01 + 0.19 (i mod 40) / 39 and seed 4000 + i, so the first
40 are the test's), and prints, per level and figure, how often the exact value fell inside the
reported 95 % interval. Exact values: P(group fails) = P(more than m of k + m symbols lost), residual
loss = sum over i > m of P(i lost) i / (k + m).
Needs python3 and a release build (`swift build -c release`).
"""
import json
import math
import os
import subprocess
import sys
import tempfile

CASES = int(sys.argv[1]) if len(sys.argv) > 1 else 400
BINARY = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", ".build", "release", "tunnelprobe")
LEVELS = [(8, 2), (12, 3), (16, 7)]


def exact(k, m, q):
    n = k + m
    failure = residual = 0.0
    for i in range(m + 1, n + 1):
        p = math.comb(n, i) * q ** i * (1 - q) ** (n - i)
        failure += p
        residual += p * i / n
    return failure, residual


covered = {}
total = {}
with tempfile.TemporaryDirectory(prefix="tp-coverage-") as work:
    for case in range(CASES):
        q = 0.01 + 0.19 * (case % 40) / 39
        out = os.path.join(work, str(case))
        subprocess.run([BINARY, "simulate", "--model", f"bernoulli:p={q!r},delay=1,rate=100000",
                        "--levels", ",".join(f"{k}:{m}" for k, m in LEVELS), "--flush-timeout", "60000", "--no-arq",
                        "--window", "4096", "--rto-min", "5", "--rto-max", "5", "--runs", "2", "--opportunities", "24000",
                        "--verify-groups", "0", "--seed", str(4000 + case), "--out", out, "--quiet"], check=True)
        with open(os.path.join(out, "simulate.json")) as f:
            report = json.load(f)
        for row, (k, m) in zip(report["levels"], LEVELS):
            truth = dict(zip(["failure", "residual"], exact(k, m, q)))
            ci = row["clusterIntervals"]
            for figure, key in [("failure", "groupFailure"), ("residual", "residualLossFEC")]:
                name = f"{k}+{m} {figure}"
                total[name] = total.get(name, 0) + 1
                if ci[key]["low"] <= truth[figure] <= ci[key]["high"]:
                    covered[name] = covered.get(name, 0) + 1
        if (case + 1) % 40 == 0:
            print(f"{case + 1} cases: " + ", ".join(f"{n} {covered.get(n, 0)}/{total[n]}" for n in total), flush=True)

print()
print("| figure | covered | cases | coverage |")
print("|---|---:|---:|---:|")
for name in total:
    print(f"| {name} | {covered.get(name, 0)} | {total[name]} | {100 * covered.get(name, 0) / total[name]:.1f} % |")
all_covered = sum(covered.values())
all_total = sum(total.values())
print(f"| all | {all_covered} | {all_total} | {100 * all_covered / all_total:.1f} % |")
