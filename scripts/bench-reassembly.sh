#!/usr/bin/env bash
# Times IPv4/IPv6 fragment reassembly (Sources/Capture/Decoding/FragmentReassembler.swift) at 10,000
# and 160,000 fragments in three shapes, for the working tree and for an older commit, and prints the
# 160k/10k time ratio (linear: about 16). The reassembler is compiled alone with a small driver
# (scripts/bench/ReassemblyBench.swift, swiftc -O), so no other code is timed.
# Usage: scripts/bench-reassembly.sh [BASE_COMMIT]   (default: the commit before the linear rewrite)
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-ce1abd8}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
file=Sources/Capture/Decoding/FragmentReassembler.swift
build() {  # name, source of the reassembler
    sed '/^import Base$/d' "$2" > "$work/$1-reassembler.swift"
    mkdir -p "$work/$1-src"
    cp scripts/bench/ReassemblyBench.swift "$work/$1-src/main.swift"  # top-level code lives in main.swift
    nice -n 10 swiftc -O -module-name Bench -o "$work/$1" \
        "$work/$1-reassembler.swift" "$work/$1-src/main.swift" 2> "$work/$1.log" \
        || { cat "$work/$1.log"; exit 1; }
}
git show "$base:$file" > "$work/base.swift"
build before "$work/base.swift"
build after "$file"
printf '%-8s %-12s %12s %12s %8s\n' version shape "10k s" "160k s" ratio
for version in before after; do
    for shape in interleaved flood firsts; do
        small=$("$work/$version" "$shape" 10000 | cut -d' ' -f1)
        # The quadratic version can take minutes on floods: give up after 300 s.
        large=$(timeout 300 "$work/$version" "$shape" 160000 | cut -d' ' -f1 || echo ">300")
        ratio=$(awk -v a="$small" -v b="$large" 'BEGIN { if (b ~ />/) print "-"; else printf "%.1f", b / a }')
        printf '%-8s %-12s %12s %12s %8s\n' "$version" "$shape" "$small" "$large" "$ratio"
    done
done
