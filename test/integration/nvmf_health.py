#!/usr/bin/env python3
"""The array's health where NVMe tools look, over NVMe/TCP from a host that
speaks the wire itself (nvme_tcp_client.py). Run by nvmf_health.sh against a
gga_tgt that exports, in subsystem NQN: namespace 1 a gga bdev gga0 over the
malloc members HA HB HC, namespace 2 a malloc bdev, and namespace 3 (when
--file-ns) a file bdev on a tmpfs too small for it.

  nvmf_health.py --port P --nqn NQN --rpc "gga_rpc -s SOCK" [--file-ns]

Prints "ok - ..." / "not ok - ..." per check (test/integration/run.sh
counts them) and exits 1 if any failed.
"""
import argparse
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nvme_tcp_client as c  # noqa: E402

FAILED = 0
NSID_ALL = 0xFFFFFFFF
AEN_RELIABILITY = 0x020001  # type 1 (SMART / health), info 0, log page 02h
AEN_TEMPERATURE = 0x020101  # info 1: temperature threshold


def check(desc, cond, detail=""):
    global FAILED
    if cond:
        print("ok - %s" % desc, flush=True)
    else:
        FAILED += 1
        print("not ok - %s%s" % (desc, (": " + str(detail)) if detail else ""), flush=True)
    return cond


class Smart:
    """The fields of a SMART / Health log page the checks read."""

    def __init__(self, raw):
        self.warning = raw[0]
        self.temperature = struct.unpack_from("<H", raw, 1)[0]
        self.spare, self.threshold = raw[3], raw[4]
        self.units_read, _, self.units_written, _ = struct.unpack_from("<4Q", raw, 32)
        self.reads, _, self.writes, _ = struct.unpack_from("<4Q", raw, 64)
        self.media_errors = struct.unpack_from("<Q", raw, 160)[0]
        self.error_entries = struct.unpack_from("<Q", raw, 176)[0]

    def __repr__(self):
        return ("smart(warning=0x%x spare=%d/%d reads=%d writes=%d units=%d/%d media=%d "
                "errors=%d)" % (self.warning, self.spare, self.threshold, self.reads,
                                self.writes, self.units_read, self.units_written,
                                self.media_errors, self.error_entries))


def smart(conn, nsid=NSID_ALL, rae=True):
    cpl, raw = conn.get_log(0x02, 512, nsid=nsid, rae=rae)
    c.expect(cpl.ok, "SMART log of nsid 0x%x: %r" % (nsid, cpl))
    return Smart(raw)


def post_aer(conn):
    cid = conn.next_cid()
    conn.send_cmd(c.sqe(c.OPC_AER, cid, sgl=c.sgl_transport(0)))
    return cid


def completions(conn, cids):
    """Completions of every cid in cids, in whatever order they come."""
    got = {}
    while len(got) < len(cids):
        ptype, _, psh, _ = conn.recv_pdu()
        c.expect(ptype == c.RSP, "PDU type %d while waiting for completions" % ptype)
        cpl = c.Cpl(psh[:16])
        c.expect(cpl.cid in cids, "completion of cid %d, expected %r" % (cpl.cid, cids))
        got[cpl.cid] = cpl
    return got


