#!/usr/bin/env python3
"""NVMe reservations against gga_tgt, from two hosts that speak NVMe/TCP
themselves (nvme_tcp_client.Conn): Register, Acquire, Preempt, Release,
Clear and Report, the access each of the six types leaves to holders,
registrants and others, persist through power loss across a restart, and
a preempt that fences the other host's writes in flight.

  nvmf_resv_client.py --port P --nqn NQN [--nsid N] SCENARIO

Scenarios: basic (every command and type), ptpl-set (register and take a
reservation with persist through power loss on), ptpl-check (after a
restart: the same registrants and holder; persistence then turned off),
ptpl-empty (after the next restart: nothing), fence (host B preempts host A
while A writes without pause: every write of A completes before the
preempt or fails with Reservation Conflict, and B's data is what is left),
fence-held (a write of A the namespace holds: the preempt completes only
after it, and A's next write fails at once); b-preempt and b-clear (host B
alone, for a test whose other host is the Linux kernel); notify (the
reservation notification log page 80h, its event, Feature 82h).
"""
import argparse
import socket
import struct
import sys
import threading
import time

from nvme_tcp_client import Conn, Closed, Fail, Cpl, expect, pattern, rpc_run, run_scenario, sqe, \
    sgl_incapsule, sgl_transport, OPC_IDENTIFY, OPC_GET_FEAT, OPC_SET_FEAT, OPC_WRITE, OPC_READ, \
    OPC_AER, RSP

OPC_REGISTER, OPC_REPORT, OPC_ACQUIRE, OPC_RELEASE = 0x0D, 0x0E, 0x11, 0x15
SC_INVALID_FIELD, SC_HOSTID_FORMAT, SC_CONFLICT = 0x02, 0x18, 0x83
WE, EA, WE_RO, EA_RO, WE_AR, EA_AR = 1, 2, 3, 4, 5, 6
FEAT_RESV_PERSIST = 0x83
FEAT_RESV_MASK = 0x82
LOG_RESV = 0x80
NOTIF_EMPTY, NOTIF_REG_PREEMPTED, NOTIF_RELEASED, NOTIF_RESV_PREEMPTED = 0, 1, 2, 3

HOSTID_A = bytes([0xA0] * 15 + [1])
HOSTID_B = bytes([0xB0] * 15 + [2])
HOSTNQN_A = "nqn.2014-08.io.gga:resv-host-a"
HOSTNQN_B = "nqn.2014-08.io.gga:resv-host-b"


class Host:
    """One host: an admin queue and an I/O queue of its own controller."""

    def __init__(self, args, hostnqn, hostid):
        self.nsid = args.nsid
        self.bs = args.block_size
        self.admin = Conn(args.host, args.port)
        cpl = self.admin.connect(args.nqn, hostnqn, hostid=hostid)
        expect(cpl.ok, "admin Connect of %s: %r" % (hostnqn, cpl))
        self.cntlid = cpl.cdw0 & 0xFFFF
        self.admin.enable()
        self.io = Conn(args.host, args.port)
        cpl = self.io.connect(args.nqn, hostnqn, qid=1, sqsize=127, cntlid=self.cntlid,
                              hostid=hostid)
        expect(cpl.ok, "I/O Connect of %s: %r" % (hostnqn, cpl))

    def close(self):
        self.io.close()
        self.admin.close()

    def register(self, rrega, crkey, nrkey, iekey=0, cptpl=0):
        cdw10 = rrega | (iekey << 3) | (cptpl << 30)
        return self.io.cmd(OPC_REGISTER, nsid=self.nsid, cdw10=cdw10,
                           data=struct.pack("<QQ", crkey, nrkey))[0]

    def acquire(self, racqa, rtype, crkey, prkey=0, iekey=0):
        cdw10 = racqa | (iekey << 3) | (rtype << 8)
        return self.io.cmd(OPC_ACQUIRE, nsid=self.nsid, cdw10=cdw10,
                           data=struct.pack("<QQ", crkey, prkey))[0]

    def release(self, rrela, rtype, crkey):
        cdw10 = rrela | (rtype << 8)
        return self.io.cmd(OPC_RELEASE, nsid=self.nsid, cdw10=cdw10,
                           data=struct.pack("<Q", crkey))[0]

    def report(self, eds=True, length=4096):
        cpl, data = self.io.cmd(OPC_REPORT, nsid=self.nsid, cdw10=length // 4 - 1,
                                cdw11=1 if eds else 0, read_len=length)
        if not cpl.ok:
            return cpl, None
        gen, rtype, regctl, ptpls = struct.unpack_from("<IBHxxB", data, 0)
        regs = []
        for i in range(regctl):
            e = 64 + 64 * i
            cntlid, rcsts, rkey = struct.unpack_from("<HB5xQ", data, e)
            regs.append({"cntlid": cntlid, "holds": bool(rcsts & 1), "key": rkey,
                         "hostid": bytes(data[e + 16:e + 32])})
        return cpl, {"gen": gen, "rtype": rtype, "regs": regs, "ptpls": ptpls}

    def write(self, slba, data):
        return self.io.cmd(OPC_WRITE, nsid=self.nsid, cdw10=slba, cdw12=len(data) // self.bs - 1,
                           data=data)[0]

    def read(self, slba, nlb):
        return self.io.cmd(OPC_READ, nsid=self.nsid, cdw10=slba, cdw12=nlb - 1,
                           read_len=nlb * self.bs)


