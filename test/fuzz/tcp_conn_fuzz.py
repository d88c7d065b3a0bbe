#!/usr/bin/env python3
"""Connection-level fuzzer of gga_tgt's NVMe/TCP transport.

  tcp_conn_fuzz.py --build DIR [--seconds N] [--seed S] [--scenario NAME[:SEED]]...

Starts its own gga_tgt (DIR/bin/gga_tgt, one reactor, a 16384 x 512 B malloc
namespace in one subsystem, a TCP listener on 127.0.0.1), then runs batches
of connections that carry valid and mutated PDUs over a connection's whole
life: ICReq/ICResp, Fabrics Connect (admin and I/O), admin and I/O commands,
in-capsule data, R2T/H2CData, TermReqs, half-close, reset, partial PDUs held
back, slow senders, and 50 connections at once; and (kept cases only) floods
of connections that never finish their TCP, TLS or AUTH handshake, under
which a valid host must get in. The same scenarios also run
over a secure channel (TLS 1.3 with a PSK, through `openssl s_client`), with
every send cut into TLS records at random places, so that records end inside
PDU headers, data and digests; and random bytes go to the TLS listener
itself (handshake records that are not).

After every batch it checks that the daemon is alive and answers an RPC
within 1 s, that its open fds come back to the baseline (+2) and its VmRSS
stays within the baseline + 48 MiB (+384 MiB under ASan: its quarantine), that its reactor goes back to idle
(<= 10 ticks in 1 s), and every few batches that a real host (bdevperf verify
over NVMe/TCP, 2 s) completes with no failures. At the end SIGTERM must stop
the daemon with exit 0.

Deterministic with a seed (printed): a batch is a list of scenario:seed
pairs, printed when a check fails, and `--scenario NAME:SEED` replays one.
Prints "ok - ..." / "not ok - ..." lines and the connections and PDUs sent;
exits 0 when every check passed.
"""
import argparse
import base64
import ctypes
import json
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

from fuzzlib import (Checker, Closed, Daemon, Health, batch_plan, dispose, finish, free_port,
                     recv_chunk)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "lib",
                                "tls"))
import tls_kat  # noqa: E402  (the Python derivation of the TLS PSK)

ISAL = ctypes.CDLL("libisal.so.2")
ISAL.crc32_iscsi.restype = ctypes.c_uint32
ISAL.crc32_iscsi.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint32]


def crc32c(data):
    data = bytes(data)
    return ISAL.crc32_iscsi(data, len(data), 0xFFFFFFFF) ^ 0xFFFFFFFF


ICREQ, ICRESP, H2C_TERM, C2H_TERM, CMD, RSP, H2C_DATA, C2H_DATA, R2T = 0, 1, 2, 3, 4, 5, 6, 7, 9
F_HDGST, F_DDGST, F_LAST = 1, 2, 4
OPC_FABRICS, FCT_PROP_SET, FCT_CONNECT, FCT_PROP_GET = 0x7F, 0x00, 0x01, 0x04
NQN = "nqn.2016-06.io.gga:fuzz"
HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"
NS_BLOCKS, BLOCK = 16384, 512


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.conns = 0
        self.pdus = 0
        self.bytes = 0
        self.findings = []

    def add(self, conns=0, pdus=0, nbytes=0):
        with self.lock:
            self.conns += conns
            self.pdus += pdus
            self.bytes += nbytes


STATS = Stats()

# ---------------------------------------------------------------------------
# PDUs.


def pdu(ptype, psh, data=b"", flags=0, hd=False, dd=False, pdo=None, bad_hd=False,
        bad_dd=False):
    """A host PDU; digests and PDO as a correct host would set them unless told."""
    if hd:
        flags |= F_HDGST
    dd = dd and len(data) > 0
    if dd:
        flags |= F_DDGST
    hlen = 8 + len(psh)
    hdr_total = hlen + (4 if hd else 0)
    off = (pdo if pdo is not None else hdr_total) if data else 0
    total = (max(off, hdr_total) if data else hdr_total) + len(data) + (4 if dd else 0)
    hdr = struct.pack("<BBBBI", ptype, flags, hlen, off, total) + psh
    out = hdr
    if hd:
        out += struct.pack("<I", crc32c(hdr) ^ (0xDEAD if bad_hd else 0))
    if data:
        out += bytes(max(0, off - hdr_total)) + data
        if dd:
            out += struct.pack("<I", crc32c(data) ^ (0xBEEF if bad_dd else 0))
    return out


def icreq_psh(pfv=0, hpda=0, dgst=0, maxr2t=0):
    return struct.pack("<HBBI112s", pfv, hpda, dgst, maxr2t, bytes(112))


def sqe(opc, cid, nsid=0, cdw=(0,) * 6, sgl=None, flags=0x40):
    dptr = sgl if sgl is not None else bytes(16)
    return struct.pack("<BBHIIIQ16sIIIIII", opc, flags, cid, nsid, 0, 0, 0, dptr, *cdw)


def sgl_icd(length, offset=0):
    return struct.pack("<QI3sB", offset, length, b"\0\0\0", 0x01)


def sgl_transport(length):
    return struct.pack("<QI3sB", 0, length, b"\0\0\0", 0x5A)


def connect_sqe(cid, qid, sqsize, kato=0, recfmt=0, sgl_len=1024):
    c = bytearray(64)
    struct.pack_into("<BBHB", c, 0, OPC_FABRICS, 0x40, cid, FCT_CONNECT)
    c[24:40] = sgl_icd(sgl_len)
    struct.pack_into("<HHHBBI", c, 40, recfmt, qid, sqsize, 0, 0, kato)
    return bytes(c)


# The scenario of this thread runs over TLS (sc_tls): new connections open a
# secure channel, and Connects name the TLS subsystem and host by default.
TL = threading.local()
TLS = {"port": None, "identity": None, "psk": None}
TLS_NQN = "nqn.2016-06.io.gga:connfuzz-tls"
TLS_HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:1c2d3e4f-5061-4728-9a3b-4c5d6e7f8091"


def connect_data(cntlid=0xFFFF, subnqn=None, hostnqn=None, hostid=bytes(range(16))):
    if subnqn is None:
        subnqn = TLS_NQN if getattr(TL, "tls", False) else NQN
    if hostnqn is None:
        hostnqn = TLS_HOSTNQN if getattr(TL, "tls", False) else HOSTNQN
    d = bytearray(1024)
    d[0:16] = hostid
    struct.pack_into("<H", d, 16, cntlid)
    s = subnqn if isinstance(subnqn, bytes) else subnqn.encode()
    d[256:256 + min(256, len(s))] = s[:256]
    h = hostnqn if isinstance(hostnqn, bytes) else hostnqn.encode()
    d[512:512 + min(256, len(h))] = h[:256]
    return bytes(d)


