#!/usr/bin/env python3
"""A small NVMe/TCP host for testing gga_tgt: speaks the wire protocol itself
(ICReq, Connect, Property Get/Set, Identify, Get Log Page, Read/Write with
in-capsule data, R2T/H2CData and C2HData, digests) and runs named scenarios.

  nvme_tcp_client.py --port P --nqn NQN [options] SCENARIO

Each scenario exits 0 when every expectation holds and prints what failed
otherwise (exit 1). Every socket operation has a timeout, so a scenario
never hangs. Scenarios: see SCENARIOS at the bottom.
"""
import argparse
import os
import random
import shlex
import socket
import struct
import subprocess
import sys
import threading
import time

# ---------------------------------------------------------------------------
# CRC-32C (Castagnoli), table driven.
_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283

# ---------------------------------------------------------------------------
# Wire constants.
ICREQ, ICRESP, H2C_TERM, C2H_TERM, CMD, RSP, H2C_DATA, C2H_DATA, R2T = 0, 1, 2, 3, 4, 5, 6, 7, 9
F_HDGST, F_DDGST, F_LAST, F_SUCCESS = 1, 2, 4, 8
DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery"
HOSTID = bytes(range(16))

OPC_FABRICS, OPC_IDENTIFY, OPC_GET_LOG, OPC_SET_FEAT, OPC_GET_FEAT = 0x7F, 0x06, 0x02, 0x09, 0x0A
OPC_KEEP_ALIVE, OPC_AER, OPC_ABORT = 0x18, 0x0C, 0x08
OPC_FLUSH, OPC_WRITE, OPC_READ, OPC_WZ, OPC_DSM = 0x00, 0x01, 0x02, 0x08, 0x09
FCT_PROP_SET, FCT_CONNECT, FCT_PROP_GET = 0x00, 0x01, 0x04


class Closed(Exception):
    pass