def is_conflict(cpl):
    return cpl.sct == 0 and cpl.sc == SC_CONFLICT and cpl.dnr


def access(a, b, what):
    """(A writes, B writes, B reads) as seen now, each True when allowed."""
    blk = pattern(a.bs, 7)
    got = []
    for cpl in (a.write(0, blk), b.write(1, blk), b.read(0, 1)[0]):
        expect(cpl.ok or is_conflict(cpl), "%s: neither success nor conflict: %r" % (what, cpl))
        got.append(cpl.ok)
    return tuple(got)


def sc_basic(args):
    a = Host(args, HOSTNQN_A, HOSTID_A)
    b = Host(args, HOSTNQN_B, HOSTID_B)
    cpl, idc = a.admin.cmd(OPC_IDENTIFY, cdw10=1, read_len=4096)
    expect(cpl.ok and struct.unpack_from("<H", idc, 520)[0] & (1 << 5), "ONCS reservations")
    cpl, idn = a.admin.cmd(OPC_IDENTIFY, nsid=args.nsid, cdw10=0, read_len=4096)
    expect(cpl.ok and idn[31] == 0xFE, "RESCAP 0xfe without ptpl_file: 0x%x" % idn[31])
    expect(idn[30] & 1, "NMIC: shared namespace")
    # Get Features Host Identifier (81h), 128-bit (EXHID): what each host sent in Connect.
    for h, hid in ((a, HOSTID_A), (b, HOSTID_B)):
        cpl, got = h.admin.cmd(OPC_GET_FEAT, cdw10=0x81, cdw11=1, read_len=16)
        expect(cpl.ok and bytes(got) == hid, "Host Identifier feature: %r %r" % (cpl, got))
    cpl, _ = a.admin.cmd(OPC_GET_FEAT, cdw10=0x81, cdw11=0, read_len=8)
    expect(cpl.sc == SC_INVALID_FIELD, "a 64-bit Host Identifier: Invalid Field: %r" % cpl)

    cpl, rep = a.report()
    expect(cpl.ok and rep["rtype"] == 0 and rep["regs"] == [], "empty report: %r" % rep)
    cpl, _ = a.report(eds=False)
    expect(cpl.sc == SC_HOSTID_FORMAT, "report without EDS: %r" % cpl)
    expect(access(a, b, "no reservation") == (True, True, True), "all allowed without one")

    # Register.
    expect(a.register(0, 0, 0xA).ok, "A registers")
    expect(b.register(0, 0, 0xB).ok, "B registers")
    expect(a.register(0, 0, 0xA).ok, "A registers again with its key")
    expect(is_conflict(a.register(0, 0, 0xAA)), "A registers again with another key")
    expect(is_conflict(a.register(2, 0x99, 0xA1)), "replace with a wrong key")
    expect(a.register(2, 0xA, 0xA1).ok, "A replaces its key")
    expect(a.register(2, 0x99, 0xA, iekey=1).ok, "replace ignoring the existing key")
    expect(a.register(0, 0, 0xA, cptpl=3).sc == SC_INVALID_FIELD,
           "CPTPL set without ptpl_file")
    cpl, rep = b.report()
    expect(cpl.ok and rep["gen"] == 4 and len(rep["regs"]) == 2, "two registrants: %r" % rep)
    keys = {r["hostid"]: r["key"] for r in rep["regs"]}
    expect(keys == {HOSTID_A: 0xA, HOSTID_B: 0xB}, "keys by host id: %r" % keys)

    # Acquire.
    expect(is_conflict(a.acquire(0, WE, 0xB)), "acquire with another's key")
    expect(a.acquire(0, WE, 0xA, iekey=1).sc == SC_INVALID_FIELD, "IEKEY on acquire")
    expect(a.acquire(0, 7, 0xA).sc == SC_INVALID_FIELD, "reservation type 7")
    expect(a.acquire(0, WE, 0xA).ok, "A acquires Write Exclusive")
    expect(a.acquire(0, WE, 0xA).ok, "A acquires it again")
    expect(is_conflict(b.acquire(0, WE, 0xB)), "B acquires while A holds")
    cpl, rep = b.report()
    holders = [r["hostid"] for r in rep["regs"] if r["holds"]]
    expect(rep["rtype"] == WE and holders == [HOSTID_A], "A holds WE: %r" % rep)
    expect(access(a, b, "WE") == (True, False, True), "WE: only the holder writes")

    # Each type: (holder A writes, registrant B writes, registrant B reads).
    table = {EA: (True, False, False), WE_RO: (True, True, True), EA_RO: (True, True, True),
             WE_AR: (True, True, True), EA_AR: (True, True, True)}
    for rtype, want in table.items():
        expect(a.release(0, rtype, 0xA).sc == SC_INVALID_FIELD or rtype == WE,
               "release with the wrong type")
        cur = a.report()[1]["rtype"]
        expect(a.release(0, cur, 0xA).ok, "A releases type %d" % cur)
        expect(a.acquire(0, rtype, 0xA).ok, "A acquires type %d" % rtype)
        got = access(a, b, "type %d" % rtype)
        expect(got == want, "type %d: access %r, expected %r" % (rtype, got, want))
    # A host that is not registered, under the registrants-only types.
    expect(b.register(1, 0xB, 0).ok, "B unregisters")
    for rtype, want in ((EA_AR, (True, False, False)), (WE_RO, (True, False, True)),
                        (EA_RO, (True, False, False))):
        cur = a.report()[1]["rtype"]
        expect(a.release(0, cur, 0xA).ok, "A releases type %d" % cur)
        expect(a.acquire(0, rtype, 0xA).ok, "A acquires type %d" % rtype)
        got = access(a, b, "type %d, B unregistered" % rtype)
        expect(got == want, "type %d, B unregistered: %r, expected %r" % (rtype, got, want))
    expect(b.register(0, 0, 0xB).ok, "B registers again")

    # Preempt: B takes over; A's registration goes with the reservation.
    expect(b.acquire(1, WE, 0xB, prkey=0xA).ok, "B preempts A")
    cpl, rep = b.report()
    holders = [r["hostid"] for r in rep["regs"] if r["holds"]]
    expect(rep["rtype"] == WE and holders == [HOSTID_B] and len(rep["regs"]) == 1,
           "B holds WE alone: %r" % rep)
    expect(access(a, b, "after the preempt") == (False, True, True), "A is fenced")
    expect(is_conflict(a.release(0, WE, 0xA)), "A releases what it lost")
    # Preempt and abort, and Clear.
    expect(a.register(0, 0, 0xA).ok, "A registers again")
    expect(a.acquire(2, EA, 0xA, prkey=0xB).ok, "A preempts and aborts B")
    expect(access(a, b, "after preempt and abort") == (True, False, False), "B fenced")
    expect(is_conflict(a.release(1, 0, 0xB)), "clear with a wrong key")
    expect(a.release(1, 0, 0xA).ok, "A clears")
    cpl, rep = a.report()
    expect(rep["rtype"] == 0 and rep["regs"] == [], "cleared: %r" % rep)
    expect(access(a, b, "cleared") == (True, True, True), "all allowed again")

    cpl = a.admin.cmd(OPC_GET_FEAT, nsid=args.nsid, cdw10=FEAT_RESV_PERSIST)[0]
    expect(cpl.ok and cpl.cdw0 == 0, "Get Features reservation persistence: %r" % cpl)
    cpl = a.admin.cmd(OPC_SET_FEAT, nsid=args.nsid, cdw10=FEAT_RESV_PERSIST, cdw11=1)[0]
    expect(cpl.sc == SC_INVALID_FIELD, "PTPL on without ptpl_file: %r" % cpl)
    a.close()
    b.close()