def mutate(rng, b):
    """One random mutation of a PDU's bytes, biased to the common header."""
    b = bytearray(b)
    k = rng.randrange(9)
    if k == 0 and b:
        i = rng.randrange(min(len(b), 80))
        b[i] ^= 1 << rng.randrange(8)
    elif k == 1 and len(b) >= 8:
        plen = rng.choice([0, 1, 7, 8, 24, 72, 73, len(b) - 1, len(b) + 1, len(b) + 4096,
                           0x7FFFFFFF, 0xFFFFFFFF, rng.randrange(1 << 32)])
        struct.pack_into("<I", b, 4, plen)
    elif k == 2 and len(b) >= 8:
        b[2] = rng.choice([0, 8, 24, 72, 128, 255, rng.randrange(256)])
    elif k == 3 and len(b) >= 8:
        b[3] = rng.choice([0, 4, 8, 72, 76, 80, 255, rng.randrange(256)])
    elif k == 4 and len(b) >= 8:
        b[1] = rng.randrange(256)
    elif k == 5 and len(b) >= 8:
        b[0] = rng.choice([1, 3, 5, 7, 8, 9, 10, 0x55, 0xFF, rng.randrange(256)])
    elif k == 6 and len(b) > 1:
        del b[rng.randrange(1, len(b)):]
    elif k == 7:
        b += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
    elif len(b) > 8:
        i = rng.randrange(8, len(b))
        b[i] = rng.randrange(256)
    return bytes(b)


# ---------------------------------------------------------------------------
# A host connection with bounded I/O.


def tls_stream(timeout):
    """A socket whose other end is `openssl s_client` connected to the TLS
    listener with the fuzzer's PSK: (socket, process). -no_ign_eof: s_client
    ends the connection when this socket closes, however it closes (a
    scenario that gives up leaves its Host to the garbage collector); with
    -quiet alone it kept the connection open for ever, and the fd check
    after the batch counted it (seed 1306518352, batch 3)."""
    ours, theirs = socket.socketpair()
    proc = subprocess.Popen(
        ["openssl", "s_client", "-connect", "127.0.0.1:%d" % TLS["port"], "-tls1_3",
         "-ciphersuites", "TLS_AES_128_GCM_SHA256", "-psk_identity", TLS["identity"],
         "-psk", TLS["psk"], "-quiet", "-no_ign_eof", "-nocommands", "-no_ticket"],
        stdin=theirs, stdout=theirs, stderr=subprocess.DEVNULL)
    theirs.close()
    ours.settimeout(timeout)
    return ours, proc