def wait_until(what, fn, seconds=30):
    deadline = time.time() + seconds
    while True:
        v = fn()
        if v:
            return v
        if time.time() > deadline:
            return v
        time.sleep(0.2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--nqn", required=True)
    ap.add_argument("--hostnqn", default="nqn.2014-08.org.nvmexpress:uuid:"
                    "5a1e5a1e-0000-4000-8000-000000000001")
    ap.add_argument("--rpc", required=True)
    ap.add_argument("--file-ns", action="store_true")
    a = ap.parse_args()

    def rpc(*argv):
        return c.rpc_run(a.rpc, *argv)

    adm = c.Conn(a.host, a.port)
    cpl = adm.connect(a.nqn, a.hostnqn, kato=30000)
    c.expect(cpl.ok, "admin Connect: %r" % cpl)
    adm.enable()
    cntlid = cpl.cdw0 & 0xFFFF
    io = c.Conn(a.host, a.port)
    c.expect(io.connect(a.nqn, a.hostnqn, qid=1, sqsize=127, cntlid=cntlid).ok, "I/O Connect")

    # Identify: per-namespace SMART (LPA bit 0), 16 error log entries (ELPE 15).
    cpl, idc = adm.identify(1)
    lpa, elpe = idc[261], idc[262]
    check("Identify: LPA says SMART per namespace and the effects log (0x%x)" % lpa,
          cpl.ok and lpa & 0x3 == 0x3)
    check("Identify: ELPE 15 (16 Error Information entries)", elpe == 15, elpe)

    # A whole array: no warning; the spare and its threshold are the gga bdev's.
    s = smart(adm)
    check("SMART: no critical warning while whole (%r)" % s, s.warning == 0)
    check("SMART: available spare 100, threshold 66 (gga 2 + 1)",
          (s.spare, s.threshold) == (100, 66), s)
    check("SMART: composite temperature 293 K", s.temperature == 293, s)
    s2 = smart(adm, 2)
    check("SMART of the malloc namespace: spare 100, threshold 0",
          (s2.warning, s2.spare, s2.threshold) == (0, 100, 0), s2)

    # The counters are the bdev's own: 8 writes and 5 reads of 4 KiB to namespace 1.
    before = smart(adm, 1)
    for i in range(8):
        c.expect(io.write(1, 16 + i, c.pattern(4096, i), 4096).ok, "write %d" % i)
    for i in range(5):
        c.expect(io.read(1, 16 + i, 1, 4096)[0].ok, "read %d" % i)
    after = smart(adm, 1)
    check("SMART of namespace 1: 8 more host writes and 5 more reads (%r)" % after,
          (after.writes - before.writes, after.reads - before.reads) == (8, 5))
    check("SMART: data units count 512-byte units in thousands, rounded up",
          after.units_written >= 1 and after.units_read >= 1, after)
    s2b = smart(adm, 2)
    check("SMART of namespace 2 did not count namespace 1's commands",
          (s2b.writes, s2b.reads) == (s2.writes, s2.reads), s2b)
    cpl, _ = adm.get_log(0x02, 512, nsid=9)
    check("SMART of an inactive namespace: Invalid Namespace or Format (%r)" % cpl,
          cpl.sct == 0 and cpl.sc == 0x0B)

    # Error Information: a read past the end of namespace 2 (1024 blocks).
    cpl, _ = io.read(2, 1030, 1, 512)
    check("a read past the end fails with LBA Out of Range (%r)" % cpl,
          cpl.sct == 0 and cpl.sc == 0x80)
    bad_cid = cpl.cid
    cpl, elog = adm.get_log(0x01, 64 * 16, nsid=0)
    count, sqid, cid, status, loc, lba, nsid = struct.unpack_from("<QHHHHQI", elog, 0)
    check("Error Information: the newest entry is that read (count %d sqid %d cid %d status "
          "0x%x lba %d nsid %d)" % (count, sqid, cid, status, lba, nsid),
          cpl.ok and count >= 1 and sqid == 1 and cid == bad_cid and
          (status >> 1) & 0xFF == 0x80 and lba == 1030 and nsid == 2 and loc == 0xFFFF)
    check("Error Information: the entries past the ones made are zero",
          all(b == 0 for b in elog[64 * count:]) if count < 16 else True)
    check("SMART: the number of Error Information entries made",
          smart(adm).error_entries == count, count)

    # SMART events for every critical warning (AEC bits 7:0), with the notices.
    cpl, _ = adm.cmd(c.OPC_GET_FEAT, cdw10=0x0B)
    aec = cpl.cdw0 | 0xFF
    cpl, _ = adm.cmd(c.OPC_SET_FEAT, cdw10=0x0B, cdw11=aec)
    check("Set Features AEC with the SMART warnings", cpl.ok, cpl)

    # A member goes: the array is degraded, an event says so.
    aer = post_aer(adm)
    rpc("bdev_malloc_delete", "--name", "HC")
    got = completions(adm, [aer])[aer]
    check("an asynchronous event when the array degrades: SMART, reliability, log 02h (%r)" %
          got, got.ok and got.cdw0 == AEN_RELIABILITY)
    s = smart(adm, rae=False)
    check("SMART: critical warning bit 2, reliability degraded (%r)" % s, s.warning == 0x04)
    check("SMART: available spare 66 at threshold 66 (two of three members in sync)",
          (s.spare, s.threshold) == (66, 66), s)
    check("SMART of the malloc namespace shows no warning", smart(adm, 2).warning == 0)
    check("SMART of namespace 1 shows it", smart(adm, 1).warning == 0x04)
    c.expect(io.write(1, 100, c.pattern(4096, 99), 4096).ok, "a write while degraded")
    cpl, data = io.read(1, 100, 1, 4096)
    check("I/O goes on degraded", cpl.ok and data == c.pattern(4096, 99), cpl)

    # The member is replaced and rebuilt: the warning clears, with no event.
    aer = post_aer(adm)
    rpc("bdev_malloc_create", "--name", "HD", "--num_blocks", "8224", "--block_size", "2048",
        "--md_size", "64")
    rpc("bdev_gga_replace_member", '{"name": "gga0", "member": "parity", "new_base": "HD"}')
    s = wait_until("whole", lambda: (lambda t: t if t.warning == 0 else None)(smart(adm)))
    check("SMART: the warning clears once the new member is rebuilt", s is not None and
          s.warning == 0, s)
    check("SMART: available spare 100 again", s is not None and s.spare == 100, s)

    # Temperature: an over-threshold under 293 K is a warning and an event (on the held AER;
    # had the array's recovery raised one, completions() would have failed above or here).
    scid = adm.next_cid()
    adm.send_cmd(c.sqe(c.OPC_SET_FEAT, scid, cdw10=0x04, cdw11=290, sgl=c.sgl_transport(0)))
    got = completions(adm, [aer, scid])
    check("Set Features temperature threshold 290 K", got[scid].ok, got[scid])
    check("an asynchronous event: SMART, temperature threshold (%r)" % got[aer],
          got[aer].ok and got[aer].cdw0 == AEN_TEMPERATURE)
    s = smart(adm, rae=False)
    check("SMART: critical warning bit 1, temperature (%r)" % s, s.warning == 0x02)
    cpl, _ = adm.cmd(c.OPC_SET_FEAT, cdw10=0x04, cdw11=343)
    check("the default threshold back: no warning", cpl.ok and smart(adm).warning == 0)

    # A file bdev whose writes fail (its tmpfs is full): its own health.
    if a.file_ns:
        aer = post_aer(adm)
        failed = None
        for i in range(0, 1024, 16):
            cpl = io.write(3, i, c.pattern(16 * 4096, i), 4096)
            if not cpl.ok:
                failed = (i, cpl)
                break
        check("a write to the full file bdev fails (%r)" % (failed,), failed is not None)
        got = completions(adm, [aer])[aer]
        check("an asynchronous event when the file bdev's writes fail (%r)" % got,
              got.ok and got.cdw0 == AEN_RELIABILITY)
        s3 = smart(adm, 3, rae=False)
        check("SMART of the file namespace: reliability degraded, media errors (%r)" % s3,
              s3.warning == 0x04 and s3.media_errors >= 1)
        check("SMART of the gga namespace: whole", smart(adm, 1).warning == 0)
        cpl, elog = adm.get_log(0x01, 64, nsid=0)
        _, sqid, _, status, _, lba, nsid = struct.unpack_from("<QHHHHQI", elog, 0)
        check("Error Information: the failed write, its LBA and namespace",
              nsid == 3 and lba == failed[0] and status != 0 if failed else False)
    adm.close()
    io.close()
    return 1 if FAILED else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (c.Fail, c.Closed, OSError, struct.error) as e:
        print("not ok - the scenario ran to its end: %s: %s" % (type(e).__name__, e))
        sys.exit(1)
