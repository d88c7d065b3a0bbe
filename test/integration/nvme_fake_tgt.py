#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A small NVMe/TCP target for testing the host library without gga_tgt.

One subsystem with one RAM namespace; every connection is served by its own
thread. It speaks the parts of NVMe/TCP and NVMe-oF the host uses: ICReq,
Fabrics Connect (admin and I/O), Property Get/Set, Identify (controller,
active namespace list, namespace), Set Features Number of Queues, Keep
Alive, Read, Write, Flush, Write Zeroes, Dataset Management; in-capsule
data, R2T/H2CData (split by --r2t-chunk and --maxh2cdata), C2HData (split by
--c2h-chunk, optionally with the SUCCESS flag), header and data digests.

Listens on 127.0.0.1 only. Prints "ready <port>" once listening.
"""
import argparse
import ctypes
import socket
import struct
import sys
import threading

ISAL = ctypes.CDLL("libisal.so.2")
ISAL.crc32_iscsi.restype = ctypes.c_uint32
ISAL.crc32_iscsi.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint32]


def crc32c(data):
    data = bytes(data)
    return ISAL.crc32_iscsi(data, len(data), 0xFFFFFFFF) ^ 0xFFFFFFFF


ICREQ, ICRESP, H2C_TERM, C2H_TERM, CMD, RSP, H2C_DATA, C2H_DATA, R2T = 0, 1, 2, 3, 4, 5, 6, 7, 9
F_HDGST, F_DDGST, F_LAST, F_SUCCESS = 1, 2, 4, 8


def status(sct, sc):
    return (sct << 9) | (sc << 1)


class Namespace:
    def __init__(self, num_blocks, block_size, md_size):
        self.num_blocks = num_blocks
        self.bs = block_size
        self.ms = md_size
        self.xbs = block_size + md_size
        self.data = bytearray(num_blocks * self.xbs)


class Target:
    def __init__(self, args):
        self.args = args
        self.ns = Namespace(args.num_blocks, args.block_size, args.md_size)
        self.next_cntlid = 1
        self.lock = threading.Lock()
        self.ctrlrs = {}


class Conn:
    def __init__(self, tgt, sock):
        self.tgt = tgt
        self.a = tgt.args
        self.s = sock
        self.hdgst = False
        self.ddgst = False
        self.qid = None
        self.cntlid = None
        self.cc = 0
        self.ttag = 0
        self.pending = []

    def recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return bytes(buf)

    def send_pdu(self, ptype, flags, psh, data=b""):
        hlen = 8 + len(psh)
        hd = 4 if self.hdgst else 0
        if data:
            pdo = hlen + hd
            dd = 4 if self.ddgst else 0
            plen = pdo + len(data) + dd
            if self.hdgst:
                flags |= F_HDGST
            if self.ddgst:
                flags |= F_DDGST
        else:
            pdo = 0
            dd = 0
            plen = hlen + hd
            if self.hdgst:
                flags |= F_HDGST
        hdr = struct.pack("<BBBBI", ptype, flags, hlen, pdo, plen) + psh
        out = hdr
        if self.hdgst:
            out += struct.pack("<I", crc32c(hdr))
        if data:
            out += data
            if self.ddgst:
                out += struct.pack("<I", crc32c(data))
        self.s.sendall(out)

    def read_pdu(self):
        ch = self.recv_exact(8)
        ptype, flags, hlen, pdo, plen = struct.unpack("<BBBBI", ch)
        rest = self.recv_exact(plen - 8)
        pdu = ch + rest
        if flags & F_HDGST:
            (d,) = struct.unpack_from("<I", pdu, hlen)
            if d != crc32c(pdu[:hlen]):
                raise RuntimeError("header digest mismatch")
        data = b""
        if pdo:
            end = plen - (4 if flags & F_DDGST else 0)
            data = pdu[pdo:end]
            if flags & F_DDGST:
                (d,) = struct.unpack_from("<I", pdu, end)
                if d != crc32c(data):
                    raise RuntimeError("data digest mismatch")
        return ptype, flags, pdu[:hlen], data

    def respond(self, cid, st=0, cdw0=0, cdw1=0):
        psh = struct.pack("<IIHHHH", cdw0, cdw1, 0, self.qid or 0, cid, st)
        self.send_pdu(RSP, 0, psh)

    def get_host_data(self, cid, length, icd):
        """The command's data: in-capsule, or pulled with R2Ts."""
        if icd is not None and len(icd) > 0:
            return icd
        buf = bytearray()
        chunk = self.a.r2t_chunk or length
        while len(buf) < length:
            n = min(chunk, length - len(buf))
            self.ttag = (self.ttag + 1) & 0xFFFF
            r2to = len(buf)
            psh = struct.pack("<HHII4x", cid, self.ttag, r2to, n)
            self.send_pdu(R2T, 0, psh)
            got = 0
            while got < n:
                ptype, flags, hdr, data = self.read_pdu()
                if ptype == CMD:
                    # The host may pipeline commands while we pull data: keep them.
                    self.pending.append((ptype, flags, hdr, data))
                    continue
                if ptype != H2C_DATA:
                    raise RuntimeError("expected H2CData, got %d" % ptype)
                cccid, ttag, datao, datal = struct.unpack_from("<HHII", hdr, 8)
                if cccid != cid or ttag != self.ttag or datao != r2to + got:
                    raise RuntimeError("bad H2CData: cccid %d/%d ttag %d/%d datao %d/%d"
                                       % (cccid, cid, ttag, self.ttag, datao, r2to + got))
                if datal > self.a.maxh2cdata or datal != len(data):
                    raise RuntimeError("H2CData too long")
                last = got + datal == n
                if bool(flags & F_LAST) != last:
                    raise RuntimeError("LAST flag wrong")
                buf += data
                got += datal
        return bytes(buf)

    def send_c2h(self, cid, data):
        chunk = self.a.c2h_chunk or len(data)
        off = 0
        while off < len(data):
            n = min(chunk, len(data) - off)
            last = off + n == len(data)
            flags = F_LAST if last else 0
            if last and self.a.c2h_success:
                flags |= F_SUCCESS
            psh = struct.pack("<HHII4x", cid, 0, off, n)
            self.send_pdu(C2H_DATA, flags, psh, data[off:off + n])
            off += n
        return self.a.c2h_success

    def identify_ctrlr(self):
        d = bytearray(4096)
        struct.pack_into("<HH", d, 0, 0x1b36, 0x1b36)
        d[4:24] = b"FAKE0001".ljust(20)
        d[24:64] = b"fake nvme-tcp target".ljust(40)
        d[64:72] = b"1.0".ljust(8)
        d[77] = self.a.mdts
        struct.pack_into("<H", d, 78, self.cntlid)
        struct.pack_into("<I", d, 80, 0x10400)
        d[512] = 0x66
        d[513] = 0x44
        struct.pack_into("<H", d, 514, 128)
        struct.pack_into("<I", d, 516, 1)
        struct.pack_into("<H", d, 520, 0x4 | 0x8)
        d[525] = 1
        struct.pack_into("<I", d, 536, 1 | (1 << 20) | (1 << 21))
        nqn = self.a.nqn.encode()
        d[768:768 + len(nqn)] = nqn
        struct.pack_into("<I", d, 1792, (self.a.icd + 64) // 16)
        struct.pack_into("<I", d, 1796, 1)
        return bytes(d)

    def identify_ns(self, nsid):
        d = bytearray(4096)
        if nsid != 1:
            return bytes(d)
        ns = self.tgt.ns
        struct.pack_into("<QQQ", d, 0, ns.num_blocks, ns.num_blocks, ns.num_blocks)
        d[25] = 0
        d[26] = 0x10 if ns.ms else 0
        d[27] = 1 if ns.ms else 0
        lbads = ns.bs.bit_length() - 1
        struct.pack_into("<I", d, 128, ns.ms | (lbads << 16))
        d[104:120] = bytes(range(1, 17))
        return bytes(d)

    def handle_admin(self, opc, cid, nsid, cdw, icd, sgl_len):
        if opc == 0x06:
            cns = cdw[10] & 0xFF
            if cns == 1:
                data = self.identify_ctrlr()
            elif cns == 2:
                data = struct.pack("<I", 1) + bytes(4092)
            elif cns == 0:
                data = self.identify_ns(nsid)
            else:
                return self.respond(cid, status(0, 2))
            if self.send_c2h(cid, data[:sgl_len]):
                return
            return self.respond(cid)
        if opc == 0x09:
            if cdw[10] & 0xFF == 7:
                return self.respond(cid, 0, cdw[11])
            return self.respond(cid, status(0, 2))
        if opc == 0x18:
            return self.respond(cid)
        return self.respond(cid, status(0, 1))

    def handle_io(self, opc, cid, nsid, cdw, icd, sgl_len):
        ns = self.tgt.ns
        if nsid != 1:
            return self.respond(cid, status(0, 0x0B))
        slba = cdw[10] | (cdw[11] << 32)
        nlb = (cdw[12] & 0xFFFF) + 1
        if opc in (0x01, 0x02, 0x08) and slba + nlb > ns.num_blocks:
            if opc == 0x01:
                self.get_host_data(cid, sgl_len, icd)
            return self.respond(cid, status(0, 0x80))
        off = slba * ns.xbs
        length = nlb * ns.xbs
        if opc == 0x02:
            if sgl_len != length:
                return self.respond(cid, status(0, 0x0F))
            if self.send_c2h(cid, bytes(ns.data[off:off + length])):
                return
            return self.respond(cid)
        if opc == 0x01:
            if sgl_len != length:
                return self.respond(cid, status(0, 0x0F))
            data = self.get_host_data(cid, length, icd)
            ns.data[off:off + length] = data
            return self.respond(cid)
        if opc == 0x00:
            return self.respond(cid)
        if opc == 0x08:
            ns.data[off:off + length] = bytes(length)
            return self.respond(cid)
        if opc == 0x09:
            nr = (cdw[10] & 0xFF) + 1
            data = self.get_host_data(cid, nr * 16, icd)
            for i in range(nr):
                _, length_, lba = struct.unpack_from("<IIQ", data, i * 16)
                ns.data[lba * ns.xbs:(lba + length_) * ns.xbs] = bytes(length_ * ns.xbs)
            return self.respond(cid)
        return self.respond(cid, status(0, 1))

    def handle_fabrics(self, cid, sqe, icd, sgl_len):
        fctype = sqe[4]
        if fctype == 0x01:
            qid, sqsize = struct.unpack_from("<HH", sqe, 42)
            data = self.get_host_data(cid, sgl_len, icd)
            cntlid = struct.unpack_from("<H", data, 16)[0]
            subnqn = data[256:512].split(b"\0")[0].decode()
            self.qid = qid
            if subnqn != self.a.nqn:
                return self.respond(cid, status(1, 0x82), 1 | (256 << 16))
            if qid == 0:
                with self.tgt.lock:
                    self.cntlid = self.tgt.next_cntlid
                    self.tgt.next_cntlid += 1
                    self.tgt.ctrlrs[self.cntlid] = self
            else:
                if cntlid not in self.tgt.ctrlrs:
                    return self.respond(cid, status(1, 0x82), 1 | (16 << 16))
                self.cntlid = cntlid
            return self.respond(cid, 0, self.cntlid)
        if fctype == 0x04:
            size8 = sqe[40] & 1
            ofst = struct.unpack_from("<I", sqe, 44)[0]
            val = 0
            if ofst == 0x00:
                val = 127 | (1 << 16) | (2 << 24) | (1 << 37)
            elif ofst == 0x08:
                val = 0x10400
            elif ofst == 0x14:
                val = self.cc
            elif ofst == 0x1C:
                val = (self.cc & 1)
                if (self.cc >> 14) & 3:
                    val |= 2 << 2
            if not size8:
                val &= 0xFFFFFFFF
            return self.respond(cid, 0, val & 0xFFFFFFFF, val >> 32)
        if fctype == 0x00:
            ofst = struct.unpack_from("<I", sqe, 44)[0]
            val = struct.unpack_from("<Q", sqe, 48)[0]
            if ofst == 0x14:
                self.cc = val & 0xFFFFFFFF
            return self.respond(cid)
        return self.respond(cid, status(0, 1))

    def serve(self):
        ptype, flags, hdr, _ = self.read_pdu()
        if ptype != ICREQ:
            return
        dgst = hdr[11]
        self.hdgst = bool(dgst & 1) and not self.a.no_digests
        self.ddgst = bool(dgst & 2) and not self.a.no_digests
        resp = struct.pack("<HBBI", 0, 0, (1 if self.hdgst else 0) | (2 if self.ddgst else 0),
                           self.a.maxh2cdata) + bytes(112)
        self.s.sendall(struct.pack("<BBBBI", ICRESP, 0, 128, 0, 128) + resp)
        while True:
            if self.pending:
                ptype, flags, hdr, data = self.pending.pop(0)
            else:
                ptype, flags, hdr, data = self.read_pdu()
            if ptype == H2C_TERM:
                return
            if ptype != CMD:
                raise RuntimeError("unexpected PDU type %d" % ptype)
            sqe = hdr[8:72]
            opc = sqe[0]
            cid = struct.unpack_from("<H", sqe, 2)[0]
            nsid = struct.unpack_from("<I", sqe, 4)[0]
            sgl_len = struct.unpack_from("<I", sqe, 32)[0]
            cdw = [0] * 10 + list(struct.unpack_from("<6I", sqe, 40))
            icd = data if data else None
            if self.a.drop_after and opc in (0x01, 0x02):
                self.a.drop_after -= 1
                if self.a.drop_after == 0:
                    continue
            if opc == 0x7F:
                self.handle_fabrics(cid, sqe, icd, sgl_len)
            elif self.qid == 0:
                self.handle_admin(opc, cid, nsid, cdw, icd, sgl_len)
            else:
                self.handle_io(opc, cid, nsid, cdw, icd, sgl_len)


def serve_conn(tgt, sock):
    c = Conn(tgt, sock)
    try:
        c.serve()
    except (EOFError, ConnectionResetError, BrokenPipeError):
        pass
    except Exception as e:  # noqa: BLE001 - report and drop the connection
        print("fake target: connection error: %s" % e, file=sys.stderr, flush=True)
    finally:
        with tgt.lock:
            if c.qid == 0 and c.cntlid in tgt.ctrlrs:
                del tgt.ctrlrs[c.cntlid]
        sock.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--nqn", default="nqn.2016-06.io.gga:fake")
    p.add_argument("--num-blocks", type=int, default=4096)
    p.add_argument("--block-size", type=int, default=512)
    p.add_argument("--md-size", type=int, default=0)
    p.add_argument("--maxh2cdata", type=int, default=8192)
    p.add_argument("--icd", type=int, default=4096, help="I/O in-capsule data size")
    p.add_argument("--mdts", type=int, default=5)
    p.add_argument("--r2t-chunk", type=int, default=0)
    p.add_argument("--c2h-chunk", type=int, default=0)
    p.add_argument("--c2h-success", action="store_true")
    p.add_argument("--no-digests", action="store_true", help="refuse digests")
    p.add_argument("--drop-after", type=int, default=0,
                   help="swallow the Nth read/write command (never answer it)")
    args = p.parse_args()
    tgt = Target(args)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", args.port))
    ls.listen(64)
    print("ready %d" % ls.getsockname()[1], flush=True)
    while True:
        s, _ = ls.accept()
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=serve_conn, args=(tgt, s), daemon=True).start()


if __name__ == "__main__":
    main()