class Host:
    def __init__(self, port, rng, timeout=2.0):
        self.rng = rng
        self.proc = None
        if getattr(TL, "tls", False):
            # s_client makes a record of each read of its input: "records"
            # sends cut the bytes at random places with a pause between.
            self.s, self.proc = tls_stream(timeout + 1.0)
        else:
            self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
            self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout + (1.0 if self.proc else 0.0)
        self.hd = self.dd = False
        self.buf = b""
        self.cid = 0
        self.mode = "whole"
        self.maxh2cdata = 4096
        STATS.add(conns=1)

    def close(self, how="close"):
        try:
            if how == "reset":
                self.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            elif how == "half":
                self.s.shutdown(socket.SHUT_WR)
                self.drain(0.3)
        except OSError:
            pass
        try:
            self.s.close()
        except OSError:
            pass
        if self.proc is not None:
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def send(self, data, npdus=1):
        STATS.add(pdus=npdus, nbytes=len(data))
        try:
            if self.mode == "slow":
                # Byte by byte with small delays, bounded to 600 bytes of slowness.
                for i in range(min(len(data), 600)):
                    self.s.sendall(data[i:i + 1])
                    time.sleep(0.0005)
                if len(data) > 600:
                    self.s.sendall(data[600:])
            elif self.mode == "split":
                i = 0
                while i < len(data):
                    n = self.rng.randrange(1, 64)
                    self.s.sendall(data[i:i + n])
                    i += n
            elif self.proc is not None:
                i = 0
                while i < len(data):
                    n = self.rng.choice([1, 3, 7, 24, 100, 1000, 5000, 20000])
                    self.s.sendall(data[i:i + n])
                    i += n
                    if i < len(data):
                        time.sleep(0.0005)
            else:
                self.s.sendall(data)
        except (BrokenPipeError, ConnectionResetError, socket.timeout) as e:
            raise Closed(str(e))

    def recv_pdu(self, timeout=None):
        """The next PDU as (type, flags, psh, data); None on timeout; Closed on EOF."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            if len(self.buf) >= 8:
                ptype, flags, hlen, pdo, plen = struct.unpack_from("<BBBBI", self.buf)
                if hlen < 8 or plen < hlen or plen > (1 << 20):
                    raise Closed("bad PDU from the target: hlen %d plen %d" % (hlen, plen))
                if len(self.buf) >= plen:
                    raw, self.buf = self.buf[:plen], self.buf[plen:]
                    psh = raw[8:hlen]
                    data = b""
                    if ptype == C2H_TERM:
                        data = raw[hlen:]
                    elif pdo:
                        end = plen - (4 if flags & F_DDGST else 0)
                        data = raw[pdo:end]
                    return ptype, flags, psh, data
            chunk = recv_chunk(self.s, deadline, 262144)
            if chunk is None:
                return None
            self.buf += chunk

    def drain(self, secs):
        """Read PDUs for up to secs; return their types (stops at EOF)."""
        types = []
        deadline = time.monotonic() + secs
        try:
            while time.monotonic() < deadline:
                p = self.recv_pdu(max(0.01, deadline - time.monotonic()))
                if p is None:
                    break
                types.append(p[0])
        except Closed:
            pass
        return types

    # -- a correct host ----------------------------------------------------
    def icreq(self, hd=False, dd=False, hpda=0):
        self.send(pdu(ICREQ, icreq_psh(0, hpda, (1 if hd else 0) | (2 if dd else 0))))
        p = self.recv_pdu()
        if p is None or p[0] != ICRESP:
            raise Closed("no ICResp: %r" % (p and p[0]))
        self.hd, self.dd = hd, dd
        self.maxh2cdata = struct.unpack_from("<I", p[2], 4)[0]

    def next_cid(self):
        self.cid = (self.cid + 1) & 0xFFFF
        return self.cid

    def cmd_pdu(self, c, data=b"", **kw):
        return pdu(CMD, c, data, hd=self.hd, dd=self.dd, **kw)

    def wait_cpl(self, cid, wdata=b"", h2c_mut=None):
        """Serve R2Ts (optionally mutated), collect C2H data; (status, cdw0, data) or None."""
        rbuf = bytearray()
        for _ in range(4096):
            p = self.recv_pdu()
            if p is None:
                return None
            ptype, flags, psh, data = p
            if ptype == RSP:
                cdw0, _, _, _, rcid, st = struct.unpack_from("<IIHHHH", psh)
                return (st >> 1) & 0x7FFF, cdw0, bytes(rbuf)
            if ptype == C2H_DATA:
                rbuf += data
            elif ptype == R2T:
                cccid, ttag, r2to, r2tl = struct.unpack_from("<HHII", psh)
                self.serve_r2t(cccid, ttag, r2to, r2tl, wdata, h2c_mut)
            elif ptype == C2H_TERM:
                raise Closed("C2HTermReq FES 0x%x" % struct.unpack_from("<H", psh)[0])
        return None

    def serve_r2t(self, cid, ttag, r2to, r2tl, wdata, mut):
        rng = self.rng
        off, end = r2to, r2to + r2tl
        step = min(self.maxh2cdata, rng.choice([512, 4096, 65536, self.maxh2cdata]))
        while off < end:
            n = min(step, end - off)
            datao, datal, tt, last = off, n, ttag, off + n == end
            payload = (wdata[off:off + n] if wdata else b"") or bytes(n)
            bad_dd = False
            if mut is not None and rng.random() < 0.5:
                what = rng.choice(["offset", "length", "ttag", "cid", "ddgst", "last", "extra",
                                   "raw"])
                if what == "offset":
                    datao = rng.choice([off + 4, off - 4 if off >= 4 else end, end,
                                        rng.randrange(1 << 32)])
                elif what == "length":
                    datal = rng.choice([0, n + 4, n - 4 if n > 4 else n + 8, 1 << 31])
                elif what == "ttag":
                    tt = rng.choice([ttag ^ 1, 0xFFFF, rng.randrange(1 << 16)])
                elif what == "cid":
                    cid = cid ^ 0x55
                elif what == "ddgst":
                    bad_dd = True
                elif what == "last":
                    last = not last
                elif what == "extra":
                    payload = payload + bytes(rng.randrange(1, 64) * 4)
            psh = struct.pack("<HHII4s", cid, tt, datao, datal, bytes(4))
            b = pdu(H2C_DATA, psh, payload, flags=F_LAST if last else 0, hd=self.hd,
                    dd=self.dd, bad_dd=bad_dd)
            if mut is not None and rng.random() < 0.1:
                b = mutate(rng, b)
            self.send(b)
            off += n

    def connect(self, qid=0, cntlid=0xFFFF, sqsize=31, **kw):
        cid = self.next_cid()
        self.send(self.cmd_pdu(connect_sqe(cid, qid, sqsize), connect_data(cntlid, **kw)))
        r = self.wait_cpl(cid)
        if r is None:
            raise Closed("no Connect response")
        return r

    def prop_set(self, ofst, value):
        cid = self.next_cid()
        c = bytearray(64)
        struct.pack_into("<BBHB", c, 0, OPC_FABRICS, 0x40, cid, FCT_PROP_SET)
        struct.pack_into("<BxxxIQ", c, 40, 0, ofst, value)
        self.send(self.cmd_pdu(bytes(c)))
        return self.wait_cpl(cid)

    def prop_get(self, ofst):
        cid = self.next_cid()
        c = bytearray(64)
        struct.pack_into("<BBHB", c, 0, OPC_FABRICS, 0x40, cid, FCT_PROP_GET)
        struct.pack_into("<BxxxI", c, 40, 0, ofst)
        self.send(self.cmd_pdu(bytes(c)))
        return self.wait_cpl(cid)

    def enable(self):
        self.prop_set(0x14, 1 | (6 << 16) | (4 << 20))
        for _ in range(50):
            r = self.prop_get(0x1C)
            if r is not None and r[0] == 0 and r[1] & 1:
                return True
            time.sleep(0.02)
        return False


def admin_session(port, rng, hd=False, dd=False):
    """An admin queue connected and enabled: (host, cntlid)."""
    h = Host(port, rng)
    h.icreq(hd, dd)
    st, cdw0, _ = h.connect()
    if st != 0:
        h.close()
        raise Closed("admin Connect failed: 0x%x" % st)
    h.enable()
    return h, cdw0 & 0xFFFF


def io_session(port, rng, cntlid, hd=False, dd=False):
    h = Host(port, rng)
    h.icreq(hd, dd)
    st, _, _ = h.connect(qid=1, cntlid=cntlid, sqsize=rng.choice([15, 31, 127]))
    if st != 0:
        h.close()
        raise Closed("I/O Connect failed: 0x%x" % st)
    return h


# ---------------------------------------------------------------------------
# Scenarios: each takes (ctx, rng) and may raise Closed (the target hung up:
# normal for hostile input). A finding is reported with ctx.finding().


class Ctx:
    def __init__(self, port, slot):
        self.port = port
        self.slot = slot      # a private LBA region for data checks

    def finding(self, what):
        with STATS.lock:
            STATS.findings.append(what)


def rand_close(h, rng):
    h.close(rng.choice(["close", "close", "half", "reset"]))


def sc_issue10(ctx, rng):
    """Issue 10: ICReq + CapsuleCmd header with PLEN 0x7fffffff in one write."""
    h = Host(ctx.port, rng)
    c = bytearray(72)
    struct.pack_into("<BBBBI", c, 0, CMD, 0, 72, 72, 0x7FFFFFFF)
    struct.pack_into("<BBH", c, 8, 0x02, 0x40, 1)
    h.send(pdu(ICREQ, icreq_psh()) + bytes(c), npdus=2)
    types = h.drain(1.0)
    h.close()
    if types[:2] != [ICRESP, C2H_TERM]:
        ctx.finding("issue10: target sent %s, expected ICResp, C2HTermReq" % types)


def sc_icreq_glued(ctx, rng):
    """Issue 10 generalised: a valid ICReq and a fatal PDU in one write; ICResp then TermReq."""
    h = Host(ctx.port, rng)
    bad = rng.choice([
        struct.pack("<BBBBI", CMD, 0, 72, 72, rng.choice([0x7FFFFFFF, 0xFFFFFFFF, 71])),
        struct.pack("<BBBBI", CMD, 0, 71, 0, 72),             # wrong hlen
        struct.pack("<BBBBI", 0x55, 0, 72, 0, 72),            # unknown type
        struct.pack("<BBBBI", ICREQ, 0, 128, 0, 128),         # a second ICReq
        struct.pack("<BBBBI", CMD, F_HDGST, 72, 0, 76),       # digest not negotiated
        struct.pack("<BBBBI", H2C_DATA, 0, 24, 24, 28),       # data for no R2T
    ])
    # Enough bytes after the bad common header for any header it claims (<= 128).
    h.send(pdu(ICREQ, icreq_psh()) + bad + bytes(rng.choice([120, 200])), npdus=2)
    types = h.drain(1.0)
    rand_close(h, rng)
    if types[:2] != [ICRESP, C2H_TERM]:
        ctx.finding("icreq_glued: target sent %s, expected ICResp, C2HTermReq" % types[:8])


def sc_icreq(ctx, rng):
    """ICReq with bad PFV, HPDA, MAXR2T, digests, lengths; glued to what follows."""
    h = Host(ctx.port, rng)
    h.mode = rng.choice(["whole", "whole", "split", "slow"])
    pfv = rng.choice([0, 0, 1, 0xFFFF])
    hpda = rng.choice([0, 0, 1, 31, 32, 255])
    dgst = rng.choice([0, 1, 2, 3, 4, 0xFF])
    maxr2t = rng.choice([0, 1, 0xFFFFFFFF])
    b = pdu(ICREQ, icreq_psh(pfv, hpda, dgst, maxr2t))
    if rng.random() < 0.4:
        b = mutate(rng, b)
    if rng.random() < 0.3:
        # A second PDU in the same segment (issue 10's shape).
        b += mutate(rng, pdu(CMD, connect_sqe(1, 0, 31), connect_data()))
    h.send(b)
    h.drain(rng.choice([0.05, 0.3]))
    rand_close(h, rng)


def sc_connect(ctx, rng):
    """Fabrics Connect with bad qid, sqsize, cntlid, host and subsystem NQNs."""
    h = Host(ctx.port, rng)
    h.mode = rng.choice(["whole", "split"])
    hd, dd = rng.random() < 0.5, rng.random() < 0.5
    h.icreq(hd, dd)
    qid = rng.choice([0, 0, 1, 2, 0xFFFF])
    sqsize = rng.choice([0, 1, 31, 127, 128, 0xFFFF])
    cntlid = rng.choice([0xFFFF, 0xFFFF, 0, 1, 0xFFFE, rng.randrange(1 << 16)])
    subnqn = rng.choice([NQN, NQN, "nqn.2014-08.org.nvmexpress.discovery", "nqn.bogus",
                         b"\xff" * 256, b"", NQN + "x" * 300])
    hostnqn = rng.choice([HOSTNQN, HOSTNQN, b"", b"nqn." + b"A" * 300, b"\x01\x02"])
    cid = h.next_cid()
    c = connect_sqe(cid, qid, sqsize, kato=rng.choice([0, 0, 1, 0xFFFFFFFF]),
                    recfmt=rng.choice([0, 0, 1]), sgl_len=rng.choice([1024, 1024, 512, 2048]))
    data = connect_data(cntlid, subnqn, hostnqn)
    if rng.random() < 0.2:
        data = data[:rng.randrange(1, 1024)]
    b = h.cmd_pdu(c, data, bad_hd=rng.random() < 0.05, bad_dd=rng.random() < 0.1)
    if rng.random() < 0.3:
        b = mutate(rng, b)
    h.send(b)
    h.wait_cpl(cid)
    if rng.random() < 0.5:
        # Commands after a (maybe failed) Connect.
        for _ in range(rng.randrange(1, 4)):
            cid = h.next_cid()
            h.send(h.cmd_pdu(sqe(rng.choice([0x06, 0x02, 0x0A, 0x18, 0x01, 0x02]), cid, 1,
                                 (1, 0, 0, 0, 0, 0), sgl_transport(4096))))
            h.wait_cpl(cid)
    rand_close(h, rng)


ADMIN_OPCS = [0x02, 0x06, 0x08, 0x09, 0x0A, 0x0C, 0x18, 0x7F, 0x80, 0xC0, 0xFF, 0x00, 0x05]


def sc_admin(ctx, rng):
    """Random admin commands with random SGLs on a connected admin queue."""
    h, _ = admin_session(ctx.port, rng, rng.random() < 0.3, rng.random() < 0.3)
    for _ in range(rng.randrange(1, 12)):
        cid = h.next_cid()
        opc = rng.choice(ADMIN_OPCS)
        cdw = tuple(rng.choice([0, 1, 2, 0xFF, rng.randrange(1 << 32)]) for _ in range(6))
        kind = rng.randrange(4)
        data = b""
        if kind == 0:
            sgl = sgl_transport(rng.choice([0, 64, 4096, 8192, 1 << 20, 0xFFFFFFFF]))
        elif kind == 1:
            n = rng.choice([0, 16, 64, 4096, 8192])
            data = bytes(rng.randrange(256) for _ in range(min(n, 64))) + bytes(max(0, n - 64))
            sgl = sgl_icd(rng.choice([n, n, n + 16, 0]), rng.choice([0, 0, 8, 1 << 20]))
        elif kind == 2:
            sgl = bytes(rng.randrange(256) for _ in range(16))
        else:
            sgl = None
        b = h.cmd_pdu(sqe(opc, cid, rng.choice([0, 1, 2, 0xFFFFFFFF]), cdw, sgl,
                          flags=rng.choice([0x40, 0x40, 0x00, 0x80])), data)
        if rng.random() < 0.1:
            b = mutate(rng, b)
        h.send(b)
        if rng.random() < 0.8:
            h.wait_cpl(cid, h2c_mut=True)
    rand_close(h, rng)


def sc_io(ctx, rng, mutate_io=True):
    """An I/O queue: writes (in-capsule and R2T), reads, flush, write zeroes, DSM."""
    hd, dd = rng.random() < 0.4, rng.random() < 0.4
    a, cntlid = admin_session(ctx.port, rng, hd, dd)
    h = io_session(ctx.port, rng, cntlid, hd, dd)
    base = ctx.slot * 64
    # After a mutated PDU the byte stream may be out of step (a cut header
    # swallows the next PDU): only an untainted connection owes right answers.
    tainted = False
    for _ in range(rng.randrange(1, 10)):
        cid = h.next_cid()
        op = rng.choice(["wicd", "wr2t", "read", "flush", "wz", "dsm", "bad"])
        nlb = rng.choice([1, 8, 16, 63])
        lba = base + rng.randrange(64 - nlb + 1)
        mut = mutate_io and rng.random() < 0.3
        tainted |= mut or op == "bad"
        if mut and rng.random() < 0.5:
            lba = rng.choice([NS_BLOCKS - 1, NS_BLOCKS, 1 << 40, (1 << 64) - 1])
        cdw = (lba & 0xFFFFFFFF, lba >> 32, nlb - 1, 0, 0, 0)
        if op in ("wicd", "wr2t"):
            data = bytes([rng.randrange(256)]) * (nlb * BLOCK)
            icd = op == "wicd" and len(data) <= 8192
            sgl_len = len(data) + (rng.choice([-512, 512, 4]) if mut and rng.random() < 0.3
                                   else 0)
            sgl = sgl_icd(sgl_len) if icd else sgl_transport(sgl_len)
            b = h.cmd_pdu(sqe(0x01, cid, 1, cdw, sgl), data if icd else b"",
                          bad_dd=mut and rng.random() < 0.2)
            h.send(b)
            r = h.wait_cpl(cid, data, h2c_mut=True if mut else None)
            if not tainted and (r is None or r[0] != 0):
                ctx.finding("valid write lba %d nlb %d failed: %r" % (lba, nlb, r))
            if not tainted and r is not None and r[0] == 0:
                cid = h.next_cid()
                h.send(h.cmd_pdu(sqe(0x02, cid, 1, cdw, sgl_transport(len(data)))))
                r = h.wait_cpl(cid)
                if r is None or r[0] != 0 or r[2] != data:
                    ctx.finding("read-back of a valid write at lba %d differs" % lba)
        elif op == "read":
            h.send(h.cmd_pdu(sqe(0x02, cid, rng.choice([1, 1, 2, 0]), cdw,
                                 sgl_transport(nlb * BLOCK + (512 if mut else 0)))))
            h.wait_cpl(cid)
        elif op == "flush":
            h.send(h.cmd_pdu(sqe(0x00, cid, 1)))
            h.wait_cpl(cid)
        elif op == "wz":
            h.send(h.cmd_pdu(sqe(0x08, cid, 1, cdw)))
            h.wait_cpl(cid)
        elif op == "dsm":
            rng_data = struct.pack("<IIQ", 0, nlb, lba) * rng.choice([1, 2])
            h.send(h.cmd_pdu(sqe(0x09, cid, 1, (len(rng_data) // 16 - 1, 4, 0, 0, 0, 0),
                                 sgl_icd(len(rng_data))), rng_data))
            h.wait_cpl(cid)
        else:
            b = h.cmd_pdu(sqe(rng.randrange(256), cid, rng.randrange(4),
                              tuple(rng.randrange(1 << 32) for _ in range(6)),
                              bytes(rng.randrange(256) for _ in range(16))))
            h.send(mutate(rng, b) if rng.random() < 0.5 else b)
            h.wait_cpl(cid, h2c_mut=True)
    rand_close(h, rng)
    rand_close(a, rng)


def sc_io_valid(ctx, rng):
    """A correct host: every write must succeed and read back."""
    sc_io(ctx, rng, mutate_io=False)


def sc_term(ctx, rng):
    """H2CTermReq at any point (bad ones too), host-to-host PDU types, C2HTermReq from the host."""
    h = Host(ctx.port, rng)
    when = rng.randrange(3)
    if when >= 1:
        h.icreq()
    if when >= 2:
        h.connect()
    ptype = rng.choice([H2C_TERM, H2C_TERM, C2H_TERM, ICRESP, RSP, C2H_DATA, R2T, 8, 10, 0x7F])
    plen_data = rng.choice([0, 8, 24, 128, 152, 200])
    psh = struct.pack("<HI10s", rng.choice([1, 2, 3, 4, 5, 6, 0, 0xFFFF]),
                      rng.randrange(1 << 32), bytes(10))
    b = pdu(ptype, psh) + bytes(plen_data)
    b = b[:4] + struct.pack("<I", 24 + plen_data) + b[8:]
    if rng.random() < 0.3:
        b = mutate(rng, b)
    h.send(b)
    h.drain(0.3)
    rand_close(h, rng)


def sc_partial(ctx, rng):
    """A PDU held back part-way for a while, then completed, abandoned or reset."""
    h = Host(ctx.port, rng)
    if rng.random() < 0.8:
        h.icreq()
        cid = h.next_cid()
        b = h.cmd_pdu(connect_sqe(cid, 0, 31), connect_data())
    else:
        b = pdu(ICREQ, icreq_psh())
    cut = rng.randrange(1, len(b))
    h.send(b[:cut])
    time.sleep(rng.choice([0.01, 0.1, 0.4]))
    what = rng.randrange(3)
    if what == 0:
        h.send(b[cut:])
        h.drain(0.2)
        rand_close(h, rng)
    else:
        h.close("reset" if what == 1 else "close")


def sc_slow(ctx, rng):
    """A slow sender: a whole admin session byte by byte."""
    h = Host(ctx.port, rng, timeout=3.0)
    h.mode = "slow"
    h.icreq()
    h.connect()
    if rng.random() < 0.5:
        h.enable()
    rand_close(h, rng)


def sc_stuck_reader(ctx, rng):
    """Reads queued by a host that never reads: the target's socket fills (EAGAIN, EPOLLOUT)."""
    a, cntlid = admin_session(ctx.port, rng)
    h = io_session(ctx.port, rng, cntlid)
    base = ctx.slot * 64
    out = b""
    for _ in range(rng.randrange(8, 32)):
        cid = h.next_cid()
        out += h.cmd_pdu(sqe(0x02, cid, 1, (base, 0, 63, 0, 0, 0), sgl_transport(64 * BLOCK)))
    h.send(out, npdus=len(out) // 72)
    time.sleep(rng.choice([0.05, 0.3]))
    h.close(rng.choice(["reset", "close", "half"]))
    rand_close(a, rng)


def sc_garbage(ctx, rng):
    """Random bytes, before or after the ICReq."""
    h = Host(ctx.port, rng)
    if rng.random() < 0.5:
        h.icreq()
    h.send(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 600))))
    h.drain(0.2)
    rand_close(h, rng)


