#!/usr/bin/env python3
"""Hostile NVMe/TCP host sequences for nvmf_tcp_hostile.sh (127.0.0.1 only).

  nvmf_tcp_hostile.py --port P SEQUENCE

Sequences:
  huge-plen   ICReq, then a CapsuleCmd common header + header whose PLEN is
              0x7fffffff (200 bytes in all, sent in one write); read what the
              target answers until its C2HTermReq (or 3 s), then close.

  hold        open --count connections (no ICReq) and keep them --seconds,
              then close them; exit 0 if every connect() succeeded (the
              kernel's backlog takes them even when the target cannot accept).

huge-plen exits 0 when the target answered with an ICResp and then a C2HTermReq (the
ICReq was valid; the capsule header was not), 1 otherwise.
"""
import argparse
import socket
import struct
import sys
import time

ICREQ, ICRESP, C2H_TERM, CMD = 0, 1, 3, 4


def icreq():
    # Common header: type, flags, hlen 128, pdo 0, plen 128; PFV 0, HPDA 0, no digests, MAXR2T 0.
    return struct.pack("<BBBBI", ICREQ, 0, 128, 0, 128) + \
        struct.pack("<HBBI112s", 0, 0, 0, 0, bytes(112))


def huge_plen_capsule():
    # A CapsuleCmd header (hlen 72) that claims 2 GiB of PDU.
    sqe = bytearray(64)
    struct.pack_into("<BBH", sqe, 0, 0x02, 0x40, 1)  # Read, SGL, cid 1
    return struct.pack("<BBBBI", CMD, 0, 72, 72, 0x7FFFFFFF) + bytes(sqe)


def read_pdus(s, deadline):
    """Read PDUs until a C2HTermReq, EOF or the deadline; return the types seen."""
    buf = b""
    types = []
    while time.monotonic() < deadline:
        s.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        except OSError:
            break
        if not chunk:
            break
        buf += chunk
        while len(buf) >= 8:
            ptype, _, _, _, plen = struct.unpack_from("<BBBBI", buf, 0)
            if len(buf) < plen:
                break
            types.append(ptype)
            buf = buf[plen:]
            if ptype == C2H_TERM:
                return types
    return types


def huge_plen(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    msg = icreq() + huge_plen_capsule()
    assert len(msg) == 200
    s.sendall(msg)
    types = read_pdus(s, time.monotonic() + 3)
    s.close()
    print("huge-plen: target sent PDU types %s" % types)
    return types == [ICRESP, C2H_TERM]


def hold(port, count, seconds):
    socks = []
    try:
        for _ in range(count):
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=3))
        print("hold: %d connections open" % len(socks), flush=True)
        time.sleep(seconds)
    finally:
        for s in socks:
            s.close()
    return len(socks) == count


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--count", type=int, default=60)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("sequence", choices=["huge-plen", "hold"])
    a = ap.parse_args()
    if a.sequence == "hold":
        ok = hold(a.port, min(a.count, 1000), min(a.seconds, 30))
    else:
        ok = huge_plen(a.port)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