def sc_ptpl_set(args):
    a = Host(args, HOSTNQN_A, HOSTID_A)
    b = Host(args, HOSTNQN_B, HOSTID_B)
    cpl, idn = a.admin.cmd(OPC_IDENTIFY, nsid=args.nsid, cdw10=0, read_len=4096)
    expect(cpl.ok and idn[31] == 0xFF, "RESCAP 0xff with ptpl_file: 0x%x" % idn[31])
    expect(a.register(0, 0, 0xA, cptpl=3).ok, "A registers with persist through power loss")
    expect(b.register(0, 0, 0xB).ok, "B registers")
    expect(a.acquire(0, WE_RO, 0xA).ok, "A acquires WE registrants only")
    expect(b.register(1, 0xB, 0).ok, "B unregisters")
    cpl = a.admin.cmd(OPC_GET_FEAT, nsid=args.nsid, cdw10=FEAT_RESV_PERSIST)[0]
    expect(cpl.ok and cpl.cdw0 == 1, "PTPL is on: %r" % cpl)
    cpl, rep = a.report()
    expect(rep["ptpls"] == 1, "report says PTPL: %r" % rep)
    a.close()
    b.close()


def sc_ptpl_check(args):
    a = Host(args, HOSTNQN_A, HOSTID_A)
    b = Host(args, HOSTNQN_B, HOSTID_B)
    cpl, rep = b.report()
    expect(cpl.ok, "report after the restart: %r" % cpl)
    holders = [r["hostid"] for r in rep["regs"] if r["holds"]]
    expect(rep["rtype"] == WE_RO and holders == [HOSTID_A] and rep["ptpls"] == 1 and
           [r["key"] for r in rep["regs"]] == [0xA] and rep["gen"] == 3,
           "the restart kept registrant, holder, type, PTPL and generation: %r" % rep)
    expect(access(a, b, "restarted") == (True, False, True), "B, unregistered, may not write")
    # Persistence off: the file says so, and nothing survives the next restart.
    cpl = a.admin.cmd(OPC_SET_FEAT, nsid=args.nsid, cdw10=FEAT_RESV_PERSIST, cdw11=0)[0]
    expect(cpl.ok, "PTPL off: %r" % cpl)
    expect(a.release(1, 0, 0xA).ok, "A clears")
    a.close()
    b.close()