def sc_swarm(ctx, rng):
    """50 connections at once: ICReq, Connect, a command each, then a random close."""
    hosts = []
    try:
        for _ in range(50):
            hosts.append(Host(ctx.port, rng, timeout=3.0))
        for h in hosts:
            h.send(pdu(ICREQ, icreq_psh()))
        for h in hosts:
            p = h.recv_pdu()
            if p is None or p[0] != ICRESP:
                ctx.finding("swarm: a connection got no ICResp")
                return
        for h in hosts:
            h.send(h.cmd_pdu(connect_sqe(h.next_cid(), 0, 31), connect_data()))
        for h in hosts:
            r = h.wait_cpl(h.cid)
            if r is None or r[0] != 0:
                ctx.finding("swarm: a valid admin Connect failed: %r" % (r,))
                return
        for h in hosts:
            h.send(h.cmd_pdu(sqe(0x06, h.next_cid(), 0, (1, 0, 0, 0, 0, 0),
                                 sgl_transport(4096))))
    finally:
        for h in hosts:
            rand_close(h, rng)


# A subsystem whose host must authenticate (DH-HMAC-CHAP): the hostile host
# has no key. Whatever it sends, nothing but Authentication Send/Receive is
# ever executed for it.
AUTH_NQN = "nqn.2016-06.io.gga:connfuzz-auth"
AUTH_HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:0b0c0d0e-1f20-4a2b-8c3d-4e5f60718293"
FCT_AUTH_SEND, FCT_AUTH_RECV = 0x05, 0x06
SC_AUTH_REQUIRED = (1 << 8) | 0x91  # SCT 1, SC 91h (status >> 1, DNR clear)