class Fail(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Fail(what)


class Cpl:
    def __init__(self, raw):
        self.cdw0, self.cdw1, self.sqhd, self.sqid, self.cid, st = struct.unpack("<IIHHHH", raw)
        self.sc = (st >> 1) & 0xFF
        self.sct = (st >> 9) & 0x7
        self.dnr = bool(st & 0x8000)

    @property
    def ok(self):
        return self.sc == 0 and self.sct == 0

    def __repr__(self):
        return "cpl(sct=%d sc=0x%02x dnr=%d cdw0=0x%x cid=%d)" % (
            self.sct, self.sc, self.dnr, self.cdw0, self.cid)


def sqe(opc, cid=0, nsid=0, cdw10=0, cdw11=0, cdw12=0, cdw13=0, cdw14=0, cdw15=0, sgl=None,
        flags=0x40):
    dptr = sgl if sgl is not None else bytes(16)
    return struct.pack("<BBHIIIQ16sIIIIII", opc, flags, cid, nsid, 0, 0, 0, dptr,
                       cdw10, cdw11, cdw12, cdw13, cdw14, cdw15)


def sgl_incapsule(length, offset=0):
    return struct.pack("<QI3sB", offset, length, b"\0\0\0", 0x01)


def sgl_transport(length):
    return struct.pack("<QI3sB", 0, length, b"\0\0\0", 0x5A)


class Conn:
    """One NVMe/TCP connection (one queue pair)."""

    def __init__(self, host, port, hdgst=False, ddgst=False, hpda=0, timeout=10.0,
                 do_icreq=True, sock=None):
        # sock: a connected stream to use instead (a pipe to a TLS client).
        if sock is None:
            sock = socket.create_connection((host, port), timeout=timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        else:
            sock.settimeout(timeout)
        self.sock = sock
        self.hdgst = hdgst
        self.ddgst = ddgst
        self.hpda = hpda
        self.maxh2cdata = 0
        self.cid = 0
        self.buf = b""
        self.icd_max = 8192
        self.frag = 0       # send PDUs in pieces of this many bytes (0 = whole)
        if do_icreq:
            self.icreq()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    # -- raw I/O --------------------------------------------------------------
    def send_raw(self, data):
        if self.frag:
            for i in range(0, len(data), self.frag):
                self.sock.sendall(data[i:i + self.frag])
                time.sleep(0.001)
        else:
            self.sock.sendall(data)

    def recv_exact(self, n):
        while len(self.buf) < n:
            try:
                chunk = self.sock.recv(max(65536, n - len(self.buf)))
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise Closed("connection closed by the target")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def is_closed(self, wait=5.0):
        """True if the target closes the connection within `wait` seconds."""
        self.sock.settimeout(wait)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

    # -- PDUs -------------------------------------------------------------------
    def build_pdu(self, ptype, psh, data=b"", flags=0, hdgst=None, ddgst=None, pdo=None,
                  plen=None, hlen=None, bad_hdgst=False, bad_ddgst=False):
        hd = self.hdgst if hdgst is None else hdgst
        dd = (self.ddgst if ddgst is None else ddgst) and len(data) > 0
        hl = 8 + len(psh) if hlen is None else hlen
        if hd:
            flags |= F_HDGST
        if dd:
            flags |= F_DDGST
        hdr_total = 8 + len(psh) + (4 if hd else 0)
        if data:
            off = pdo if pdo is not None else hdr_total
        else:
            off = 0
        pad = (off - hdr_total) if data else 0
        total = (off if data else hdr_total) + len(data) + (4 if dd else 0)
        if plen is not None:
            total = plen
        ch = struct.pack("<BBBBI", ptype, flags, hl, off, total)
        hdr = ch + psh
        out = hdr
        if hd:
            d = crc32c(hdr)
            if bad_hdgst:
                d ^= 0xDEAD
            out += struct.pack("<I", d)
        if data:
            out += b"\0" * pad + data
            if dd:
                d = crc32c(data)
                if bad_ddgst:
                    d ^= 0xBEEF
                out += struct.pack("<I", d)
        return out

    def send_pdu(self, *args, **kw):
        self.send_raw(self.build_pdu(*args, **kw))

    def recv_pdu(self):
        """Returns (type, flags, header bytes after the CH, data)."""
        ch = self.recv_exact(8)
        ptype, flags, hlen, pdo, plen = struct.unpack("<BBBBI", ch)
        expect(hlen >= 8 and plen >= hlen, "bad PDU from target: hlen %d plen %d" % (hlen, plen))
        rest = self.recv_exact(plen - 8)
        psh = rest[:hlen - 8]
        pos = hlen - 8
        if flags & F_HDGST:
            (d,) = struct.unpack("<I", rest[pos:pos + 4])
            expect(d == crc32c(ch + psh), "header digest from target is wrong")
            pos += 4
        data = b""
        if ptype == C2H_TERM:
            data = rest[pos:]
        elif pdo:
            end = plen - 8 - (4 if flags & F_DDGST else 0)
            data = rest[pdo - 8:end]
            if flags & F_DDGST:
                (d,) = struct.unpack("<I", rest[end:end + 4])
                expect(d == crc32c(data), "data digest from target is wrong")
        return ptype, flags, psh, data

    def icreq(self, pfv=0, maxr2t=0):
        dgst = (1 if self.hdgst else 0) | (2 if self.ddgst else 0)
        psh = struct.pack("<HBBI112s", pfv, self.hpda, dgst, maxr2t, bytes(112))
        self.send_pdu(ICREQ, psh, hdgst=False, ddgst=False)
        ptype, flags, psh, _ = self.recv_pdu()
        expect(ptype == ICRESP, "expected ICResp, got PDU type %d" % ptype)
        pfv, cpda, dgst, self.maxh2cdata = struct.unpack("<HBBI", psh[:8])
        expect(pfv == 0 and cpda == 0, "ICResp pfv %d cpda %d" % (pfv, cpda))
        expect(dgst == ((1 if self.hdgst else 0) | (2 if self.ddgst else 0)),
               "ICResp digests 0x%x" % dgst)
        expect(self.maxh2cdata >= 4096 and self.maxh2cdata % 4 == 0,
               "maxh2cdata %d" % self.maxh2cdata)

    def expect_term(self, fes, fei=None):
        """The next PDU must be a C2HTermReq with this FES, then the connection closes."""
        ptype, flags, psh, data = self.recv_pdu()
        expect(ptype == C2H_TERM, "expected C2HTermReq, got PDU type %d" % ptype)
        (got_fes,) = struct.unpack("<H", psh[:2])
        (got_fei,) = struct.unpack("<I", psh[2:6])
        expect(got_fes == fes, "C2HTermReq FES 0x%x, expected 0x%x" % (got_fes, fes))
        if fei is not None:
            expect(got_fei == fei, "C2HTermReq FEI %d, expected %d" % (got_fei, fei))
        expect(self.is_closed(), "connection not closed after C2HTermReq")

    # -- commands ----------------------------------------------------------------
    def next_cid(self):
        self.cid = (self.cid + 1) & 0xFFFF
        return self.cid

    def send_cmd(self, cmd, data=b"", incapsule=None, bad_ddgst=False, bad_hdgst=False):
        if incapsule is None:
            incapsule = len(data) <= self.icd_max
        if data and incapsule:
            self.send_pdu(CMD, cmd, data=data, bad_ddgst=bad_ddgst, bad_hdgst=bad_hdgst)
        else:
            self.send_pdu(CMD, cmd, bad_hdgst=bad_hdgst)

    def wait_cpl(self, cid, data=b"", read_len=0, h2c_split=None, bad_h2c=None):
        """Serve R2Ts with `data`, collect C2H data, return (cpl, read data)."""
        rbuf = bytearray(read_len)
        got = 0
        last_seen = False
        while True:
            ptype, flags, psh, pdata = self.recv_pdu()
            if ptype == RSP:
                cpl = Cpl(psh[:16])
                expect(cpl.cid == cid, "completion for cid %d, expected %d" % (cpl.cid, cid))
                if cpl.ok and read_len:
                    expect(got == read_len, "read %d of %d bytes" % (got, read_len))
                    expect(last_seen, "no C2HData with LAST_PDU")
                return cpl, bytes(rbuf)
            if ptype == C2H_DATA:
                cccid, _, datao, datal = struct.unpack("<HHII", psh[:12])
                expect(cccid == cid, "C2HData for cid %d" % cccid)
                expect(datal == len(pdata), "C2HData datal %d vs %d" % (datal, len(pdata)))
                expect(datao == got, "C2HData out of order: %d vs %d" % (datao, got))
                rbuf[datao:datao + datal] = pdata
                got += datal
                if flags & F_LAST:
                    last_seen = True
                continue
            if ptype == R2T:
                cccid, ttag, r2to, r2tl = struct.unpack("<HHII", psh[:12])
                expect(cccid == cid, "R2T for cid %d" % cccid)
                expect(r2to + r2tl <= len(data), "R2T beyond the data")
                step = h2c_split or self.maxh2cdata
                off = r2to
                while off < r2to + r2tl:
                    n = min(step, r2to + r2tl - off)
                    fl = F_LAST if off + n == r2to + r2tl else 0
                    datao = off
                    if bad_h2c == "offset":
                        datao = off + 4
                    psh2 = struct.pack("<HHII4s", cid, ttag, datao, n, bytes(4))
                    if bad_h2c == "ttag":
                        psh2 = struct.pack("<HHII4s", cid, ttag ^ 0x7FFF, datao, n, bytes(4))
                    self.send_pdu(H2C_DATA, psh2, data=data[off:off + n], flags=fl)
                    off += n
                continue
            if ptype == C2H_TERM:
                (fes,) = struct.unpack("<H", psh[:2])
                raise Closed("C2HTermReq FES 0x%x" % fes)
            raise Fail("unexpected PDU type %d" % ptype)

    def cmd(self, opc, nsid=0, cdw10=0, cdw11=0, cdw12=0, cdw13=0, cdw14=0, cdw15=0,
            data=b"", read_len=0, incapsule=None, sgl_len=None, **kw):
        cid = self.next_cid()
        if incapsule is None:
            incapsule = len(data) <= self.icd_max
        length = len(data) if data else read_len
        if sgl_len is not None:
            length = sgl_len
        sgl = sgl_incapsule(length) if (data and incapsule) else sgl_transport(length)
        c = sqe(opc, cid, nsid, cdw10, cdw11, cdw12, cdw13, cdw14, cdw15, sgl)
        self.send_cmd(c, data, incapsule, bad_ddgst=kw.pop("bad_ddgst", False),
                      bad_hdgst=kw.pop("bad_hdgst", False))
        return self.wait_cpl(cid, data, read_len, **kw)

    # Fabrics.
    def connect(self, subnqn, hostnqn, qid=0, sqsize=31, cntlid=0xFFFF, kato=0, hostid=HOSTID,
                recfmt=0):
        cid = self.next_cid()
        data = bytearray(1024)
        data[0:16] = hostid
        struct.pack_into("<H", data, 16, cntlid)
        s = subnqn.encode()
        data[256:256 + len(s)] = s
        h = hostnqn.encode()
        data[512:512 + len(h)] = h
        c = bytearray(64)
        struct.pack_into("<BBHB", c, 0, OPC_FABRICS, 0x40, cid, FCT_CONNECT)
        c[24:40] = sgl_incapsule(1024)
        struct.pack_into("<HHHBBI", c, 40, recfmt, qid, sqsize, 0, 0, kato)
        self.send_pdu(CMD, bytes(c), data=bytes(data))
        cpl, _ = self.wait_cpl(cid)
        return cpl

    def prop_get(self, ofst, size8=False):
        cid = self.next_cid()
        c = bytearray(64)
        struct.pack_into("<BBHB", c, 0, OPC_FABRICS, 0x40, cid, FCT_PROP_GET)
        struct.pack_into("<BxxxI", c, 40, 1 if size8 else 0, ofst)
        self.send_pdu(CMD, bytes(c))
        cpl, _ = self.wait_cpl(cid)
        return cpl, cpl.cdw0 | (cpl.cdw1 << 32)

    def prop_set(self, ofst, value, size8=False):
        cid = self.next_cid()
        c = bytearray(64)
        struct.pack_into("<BBHB", c, 0, OPC_FABRICS, 0x40, cid, FCT_PROP_SET)
        struct.pack_into("<BxxxIQ", c, 40, 1 if size8 else 0, ofst, value)
        self.send_pdu(CMD, bytes(c))
        cpl, _ = self.wait_cpl(cid)
        return cpl

    def enable(self, discovery=False):
        cc = 1 | (6 << 16) | (4 << 20)
        cpl = self.prop_set(0x14, cc)
        expect(cpl.ok, "Property Set CC: %r" % cpl)
        deadline = time.time() + 5
        while time.time() < deadline:
            cpl, csts = self.prop_get(0x1C)
            expect(cpl.ok, "Property Get CSTS: %r" % cpl)
            expect(not csts & 2, "CSTS.CFS set")
            if csts & 1:
                return
            time.sleep(0.01)
        raise Fail("CSTS.RDY never set")

    def identify(self, cns, nsid=0):
        cpl, data = self.cmd(OPC_IDENTIFY, nsid=nsid, cdw10=cns, read_len=4096)
        return cpl, data

    def get_log(self, lid, length, offset=0, nsid=0xFFFFFFFF, rae=False):
        numd = length // 4 - 1
        cdw10 = lid | ((numd & 0xFFFF) << 16) | ((1 << 15) if rae else 0)
        return self.cmd(OPC_GET_LOG, nsid=nsid, cdw10=cdw10, cdw11=numd >> 16,
                        cdw12=offset & 0xFFFFFFFF, cdw13=offset >> 32, read_len=length)

    # NVM.
    def write(self, nsid, slba, data, bs, **kw):
        nlb = len(data) // bs
        return self.cmd(OPC_WRITE, nsid=nsid, cdw10=slba & 0xFFFFFFFF, cdw11=slba >> 32,
                        cdw12=nlb - 1, data=data, **kw)[0]

    def read(self, nsid, slba, nlb, bs, **kw):
        return self.cmd(OPC_READ, nsid=nsid, cdw10=slba & 0xFFFFFFFF, cdw11=slba >> 32,
                        cdw12=nlb - 1, read_len=nlb * bs, **kw)


# ---------------------------------------------------------------------------
# Scenarios.

class Ctx:
    def __init__(self, args):
        self.args = args
        self.host = args.host
        self.port = args.port
        self.nqn = args.nqn
        self.hostnqn = args.hostnqn
        self.bs = args.block_size + args.md_size
        self.lbads = args.block_size
        self.md = args.md_size
        self.blocks = args.num_blocks

    def conn(self, **kw):
        kw.setdefault("hdgst", self.args.hdgst)
        kw.setdefault("ddgst", self.args.ddgst)
        return Conn(self.host, self.port, **kw)

    def admin(self, nqn=None, hostnqn=None, kato=0, **kw):
        """Connected, enabled admin queue: returns (conn, cntlid)."""
        c = self.conn(**kw)
        cpl = c.connect(nqn or self.nqn, hostnqn or self.hostnqn, kato=kato)
        expect(cpl.ok, "admin Connect: %r" % cpl)
        c.enable()
        return c, cpl.cdw0 & 0xFFFF

    def io(self, cntlid, qid=1, hostnqn=None, **kw):
        c = self.conn(**kw)
        cpl = c.connect(self.nqn, hostnqn or self.hostnqn, qid=qid, sqsize=127, cntlid=cntlid)
        expect(cpl.ok, "I/O Connect qid %d: %r" % (qid, cpl))
        return c

    def rpc(self, *argv):
        return rpc_run(self.args.rpc, *argv)


def rpc_run(cmdline, *argv):
    """Run gga_rpc (cmdline: the command with its socket) with argv; its output."""
    r = subprocess.run(shlex.split(cmdline) + list(argv), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)
    expect(r.returncode == 0, "rpc %s failed: %s" % (" ".join(argv), r.stderr.decode()))
    return r.stdout.decode()


def run_scenario(name, fn, arg):
    """Exit status of scenario fn(arg): 0, or 1 with what failed printed."""
    try:
        fn(arg)
    except (Fail, Closed, OSError, struct.error) as e:
        print("FAIL %s: %s: %s" % (name, type(e).__name__, e))
        return 1
    return 0


def pattern(n, seed):
    rnd = random.Random(seed)
    return bytes(rnd.getrandbits(8) for _ in range(n))


def sc_basic(x):
    """Admin queue, properties, identify, features, I/O queue, read/write/flush/wz/dsm."""
    c = x.conn()
    cpl, cap = c.prop_get(0x00, size8=True)
    expect(not cpl.ok, "Property Get before Connect must fail")
    cpl = c.connect(x.nqn, x.hostnqn, kato=10000)
    expect(cpl.ok, "admin Connect: %r" % cpl)
    cntlid = cpl.cdw0 & 0xFFFF
    expect(1 <= cntlid <= 0xFFEF, "cntlid %d" % cntlid)
    cpl, cap = c.prop_get(0x00, size8=True)
    expect(cpl.ok and (cap & 0xFFFF) >= 31, "CAP: %r 0x%x" % (cpl, cap))
    expect((cap >> 37) & 1, "CAP.CSS NVM bit")
    cpl, vs = c.prop_get(0x08)
    expect(cpl.ok and vs >= 0x10300, "VS 0x%x" % vs)
    cpl, _ = c.prop_get(0x00)
    expect(cpl.sc == 0x02, "4-byte read of CAP must be Invalid Field: %r" % cpl)
    cpl = c.prop_set(0x00, 0)
    expect(cpl.sc == 0x02, "writing CAP must be Invalid Field: %r" % cpl)
    cpl, _ = c.identify(1)
    expect(cpl.sct == 0 and cpl.sc == 0x0C, "Identify before CC.EN: %r" % cpl)
    c.enable()

    cpl, idc = c.identify(1)
    expect(cpl.ok, "Identify controller: %r" % cpl)
    (cid_,) = struct.unpack_from("<H", idc, 78)
    expect(cid_ == cntlid, "Identify CNTLID %d vs %d" % (cid_, cntlid))
    expect(idc[768:768 + len(x.nqn)] == x.nqn.encode() and idc[768 + len(x.nqn)] == 0, "SUBNQN")
    expect(idc[4:24].decode().rstrip() == x.args.serial, "SN %r" % idc[4:24])
    (ioccsz, iorcsz) = struct.unpack_from("<II", idc, 1792)
    expect(ioccsz * 16 - 64 >= 4096 and iorcsz == 1, "IOCCSZ %d IORCSZ %d" % (ioccsz, iorcsz))
    c.icd_max = ioccsz * 16 - 64
    (nn,) = struct.unpack_from("<I", idc, 516)
    expect(nn >= 1, "NN %d" % nn)
    expect(idc[111] == 1, "CNTRLTYPE %d" % idc[111])
    expect(idc[512] == 0x66 and idc[513] == 0x44, "SQES/CQES")
    (sgls,) = struct.unpack_from("<I", idc, 536)
    expect(sgls & 1 and sgls & (1 << 20), "SGLS 0x%x" % sgls)
    (oncs,) = struct.unpack_from("<H", idc, 520)
    expect(oncs & 0xC == 0xC, "ONCS 0x%x" % oncs)
    mdts = idc[77]

    cpl, lst = c.identify(2)
    expect(cpl.ok and struct.unpack_from("<I", lst, 0)[0] == 1, "active ns list %r" % lst[:8])
    cpl, idn = c.identify(0, nsid=1)
    expect(cpl.ok, "Identify namespace: %r" % cpl)
    nsze, ncap = struct.unpack_from("<QQ", idn, 0)
    expect(nsze == x.blocks and ncap == x.blocks, "NSZE %d, expected %d" % (nsze, x.blocks))
    flbas = idn[26]
    (lbaf,) = struct.unpack_from("<I", idn, 128)
    expect((lbaf >> 16) & 0xFF == x.lbads.bit_length() - 1, "LBADS in 0x%x" % lbaf)
    expect(lbaf & 0xFFFF == x.md, "MS in 0x%x" % lbaf)
    expect(bool(flbas & 0x10) == (x.md > 0), "FLBAS 0x%x" % flbas)
    cpl, desc = c.identify(3, nsid=1)
    expect(cpl.ok and desc[0] in (2, 3), "ns id descriptors %r" % desc[:4])
    cpl, _ = c.identify(0, nsid=0)
    expect(cpl.sc == 0x0B, "Identify nsid 0: %r" % cpl)
    cpl, idn2 = c.identify(0, nsid=2)
    expect(cpl.ok and idn2 == bytes(4096), "inactive nsid reads zeros: %r" % cpl)
    cpl, _ = c.identify(0x55)
    expect(cpl.sc == 0x02, "unknown CNS: %r" % cpl)

    cpl, _ = c.cmd(OPC_SET_FEAT, cdw10=0x07, cdw11=(3 << 16) | 3)
    expect(cpl.ok and (cpl.cdw0 & 0xFFFF) >= 1, "Set Features Number of Queues: %r" % cpl)
    cpl, _ = c.cmd(OPC_GET_FEAT, cdw10=0x0F)
    expect(cpl.ok and cpl.cdw0 == 10000, "Get Features KATO: %r" % cpl)
    cpl, _ = c.cmd(OPC_SET_FEAT, cdw10=0x0B, cdw11=1 << 8)
    expect(cpl.ok, "Set Features AEC: %r" % cpl)
    cpl, _ = c.cmd(OPC_SET_FEAT, cdw10=0x0F | (1 << 31), cdw11=5000)
    expect(cpl.sct == 1 and cpl.sc == 0x0D, "saving a feature: %r" % cpl)
    cpl, _ = c.cmd(OPC_KEEP_ALIVE)
    expect(cpl.ok, "Keep Alive: %r" % cpl)
    cpl, smart = c.get_log(0x02, 512)
    expect(cpl.ok and smart[3] == 100, "SMART log: %r" % cpl)
    cpl, _ = c.get_log(0x70, 1024)
    expect(cpl.sct == 1 and cpl.sc == 0x09, "discovery log on an I/O controller: %r" % cpl)
    cpl, _ = c.cmd(0xC5)
    expect(cpl.sc == 0x01, "unknown admin opcode: %r" % cpl)
    cpl, _ = c.cmd(OPC_ABORT, cdw10=(1234 << 16))
    expect(cpl.ok and cpl.cdw0 & 1, "Abort of nothing: %r" % cpl)

    io = x.io(cntlid, qid=1)
    io.icd_max = c.icd_max
    bs = x.bs
    d1 = pattern(bs * 4, 1)
    cpl = io.write(1, 10, d1, bs)
    expect(cpl.ok, "in-capsule write: %r" % cpl)
    cpl, back = io.read(1, 10, 4, bs)
    expect(cpl.ok and back == d1, "read back of in-capsule write")
    n = min(64 * 1024 if mdts == 0 else (4096 << mdts), 128 * 1024) // bs
    d2 = pattern(bs * n, 2)
    cpl = io.write(1, 100, d2, bs, incapsule=False)
    expect(cpl.ok, "R2T write of %d bytes: %r" % (len(d2), cpl))
    cpl, back = io.read(1, 100, n, bs)
    expect(cpl.ok and back == d2, "read back of R2T write")
    # H2CData in small pieces.
    d3 = pattern(bs * 16, 3)
    cpl = io.cmd(OPC_WRITE, nsid=1, cdw10=300, cdw12=15, data=d3, incapsule=False,
                 h2c_split=4096)[0]
    expect(cpl.ok, "write with 4 KiB H2CData PDUs: %r" % cpl)
    cpl, back = io.read(1, 300, 16, bs)
    expect(cpl.ok and back == d3, "read back of split H2C write")
    cpl, _ = io.cmd(OPC_FLUSH, nsid=1)
    expect(cpl.ok, "Flush: %r" % cpl)
    cpl, _ = io.cmd(OPC_WZ, nsid=1, cdw10=10, cdw12=3)
    expect(cpl.ok, "Write Zeroes: %r" % cpl)
    cpl, back = io.read(1, 10, 4, bs)
    expect(cpl.ok and back == bytes(bs * 4), "zeros after Write Zeroes")
    rng = struct.pack("<IIQ", 0, 8, 100) + struct.pack("<IIQ", 0, 0, 0)
    cpl, _ = io.cmd(OPC_DSM, nsid=1, cdw10=1, cdw11=4, data=rng)
    expect(cpl.ok, "Dataset Management deallocate: %r" % cpl)
    rng = struct.pack("<IIQ", 0, 8, x.blocks - 4)
    cpl, _ = io.cmd(OPC_DSM, nsid=1, cdw10=0, cdw11=4, data=rng)
    expect(cpl.sc == 0x80, "DSM beyond the end: %r" % cpl)

    # Errors that keep the queue usable.
    cpl = io.write(1, x.blocks - 2, pattern(bs * 4, 4), bs)
    expect(cpl.sct == 0 and cpl.sc == 0x80 and cpl.dnr, "write beyond the end: %r" % cpl)
    cpl, _ = io.read(1, x.blocks, 1, bs)
    expect(cpl.sc == 0x80, "read at num_blocks: %r" % cpl)
    cpl, _ = io.read(1, (1 << 64) - 1, 1, bs)
    expect(cpl.sc == 0x80, "read at LBA 2^64-1: %r" % cpl)
    cpl, _ = io.read(2, 0, 1, bs)
    expect(cpl.sc == 0x0B, "read of a missing namespace: %r" % cpl)
    cpl, _ = io.read(0xFFFFFFFF, 0, 1, bs)
    expect(cpl.sc == 0x0B, "read of nsid 0xffffffff: %r" % cpl)
    cpl, _ = io.cmd(OPC_READ, nsid=1, cdw12=1, read_len=bs)
    expect(cpl.sc == 0x0F, "read with a short SGL: %r" % cpl)
    cpl, _ = io.cmd(OPC_WRITE, nsid=1, cdw12=0, data=pattern(bs + 512, 5))
    expect(cpl.sc == 0x0F, "write with a long SGL: %r" % cpl)
    cpl, _ = io.cmd(0x7E, nsid=1)
    expect(cpl.sc == 0x01, "unknown I/O opcode: %r" % cpl)
    cpl, _ = io.cmd(OPC_READ, nsid=1, cdw12=0, read_len=256 * 1024 * 1024)
    expect(cpl.sc == 0x0F, "transfer over max_io_size: %r" % cpl)
    cpl, back = io.read(1, 100, 1, bs)
    expect(cpl.ok and back == bytes(bs), "queue still works (deallocated block reads zeros)")
    # A second I/O queue shares the namespace.
    io2 = x.io(cntlid, qid=2)
    cpl, back = io2.read(1, 300, 16, bs)
    expect(cpl.ok and back == d3, "read on a second I/O queue")
    cpl = x.conn().connect(x.nqn, x.hostnqn, qid=2, sqsize=127, cntlid=cntlid)
    expect(cpl.sct == 1 and cpl.sc == 0x82 and (cpl.cdw0 >> 16) == 42,
           "I/O queue id already in use: %r" % cpl)

    # Shutdown: I/O queues go away, SHST reaches complete.
    cpl = c.prop_set(0x14, 1 | (6 << 16) | (4 << 20) | (1 << 14))
    expect(cpl.ok, "CC.SHN: %r" % cpl)
    deadline = time.time() + 5
    while True:
        cpl, csts = c.prop_get(0x1C)
        if (csts >> 2) & 3 == 2:
            break
        expect(time.time() < deadline, "shutdown never completed (CSTS 0x%x)" % csts)
        time.sleep(0.01)
    expect(io.is_closed() and io2.is_closed(), "I/O queues closed at shutdown")
    c.close()


def sc_discovery(x):
    c = x.conn()
    cpl = c.connect(DISCOVERY_NQN, x.hostnqn)
    expect(cpl.ok, "discovery Connect: %r" % cpl)
    c.enable(discovery=True)
    cpl, idc = c.identify(1)
    expect(cpl.ok and idc[111] == 2, "discovery Identify CNTRLTYPE: %r" % cpl)
    expect(idc[768:768 + len(DISCOVERY_NQN)] == DISCOVERY_NQN.encode(), "discovery SUBNQN")
    cpl, _ = c.identify(0, nsid=1)
    expect(cpl.sc == 0x02, "Identify namespace on discovery: %r" % cpl)
    cpl, hdr = c.get_log(0x70, 1024)
    expect(cpl.ok, "discovery log header: %r" % cpl)
    genctr, numrec, recfmt = struct.unpack_from("<QQH", hdr, 0)
    expect(numrec >= 1 and recfmt == 0, "numrec %d" % numrec)
    cpl, log = c.get_log(0x70, 1024 * (1 + numrec))
    expect(cpl.ok, "discovery log: %r" % cpl)
    found = False
    for i in range(numrec):
        e = log[1024 * (i + 1):1024 * (i + 2)]
        trtype, adrfam, subtype, treq, portid, cntlid, asqsz = struct.unpack_from("<BBBBHHH", e)
        subnqn = e[256:512].rstrip(b"\0").decode()
        traddr = e[512:768].rstrip(b"\0 ").decode()
        trsvcid = e[32:64].rstrip(b"\0 ").decode()
        expect(trtype == 3 and adrfam == 1 and subtype == 2, "entry %d type fields" % i)
        expect(cntlid == 0xFFFF and asqsz >= 2, "entry %d cntlid/asqsz" % i)
        if subnqn == x.nqn and traddr == x.host and trsvcid == str(x.port):
            found = True
    expect(found, "%s at %s:%d not in the discovery log" % (x.nqn, x.host, x.port))
    cpl, tail = c.get_log(0x70, 1024, offset=1024)
    expect(cpl.ok and tail == log[1024:2048], "discovery log read at an offset")
    cpl, _ = c.get_log(0x70, 1024, offset=2)
    expect(cpl.sc == 0x02, "unaligned log offset: %r" % cpl)
    cpl, _ = c.cmd(OPC_KEEP_ALIVE)
    expect(cpl.ok, "Keep Alive on discovery: %r" % cpl)
    c.close()


def sc_expect_count(x):
    """Discovery log has exactly --count entries for this host."""
    c = x.conn()
    expect(c.connect(DISCOVERY_NQN, x.hostnqn).ok, "discovery Connect")
    c.enable(discovery=True)
    cpl, hdr = c.get_log(0x70, 1024)
    numrec = struct.unpack_from("<Q", hdr, 8)[0]
    expect(cpl.ok and numrec == x.args.count, "numrec %d, expected %d" % (numrec, x.args.count))


def still_works(x):
    """A fresh connection can still connect, enable and read."""
    c, cntlid = x.admin()
    io = x.io(cntlid)
    cpl, _ = io.read(1, 0, 1, x.bs)
    expect(cpl.ok, "read on a fresh connection: %r" % cpl)
    io.close()
    c.close()


def sc_bad_pdu(x):
    FES_HDR, FES_SEQ, FES_HDGST, FES_RANGE, FES_LIMIT = 1, 2, 3, 4, 5
    # Unknown/invalid PDU type.
    c = x.conn()
    c.send_pdu(RSP, bytes(16))
    c.expect_term(FES_HDR, 0)
    c = x.conn()
    c.send_pdu(0x0F, bytes(16))
    c.expect_term(FES_HDR, 0)
    # Wrong hlen for a CapsuleCmd.
    c = x.conn()
    c.send_pdu(CMD, sqe(OPC_KEEP_ALIVE) + bytes(8))
    c.expect_term(FES_HDR, 2)
    # plen smaller than the header.
    c = x.conn()
    c.send_raw(c.build_pdu(CMD, sqe(OPC_KEEP_ALIVE), plen=40)[:40])
    c.expect_term(FES_HDR, 4)
    # pdo inside the header.
    c = x.conn()
    c.send_pdu(CMD, sqe(OPC_WRITE, 1, 1, cdw12=0, sgl=sgl_incapsule(512)), data=bytes(512), pdo=16)
    c.expect_term(FES_HDR, 3)
    # In-capsule data beyond what the controller takes.
    c = x.conn()
    c.send_pdu(CMD, sqe(OPC_WRITE, 1, 1, sgl=sgl_incapsule(65536)), data=bytes(65536))
    c.expect_term(FES_LIMIT)
    # Digest flag not negotiated.
    c = x.conn(hdgst=False, ddgst=False)
    c.send_pdu(CMD, sqe(OPC_KEEP_ALIVE), hdgst=True)
    c.expect_term(FES_HDR, 1)
    # A second ICReq, and a capsule before any ICReq.
    c = x.conn()
    c.send_pdu(ICREQ, struct.pack("<HBBI112s", 0, 0, 0, 0, bytes(112)), hdgst=False, ddgst=False)
    c.expect_term(FES_SEQ)
    c = x.conn(do_icreq=False)
    c.send_pdu(CMD, sqe(OPC_KEEP_ALIVE))
    c.expect_term(FES_SEQ)
    # Unsupported protocol version.
    c = x.conn(do_icreq=False)
    c.send_pdu(ICREQ, struct.pack("<HBBI112s", 1, 0, 0, 0, bytes(112)), hdgst=False, ddgst=False)
    c.expect_term(FES_HDR, 8)
    # H2CData naming no R2T, and data at the wrong offset.
    c, cntlid = x.admin()
    io = x.io(cntlid)
    io.send_pdu(H2C_DATA, struct.pack("<HHII4s", 1, 77, 0, 512, bytes(4)), data=bytes(512))
    io.expect_term(FES_HDR, 10)
    io = x.io(cntlid, qid=2)
    try:
        io.cmd(OPC_WRITE, nsid=1, cdw12=15, data=bytes(16 * x.bs), incapsule=False,
               bad_h2c="offset")
        raise Fail("H2CData at a wrong offset was accepted")
    except Closed:
        pass
    io = x.io(cntlid, qid=3)
    try:
        io.cmd(OPC_WRITE, nsid=1, cdw12=15, data=bytes(16 * x.bs), incapsule=False,
               bad_h2c="ttag")
        raise Fail("H2CData with a wrong ttag was accepted")
    except Closed:
        pass
    # The admin queue of that controller was never affected.
    cpl, _ = c.cmd(OPC_KEEP_ALIVE)
    expect(cpl.ok, "admin queue survives its I/O queues' errors: %r" % cpl)
    c.close()
    still_works(x)


def sc_digest(x):
    """Header and data digests on; a bad header digest is fatal, a bad data digest fails the command."""
    c, cntlid = x.admin(hdgst=True, ddgst=True)
    io = x.io(cntlid, hdgst=True, ddgst=True)
    bs = x.bs
    d = pattern(bs * 8, 7)
    expect(io.write(1, 0, d, bs).ok, "in-capsule write with digests")
    d2 = pattern(bs * 64, 8)
    expect(io.write(1, 64, d2, bs, incapsule=False).ok, "R2T write with digests")
    cpl, back = io.read(1, 64, 64, bs)
    expect(cpl.ok and back == d2, "read with digests")
    cpl = io.write(1, 0, pattern(bs * 2, 9), bs, bad_ddgst=True)
    expect(cpl.sct == 0 and cpl.sc == 0x22, "bad data digest: %r" % cpl)
    cpl, back = io.read(1, 0, 8, bs)
    expect(cpl.ok and back == d, "data unchanged after a data digest error")
    # HPDA: C2H data aligned to 32 bytes.
    io2 = x.conn(hdgst=True, ddgst=False, hpda=7)
    expect(io2.connect(x.nqn, x.hostnqn, qid=2, sqsize=127, cntlid=cntlid).ok, "connect hpda 7")
    cpl, back = io2.read(1, 64, 64, bs)
    expect(cpl.ok and back == d2, "read with HPDA 7")
    # Bad header digest: fatal.
    io3 = x.conn(hdgst=True, ddgst=True)
    io3.send_pdu(CMD, sqe(OPC_KEEP_ALIVE), bad_hdgst=True)
    io3.expect_term(3)
    cpl, _ = io.read(1, 0, 1, bs)
    expect(cpl.ok, "other connections unaffected")
    c.close()


def sc_connect_errors(x):
    c = x.conn()
    cpl = c.connect("nqn.2016-06.io.gga:nope", x.hostnqn)
    expect(cpl.sct == 1 and cpl.sc == 0x82, "unknown NQN: %r" % cpl)
    expect(cpl.cdw0 & 1 == 1 and cpl.cdw0 >> 16 == 256, "IATTR/IPO 0x%x" % cpl.cdw0)
    # The same connection may try again.
    cpl = c.connect(x.nqn, x.hostnqn, sqsize=0)
    expect(cpl.sc == 0x82 and cpl.cdw0 & 1 == 0 and cpl.cdw0 >> 16 == 44, "sqsize 0: %r" % cpl)
    cpl = c.connect(x.nqn, x.hostnqn, sqsize=4096)
    expect(cpl.sc == 0x82 and cpl.cdw0 >> 16 == 44, "admin sqsize too big: %r" % cpl)
    cpl = c.connect(x.nqn, x.hostnqn, cntlid=5)
    expect(cpl.sc == 0x82 and cpl.cdw0 & 1 and cpl.cdw0 >> 16 == 16, "admin cntlid: %r" % cpl)
    cpl = c.connect(x.nqn, x.hostnqn, recfmt=1)
    expect(cpl.sct == 1 and cpl.sc == 0x80, "recfmt 1: %r" % cpl)
    if x.args.bad_host:
        cpl = c.connect(x.nqn, x.args.bad_host)
        expect(cpl.sct == 1 and cpl.sc == 0x84, "host not allowed: %r" % cpl)
    cpl = c.connect(x.nqn, x.hostnqn, qid=1, sqsize=127, cntlid=0xFFEE)
    expect(cpl.sc == 0x82 and cpl.cdw0 >> 16 == 16, "I/O Connect to no controller: %r" % cpl)
    cpl = c.connect(x.nqn, x.hostnqn)
    expect(cpl.ok, "Connect after failures: %r" % cpl)
    cntlid = cpl.cdw0 & 0xFFFF
    cpl = c.connect(x.nqn, x.hostnqn)
    expect(cpl.sc == 0x0C, "second Connect on a queue: %r" % cpl)
    # I/O queue before CC.EN.
    cpl = x.conn().connect(x.nqn, x.hostnqn, qid=1, sqsize=127, cntlid=cntlid)
    expect(cpl.sc == 0x0C, "I/O Connect before enable: %r" % cpl)
    c.enable()
    cpl = x.conn().connect(x.nqn, x.hostnqn, qid=1, sqsize=127, cntlid=cntlid,
                           hostid=bytes(16))
    expect(cpl.sc == 0x82 and cpl.cdw0 >> 16 == 0, "I/O Connect with another host id: %r" % cpl)
    cpl = x.conn().connect(x.nqn, "nqn.2014-08.org.example:other", qid=1, sqsize=127,
                           cntlid=cntlid)
    expect(cpl.sc in (0x82, 0x84), "I/O Connect from another host: %r" % cpl)
    cpl = x.conn().connect(x.nqn, x.hostnqn, qid=60000, sqsize=127, cntlid=cntlid)
    expect(cpl.sc == 0x82 and cpl.cdw0 >> 16 == 42, "qid too big: %r" % cpl)
    cpl = x.conn().connect(x.nqn, x.hostnqn, qid=1, sqsize=60000, cntlid=cntlid)
    expect(cpl.sc == 0x82 and cpl.cdw0 >> 16 == 44, "I/O sqsize too big: %r" % cpl)
    # Commands other than Connect on a fresh queue.
    d = x.conn()
    cpl, _ = d.cmd(OPC_KEEP_ALIVE)
    expect(cpl.sc == 0x0C, "admin command before Connect: %r" % cpl)
    still_works(x)


def sc_host_denied(x):
    """Connect with --hostnqn must be refused as an invalid host."""
    c = x.conn()
    cpl = c.connect(x.nqn, x.hostnqn)
    expect(cpl.sct == 1 and cpl.sc == 0x84, "disallowed host: %r" % cpl)


def sc_host_allowed(x):
    c, cntlid = x.admin()
    c.close()


def sc_keep_alive(x):
    """KATO 1 s: traffic keeps the controller alive, silence ends it."""
    c, cntlid = x.admin(kato=1000)
    io = x.io(cntlid)
    for _ in range(8):
        time.sleep(0.3)
        cpl, _ = c.cmd(OPC_KEEP_ALIVE)
        expect(cpl.ok, "Keep Alive: %r" % cpl)
    expect(not c.is_closed(wait=0.2), "closed despite keep alives")
    start = time.time()
    expect(c.is_closed(wait=6), "admin queue not closed after the keep alive timeout")
    expect(io.is_closed(wait=3), "I/O queue not closed after the keep alive timeout")
    expect(time.time() - start < 4, "keep alive timeout took too long")


def sc_silent(x):
    """A connection that never sends ICReq is closed after handshake_timeout_ms (3 s)."""
    s = socket.create_connection((x.args.host, x.args.port), timeout=5)
    start = time.time()
    # Others are served meanwhile.
    still_works(x)
    s.settimeout(20)
    try:
        data = s.recv(1)
    except ConnectionResetError:
        data = b""
    took = time.time() - start
    s.close()
    expect(data == b"", "the target sent %r instead of closing" % data)
    expect(2.5 <= took <= 6, "closed after %.1f s (expected about 3 s)" % took)


def sc_partial(x):
    """Every PDU sent in 3-byte pieces."""
    c, cntlid = x.admin()
    io = x.io(cntlid)
    io.frag = 3
    bs = x.bs
    d = pattern(bs * 4, 11)
    expect(io.write(1, 40, d, bs).ok, "fragmented in-capsule write")
    io.frag = 1000
    d2 = pattern(bs * 32, 12)
    expect(io.write(1, 80, d2, bs, incapsule=False).ok, "fragmented R2T write")
    io.frag = 0
    cpl, back = io.read(1, 40, 4, bs)
    expect(cpl.ok and back == d, "read back")
    cpl, back = io.read(1, 80, 32, bs)
    expect(cpl.ok and back == d2, "read back 2")
    # Several commands in one send: the target parses them from one buffer.
    cids = []
    burst = b""
    for i in range(8):
        cid = io.next_cid()
        cids.append(cid)
        burst += io.build_pdu(CMD, sqe(OPC_READ, cid, 1, cdw10=40, cdw12=0,
                                       sgl=sgl_transport(bs)))
    io.send_raw(burst)
    seen = set()
    while len(seen) < 8:
        ptype, flags, psh, data = io.recv_pdu()
        if ptype == RSP:
            cpl = Cpl(psh[:16])
            expect(cpl.ok, "pipelined read: %r" % cpl)
            seen.add(cpl.cid)
    expect(seen == set(cids), "all pipelined reads completed")


def sc_many(x):
    """Several controllers with several I/O queues working at once."""
    errors = []

    def worker(k):
        try:
            c, cntlid = x.admin()
            ios = [x.io(cntlid, qid=q + 1) for q in range(3)]
            for r in range(10):
                for q, io in enumerate(ios):
                    lba = (k * 3 + q) * 40 + (r % 4) * 8
                    d = pattern(x.bs * 8, k * 1000 + q * 100 + r)
                    expect(io.write(1, lba, d, x.bs, incapsule=(r % 2 == 0)).ok, "write")
                    cpl, back = io.read(1, lba, 8, x.bs)
                    expect(cpl.ok and back == d, "read back (worker %d queue %d)" % (k, q))
            for io in ios:
                io.close()
            c.close()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append("worker %d: %s: %s" % (k, type(e).__name__, e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(x.args.count or 6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    expect(not any(t.is_alive() for t in threads), "workers did not finish")
    expect(not errors, "; ".join(errors))


def sc_aer(x):
    """Namespace attach/detach raises a Namespace Attribute Changed event."""
    c, cntlid = x.admin()
    cid = c.next_cid()
    c.send_cmd(sqe(OPC_AER, cid, sgl=sgl_transport(0)))
    x.rpc("bdev_malloc_create", "--name", "AER0", "--num_blocks", "128", "--block_size", "512")
    x.rpc("nvmf_subsystem_add_ns", '{"nqn": "%s", "namespace": {"bdev_name": "AER0", '
          '"nsid": 7}}' % x.nqn)
    cpl, _ = c.wait_cpl(cid)
    expect(cpl.ok and cpl.cdw0 == 0x040002, "AER after adding a namespace: %r" % cpl)
    cpl, log = c.get_log(0x04, 4096, nsid=0)
    expect(cpl.ok and struct.unpack_from("<II", log, 0) == (7, 0), "changed ns list %r" % log[:8])
    cpl, lst = c.identify(2)
    ids = [i for i in struct.unpack_from("<8I", lst) if i]
    expect(7 in ids, "nsid 7 active: %r" % ids)
    cid = c.next_cid()
    c.send_cmd(sqe(OPC_AER, cid, sgl=sgl_transport(0)))
    # Hot remove: the namespace goes away with the bdev.
    x.rpc("bdev_malloc_delete", "--name", "AER0")
    cpl, _ = c.wait_cpl(cid)
    expect(cpl.ok and cpl.cdw0 == 0x040002, "AER after hot remove: %r" % cpl)
    cpl, log = c.get_log(0x04, 4096, nsid=0)
    expect(cpl.ok and struct.unpack_from("<I", log, 0)[0] == 7, "changed ns list after remove")
    cpl, lst = c.identify(2)
    ids = [i for i in struct.unpack_from("<8I", lst) if i]
    expect(7 not in ids, "nsid 7 gone: %r" % ids)
    # AER limit.
    cids = []
    for _ in range(4):
        cid = c.next_cid()
        cids.append(cid)
        c.send_cmd(sqe(OPC_AER, cid, sgl=sgl_transport(0)))
    cpl, _ = c.cmd(OPC_AER)
    expect(cpl.sct == 1 and cpl.sc == 0x05, "fifth AER: %r" % cpl)
    acid = c.next_cid()
    c.send_cmd(sqe(OPC_ABORT, acid, cdw10=(cids[0] << 16), sgl=sgl_transport(0)))
    got = {}
    while len(got) < 2:
        ptype, _, psh, _ = c.recv_pdu()
        expect(ptype == RSP, "PDU type %d while waiting for Abort" % ptype)
        cpl = Cpl(psh[:16])
        got[cpl.cid] = cpl
    expect(set(got) == {acid, cids[0]}, "completions %r" % got)
    expect(got[acid].ok and got[acid].cdw0 & 1 == 0, "Abort of a held AER: %r" % got[acid])
    expect(got[cids[0]].sc == 0x07, "aborted AER status: %r" % got[cids[0]])
    c.close()


def sc_hold(x):
    """Connect and keep the connection for --seconds (for shutdown tests)."""
    c, cntlid = x.admin()
    io = x.io(cntlid)
    print("connected", flush=True)
    closed = io.is_closed(wait=x.args.seconds)
    print("closed" if closed else "still open", flush=True)


def sc_read(x):
    """Connect and read block 0 (a smoke test)."""
    still_works(x)


def sc_shutdown(x):
    """CC.SHN as SPDK's and Linux's hosts send it, normal then abrupt: AERs held
    (SPDK drops its own before writing CC.SHN), I/O in flight; the Property Set
    answers success before anything else, SHST reaches complete, I/O queues go."""
    bs = x.bs
    for shn in (1, 2):
        c, cntlid = x.admin()
        io = x.io(cntlid)
        aers = []
        for _ in range(2):
            cid = c.next_cid()
            aers.append(cid)
            c.send_cmd(sqe(OPC_AER, cid, sgl=sgl_transport(0)))
        # Writes in flight when the notification comes (their answers may or may not come).
        for i in range(8):
            io.send_cmd(sqe(OPC_WRITE, io.next_cid(), 1, cdw10=200 + i, cdw12=0,
                            sgl=sgl_incapsule(bs)), pattern(bs, 40 + i), True)
        cc = 1 | (6 << 16) | (4 << 20) | (shn << 14)
        # wait_cpl() fails on any other completion first (an AER's, say).
        cpl = c.prop_set(0x14, cc)
        expect(cpl.ok, "Property Set CC.SHN=%d: %r" % (shn, cpl))
        deadline = time.time() + 5
        while True:
            cpl, csts = c.prop_get(0x1C)
            expect(cpl.ok, "Property Get CSTS during shutdown: %r" % cpl)
            if (csts >> 2) & 3 == 2:
                break
            expect(time.time() < deadline, "shutdown never completed (CSTS 0x%x)" % csts)
            time.sleep(0.01)
        expect(io.is_closed(), "I/O queue closed at shutdown")
        cpl, _ = c.cmd(OPC_KEEP_ALIVE)
        expect(cpl.ok, "the admin queue still answers after the shutdown: %r" % cpl)
        c.close()
    still_works(x)


# The limits of nvmf_create_transport: --count is max_connections_per_listener,
# --seconds pdu_timeout_ms / 1000 or the KATO cap.
def closed_within(sock, lo, hi, what):
    """The target closes sock between lo and hi seconds from now."""
    start = time.time()
    sock.settimeout(hi + 2)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    except socket.timeout:
        raise Fail("%s: still open after %.1f s" % (what, hi + 2))
    took = time.time() - start
    expect(lo <= took <= hi, "%s: closed after %.2f s (expected %.1f-%.1f s)" %
           (what, took, lo, hi))


def sc_conn_limit(x):
    """--count connections are served; one more is closed unanswered until one goes."""
    held = [x.admin() for _ in range(x.args.count)]
    extra = x.conn(do_icreq=False)
    try:
        extra.icreq()
        raise Fail("connection %d over the limit got an ICResp" % (x.args.count + 1))
    except (Closed, OSError):
        pass
    extra.close()
    cpl, _ = held[0][0].cmd(OPC_KEEP_ALIVE)
    expect(cpl.ok, "admitted connections keep working: %r" % cpl)
    # still_works() needs two connections (admin and I/O queue).
    held.pop()[0].close()
    held.pop()[0].close()
    deadline = time.time() + 3
    while True:
        try:
            still_works(x)
            break
        except (Closed, OSError):
            expect(time.time() < deadline, "no connection admitted after one closed")
            time.sleep(0.1)
    for c, _ in held:
        c.close()


def sc_slowloris(x):
    """ICReq (handshake_timeout_ms), Connect and each PDU (pdu_timeout_ms) must come
    within --seconds, dribbled or not."""
    t = x.args.seconds
    lo, hi = t * 0.9, t * 1.5 + 1.5
    silent = socket.create_connection((x.args.host, x.args.port), timeout=5)
    no_connect = x.conn()
    half = x.conn()
    half.send_raw(half.build_pdu(CMD, sqe(OPC_KEEP_ALIVE, 1))[:10])
    closed_within(silent, lo - 0.5, hi, "no ICReq")
    closed_within(no_connect.sock, 0, hi, "ICReq but no Connect")
    closed_within(half.sock, 0, hi, "half a capsule")
    # A byte every 100 ms: progress, but the PDU takes longer than allowed.
    c, _ = x.admin()
    pdu = c.build_pdu(CMD, sqe(OPC_KEEP_ALIVE, c.next_cid()))
    start = time.time()
    sent = 0
    try:
        for b in pdu[:-1]:
            c.sock.sendall(bytes([b]))
            sent += 1
            time.sleep(0.1)
            expect(time.time() - start < hi + 2, "a dribbled PDU was never cut")
    except OSError:
        pass
    took = time.time() - start
    expect(lo <= took <= hi and sent < len(pdu) - 1,
           "dribbled PDU cut after %.2f s, %d bytes (expected %.1f-%.1f s)" % (took, sent, lo, hi))
    c.close()
    still_works(x)


def sc_kato_cap(x):
    """KATO 0 and a KATO above the cap (--seconds) both get the cap; silence ends it."""
    cap = int(x.args.seconds * 1000)
    for asked in (0, cap * 10):
        c, _ = x.admin(kato=asked)
        cpl, _ = c.cmd(OPC_GET_FEAT, cdw10=0x0F)
        expect(cpl.ok and cpl.cdw0 == cap, "KATO %d: Get Features says %d, not the cap %d" %
               (asked, cpl.cdw0, cap))
        if asked == 0:
            closed_within(c.sock, x.args.seconds * 0.9, x.args.seconds * 1.25 + 1.5,
                          "KATO 0 capped")
        c.close()


# Admission before allocation: connections that never finish their handshake
# must not lock hosts out (--count idle sockets, --tls-count stalled TLS
# handshakes on --tls-port).
def partial_client_hello():
    """The first bytes of a TLS ClientHello whose record claims 512 bytes."""
    return bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03]) + \
        os.urandom(16)


def raise_fd_limit(need):
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need and (hard == resource.RLIM_INFINITY or hard >= need):
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
        soft = need
    expect(soft >= need, "need %d file descriptors, the hard limit is %d" % (need, hard))


def open_stalled(x):
    """--count silent sockets to --port, --tls-count to --tls-port (half of
    them sent part of a ClientHello). Returns the sockets."""
    held = []
    for i in range(x.args.count):
        held.append(socket.create_connection((x.args.host, x.args.port), timeout=5))
    for i in range(x.args.tls_count):
        s = socket.create_connection((x.args.host, x.args.tls_port), timeout=5)
        if i % 2:
            s.sendall(partial_client_hello())
        held.append(s)
    return held


def sc_flood(x):
    """An established queue and a new host work while the flood is held."""
    raise_fd_limit(x.args.count + x.args.tls_count + 256)
    c, cntlid = x.admin()
    io = x.io(cntlid)
    data = pattern(8 * x.bs, 7)
    expect(io.write(1, 100, data, x.bs).ok, "write before the flood")
    held = open_stalled(x)
    # The target accepts them meanwhile (an accept takes microseconds).
    time.sleep(1)
    still_works(x)
    c2, cntlid2 = x.admin()
    io2 = x.io(cntlid2)
    expect(io2.write(1, 200, data, x.bs).ok, "write of a host that came during the flood")
    cpl, got = io2.read(1, 200, 8, x.bs)
    expect(cpl.ok and got == data, "read back by the host that came during the flood")
    io2.close()
    c2.close()
    print("holding %d stalled connections" % len(held), flush=True)
    deadline = time.time() + x.args.seconds
    while x.args.release and not os.path.exists(x.args.release) and time.time() < deadline:
        time.sleep(0.1)
    cpl, got = io.read(1, 100, 8, x.bs)
    expect(cpl.ok and got == data, "the queue opened before the flood reads back: %r" % cpl)
    cpl, _ = c.cmd(OPC_KEEP_ALIVE)
    expect(cpl.ok, "its admin queue still answers: %r" % cpl)
    for s in held:
        s.close()
    io.close()
    c.close()


def sc_handshake_deadline(x):
    """A silent socket, one that sent no ICReq after a byte, and a stalled TLS
    handshake are closed after handshake_timeout_ms (--seconds)."""
    t = x.args.seconds
    silent = socket.create_connection((x.args.host, x.args.port), timeout=5)
    byte = socket.create_connection((x.args.host, x.args.port), timeout=5)
    byte.sendall(b"\x00")
    tls = socket.create_connection((x.args.host, x.args.tls_port), timeout=5)
    tls.sendall(partial_client_hello())
    closed_within(silent, t * 0.8, t * 1.5 + 1.5, "no ICReq")
    closed_within(byte, 0, t * 1.5 + 1.5, "one byte of an ICReq")
    closed_within(tls, 0, t * 1.5 + 1.5, "half a ClientHello")
    still_works(x)


def sc_flood_time(x):
    """Measurement (scripts/bench_admission.sh, never a test): hold the flood of
    sc_flood, reopening every stalled connection the target closes (an attacker
    keeping it up), and time a new host's connection attempts (admin and I/O
    queue and a read) until one succeeds or --seconds pass."""
    import selectors
    raise_fd_limit(x.args.count + x.args.tls_count + 256)
    held = open_stalled(x)
    sel = selectors.DefaultSelector()
    ports = {}
    for i, s in enumerate(held):
        ports[s] = x.args.port if i < x.args.count else x.args.tls_port
        sel.register(s, selectors.EVENT_READ)
    stop = threading.Event()
    reopened = [0]

    def attacker():
        while not stop.is_set():
            for key, _ in sel.select(0.05):
                s = key.fileobj
                try:
                    gone = s.recv(4096) == b""
                except OSError:
                    gone = True
                if not gone:
                    continue
                sel.unregister(s)
                port = ports.pop(s)
                s.close()
                try:
                    n = socket.create_connection((x.args.host, port), timeout=5)
                except OSError:
                    continue
                ports[n] = port
                sel.register(n, selectors.EVENT_READ)
                reopened[0] += 1

    t = threading.Thread(target=attacker, daemon=True)
    t.start()
    time.sleep(1)
    start = time.time()
    attempts = 0
    took = None
    why = ""
    while time.time() - start < x.args.seconds:
        attempts += 1
        try:
            still_works(x)
            took = time.time() - start
            break
        except (Fail, Closed, OSError) as e:
            why = "%s: %s" % (type(e).__name__, e)
            time.sleep(0.1)
    stop.set()
    t.join(5)
    for s in list(ports):
        s.close()
    if took is None:
        print("flood-time: no connection in %.1f s (%d attempts; %d stalled sockets reopened;"
              " last failure %s)" % (x.args.seconds, attempts, reopened[0], why))
    else:
        print("flood-time: connected after %.3f s (attempt %d; %d stalled sockets reopened%s)" %
              (took, attempts, reopened[0], "; last failure " + why if why else ""))


SCENARIOS = {
    "basic": sc_basic,
    "discovery": sc_discovery,
    "discovery-count": sc_expect_count,
    "bad-pdu": sc_bad_pdu,
    "digest": sc_digest,
    "connect-errors": sc_connect_errors,
    "host-denied": sc_host_denied,
    "host-allowed": sc_host_allowed,
    "keep-alive": sc_keep_alive,
    "partial": sc_partial,
    "silent": sc_silent,
    "many": sc_many,
    "aer": sc_aer,
    "hold": sc_hold,
    "read": sc_read,
    "conn-limit": sc_conn_limit,
    "shutdown": sc_shutdown,
    "slowloris": sc_slowloris,
    "kato-cap": sc_kato_cap,
    "flood": sc_flood,
    "handshake-deadline": sc_handshake_deadline,
    "flood-time": sc_flood_time,
}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenario", choices=sorted(SCENARIOS))
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--nqn", default="nqn.2016-06.io.gga:cnode1")
    p.add_argument("--hostnqn", default="nqn.2014-08.org.nvmexpress:uuid:"
                   "0b9f8a3c-1d2e-4f50-8a6b-7c8d9e0f1a2b")
    p.add_argument("--bad-host", default=None, help="a host NQN the subsystem refuses")
    p.add_argument("--block-size", type=int, default=512)
    p.add_argument("--md-size", type=int, default=0)
    p.add_argument("--num-blocks", type=int, default=16384)
    p.add_argument("--serial", default="GGA0001")
    p.add_argument("--hdgst", action="store_true")
    p.add_argument("--ddgst", action="store_true")
    p.add_argument("--count", type=int, default=0)
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--rpc", default="gga_rpc", help="command line of gga_rpc with its socket")
    p.add_argument("--tls-port", type=int, default=0, help="a secure_channel listener")
    p.add_argument("--tls-count", type=int, default=0)
    p.add_argument("--release", default=None,
                   help="flood: hold the stalled connections until this file exists")
    args = p.parse_args()
    return run_scenario(args.scenario, SCENARIOS[args.scenario], Ctx(args))


if __name__ == "__main__":
    sys.exit(main())
