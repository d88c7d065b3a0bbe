#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write and check known blocks on a gga front over NVMe/TCP.

    gga_blocks.py write|check --config DIR/bdevperf.json --seed S --lbas A:B[:STEP] [--nlb N]
                  [--passes P --stop-file F --pause-ms MS]

Reads the front's address, port and NQN from the bdevperf configuration that
scripts/gga_topology.sh writes, connects as an NVMe/TCP host (admin queue,
one I/O queue) and writes, or reads back and compares, 4 KiB blocks at LBAs
A, A+STEP, ... below B. Every block's bytes depend on the seed and its LBA,
half of each block is compressible, half random. With --nlb N each command
covers N consecutive blocks from each of those LBAs (a failed command fails
all N). `check` prints the counts (blocks wrong, failed, right, read back
as zeros, not read because the connection broke) and the first wrong or
failed LBA, and exits 1 if any block differs or fails, 3 if it cannot
connect at all (no such subsystem or namespace on the front, nothing
listening); `regions` prints how many distinct 1 MiB regions the LBAs touch.
With --passes P, `check` is a steady read load: it reads the LBAs over and
over on one connection, at most P times, stops early once file F exists,
waits MS milliseconds before each command, and prints one summary of all
passes. --path N talks to the Nth attachment of the configuration (the
second front of a two-front topology is path 1).
"""
import argparse
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nvme_tcp_client as nc  # noqa: E402

BS = 4096
HOSTNQN = "nqn.2014-08.io.gga:gga-blocks"


def block(seed, lba):
    rnd = random.Random(seed * 1000003 + lba)
    head = bytes([lba & 0xFF, (lba >> 8) & 0xFF, seed & 0xFF]) * (BS // 6)
    head = head[:BS // 2]
    return head + bytes(rnd.getrandbits(8) for _ in range(BS - len(head)))


def parse_lbas(text):
    parts = [int(p) for p in text.split(":")]
    step = parts[2] if len(parts) > 2 else 1
    return list(range(parts[0], parts[1], step))


PATH_INDEX = 0


def front(config):
    cfg = json.load(open(config))
    bdev = [s for s in cfg["subsystems"] if s["subsystem"] == "bdev"][0]
    p = bdev["config"][PATH_INDEX]["params"]
    return p["traddr"], int(p["trsvcid"]), p["subnqn"]


def connect(config):
    host, port, nqn = front(config)
    admin = nc.Conn(host, port)
    cpl = admin.connect(nqn, HOSTNQN)
    nc.expect(cpl.ok, "admin Connect: %r" % cpl)
    admin.enable()
    io = nc.Conn(host, port)
    cpl = io.connect(nqn, HOSTNQN, qid=1, sqsize=31, cntlid=cpl.cdw0 & 0xFFFF)
    nc.expect(cpl.ok, "I/O Connect: %r" % cpl)
    return admin, io


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("op", choices=["write", "check", "regions"])
    ap.add_argument("--config")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lbas", required=True)
    ap.add_argument("--nlb", type=int, default=1)
    ap.add_argument("--passes", type=int, default=1)
    ap.add_argument("--stop-file")
    ap.add_argument("--pause-ms", type=float, default=0)
    ap.add_argument("--path", type=int, default=0)
    args = ap.parse_args()
    global PATH_INDEX
    PATH_INDEX = args.path
    lbas = parse_lbas(args.lbas)
    if args.op == "regions":
        print(len({lba * BS >> 20 for lba in lbas}))
        return 0
    try:
        admin, io = connect(args.config)
    except (nc.Fail, nc.Closed, OSError) as e:
        print("%s: connect failed: %s" % (args.op, e))
        return 3
    n = args.nlb
    passes = 1 if args.op == "write" else max(1, args.passes)
    total = bad = failed = right = zero = 0
    first = None
    broken = False
    for p in range(passes):
        if p > 0 and args.stop_file and os.path.exists(args.stop_file):
            break
        total += len(lbas) * n
        for lba in lbas:
            if args.pause_ms > 0:
                time.sleep(args.pause_ms / 1000.0)
            want = b"".join(block(args.seed, lba + j) for j in range(n))
            if args.op == "write":
                cpl = io.write(1, lba, want, BS)
                if not cpl.ok:
                    failed += n
                    first = first if first is not None else lba
                continue
            try:
                cpl, data = io.read(1, lba, n, BS)
            except (nc.Fail, nc.Closed, OSError) as e:
                # What was read so far is counted; the rest was not read.
                print("lba %d: read failed: %s" % (lba, e))
                first = first if first is not None else lba
                broken = True
                break
            if not cpl.ok:
                failed += n
                first = first if first is not None else lba
                continue
            for j in range(n):
                got = data[j * BS:(j + 1) * BS]
                if got == want[j * BS:(j + 1) * BS]:
                    right += 1
                    continue
                bad += 1
                if got == bytes(BS):
                    zero += 1
                first = first if first is not None else lba + j
        if broken:
            break
    io.close()
    admin.close()
    if args.op == "write":
        print("write: %d blocks, %d failed%s" % (
            total, failed, "" if first is None else ", first at lba %d" % first))
        return 0 if failed == 0 else 1
    unread = total - bad - failed - right
    print("check: %d blocks, %d wrong, %d failed, %d right, %d zero-filled, %d not read%s" % (
        total, bad, failed, right, zero, unread,
        "" if first is None else ", first at lba %d" % first))
    return 0 if right == total else 1


if __name__ == "__main__":
    sys.exit(main())