def auth_msg(rng):
    """A plausible or broken AUTH message: Negotiate, Reply, Success2, Failure2, junk."""
    tid = rng.choice([0, 1, rng.randrange(1 << 16)])
    kind = rng.choice(["negotiate", "reply", "success2", "failure2", "junk"])
    if kind == "negotiate":
        hashes = bytes(rng.choice([1, 2, 3, 0, 9]) for _ in range(rng.randrange(0, 4)))
        groups = bytes(rng.choice([0, 1, 2, 7]) for _ in range(rng.randrange(0, 3)))
        desc = bytes([rng.choice([1, 1, 2]), 0, len(hashes), len(groups)]) + \
            hashes.ljust(30, b"\0") + groups.ljust(30, b"\0")
        m = struct.pack("<BBHHBB", 0, 0, 0, tid, rng.choice([0, 0, 1]), rng.choice([1, 1, 0, 2])) + desc
    elif kind == "reply":
        hl = rng.choice([32, 48, 64, 0, 255])
        m = struct.pack("<BBHHBBBBHI", 1, 2, 0, tid, hl, 0, rng.randrange(2), 0,
                        rng.choice([0, 256, 1024]), rng.randrange(1 << 32)) + \
            bytes(rng.randrange(256) for _ in range(rng.choice([0, 2 * hl, 64])))
    elif kind == "success2":
        m = struct.pack("<BBHH10s", 1, 4, 0, tid, b"")
    elif kind == "failure2":
        m = struct.pack("<BBHHBB", 0, 0xF0, 0, tid, 1, rng.randrange(8))
    else:
        m = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 128)))
    if rng.random() < 0.2:
        m = mutate(rng, m)
    return m or b"\0"


