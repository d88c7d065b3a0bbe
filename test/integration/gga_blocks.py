#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write and check known blocks on a gga front over NVMe/TCP.

    gga_blocks.py write|check --config DIR/bdevperf.json --seed S --lbas A:B[:STEP]

Reads the front's address, port and NQN from the bdevperf configuration that
scripts/gga_topology.sh writes, connects as an NVMe/TCP host (admin queue,
one I/O queue) and writes, or reads back and compares, 4 KiB blocks at LBAs
A, A+STEP, ... below B. Every block's bytes depend on the seed and its LBA,
half of each block is compressible, half random. `check` prints the first
wrong or failed LBA and the counts, and exits 1 if any block differs or
fails; `regions` prints how many distinct 1 MiB regions the LBAs touch.
"""
import argparse
import json
import os
import random
import sys

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


def front(config):
    cfg = json.load(open(config))
    p = cfg["subsystems"][0]["config"][0]["params"]
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
    args = ap.parse_args()
    lbas = parse_lbas(args.lbas)
    if args.op == "regions":
        print(len({lba * BS >> 20 for lba in lbas}))
        return 0
    admin, io = connect(args.config)
    bad = failed = 0
    first = None
    for lba in lbas:
        want = block(args.seed, lba)
        if args.op == "write":
            cpl = io.write(1, lba, want, BS)
            if not cpl.ok:
                failed += 1
                first = first if first is not None else lba
            continue
        try:
            cpl, data = io.read(1, lba, 1, BS)
        except (nc.Fail, nc.Closed, OSError) as e:
            print("lba %d: read failed: %s" % (lba, e))
            return 1
        if not cpl.ok:
            failed += 1
        elif data != want:
            bad += 1
        else:
            continue
        first = first if first is not None else lba
    io.close()
    admin.close()
    print("%s: %d blocks, %d wrong, %d failed%s" % (
        args.op, len(lbas), bad, failed,
        "" if first is None else ", first at lba %d" % first))
    return 0 if bad == 0 and failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
