#!/usr/bin/env python3
"""Asymmetric Namespace Access in gga_tgt, from an NVMe/TCP host of our own
(nvme_tcp_client.Conn): Identify fields, the ANA log page (with and without
Return Groups Only), path errors on an inaccessible listener, the ANA change
asynchronous event when a listener's state changes, and controller IDs in
the subsystem's range.

  nvmf_ana_client.py --port-a PA --port-b PB --nqn NQN --rpc "gga_rpc -s SOCK" ana

The subsystem has ana_reporting, controller IDs 100-199, namespace 1 in ANA
group 1 and namespace 2 in group 2; listener A is optimized, listener B
inaccessible. The scenario leaves B optimized, group 2 of B in change.
"""
import argparse
import struct
import sys

from nvme_tcp_client import Conn, Cpl, expect, rpc_run, run_scenario, sqe, sgl_transport, \
    OPC_IDENTIFY, OPC_SET_FEAT, OPC_AER, OPC_READ, RSP

HOSTNQN = "nqn.2014-08.io.gga:ana-host"
LOG_ANA = 0x0C
SCT_PATH, SC_INACCESSIBLE, SC_TRANSITION = 3, 0x02, 0x03
FEAT_AEC = 0x0B


def rpc(args, *argv):
    rpc_run(args.rpc, *argv)


def attach(args, port):
    admin = Conn(args.host, port)
    cpl = admin.connect(args.nqn, HOSTNQN)
    expect(cpl.ok, "Connect through port %d: %r" % (port, cpl))
    cntlid = cpl.cdw0 & 0xFFFF
    admin.enable()
    io = Conn(args.host, port)
    expect(io.connect(args.nqn, HOSTNQN, qid=1, sqsize=127, cntlid=cntlid).ok, "I/O Connect")
    return admin, io, cntlid


def ana_log(admin, rgo=False):
    """{group: (state, [nsids])} and the change count."""
    cpl, d = admin.cmd(0x02, nsid=0xFFFFFFFF, cdw10=LOG_ANA | ((1 << 8) if rgo else 0) |
                       ((4096 // 4 - 1) << 16), read_len=4096)
    expect(cpl.ok, "ANA log page: %r" % cpl)
    chgcnt, ngrps = struct.unpack_from("<QH", d, 0)
    off, groups = 16, {}
    for _ in range(ngrps):
        grp, nns, _, state = struct.unpack_from("<IIQB", d, off)
        nsids = list(struct.unpack_from("<%dI" % nns, d, off + 32))
        groups[grp] = (state & 0xF, nsids)
        off += 32 + 4 * nns
    return groups, chgcnt


def read1(io, nsid):
    return io.cmd(OPC_READ, nsid=nsid, cdw10=0, cdw12=0, read_len=512)[0]


def sc_ana(args):
    a_admin, a_io, a_cntlid = attach(args, args.port_a)
    b_admin, b_io, b_cntlid = attach(args, args.port_b)
    expect(100 <= a_cntlid <= 199 and 100 <= b_cntlid <= 199 and a_cntlid != b_cntlid,
           "controller IDs in 100-199: %d, %d" % (a_cntlid, b_cntlid))
    cpl, idc = a_admin.cmd(OPC_IDENTIFY, cdw10=1, read_len=4096)
    expect(cpl.ok and idc[76] & 0x8, "CMIC: ANA reporting")
    expect(struct.unpack_from("<I", idc, 92)[0] & (1 << 11), "OAES: ANA change notices")
    expect(idc[343] & 0x7 == 0x7, "ANACAP: optimized, non-optimized, inaccessible")
    expect(struct.unpack_from("<II", idc, 344) == (4, 4), "ANAGRPMAX and NANAGRPID 4")
    expect(struct.unpack_from("<I", idc, 540)[0] == 4, "MNAN 4 (Linux refuses 0 with ANA)")
    for nsid in (1, 2):
        cpl, idn = a_admin.cmd(OPC_IDENTIFY, nsid=nsid, cdw10=0, read_len=4096)
        expect(cpl.ok and struct.unpack_from("<I", idn, 92)[0] == nsid,
               "namespace %d in ANA group %d" % (nsid, nsid))

    groups, chg0 = ana_log(a_admin)
    expect(groups == {1: (1, [1]), 2: (1, [2])}, "A: both groups optimized: %r" % groups)
    groups, _ = ana_log(b_admin)
    expect(groups == {1: (3, [1]), 2: (3, [2])}, "B: both groups inaccessible: %r" % groups)
    groups, _ = ana_log(b_admin, rgo=True)
    expect(groups == {1: (3, []), 2: (3, [])}, "B, groups only: %r" % groups)
    expect(read1(a_io, 1).ok, "a read through A")
    cpl = read1(b_io, 1)
    expect(cpl.sct == SCT_PATH and cpl.sc == SC_INACCESSIBLE and not cpl.dnr,
           "a read through B: ANA Inaccessible, retryable: %r" % cpl)

    # B becomes optimized: B's controller is told, and serves.
    cpl = b_admin.cmd(OPC_SET_FEAT, cdw10=FEAT_AEC, cdw11=(1 << 11) | (1 << 8))[0]
    expect(cpl.ok, "enable ANA change notices: %r" % cpl)
    cid = b_admin.next_cid()
    b_admin.send_cmd(sqe(OPC_AER, cid, sgl=sgl_transport(0)))
    rpc(args, "nvmf_subsystem_listener_set_ana_state", "--nqn", args.nqn, "--ana_state",
        "optimized", "--listen_address", '{"trtype": "TCP", "adrfam": "IPv4", '
        '"traddr": "127.0.0.1", "trsvcid": "%d"}' % args.port_b)
    ptype, _, psh, _ = b_admin.recv_pdu()
    cpl = Cpl(psh[:16])
    expect(ptype == RSP and cpl.cid == cid and cpl.cdw0 == 0x0C0302,
           "ANA change event (notice 03h, log page 0Ch): %r" % cpl)
    groups, chg1 = ana_log(b_admin)
    expect(groups == {1: (1, [1]), 2: (1, [2])} and chg1 > chg0,
           "B: optimized, change count up: %r %d" % (groups, chg1))
    expect(read1(b_io, 1).ok and read1(b_io, 2).ok, "reads through B")
    # One group of B in transition.
    rpc(args, "nvmf_subsystem_listener_set_ana_state", "--nqn", args.nqn, "--ana_state",
        "change", "--anagrpid", "2", "--listen_address", '{"trtype": "TCP", "adrfam": "IPv4", '
        '"traddr": "127.0.0.1", "trsvcid": "%d"}' % args.port_b)
    cpl = read1(b_io, 2)
    expect(cpl.sct == SCT_PATH and cpl.sc == SC_TRANSITION, "group 2 through B: ANA Transition")
    expect(read1(b_io, 1).ok, "group 1 through B still served")
    expect(read1(a_io, 2).ok, "group 2 through A still served")
    for c in (a_io, a_admin, b_io, b_admin):
        c.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenario", choices=["ana"])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port-a", type=int, required=True)
    p.add_argument("--port-b", type=int, required=True)
    p.add_argument("--nqn", required=True)
    p.add_argument("--rpc", required=True)
    args = p.parse_args()
    return run_scenario(args.scenario, sc_ana, args)


if __name__ == "__main__":
    sys.exit(main())