def sc_auth(ctx, rng):
    """The keyed host without its key: AUTH messages in any order, other commands refused."""
    h = Host(ctx.port, rng)
    h.icreq(False, False)
    cid = h.next_cid()
    h.send(h.cmd_pdu(connect_sqe(cid, 0, 31), connect_data(subnqn=AUTH_NQN,
                                                             hostnqn=AUTH_HOSTNQN)))
    r = h.wait_cpl(cid)
    if r is None:
        raise Closed("no Connect response")
    if r[0] != 0 or not r[1] & (1 << 17):
        ctx.finding("auth: Connect of a keyed host: status 0x%x cdw0 0x%x (no ATR)" % r[:2])
        h.close()
        return
    for _ in range(rng.randrange(1, 12)):
        cid = h.next_cid()
        what = rng.choice(["send", "send", "recv", "identify", "prop_get"])
        if what == "send":
            m = auth_msg(rng)
            tl = rng.choice([len(m)] * 4 + [len(m) + 1, 0])
            c = bytearray(64)
            struct.pack_into("<BBHB", c, 0, OPC_FABRICS, 0x40, cid, FCT_AUTH_SEND)
            c[24:40] = sgl_icd(len(m))
            struct.pack_into("<BBBBI", c, 40, 0, 1, 1, rng.choice([0xE9] * 6 + [0xEA]), tl)
            h.send(h.cmd_pdu(bytes(c), m))
            r = h.wait_cpl(cid)
        elif what == "recv":
            al = rng.choice([8, 16, 1024, 4096, 100000])
            c = bytearray(64)
            struct.pack_into("<BBHB", c, 0, OPC_FABRICS, 0x40, cid, FCT_AUTH_RECV)
            c[24:40] = sgl_transport(al)
            struct.pack_into("<BBBBI", c, 40, 0, 1, 1, 0xE9, al)
            h.send(h.cmd_pdu(bytes(c)))
            r = h.wait_cpl(cid)
        elif what == "identify":
            h.send(h.cmd_pdu(sqe(0x06, cid, 0, (1, 0, 0, 0, 0, 0), sgl=sgl_transport(4096))))
            r = h.wait_cpl(cid)
            if r is not None and r[0] != SC_AUTH_REQUIRED:
                ctx.finding("auth: Identify before authentication: status 0x%x" % r[0])
        else:
            r = h.prop_get(0x1C)
            if r is not None and r[0] != SC_AUTH_REQUIRED:
                ctx.finding("auth: Property Get before authentication: status 0x%x" % r[0])
        if r is None:
            raise Closed("no response")
    rand_close(h, rng)


# What sc_tls runs over a secure channel.
TLS_SUBSCENARIOS = ["icreq", "connect", "admin", "io", "io", "io_valid", "term", "partial",
                    "garbage"]


def sc_tls(ctx, rng):
    """Another scenario, over TLS with records cut at random places."""
    name = rng.choice(TLS_SUBSCENARIOS)
    TL.tls = True
    try:
        SCENARIOS[name][0](Ctx(TLS["port"], ctx.slot), rng)
    finally:
        TL.tls = False


def sc_tls_garbage(ctx, rng):
    """Bytes to the TLS listener that are no good TLS: a handshake record
    header with a random length and body, random bytes, or a real
    ClientHello cut short; the target must close or time out, and serve on."""
    s = socket.create_connection(("127.0.0.1", TLS["port"]), timeout=2.0)
    STATS.add(conns=1)
    kind = rng.randrange(3)
    if kind == 0:
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
        data = bytes([0x16, 3, rng.choice([1, 3])]) + \
            struct.pack(">H", rng.choice([len(body), 0, 0x4000, 0xFFFF])) + body
    elif kind == 1:
        data = bytes([0x16]) + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 600)))
    else:
        # The start of a real ClientHello (an s_client's), mutated or cut.
        data = mutate(rng, TLS["hello"]) if rng.random() < 0.7 else \
            TLS["hello"][:rng.randrange(1, len(TLS["hello"]))]
    try:
        s.sendall(data)
        deadline = time.monotonic() + 0.3
        while recv_chunk(s, deadline, 65536) is not None:
            pass
    except (Closed, OSError):
        pass
    finally:
        s.close()


