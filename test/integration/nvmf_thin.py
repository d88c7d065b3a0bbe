#!/usr/bin/env python3
"""A thin namespace as an NVMe host sees it (docs/DESIGN.md "Thin
namespaces"), over NVMe/TCP from nvme_tcp_client.py. Run by nvmf_thin.sh:
namespace 1 of NQN on --port is a malloc bdev of 2048 512-byte blocks with
thin_blocks 1024; namespace 1 of --front-nqn on --front-port is the same
namespace re-exported by a second gga_tgt through its NVMe/TCP host.

  nvmf_thin.py --port P --nqn NQN --front-port P2 --front-nqn NQN2

Prints "ok - ..." / "not ok - ..." per check and exits 1 if any failed.
"""
import argparse
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nvme_tcp_client as c  # noqa: E402

FAILED = 0
BS = 512
NSZE, LIMIT = 2048, 1024
CHUNK = 16  # blocks per write: 8 KiB, in the capsule
HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:7d0f1c43-5a1e-4c7e-8d9b-000000000001"


def check(desc, cond, detail=""):
    global FAILED
    if cond:
        print("ok - %s" % desc, flush=True)
    else:
        FAILED += 1
        print("not ok - %s%s" % (desc, (": " + str(detail)) if detail else ""), flush=True)
    return cond


def connect(port, nqn):
    """Admin and I/O queues on 127.0.0.1:port."""
    admin = c.Conn("127.0.0.1", port)
    cpl = admin.connect(nqn, HOSTNQN)
    c.expect(cpl.ok, "admin Connect to %s: %r" % (nqn, cpl))
    admin.enable()
    io = c.Conn("127.0.0.1", port)
    cpl = io.connect(nqn, HOSTNQN, qid=1, sqsize=31, cntlid=cpl.cdw0 & 0xFFFF)
    c.expect(cpl.ok, "I/O Connect to %s: %r" % (nqn, cpl))
    return admin, io


def id_ns(admin):
    """(nsze, ncap, nuse, nsfeat, dlfeat) of namespace 1."""
    cpl, data = admin.identify(0, nsid=1)
    c.expect(cpl.ok, "Identify Namespace: %r" % cpl)
    nsze, ncap, nuse = struct.unpack_from("<QQQ", data, 0)
    return nsze, ncap, nuse, data[24], data[33]


def write_range(io, slba, nlb, seed):
    """Write [slba, slba + nlb) in chunks; the first failing completion, or None."""
    for lba in range(slba, slba + nlb, CHUNK):
        n = min(CHUNK, slba + nlb - lba)
        cpl = io.write(1, lba, c.pattern(n * BS, seed + lba), BS)
        if not cpl.ok:
            return cpl
    return None


def is_nospc(cpl):
    return cpl is not None and cpl.sct == 0 and cpl.sc == 0x81 and cpl.dnr


def back(args):
    admin, io = connect(args.port, args.nqn)
    nsze, ncap, nuse, nsfeat, dlfeat = id_ns(admin)
    check("Identify: NSFEAT THINP set", nsfeat & 1, "nsfeat 0x%x" % nsfeat)
    check("Identify: NSZE %d, NCAP %d, NUSE 0" % (NSZE, LIMIT),
          (nsze, ncap, nuse) == (NSZE, LIMIT, 0), (nsze, ncap, nuse))
    check("Identify: DLFEAT 09h (reads zeros, Write Zeroes deallocates)", dlfeat == 0x09,
          "dlfeat 0x%x" % dlfeat)

    cpl = write_range(io, 0, LIMIT, 1)
    check("writing %d blocks succeeds" % LIMIT, cpl is None, cpl)
    check("NUSE is %d after them" % LIMIT, id_ns(admin)[2] == LIMIT, id_ns(admin)[2])
    cpl = io.write(1, LIMIT, c.pattern(BS, 99), BS)
    check("the next new block fails with Capacity Exceeded (SCT 0, SC 81h, DNR)",
          is_nospc(cpl), cpl)
    cpl = io.write(1, LIMIT - 4, c.pattern(8 * BS, 98), BS)
    check("a write half over allocated blocks fails whole", is_nospc(cpl), cpl)
    cpl, data = io.read(1, LIMIT - 4, 4, BS)
    check("and its allocated half keeps the old data",
          cpl.ok and data == c.pattern(CHUNK * BS, 1 + LIMIT - CHUNK)[-4 * BS:], cpl)
    cpl, data = io.read(1, LIMIT, 4, BS)
    check("and its new half reads zeros", cpl.ok and data == bytes(4 * BS), cpl)
    new = c.pattern(2 * BS, 7)
    cpl = io.write(1, 5, new, BS)
    check("an overwrite of written blocks still succeeds when full", cpl.ok, cpl)
    cpl, data = io.read(1, 5, 2, BS)
    check("and reads back", cpl.ok and data == new, cpl)
    check("NUSE is still %d" % LIMIT, id_ns(admin)[2] == LIMIT)

    rng = struct.pack("<IIQ", 0, 512, 0)
    cpl, _ = io.cmd(c.OPC_DSM, nsid=1, cdw10=0, cdw11=4, data=rng)
    check("DSM deallocate of blocks 0..511 succeeds when full", cpl.ok, cpl)
    check("NUSE falls to 512", id_ns(admin)[2] == 512, id_ns(admin)[2])
    zeros = True
    for lba in range(0, 512, 128):
        cpl, data = io.read(1, lba, 128, BS)
        zeros = zeros and cpl.ok and data == bytes(128 * BS)
    check("the deallocated blocks read zeros", zeros)
    cpl = write_range(io, LIMIT, 256, 3)
    check("writes of new blocks work again", cpl is None, cpl)
    check("NUSE is 768", id_ns(admin)[2] == 768, id_ns(admin)[2])
    cpl, _ = io.cmd(c.OPC_WZ, nsid=1, cdw10=LIMIT + 128, cdw12=127)
    check("Write Zeroes of 128 written blocks succeeds", cpl.ok, cpl)
    check("and frees them: NUSE 640", id_ns(admin)[2] == 640, id_ns(admin)[2])
    admin.close()
    io.close()


def front(args):
    """Through gga's NVMe host: the status passes on, the path stays up."""
    admin, io = connect(args.front_port, args.front_nqn)
    # back() left blocks 512..1151 allocated: 384 of the 1024 are left.
    cpl = write_range(io, 1280, 384, 5)
    check("through a second gga_tgt: 384 new blocks fill the namespace", cpl is None, cpl)
    cpl = io.write(1, 1700, c.pattern(BS, 6), BS)
    check("the next new block fails with Capacity Exceeded and DNR through it",
          is_nospc(cpl), cpl)
    new = c.pattern(BS, 8)
    cpl = io.write(1, 1300, new, BS)
    check("an overwrite through it still succeeds", cpl.ok, cpl)
    cpl, data = io.read(1, 1300, 1, BS)
    check("and reads back through it", cpl.ok and data == new, cpl)
    admin.close()
    io.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--nqn", required=True)
    p.add_argument("--front-port", type=int, required=True)
    p.add_argument("--front-nqn", required=True)
    args = p.parse_args()
    for name, fn in (("back", back), ("front", front)):
        try:
            fn(args)
        except (c.Fail, c.Closed, OSError, struct.error) as e:
            check("%s: ran to its end" % name, False, "%s: %s" % (type(e).__name__, e))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
