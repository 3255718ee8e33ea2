#!/usr/bin/env bash
# Runs index benchmark (issue 27 item 4): the same `tunnelprobe trace` (release build, default report
# place, so it also writes reports/index.html) in an empty report root, in a root holding 1,000 earlier
# runs with summaries, and in a root holding 1,000 earlier runs written before summaries existed (their
# summary.json removed before each round: the index then loads at most RunIndex.legacyLoadsPerWrite of
# them per run). Whole process: wall time and peak RSS from wait4(2), rounds interleaved, same file.
# Target: the 1,000-run root within 10 % of the empty root in both.
#   scripts/bench-index.sh                  # 300,000 queries (about 600,000 packets), 1,000 runs, 5 rounds
#   QUERIES=100000 RUNS=200 ROUNDS=3 scripts/bench-index.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
swift build -c release --product tunnelprobe >/dev/null
bin=$(realpath .build/release/tunnelprobe)
cc=${CC:-$(command -v gcc || command -v clang)}
"$cc" -O2 -o "$work/tracegen" scripts/bench/tracegen.c -lpcap
file="$work/dns.pcap"
packets=$("$work/tracegen" "$file" "${QUERIES:-300000}" 42 | cut -d' ' -f1)
runs=${RUNS:-1000}

# The earlier runs: one real trace run of the same capture, copied under run ids of their own.
mkdir -p "$work/empty" "$work/full" "$work/legacy"
(cd "$work/full" && "$bin" trace "$file" --quiet >/dev/null)
seed=$(basename "$(find "$work/full/reports" -mindepth 1 -maxdepth 1 -type d)")
python3 - "$work/full/reports" "$seed" "$runs" <<'PY'
import os, shutil, sys
root, seed, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(runs - 1):
    shutil.copytree(os.path.join(root, seed), os.path.join(root, f"20250101-{i // 3600 % 24:02d}{i // 60 % 60:02d}{i % 60:02d}-trace-{i:x}"))
PY
cp -r "$work/full/reports" "$work/legacy/reports"
echo "$packets packets; earlier runs: $(ls -d "$work/full/reports"/*/ | wc -l) in full/, $(ls -d "$work/legacy/reports"/*/ | wc -l) in legacy/ (summaries removed each round)"

python3 - "$bin" "$file" "$work" "${ROUNDS:-5}" <<'PY'
import glob, os, shutil, statistics, subprocess, sys, time
bin, file, work, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
roots = ["empty", "full", "legacy"]
def before(root):
    reports = os.path.join(work, root, "reports")
    existing = set(os.listdir(reports)) if os.path.isdir(reports) else set()
    if root == "legacy":
        for s in glob.glob(os.path.join(reports, "*", "summary.json")): os.remove(s)
    return reports, existing
def after(reports, existing):
    # Keep every root as it was: remove the run this round added.
    for name in set(os.listdir(reports)) - existing:
        path = os.path.join(reports, name)
        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
results = {r: [] for r in roots}
for i in range(rounds):
    load = open("/proc/loadavg").read().split()[:3]
    line = []
    for root in roots:
        reports, existing = before(root)
        start = time.perf_counter()
        p = subprocess.Popen([bin, "trace", file, "--quiet"], cwd=os.path.join(work, root), stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - start
        assert status == 0, f"trace exited {status}"
        assert os.path.exists(os.path.join(reports, "index.html"))
        after(reports, existing)
        cpu = usage.ru_utime + usage.ru_stime
        results[root].append((wall, usage.ru_maxrss / 1024, cpu))
        line.append(f"{root} {wall:.3f} s (CPU {cpu:.3f} s) {usage.ru_maxrss / 1024:.1f} MiB")
    print(f"  round {i + 1} (load average {' '.join(load)}): " + ", ".join(line))
best = {r: [min(x[k] for x in v) for k in range(3)] for r, v in results.items()}
median = {r: [statistics.median(x[k] for x in v) for k in range(3)] for r, v in results.items()}
for r in roots:
    print(f"  {r:6}: best {best[r][0]:.3f} s (CPU {best[r][2]:.3f} s), median {median[r][0]:.3f} s (CPU {median[r][2]:.3f} s); "
          f"peak RSS best {best[r][1]:.1f} MiB, median {median[r][1]:.1f} MiB")
# Wall time on a shared machine follows the load; CPU time (user + system, both threads) much less.
for r in ["full", "legacy"]:
    t, c, m = best[r][0] / best["empty"][0], best[r][2] / best["empty"][2], median[r][1] / median["empty"][1]
    print(f"  {r} / empty: time {t:.3f}, CPU {c:.3f} (best of {rounds}), peak RSS {m:.3f} (median); "
          f"target <= 1.10: {'met' if t <= 1.10 and m <= 1.10 else 'NOT met'} (time), {'met' if c <= 1.10 and m <= 1.10 else 'NOT met'} (CPU)")
PY