def capture_client_hello():
    """The first bytes an s_client sends to the TLS listener (for sc_tls_garbage)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    proc = subprocess.Popen(
        ["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-tls1_3", "-psk_identity",
         TLS["identity"], "-psk", TLS["psk"], "-quiet", "-nocommands"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        srv.settimeout(10)
        c, _ = srv.accept()
        c.settimeout(10)
        hello = c.recv(65536)
        c.close()
    finally:
        srv.close()
        proc.kill()
        proc.wait()
    return hello


# Floods of connections that never finish their handshake (issue 33): while
# they are held, a valid host must get in. One flood at a time (FLOOD_LOCK):
# they would push each other's valid host out, which is the design.
FLOOD_LOCK = threading.Lock()


def flood_check(ctx, rng, what, tls=False):
    """A valid host connects (admin and I/O queue) and identifies the controller."""
    TL.tls = tls
    try:
        h, cntlid = admin_session(ctx.port, rng)
        io = io_session(ctx.port, rng, cntlid)
        cid = h.next_cid()
        h.send(h.cmd_pdu(sqe(0x06, cid, 0, (1, 0, 0, 0, 0, 0), sgl=sgl_transport(4096))))
        r = h.wait_cpl(cid)
        if r is None or r[0] != 0:
            ctx.finding("%s: Identify of a valid host during the flood: %r" % (what, r))
        io.close()
        h.close()
    except (Closed, OSError) as e:
        ctx.finding("%s: a valid host was shut out during the flood: %s" % (what, e))
    finally:
        TL.tls = False


def flood_open(port, n, first_bytes):
    """n connections to port, each sent first_bytes(i) (b"": nothing)."""
    held = []
    try:
        for i in range(n):
            s = socket.create_connection(("127.0.0.1", port), timeout=2.0)
            held.append(s)
            data = first_bytes(i)
            if data:
                try:
                    s.sendall(data)
                except OSError:
                    pass  # already pushed out
    except BaseException:
        for s in held:
            s.close()
        raise
    STATS.add(conns=n)
    return held


def sc_idle_flood(ctx, rng):
    """200-400 connections that send nothing or part of an ICReq, held."""
    icreq = pdu(ICREQ, icreq_psh())
    with FLOOD_LOCK:
        held = flood_open(ctx.port, rng.randrange(200, 401),
                          lambda i: icreq[:rng.randrange(1, len(icreq))] if rng.random() < 0.3
                          else b"")
        try:
            time.sleep(0.2)
            flood_check(ctx, rng, "idle_flood")
        finally:
            for s in held:
                s.close()


def sc_tls_flood(ctx, rng):
    """250-350 TLS handshakes never finished (nothing, or part of a ClientHello), held;
    a valid host over TLS and one in plaintext get in."""
    hello = TLS["hello"]
    with FLOOD_LOCK:
        held = flood_open(TLS["port"], rng.randrange(250, 351),
                          lambda i: hello[:rng.randrange(1, len(hello))] if i % 2 else b"")
        try:
            time.sleep(0.2)
            flood_check(Ctx(TLS["port"], ctx.slot), rng, "tls_flood", tls=True)
            flood_check(ctx, rng, "tls_flood")
        finally:
            for s in held:
                s.close()


def sc_auth_flood(ctx, rng):
    """250-350 keyed hosts that Connect and never answer the AUTH challenge, held."""
    with FLOOD_LOCK:
        held = []
        try:
            for _ in range(rng.randrange(250, 351)):
                h = Host(ctx.port, rng)
                held.append(h)
                try:
                    h.icreq(False, False)
                    h.send(h.cmd_pdu(connect_sqe(h.next_cid(), 0, 31),
                                     connect_data(subnqn=AUTH_NQN, hostnqn=AUTH_HOSTNQN)))
                except (Closed, OSError):
                    pass  # pushed out by a newer one
            time.sleep(0.2)
            flood_check(ctx, rng, "auth_flood")
        finally:
            for h in held:
                h.close()


SCENARIOS = {
    "issue10": (sc_issue10, 1),
    "icreq": (sc_icreq, 4),
    "icreq_glued": (sc_icreq_glued, 2),
    "connect": (sc_connect, 4),
    "admin": (sc_admin, 3),
    "io": (sc_io, 4),
    "io_valid": (sc_io_valid, 1),
    "auth": (sc_auth, 3),
    "term": (sc_term, 3),
    "partial": (sc_partial, 3),
    "slow": (sc_slow, 1),
    "stuck_reader": (sc_stuck_reader, 1),
    "garbage": (sc_garbage, 2),
    "tls": (sc_tls, 4),
    "tls_garbage": (sc_tls_garbage, 1),
    "swarm": (sc_swarm, 0),
    # Weight 0: run as kept cases (nvmf_tcp_conn_fuzz.sh), not mixed into random
    # batches, where a flood would rightly push a concurrent scenario's handshake out.
    "idle_flood": (sc_idle_flood, 0),
    "tls_flood": (sc_tls_flood, 0),
    "auth_flood": (sc_auth_flood, 0),
}


OUTCOMES = {}


def run_scenario(port, name, seed, slot):
    ctx = Ctx(port, slot)
    outcome = "completed"
    try:
        SCENARIOS[name][0](ctx, random.Random(seed))
    except (Closed, ConnectionError):
        outcome = "closed by the target"
    except socket.timeout:
        outcome = "timed out"
    except OSError as e:
        outcome = "socket error"
        ctx.finding("%s:%d: socket error %s" % (name, seed, e))
    except Exception as e:  # a bug of the fuzzer itself must not pass silently
        outcome = "fuzzer error"
        ctx.finding("%s:%d: fuzzer error %r" % (name, seed, e))
    with STATS.lock:
        key = (name, outcome)
        OUTCOMES[key] = OUTCOMES.get(key, 0) + 1


def run_batch(port, batch, parallel=8):
    """Run [(name, seed)] with up to `parallel` scenarios at once."""
    sem = threading.Semaphore(parallel)
    threads = []

    def one(i, name, seed):
        try:
            run_scenario(port, name, seed, i % 200)
        finally:
            sem.release()

    for i, (name, seed) in enumerate(batch):
        sem.acquire()
        t = threading.Thread(target=one, args=(i, name, seed), daemon=True)
        t.start()
        threads.append(t)
    deadline = time.monotonic() + 60
    for t in threads:
        t.join(max(0.1, deadline - time.monotonic()))
    stuck = sum(1 for t in threads if t.is_alive())
    if stuck:
        with STATS.lock:
            STATS.findings.append("%d scenario threads did not finish in 60 s" % stuck)


# ---------------------------------------------------------------------------
# The daemon and its health.


def bdevperf_verify(build, tmp, port, secs=2):
    cfg = os.path.join(tmp, "bp.json")
    with open(cfg, "w") as f:
        json.dump({"subsystems": [{"subsystem": "bdev", "config": [{
            "method": "bdev_nvme_attach_controller",
            "params": {"name": "N0", "trtype": "tcp", "adrfam": "ipv4",
                       "traddr": "127.0.0.1", "trsvcid": str(port), "subnqn": NQN}}]}]}, f)
    try:
        p = subprocess.run([os.path.join(build, "bin", "bdevperf"), "--json", cfg, "-q", "16",
                            "-o", "4096", "-w", "verify", "-b", "N0n1", "-t", str(secs)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=secs + 30)
    except subprocess.TimeoutExpired:
        return False, "bdevperf did not finish in %d s" % (secs + 30)
    out = p.stdout.decode(errors="replace")
    good = p.returncode == 0 and " 0 mismatches" in out and "blocks compared" in out
    return good, "exit %d" % p.returncode + ("" if good else ": " + out[-400:])


def make_batch(rng, size, swarm):
    names = [n for n, (_, w) in SCENARIOS.items() for _ in range(w)]
    batch = [(rng.choice(names), rng.randrange(1 << 31)) for _ in range(size)]
    if swarm:
        batch.insert(rng.randrange(len(batch) + 1), ("swarm", rng.randrange(1 << 31)))
    return batch


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="build directory (DIR/bin/gga_tgt)")
    ap.add_argument("--seconds", type=float, default=40, help="fuzzing time (batches start "
                    "until it is over)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--batch", type=int, default=40, help="scenarios per batch")
    ap.add_argument("--verify-every", type=int, default=3,
                    help="bdevperf verify after every Nth batch (and the last)")
    ap.add_argument("--scenario", action="append", default=[],
                    help="NAME[:SEED] to run (repeatable) instead of random batches")
    a = ap.parse_args()

    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 31)
    print("tcp_conn_fuzz: seed %d (replay with --seed %d)" % (seed, seed), flush=True)
    rng = random.Random(seed)
    ck = Checker()
    tmp = tempfile.mkdtemp(prefix="gga-connfuzz.")
    port = free_port()
    d = Daemon(a.build, tmp, [])

    def on_term(signum, frame):
        raise SystemExit(130)

    signal.signal(signal.SIGTERM, on_term)
    t_start = time.monotonic()
    try:
        if not ck.check(d.wait_ready(), "gga_tgt starts"):
            return 1
        d.rpc("bdev_malloc_create", {"name": "M0", "num_blocks": NS_BLOCKS,
                                     "block_size": BLOCK}, 5)
        d.rpc("nvmf_create_transport", {"trtype": "TCP"}, 5)
        d.rpc("nvmf_create_subsystem", {"nqn": NQN, "allow_any_host": True}, 5)
        d.rpc("nvmf_subsystem_add_ns", {"nqn": NQN, "namespace": {"bdev_name": "M0"}}, 5)
        d.rpc("nvmf_subsystem_add_listener", {"nqn": NQN, "listen_address": {
            "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": str(port)}}, 5)
        # The authenticated subsystem of sc_auth (a DH-HMAC-CHAP key the fuzzer never uses).
        key_path = os.path.join(tmp, "auth.key")
        with open(os.open(key_path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write("DHHC-1:00:Y29ubmVjdGlvbi1mdXp6ZXItZGhjaGFwLWtleS0zMmLXvE/P:\n")
        d.rpc("keyring_file_add_key", {"name": "auth", "path": key_path}, 5)
        d.rpc("nvmf_create_subsystem", {"nqn": AUTH_NQN}, 5)
        d.rpc("nvmf_subsystem_add_ns", {"nqn": AUTH_NQN, "namespace": {"bdev_name": "M0"}}, 5)
        d.rpc("nvmf_subsystem_add_host", {"nqn": AUTH_NQN, "host": AUTH_HOSTNQN,
                                          "dhchap_key": "auth"}, 5)
        d.rpc("nvmf_subsystem_add_listener", {"nqn": AUTH_NQN, "listen_address": {
            "trtype": "tcp", "adrfam": "ipv4", "traddr": "127.0.0.1", "trsvcid": str(port)}}, 5)

        # The secure channel of sc_tls: its own port, subsystem, host and PSK.
        psk_text = tls_kat.interchange(1, os.urandom(32))
        psk_path = os.path.join(tmp, "tls.key")
        with open(os.open(psk_path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(psk_text + "\n")
        raw = base64.b64decode(psk_text.split(":")[2])[:-4]
        retained = tls_kat.retained(1, raw, TLS_HOSTNQN, "rfc8446")
        TLS["identity"] = tls_kat.identity(0, 1, TLS_HOSTNQN, TLS_NQN)
        TLS["psk"] = tls_kat.tls_psk(1, retained, 0, TLS["identity"], None, "rfc8446").hex()
        TLS["port"] = free_port()
        d.rpc("keyring_file_add_key", {"name": "tls", "path": psk_path}, 5)
        d.rpc("nvmf_create_subsystem", {"nqn": TLS_NQN}, 5)
        d.rpc("nvmf_subsystem_add_ns", {"nqn": TLS_NQN, "namespace": {"bdev_name": "M0"}}, 5)
        d.rpc("nvmf_subsystem_add_host", {"nqn": TLS_NQN, "host": TLS_HOSTNQN, "psk": "tls"}, 5)
        d.rpc("nvmf_subsystem_add_listener", {"nqn": TLS_NQN, "secure_channel": True,
                                              "listen_address": {
                                                  "trtype": "tcp", "adrfam": "ipv4",
                                                  "traddr": "127.0.0.1",
                                                  "trsvcid": str(TLS["port"])}}, 5)
        TLS["hello"] = capture_client_hello()
        ck.check(len(TLS["hello"]) > 100 and TLS["hello"][0] == 0x16,
                 "an s_client ClientHello captured for the TLS garbage (%d bytes)"
                 % len(TLS["hello"]))

        # Warm-up: a swarm and a verify touch the pools and buffers a busy target uses,
        # so the baseline is that of a target that has served.
        run_batch(port, [("swarm", seed), ("io_valid", seed), ("stuck_reader", seed)])
        good, why = bdevperf_verify(a.build, tmp, port)
        ck.check(good, "warm-up: bdevperf verify over NVMe/TCP (%s)" % why)
        health = Health(d)
        print(health.describe(), flush=True)

        replay = [(s.split(":")[0], int(s.split(":")[1]) if ":" in s else seed)
                  for s in a.scenario] if a.scenario else None
        nb = 0
        for nb, batch, last in batch_plan(replay, a.seconds, t_start,
                                          lambda n: make_batch(rng, a.batch, swarm=n % 2 == 0)):
            nf = len(STATS.findings)
            run_batch(port, batch)
            tag = "batch %d (%d scenarios)" % (nb, len(batch))
            bad = not health.check(ck, tag)
            if not d.alive():
                break
            last = last or time.monotonic() - t_start >= a.seconds
            if nb % a.verify_every == 0 or last:
                good, why = bdevperf_verify(a.build, tmp, port)
                bad |= not ck.check(good, "%s: bdevperf verify over NVMe/TCP (%s)" % (tag, why))
            for f in STATS.findings[nf:]:
                ck.check(False, "%s: %s" % (tag, f))
                bad = True
            if bad:
                print("# batch %d was: %s" % (nb, " ".join("--scenario %s:%d" % x
                                                             for x in batch)))
        rc = d.stop()
        ck.check(rc == 0, "SIGTERM ends gga_tgt with exit 0 (exit %d)" % rc)
        print("tcp_conn_fuzz: seed %d, %d batches, %d connections, %d PDUs, %d bytes sent, "
              "%.0f s" % (seed, nb, STATS.conns, STATS.pdus, STATS.bytes,
                          time.monotonic() - t_start))
        print("scenario outcomes: " + ", ".join("%s %s: %d" % (k[0], k[1], v)
                                                 for k, v in sorted(OUTCOMES.items())))
        return finish("tcp_conn_fuzz", ck, d)
    finally:
        dispose(d, tmp)


if __name__ == "__main__":
    sys.exit(main())