def sc_ptpl_empty(args):
    a = Host(args, HOSTNQN_A, HOSTID_A)
    cpl, rep = a.report()
    expect(cpl.ok and rep["regs"] == [] and rep["rtype"] == 0 and rep["ptpls"] == 0,
           "nothing persisted once PTPL was off: %r" % rep)
    a.close()


def sc_fence(args):
    """B preempts A while A writes: A's writes either completed before the preempt or fail."""
    a = Host(args, HOSTNQN_A, HOSTID_A)
    b = Host(args, HOSTNQN_B, HOSTID_B)
    expect(a.register(0, 0, 0xA).ok and b.register(0, 0, 0xB).ok, "both register")
    expect(a.acquire(0, WE, 0xA).ok, "A acquires WE")
    nblk = 64
    a_data = pattern(a.bs * 8, 1)
    state = {"ok": 0, "conflict": 0, "other": None, "stop": False}

    def writer():
        # Keep 8 blocks of writes going round the first nblk blocks until fenced.
        i = 0
        try:
            while not state["stop"]:
                cpl = a.write((i * 8) % nblk, a_data)
                if cpl.ok:
                    state["ok"] += 1
                elif is_conflict(cpl):
                    state["conflict"] += 1
                    return
                else:
                    state["other"] = repr(cpl)
                    return
                i += 1
        except (Fail, Closed, OSError) as e:
            state["other"] = str(e)

    t = threading.Thread(target=writer)
    t.start()
    time.sleep(0.3)
    expect(b.acquire(2, WE, 0xB, prkey=0xA).ok, "B preempts and aborts A")
    # The preempt completed: every write of A is over or will fail. B writes its data.
    b_data = pattern(a.bs * nblk, 2)
    expect(b.write(0, b_data).ok, "B writes after the preempt")
    t.join(timeout=20)
    state["stop"] = True
    expect(not t.is_alive(), "A's writer ended")
    expect(state["other"] is None, "A's writes: %r" % state["other"])
    expect(state["ok"] > 0 and state["conflict"] == 1, "A wrote, then was fenced: %r" % state)
    # Nothing of A's landed after B's write.
    cpl, got = b.read(0, nblk)
    expect(cpl.ok and bytes(got) == b_data, "B's data is intact")
    expect(is_conflict(a.write(0, a_data)), "A stays fenced")
    expect(b.release(1, 0, 0xB).ok, "B clears")
    a.close()
    b.close()


