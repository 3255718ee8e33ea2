#!/usr/bin/env python3
"""Checks that two builds of `tunnelprobe trace` give the same report: every figure of trace.json
(everything but the run's id, command line and start/finish times) and the exit code, over the
captures given and over variants of each classic pcap among them that exercise the record reader's
edge cases (cut at several points, a record longer than the snap length or than libpcap's maximum, the
other byte order, microsecond and nanosecond time stamps, a negative time stamp). A speed change to
trace must leave this silent (issue 27 item 5).

  scripts/bench/trace-same.py OLD_BINARY NEW_BINARY CAPTURE...
"""
import json, os, random, struct, subprocess, sys, tempfile

VOLATILE = {"commandLine", "finishedAt", "id", "startedAt"}


def run(binary, capture, out):
    p = subprocess.run([binary, "trace", capture, "--quiet", "--out", out], capture_output=True, text=True)
    path = os.path.join(out, "trace.json")
    doc = json.load(open(path)) if os.path.exists(path) else None
    if doc is not None:
        for k in VOLATILE:
            doc.get("run", {}).pop(k, None)
    # The failure text names the capture; the report directory differs.
    err = p.stderr.replace(out, "OUT")
    return p.returncode, doc, err


def records(data):
    """The classic pcap's (offset, header) list, little-endian files only."""
    out, off = [], 24
    while off + 16 <= len(data):
        sec, frac, cap, ln = struct.unpack_from("<IIII", data, off)
        out.append((off, sec, frac, cap, ln))
        off += 16 + cap
    return out


def swapped(data):
    """The same file written in the other byte order (headers only; packet bytes are not swapped)."""
    magic, vmaj, vmin, zone, sig, snap, lt = struct.unpack_from("<IHHiIII", data, 0)
    out = bytearray(struct.pack(">IHHiIII", magic, vmaj, vmin, zone, sig, snap, lt))
    for off, sec, frac, cap, ln in records(data):
        out += struct.pack(">IIII", sec, frac, cap, ln) + data[off + 16: off + 16 + cap]
    return bytes(out)


def variants(path, work):
    data = open(path, "rb").read()
    if struct.unpack_from("<I", data, 0)[0] not in (0xA1B2C3D4, 0xA1B23C4D):
        return []
    rng = random.Random(27)
    recs = records(data)
    made = []

    def write(name, blob):
        p = os.path.join(work, os.path.basename(path) + "." + name + ".pcap")
        open(p, "wb").write(blob)
        made.append(p)

    for k in range(4):  # cut inside a record header, inside its data, and on a record boundary
        off = recs[rng.randrange(len(recs))][0] if recs else 24
        write(f"cut-header-{k}", data[:off + rng.randrange(1, 16)])
        write(f"cut-data-{k}", data[:off + 16 + 1])
        write(f"cut-boundary-{k}", data[:off])
    if recs:
        i = len(recs) // 2
        off = recs[i][0]
        for name, cap in (("caplen-huge", 0x7FFFFFFF), ("caplen-over-max", 262_145), ("caplen-past-end", len(data))):
            b = bytearray(data)
            struct.pack_into("<I", b, off + 8, cap)
            write(name, bytes(b))
        b = bytearray(data)
        struct.pack_into("<I", b, off, 0x80000000)  # negative seconds as libpcap reads them
        write("negative-seconds", bytes(b))
        write("negative-seconds-swapped", swapped(bytes(b)))  # other-endian: read unsigned
        b = bytearray(data)
        struct.pack_into("<I", b, off + 4, 0xFFFFFFFF)  # a fraction past the second
        write("fraction-overflow", bytes(b))
    if len(recs) > 100:  # records out of time order: blocks reversed, and a stretch moved far back
        blobs = [data[off: off + 16 + cap] for off, _, _, cap, _ in recs]
        shuffled = []
        for k in range(0, len(blobs), 37):
            shuffled += blobs[k: k + 37][::-1]
        write("blocks-reversed", data[:24] + b"".join(shuffled))
        cut = len(blobs) // 3
        write("stretch-moved", data[:24] + b"".join(blobs[cut: 2 * cut] + blobs[:cut] + blobs[2 * cut:]))
    b = bytearray(data)
    struct.pack_into("<I", b, 16, 60)  # snap length below the records' lengths: libpcap cuts them
    write("snaplen-60", bytes(b))
    write("cut-snaplen-60", bytes(b)[: len(b) - 7])
    write("snaplen-60-swapped", swapped(bytes(b)))
    write("swapped", swapped(data))
    b = bytearray(swapped(data))
    write("swapped-cut", bytes(b)[: len(b) - 5])
    magic = struct.unpack_from("<I", data, 0)[0]
    b = bytearray(data)
    struct.pack_into("<I", b, 0, 0xA1B23C4D if magic == 0xA1B2C3D4 else 0xA1B2C3D4)  # the other resolution
    write("other-resolution", bytes(b))
    b = bytearray(data)
    struct.pack_into("<HH", b, 4, 2, 3)  # version 2.3: libpcap may swap caplen and len
    write("version-2-3", bytes(b))
    return made


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    old, new, captures = sys.argv[1], sys.argv[2], sys.argv[3:]
    work = tempfile.mkdtemp(prefix="trace-same-")
    files = []
    for c in captures:
        files.append(c)
        files += variants(c, work)
    differ = 0
    for i, f in enumerate(files):
        a = run(old, f, os.path.join(work, f"old-{i}"))
        b = run(new, f, os.path.join(work, f"new-{i}"))
        same = a == b
        differ += not same
        print(f"{'same  ' if same else 'DIFFER'} exit {a[0]}/{b[0]} {f}")
        if not same:
            print(f"  old: {json.dumps(a[1])[:600]}\n  new: {json.dumps(b[1])[:600]}\n  stderr: {a[2]!r} / {b[2]!r}")
    subprocess.run(["rm", "-rf", work])
    print(f"{len(files) - differ} of {len(files)} captures give the same report")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
