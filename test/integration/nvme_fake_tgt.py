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

--evil MODE[,MODE...] makes it a broken or malicious controller (the modes
are listed in EVIL_MODES below): the I/O modes act on the reads and writes
that follow the first --evil-after of them (on every one, on every
connection), so a controller first works and then turns bad; with
--evil-on-signal they wait for SIGUSR1 instead. The connection and
identify modes act from the start.

--tls-cert PEM --tls-key PEM make it an impostor of a secure channel: TLS
1.3 with that certificate and no PSK (it does not hold the host's key). A
host that offers its PSK and accepts a certificate instead talks NVMe to
it; each connection's handshake is reported on stderr ("TLS handshake
completed ..." or "TLS handshake failed ...").

Listens on 127.0.0.1 only. Prints "ready <port>" once listening.
"""
import argparse
import ctypes
import select
import signal
import socket
import ssl
import struct
import sys
import threading
import time

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


# The misbehaviours: mode -> (the I/O commands it acts on, what it does).
# "r" reads, "w" writes, "rw" both, "" the connection or identify phase.
EVIL_MODES = {
    "c2h_offset": ("r", "C2HData with a data offset the host did not expect"),
    "c2h_beyond": ("r", "C2HData longer than the command's data"),
    "c2h_cccid": ("r", "C2HData for a command id that is not outstanding"),
    "c2h_plen": ("r", "C2HData whose PLEN disagrees with its DATAL"),
    "c2h_early_success": ("r", "C2HData with the SUCCESS flag on the first of two PDUs"),
    "rsp_unknown_cid": ("rw", "a CapsuleResp for a command id that is not outstanding"),
    "rsp_dup": ("rw", "every CapsuleResp sent twice"),
    "rsp_before_data": ("r", "a read's CapsuleResp (success) before its data"),
    "rsp_no_data": ("w", "a write completed with success without asking for its data"),
    "rsp_bogus_status": ("rw", "a completion with a vendor-specific error status"),
    "write_discard": ("w", "a write's data taken and thrown away, success reported"),
    "type_h2c": ("rw", "an H2CData PDU sent to the host"),
    "type_icreq": ("rw", "an ICReq sent to the host"),
    "type_icresp": ("rw", "a second ICResp in the middle of the stream"),
    "bad_hdgst": ("rw", "a CapsuleResp with a wrong header digest (needs hdgst)"),
    "bad_ddgst": ("r", "C2HData with a wrong data digest (needs ddgst)"),
    "plen_huge": ("rw", "a CapsuleResp header with PLEN 0x7fffffff"),
    "plen_small": ("rw", "a CapsuleResp header with PLEN 8"),
    "hlen_wrong": ("rw", "a CapsuleResp header with HLEN 16"),
    "r2t_beyond": ("w", "an R2T reaching past the command's data"),
    "r2t_read": ("r", "an R2T for a read"),
    "r2t_icd": ("w", "an R2T for a write whose data came in the capsule"),
    "r2t_twice": ("w", "a second R2T while the first is being served"),
    "term": ("rw", "a C2HTermReq"),
    "close_mid": ("rw", "half a CapsuleResp, then close"),
    "stall": ("rw", "the command accepted and never answered"),
    "stall_half": ("rw", "half a CapsuleResp, then nothing (the socket stays open)"),
    "stop_reading": ("rw", "no answer and the socket never read again"),
    "icresp_pfv": ("", "ICResp with PFV 1"),
    "icresp_cpda": ("", "ICResp with CPDA 200"),
    "icresp_maxh2cdata": ("", "ICResp with MAXH2CDATA 100"),
    "connect_cntlid": ("", "an I/O queue's Connect answered with another cntlid"),
    "connect_status": ("", "Connect answered with a vendor-specific error status"),
    "id_nn0": ("", "Identify: NN 0 and no active namespace list"),
    "id_bs_huge": ("", "Identify Namespace: 1 GiB blocks"),
    "id_nsze0": ("", "Identify Namespace: size 0"),
    "id_stall": ("", "Identify Controller never answered"),
    "id_nsze_huge": ("", "Identify Namespace: 2^64 - 1 blocks"),
    "shutdown_stall": ("", "the shutdown (Property Set CC.SHN) never answered"),
    "icresp_stall": ("", "ICReq never answered"),
    "auth_short": ("", "DH-HMAC-CHAP required; each AUTH_Receive answered with just the "
                   "message (shorter than AL), any response taken"),
    "auth_bad_r2": ("", "DH-HMAC-CHAP required; Success1 carries a controller response "
                    "nobody could compute"),
}

# How long a stalled connection waits before giving up on its own.
STALL_MAX_S = 120


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
        self.evil = set(args.evil.split(",")) if args.evil else set()
        unknown = self.evil - set(EVIL_MODES)
        if unknown:
            raise SystemExit("unknown --evil mode(s): %s" % ",".join(sorted(unknown)))
        self.armed = not args.evil_on_signal
        self.tls = None
        if args.tls_cert:
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.minimum_version = ssl.TLSVersion.TLSv1_3
            self.tls.load_cert_chain(args.tls_cert, args.tls_key)
        self.io_seen = 0

    def evil_for(self, opc):
        """The I/O misbehaviour for this read (2) or write (1), if it is time for one."""
        kind = {0x01: "w", 0x02: "r"}.get(opc)
        if kind is None or not self.armed:
            return None
        with self.lock:
            self.io_seen += 1
            if self.io_seen <= self.args.evil_after:
                return None
        for mode in sorted(self.evil):
            if kind in EVIL_MODES[mode][0]:
                return mode
        return None


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
        self.evil = None    # the misbehaviour of the command being served

    def recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return bytes(buf)

    def send_pdu(self, ptype, flags, psh, data=b""):
        self.s.sendall(self.build_pdu(ptype, flags, psh, data))

    def build_pdu(self, ptype, flags, psh, data=b""):
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
        return out

    def hang(self, drain=True):
        """Never answer again; with drain, keep reading (and dropping) what comes."""
        end = time.monotonic() + STALL_MAX_S
        poller = select.poll()
        poller.register(self.s, (select.POLLIN if drain else 0) | select.POLLRDHUP)
        while time.monotonic() < end:
            for _, ev in poller.poll(500):
                if ev & (select.POLLRDHUP | select.POLLHUP | select.POLLERR):
                    raise EOFError
                if drain and not self.s.recv(65536):
                    raise EOFError
        raise EOFError

    def send_broken(self, pdu):
        """The CapsuleResp misbehaviours that break the PDU itself."""
        pdu = bytearray(pdu)
        if self.evil == "bad_hdgst" and self.hdgst:
            pdu[-1] ^= 0xFF
        elif self.evil == "plen_huge":
            struct.pack_into("<I", pdu, 4, 0x7FFFFFFF)
        elif self.evil == "plen_small":
            struct.pack_into("<I", pdu, 4, 8)
        elif self.evil == "hlen_wrong":
            pdu[2] = 16
        elif self.evil in ("close_mid", "stall_half"):
            self.s.sendall(pdu[:len(pdu) // 2])
            if self.evil == "stall_half":
                self.hang()
            self.s.shutdown(socket.SHUT_RDWR)
            raise EOFError
        self.s.sendall(pdu)
        if self.evil == "rsp_dup":
            self.s.sendall(pdu)

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
        if self.evil == "rsp_unknown_cid":
            cid = 0xFFF0
        elif self.evil == "rsp_bogus_status":
            st = status(7, 0xFF)
        psh = struct.pack("<IIHHHH", cdw0, cdw1, 0, self.qid or 0, cid, st)
        self.send_broken(self.build_pdu(RSP, 0, psh))

    def send_r2t(self, cid, ttag, r2to, r2tl):
        self.send_pdu(R2T, 0, struct.pack("<HHII4x", cid, ttag, r2to, r2tl))

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
            if self.evil == "r2t_beyond":
                self.send_r2t(cid, self.ttag, r2to, length + 4096)
            elif self.evil == "r2t_twice":
                self.send_r2t(cid, self.ttag, r2to, n)
            self.send_r2t(cid, self.ttag, r2to, n)
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
        if self.evil == "c2h_early_success":
            chunk = (len(data) + 1) // 2
        off = 0
        while off < len(data):
            n = min(chunk, len(data) - off)
            last = off + n == len(data)
            flags = F_LAST if last else 0
            if last and self.a.c2h_success:
                flags |= F_SUCCESS
            self.send_c2h_pdu(cid, flags, off, data[off:off + n])
            off += n
        return self.a.c2h_success

    def send_c2h_pdu(self, cid, flags, off, part):
        datao = off
        if self.evil == "c2h_offset":
            datao += 512
        elif self.evil == "c2h_beyond":
            part += bytes(512)
        elif self.evil == "c2h_early_success" and off == 0:
            flags = F_SUCCESS
        pdu = bytearray(self.build_pdu(C2H_DATA, flags,
                                       struct.pack("<HHII4x", cid, 0, datao, len(part)), part))
        if self.evil == "c2h_plen":
            struct.pack_into("<I", pdu, 4, len(pdu) + 4)
            pdu += bytes(4)
        elif self.evil == "bad_ddgst" and self.ddgst:
            pdu[-1] ^= 0xFF
        self.s.sendall(pdu)

    def misbehave_first(self, cid, icd):
        """The misbehaviours that come before (or instead of) serving the command."""
        mode = self.evil
        if mode == "stall":
            self.hang()
        elif mode == "stop_reading":
            self.hang(drain=False)
        elif mode == "term":
            self.s.sendall(struct.pack("<BBBBIHI10x", C2H_TERM, 0, 24, 0, 24, 1, 0))
            self.hang()
        elif mode == "type_h2c":
            self.send_pdu(H2C_DATA, F_LAST, struct.pack("<HHII4x", cid, 1, 0, 4), bytes(4))
        elif mode == "type_icreq":
            self.s.sendall(struct.pack("<BBBBIHBBI", ICREQ, 0, 128, 0, 128, 0, 0, 0, 0)
                           + bytes(112))
        elif mode == "type_icresp":
            self.s.sendall(struct.pack("<BBBBIHBBI", ICRESP, 0, 128, 0, 128, 0, 0, 0, 8192)
                           + bytes(112))
        elif mode == "r2t_read" or (mode == "r2t_icd" and icd):
            self.send_r2t(cid, 1, 0, 512)
        elif mode == "c2h_cccid":
            self.send_c2h_pdu(0xFFF0, F_LAST, 0, bytes(512))

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
        if "id_nn0" in self.tgt.evil:
            struct.pack_into("<I", d, 516, 0)
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
        nsze = 0 if "id_nsze0" in self.tgt.evil else ns.num_blocks
        if "id_nsze_huge" in self.tgt.evil:
            nsze = (1 << 64) - 1
        struct.pack_into("<QQQ", d, 0, nsze, nsze, nsze)
        d[25] = 0
        d[26] = 0x10 if ns.ms else 0
        d[27] = 1 if ns.ms else 0
        lbads = 30 if "id_bs_huge" in self.tgt.evil else ns.bs.bit_length() - 1
        struct.pack_into("<I", d, 128, ns.ms | (lbads << 16))
        d[104:120] = bytes(range(1, 17))
        return bytes(d)

    def handle_admin(self, opc, cid, nsid, cdw, icd, sgl_len):
        if opc == 0x06:
            cns = cdw[10] & 0xFF
            if cns == 1 and "id_stall" in self.tgt.evil:
                self.hang()
            if cns == 1:
                data = self.identify_ctrlr()
            elif cns == 2 and "id_nn0" in self.tgt.evil:
                return self.respond(cid, status(0, 2))
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
            if self.evil == "rsp_before_data":
                self.respond(cid)
            if self.send_c2h(cid, bytes(ns.data[off:off + length])):
                return
            if self.evil == "rsp_before_data":
                return
            return self.respond(cid)
        if opc == 0x01:
            if sgl_len != length:
                return self.respond(cid, status(0, 0x0F))
            if self.evil == "rsp_no_data" and not icd:
                return self.respond(cid)
            data = self.get_host_data(cid, length, icd)
            if self.evil != "write_discard":
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
            if "connect_status" in self.tgt.evil:
                return self.respond(cid, status(7, 0xC0))
            if qid == 0:
                with self.tgt.lock:
                    self.cntlid = self.tgt.next_cntlid
                    self.tgt.next_cntlid += 1
                    self.tgt.ctrlrs[self.cntlid] = self
            else:
                if cntlid not in self.tgt.ctrlrs:
                    return self.respond(cid, status(1, 0x82), 1 | (16 << 16))
                self.cntlid = cntlid
                if "connect_cntlid" in self.tgt.evil:
                    return self.respond(cid, 0, self.cntlid + 7)
            atr = (1 << 17) if self.tgt.evil & {"auth_short", "auth_bad_r2"} else 0
            return self.respond(cid, 0, self.cntlid | atr)
        if fctype in (0x05, 0x06):
            return self.handle_auth(cid, sqe, icd, sgl_len, fctype == 0x05)
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
                if (self.cc >> 14) & 3 and "shutdown_stall" in self.tgt.evil:
                    self.hang()
            return self.respond(cid)
        return self.respond(cid, status(0, 1))

    def handle_auth(self, cid, sqe, icd, sgl_len, send):
        """A controller that asks for DH-HMAC-CHAP and checks nothing (SHA-256, null group)."""
        length = struct.unpack_from("<I", sqe, 44)[0]
        if send:
            msg = self.get_host_data(cid, sgl_len, icd)
            self.auth_tid = struct.unpack_from("<H", msg, 4)[0]
            self.auth_next = {0x00: "challenge", 0x02: "success1"}.get(msg[1], "none")
            self.auth_bidir = msg[1] == 0x02 and msg[8] == 1
            return self.respond(cid)
        tid = getattr(self, "auth_tid", 0)
        if getattr(self, "auth_next", "none") == "challenge":
            msg = struct.pack("<BBHHBBBBHI", 1, 1, 0, tid, 32, 0, 1, 0, 0, 7) + bytes(range(32))
        else:
            bad = "auth_bad_r2" in self.tgt.evil and self.auth_bidir
            msg = struct.pack("<BBHHBBB7x", 1, 3, 0, tid, 32, 0, 1 if bad else 0) + \
                (bytes(range(32, 64)) if bad else bytes(32))
        self.auth_next = "none"
        # Just the message, as SPDK's target sends it: fewer bytes than AL.
        assert len(msg) < length
        self.send_c2h(cid, msg)
        return self.respond(cid)

    def serve(self):
        ptype, flags, hdr, _ = self.read_pdu()
        if ptype != ICREQ:
            return
        if "icresp_stall" in self.tgt.evil:
            self.hang()
        dgst = hdr[11]
        self.hdgst = bool(dgst & 1) and not self.a.no_digests
        self.ddgst = bool(dgst & 2) and not self.a.no_digests
        evil = self.tgt.evil
        resp = struct.pack("<HBBI", 1 if "icresp_pfv" in evil else 0,
                           200 if "icresp_cpda" in evil else 0,
                           (1 if self.hdgst else 0) | (2 if self.ddgst else 0),
                           100 if "icresp_maxh2cdata" in evil else self.a.maxh2cdata) + bytes(112)
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
                self.evil = self.tgt.evil_for(opc)
                self.misbehave_first(cid, icd)
                self.handle_io(opc, cid, nsid, cdw, icd, sgl_len)
                self.evil = None


def serve_conn(tgt, sock):
    if tgt.tls is not None:
        try:
            sock.settimeout(10)
            sock = tgt.tls.wrap_socket(sock, server_side=True)
            sock.settimeout(None)
        except (ssl.SSLError, OSError) as e:
            print("fake target: TLS handshake failed: %s" % e, file=sys.stderr, flush=True)
            sock.close()
            return
        print("fake target: TLS handshake completed (%s, %s) without the host's PSK" %
              (sock.version(), sock.cipher()[0]), file=sys.stderr, flush=True)
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
    p.add_argument("--evil", default="",
                   help="misbehaviours, comma separated: " + ", ".join(EVIL_MODES))
    p.add_argument("--evil-after", type=int, default=0,
                   help="serve this many reads and writes well before the I/O misbehaviours")
    p.add_argument("--evil-on-signal", action="store_true",
                   help="the I/O misbehaviours wait for SIGUSR1")
    p.add_argument("--list-evil", action="store_true", help="print the modes and exit")
    p.add_argument("--tls-cert", help="TLS 1.3 with this certificate and no PSK (an impostor)")
    p.add_argument("--tls-key", help="the private key of --tls-cert")
    args = p.parse_args()
    if args.list_evil:
        for mode, (kind, what) in EVIL_MODES.items():
            print("%-18s %-3s %s" % (mode, kind or "-", what))
        return
    tgt = Target(args)
    signal.signal(signal.SIGUSR1, lambda *_: setattr(tgt, "armed", True))
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