def sc_b_preempt(args):
    """Host B registers and preempts the holder of key --prkey (Write Exclusive)."""
    b = Host(args, HOSTNQN_B, HOSTID_B)
    expect(b.register(0, 0, 0xB).ok, "B registers")
    cpl = b.acquire(1, WE, 0xB, prkey=args.prkey)
    expect(cpl.ok, "B preempts key 0x%x: %r" % (args.prkey, cpl))
    b.close()


def sc_b_clear(args):
    """Host B (registered with key 0xB) clears every registration and the reservation."""
    b = Host(args, HOSTNQN_B, HOSTID_B)
    expect(b.register(0, 0, 0xB).ok, "B is registered")
    expect(b.release(1, 0, 0xB).ok, "B clears")
    b.close()


def resv_log(host):
    """(log page count, type, entries left, nsid) of the next reservation notification."""
    cpl, d = host.admin.get_log(LOG_RESV, 64, nsid=0xFFFFFFFF)
    expect(cpl.ok, "reservation notification log: %r" % cpl)
    count, ntype, navail, nsid = struct.unpack_from("<QBBxxI", d, 0)
    return count, ntype, navail, nsid


def aer_send(host):
    cid = host.admin.next_cid()
    host.admin.send_cmd(sqe(OPC_AER, cid, sgl=sgl_transport(0)))
    return cid


def aer_wait(host, cid, what):
    ptype, _, psh, _ = host.admin.recv_pdu()
    cpl = Cpl(psh[:16])
    expect(ptype == RSP and cpl.cid == cid and cpl.cdw0 == 0x800006,
           "%s: event (I/O command set, reservation log page 80h): %r" % (what, cpl))


def sc_notify(args):
    """The reservation notification log page and its event, and Feature 82h."""
    a = Host(args, HOSTNQN_A, HOSTID_A)
    b = Host(args, HOSTNQN_B, HOSTID_B)
    n = args.nsid
    expect(resv_log(b)[1] == NOTIF_EMPTY, "no notification yet")
    expect(a.register(0, 0, 0xA).ok and b.register(0, 0, 0xB).ok, "both register")
    expect(a.acquire(0, WE_RO, 0xA).ok, "A acquires WE registrants only")
    cid = aer_send(b)
    expect(a.release(0, WE_RO, 0xA).ok, "A releases")
    aer_wait(b, cid, "A released")
    got = resv_log(b)
    expect(got == (1, NOTIF_RELEASED, 0, n), "B: Reservation Released, count 1: %r" % (got,))
    expect(resv_log(b)[1] == NOTIF_EMPTY, "read once, then empty")
    expect(resv_log(a)[1] == NOTIF_EMPTY, "A made the change: nothing for A")
    # A preempt takes B's registration away.
    expect(b.acquire(0, WE, 0xB).ok, "B acquires WE")
    cid = aer_send(b)
    expect(a.acquire(1, EA, 0xA, prkey=0xB).ok, "A preempts B")
    aer_wait(b, cid, "B preempted")
    got = resv_log(b)
    expect(got == (2, NOTIF_REG_PREEMPTED, 0, n), "B: Registration Preempted, count 2: %r" %
           (got,))
    # Feature 82h masks a type: a clear then tells B nothing.
    cpl = b.admin.cmd(OPC_SET_FEAT, nsid=n, cdw10=FEAT_RESV_MASK, cdw11=1 << NOTIF_RESV_PREEMPTED)[0]
    expect(cpl.ok, "Set Features 82h: %r" % cpl)
    cpl = b.admin.cmd(OPC_GET_FEAT, nsid=n, cdw10=FEAT_RESV_MASK)[0]
    expect(cpl.ok and cpl.cdw0 == 1 << NOTIF_RESV_PREEMPTED, "Get Features 82h: %r" % cpl)
    expect(b.register(0, 0, 0xB).ok, "B registers again")
    expect(a.release(1, 0, 0xA).ok, "A clears")
    expect(resv_log(b)[1] == NOTIF_EMPTY, "masked: no Reservation Preempted for B")
    # Unmasked, the clear is told.
    b.admin.cmd(OPC_SET_FEAT, nsid=n, cdw10=FEAT_RESV_MASK, cdw11=0)
    expect(a.register(0, 0, 0xA).ok and b.register(0, 0, 0xB).ok, "both register again")
    expect(a.release(1, 0, 0xA).ok, "A clears again")
    got = resv_log(b)
    expect(got[1] == NOTIF_RESV_PREEMPTED and got[0] == 3, "B: Reservation Preempted, count 3 "
           "(the masked one was not counted): %r" % (got,))
    a.close()
    b.close()


def rpc(args, *argv):
    rpc_run(args.rpc, *argv)


def sc_fence_held(args):
    """A preempt waits for the preempted host's write the namespace holds."""
    a = Host(args, HOSTNQN_A, HOSTID_A)
    b = Host(args, HOSTNQN_B, HOSTID_B)
    expect(a.register(0, 0, 0xA).ok and b.register(0, 0, 0xB).ok, "both register")
    expect(a.acquire(0, WE, 0xA).ok, "A acquires WE")
    rpc(args, "bdev_error_inject_error", "--name", args.error_bdev, "--io_type", "write",
        "--error_type", "pending", "--num", "1")
    cid_a = a.io.next_cid()
    a.io.send_cmd(sqe(OPC_WRITE, cid_a, args.nsid, cdw10=0, cdw12=0, sgl=sgl_incapsule(a.bs)),
                  pattern(a.bs, 3), True)
    time.sleep(0.3)
    cid_b = b.io.next_cid()
    b.io.send_cmd(sqe(OPC_ACQUIRE, cid_b, args.nsid, cdw10=2 | (WE << 8),
                      sgl=sgl_incapsule(16)), struct.pack("<QQ", 0xB, 0xA), True)
    # While A's write is held, the preempt does not complete...
    b.io.sock.settimeout(1.5)
    try:
        b.io.recv_pdu()
        early = True
    except socket.timeout:
        early = False
    b.io.sock.settimeout(10)
    expect(not early, "the preempt completed while A's write was still in flight")
    # ...but A is fenced already: a new write of A fails at once.
    expect(is_conflict(a.write(8, pattern(a.bs, 4))), "A's next write, during the preempt")
    # The held write ends (the error bdev goes, aborting what it holds): then the preempt.
    rpc(args, "bdev_error_delete", "--name", args.error_bdev)
    ptype, _, psh, _ = a.io.recv_pdu()
    expect(ptype == RSP and Cpl(psh[:16]).cid == cid_a, "A's held write completes")
    ptype, _, psh, _ = b.io.recv_pdu()
    cpl = Cpl(psh[:16])
    expect(ptype == RSP and cpl.cid == cid_b and cpl.ok, "then the preempt: %r" % cpl)
    a.close()
    b.close()


SCENARIOS = {"basic": sc_basic, "ptpl-set": sc_ptpl_set, "ptpl-check": sc_ptpl_check,
             "ptpl-empty": sc_ptpl_empty, "fence": sc_fence, "fence-held": sc_fence_held,
             "b-preempt": sc_b_preempt, "b-clear": sc_b_clear, "notify": sc_notify}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenario", choices=sorted(SCENARIOS))
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--nqn", required=True)
    p.add_argument("--nsid", type=int, default=1)
    p.add_argument("--block-size", type=int, default=512)
    p.add_argument("--rpc", default="gga_rpc", help="command line of gga_rpc with its socket")
    p.add_argument("--error-bdev", default="EE_R3")
    p.add_argument("--prkey", type=lambda v: int(v, 0), default=0xA)
    args = p.parse_args()
    return run_scenario(args.scenario, SCENARIOS[args.scenario], args)


if __name__ == "__main__":
    sys.exit(main())
