#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write the seed corpora of the fuzz harnesses (test/fuzz/corpus/<harness>/).

    test/fuzz/gen_corpus.py [CORPUS_DIR]

Each seed is a valid input the harness walks all the way through; the input
formats are described at the top of each harness (fuzz_*.c).
Rerun after changing a format; the files are deterministic.
"""
import os
import struct
import sys

# NVMe/TCP PDU types and flags (include/gga/nvme_tcp.h).
ICREQ, TERM_REQ, CAPSULE_CMD, H2C_DATA = 0x00, 0x02, 0x04, 0x06
F_HDGST, F_DDGST, F_DATA_LAST = 0x1, 0x2, 0x4
SGL_INCAPSULE, SGL_TRANSPORT = 0x01, 0x5A
SGL_FLAGS = 0x40  # PSDT = SGL, MPTR contiguous

# Opcodes (include/gga/nvme_spec.h).
FABRICS = 0x7F
FCT_PROP_SET, FCT_CONNECT, FCT_PROP_GET = 0x00, 0x01, 0x04
ADM_GET_LOG, ADM_IDENTIFY, ADM_ABORT, ADM_SET_FEAT, ADM_GET_FEAT = 0x02, 0x06, 0x08, 0x09, 0x0A
ADM_AER, ADM_KEEP_ALIVE = 0x0C, 0x18
IO_FLUSH, IO_WRITE, IO_READ, IO_WZ, IO_DSM = 0x00, 0x01, 0x02, 0x08, 0x09

# CC.EN with 64-byte SQEs and 16-byte CQEs.
CC_ENABLE = 0x00460001

SUBNQN = b"nqn.2016-06.io.gga:fuzz"
DISC_NQN = b"nqn.2014-08.org.nvmexpress.discovery"
HOSTNQN = b"nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def sqe(opc, cid=1, nsid=0, sgl_id=SGL_TRANSPORT, sgl_addr=0, sgl_len=0, cdw10=0, cdw11=0,
        cdw12=0, cdw13=0, flags=SGL_FLAGS, fctype=None):
    """A 64-byte submission queue entry with an unkeyed SGL descriptor."""
    cmd = bytearray(64)
    struct.pack_into("<BBH", cmd, 0, opc, flags, cid)
    if fctype is not None:
        cmd[4] = fctype
    else:
        struct.pack_into("<I", cmd, 4, nsid)
    struct.pack_into("<QI3xB", cmd, 24, sgl_addr, sgl_len, sgl_id)
    if fctype is None:
        struct.pack_into("<IIII", cmd, 40, cdw10, cdw11, cdw12, cdw13)
    return cmd


def connect_sqe(qid, sqsize=31, kato=0):
    cmd = sqe(FABRICS, cid=0, fctype=FCT_CONNECT, sgl_id=SGL_INCAPSULE, sgl_len=1024)
    struct.pack_into("<HHHBxI", cmd, 40, 0, qid, sqsize, 0, kato)
    return cmd


def connect_data(subnqn, cntlid=0xFFFF):
    data = bytearray(1024)
    data[0:16] = b"\xab" * 16
    struct.pack_into("<H", data, 16, cntlid)
    data[256:256 + len(subnqn)] = subnqn
    data[512:512 + len(HOSTNQN)] = HOSTNQN
    return data


def prop_sqe(set_, ofst, value=0, size8=0):
    cmd = sqe(FABRICS, fctype=FCT_PROP_SET if set_ else FCT_PROP_GET, sgl_len=0)
    struct.pack_into("<B3xIQ", cmd, 40, size8, ofst, value)
    return cmd


# ---- fuzz_tcp_pdu ----

def pdu(ptype, hdr_rest, data=b"", hdgst=False, ddgst=False, pad=0, flags=0):
    """One PDU: common header + rest of header [+ HDGST] [+ pad + data [+ DDGST]]."""
    hlen = 8 + len(hdr_rest)
    flags |= (F_HDGST if hdgst else 0) | (F_DDGST if ddgst and data else 0)
    pdo = 0
    plen = hlen + (4 if hdgst else 0)
    if data:
        pdo = plen + pad
        plen = pdo + len(data) + (4 if ddgst else 0)
    hdr = struct.pack("<BBBBI", ptype, flags, hlen, pdo, plen) + hdr_rest
    out = hdr
    if hdgst:
        out += struct.pack("<I", crc32c(hdr))
    if data:
        out += b"\0" * pad + data
        if ddgst:
            out += struct.pack("<I", crc32c(data))
    return out


def icreq(dgst=0, hpda=0):
    return pdu(ICREQ, struct.pack("<HBBI", 0, hpda, dgst, 0) + b"\0" * 112)


def capsule(cmd, data=b"", hdgst=False, ddgst=False, pad=0):
    return pdu(CAPSULE_CMD, bytes(cmd), data, hdgst, ddgst, pad)


def h2c(cid, ttag, datao, data, hdgst=False, ddgst=False, last=False):
    rest = struct.pack("<HHII4x", cid, ttag, datao, len(data))
    return pdu(H2C_DATA, rest, data, hdgst, ddgst, flags=F_DATA_LAST if last else 0)


def term_req():
    return pdu(TERM_REQ, struct.pack("<H4s10x", 1, b"\0" * 4))


def tcp_pdu_seeds():
    block = bytes(range(256)) * 2
    write_icd = sqe(IO_WRITE, cid=7, nsid=1, sgl_id=SGL_INCAPSULE, sgl_len=512)
    write_r2t = sqe(IO_WRITE, cid=9, nsid=1, sgl_len=8192, cdw12=15)
    read = sqe(IO_READ, cid=3, nsid=1, sgl_len=4096, cdw12=7)
    conn = connect_sqe(0)
    seeds = {}
    # Config byte 0: the stream starts with the ICReq.
    seeds["icreq"] = b"\x00" + icreq()
    seeds["icreq_connect"] = b"\x00" + icreq() + capsule(conn, connect_data(SUBNQN))
    seeds["icreq_digests_connect"] = (b"\x00" + icreq(dgst=3) +
                                      capsule(conn, connect_data(SUBNQN), True, True))
    seeds["icreq_hdgst_write_icd"] = (b"\x00" + icreq(dgst=1) +
                                      capsule(write_icd, block, hdgst=True))
    seeds["write_r2t_h2c"] = (b"\x00" + icreq() + capsule(write_r2t) +
                              h2c(9, 0, 0, block * 8) + h2c(9, 0, 4096, block * 8, last=True))
    seeds["write_r2t_h2c_digests"] = (b"\x00" + icreq(dgst=3) +
                                      capsule(write_r2t, hdgst=True) +
                                      h2c(9, 0, 0, block * 8, True, True) +
                                      h2c(9, 0, 4096, block * 8, True, True, last=True))
    # Config byte 0x09: ICReq already done, no digests, I/O queue limits.
    seeds["io_write_icd_read"] = (b"\x09" + capsule(write_icd, block) + capsule(read) +
                                  term_req())
    seeds["io_write_icd_padded"] = b"\x09" + capsule(write_icd, block, pad=8)
    # Config byte 0x0f: ICReq done, both digests, I/O queue.
    seeds["io_digests_write_r2t"] = (b"\x0f" + capsule(write_icd, block, True, True) +
                                     capsule(write_r2t, hdgst=True) +
                                     h2c(9, 0, 0, block * 16, True, True, last=True))
    return seeds


# ---- fuzz_nvmf_cmd ----

def rec(cmd, icd=b"", io=False):
    return bytes([1 if io else 0]) + bytes(cmd) + struct.pack("<H", len(icd)) + icd


CFG_ADMIN, CFG_DISCOVERY, CFG_IO = 1, 2, 4


def nvmf_cmd_seeds():
    block = bytes(range(256)) * 2
    seeds = {}
    # The host does everything itself: Connect, enable, Identify.
    seeds["connect_enable_identify"] = (
        b"\x00" + rec(connect_sqe(0, kato=10000), connect_data(SUBNQN)) +
        rec(prop_sqe(True, 0x14, CC_ENABLE)) + rec(prop_sqe(False, 0x1C)) +
        rec(prop_sqe(False, 0x00, size8=1)) +
        rec(sqe(ADM_IDENTIFY, sgl_len=4096, cdw10=1)))
    cfg = bytes([CFG_ADMIN | CFG_IO])
    seeds["admin_mix"] = (
        cfg + rec(sqe(ADM_IDENTIFY, sgl_len=4096, cdw10=1)) +
        rec(sqe(ADM_IDENTIFY, nsid=1, sgl_len=4096, cdw10=0)) +
        rec(sqe(ADM_IDENTIFY, nsid=1, sgl_len=4096, cdw10=3)) +
        rec(sqe(ADM_IDENTIFY, sgl_len=4096, cdw10=2)) +
        rec(sqe(ADM_GET_LOG, nsid=0xFFFFFFFF, sgl_len=512, cdw10=0x02 | (127 << 16))) +
        rec(sqe(ADM_GET_LOG, sgl_len=4096, cdw10=0x04 | (1023 << 16))) +
        rec(sqe(ADM_GET_FEAT, cdw10=0x07)) + rec(sqe(ADM_SET_FEAT, cdw10=0x07, cdw11=0x00030003)) +
        rec(sqe(ADM_SET_FEAT, cdw10=0x0F, cdw11=5000)) + rec(sqe(ADM_GET_FEAT, cdw10=0x0B)) +
        rec(sqe(ADM_AER, cid=20)) + rec(sqe(ADM_ABORT, cdw10=20)) +
        rec(sqe(ADM_KEEP_ALIVE)) + rec(prop_sqe(True, 0x14, CC_ENABLE | (1 << 14))))
    seeds["io_mix"] = (
        cfg + rec(sqe(IO_WRITE, nsid=1, sgl_id=SGL_INCAPSULE, sgl_len=512), block, io=True) +
        rec(sqe(IO_READ, nsid=1, sgl_len=1024, cdw10=0, cdw12=1), io=True) +
        rec(sqe(IO_WRITE, nsid=1, sgl_len=1024, cdw10=4, cdw12=1), io=True) +
        rec(sqe(IO_WZ, nsid=1, cdw10=8, cdw12=7), io=True) +
        rec(sqe(IO_FLUSH, nsid=1), io=True) +
        rec(sqe(IO_DSM, nsid=1, sgl_id=SGL_INCAPSULE, sgl_len=32, cdw10=1, cdw11=4),
            struct.pack("<IIQ", 0, 8, 16) + struct.pack("<IIQ", 0, 0, 200), io=True) +
        rec(sqe(IO_READ, nsid=2, sgl_len=512), io=True))
    seeds["discovery"] = (
        bytes([CFG_ADMIN | CFG_DISCOVERY]) + rec(sqe(ADM_IDENTIFY, sgl_len=4096, cdw10=1)) +
        rec(sqe(ADM_GET_LOG, sgl_len=1024, cdw10=0x70 | (255 << 16))) +
        rec(sqe(ADM_GET_LOG, sgl_len=1024, cdw10=0x70 | (255 << 16), cdw12=1024)))
    seeds["io_connect_by_host"] = (
        bytes([CFG_ADMIN]) + rec(connect_sqe(1), connect_data(SUBNQN, 1), io=True) +
        rec(sqe(IO_READ, nsid=1, sgl_len=512), io=True))
    return seeds


# ---- fuzz_tcp_conn ----

TC_LEAVE_SHUT, TC_LEAVE_READ, TC_STUCK, TC_SMALL_SNDBUF = 1, 2, 4, 8
TC_TWO, TC_FIRST_LEAVES, TC_PDU_WISE, TC_TIME_JUMP = 16, 32, 64, 128


def admin_session(dgst=0, kato=0):
    """ICReq, admin Connect, CC.EN: what every controller starts with."""
    hd, dd = bool(dgst & 1), bool(dgst & 2)
    return (icreq(dgst=dgst) + capsule(connect_sqe(0, kato=kato), connect_data(SUBNQN), hd, dd) +
            capsule(prop_sqe(True, 0x14, CC_ENABLE), hdgst=hd))


def io_connect(dgst=0):
    """ICReq and the Connect of I/O queue 1 of controller 1."""
    return icreq(dgst=dgst) + capsule(connect_sqe(1), connect_data(SUBNQN, 1), bool(dgst & 1),
                                      bool(dgst & 2))


def io_session(dgst=0):
    """An I/O queue of controller 1: writes in-capsule and by R2T (TTAG 0: the host waits for
    each answer), reads back, write zeroes, flush, DSM."""
    hd, dd = bool(dgst & 1), bool(dgst & 2)
    block = bytes(range(256)) * 2
    big = bytes((i * 7) & 0xFF for i in range(8192))
    return (io_connect(dgst) +
            capsule(sqe(IO_WRITE, cid=1, nsid=1, sgl_id=SGL_INCAPSULE, sgl_len=512), block, hd,
                    dd) +
            capsule(sqe(IO_WRITE, cid=2, nsid=1, sgl_len=8192, cdw10=8, cdw12=15), hdgst=hd) +
            h2c(2, 0, 0, big[:4096], hd, dd) + h2c(2, 0, 4096, big[4096:], hd, dd, last=True) +
            capsule(sqe(IO_READ, cid=3, nsid=1, sgl_len=8192, cdw10=8, cdw12=15), hdgst=hd) +
            capsule(sqe(IO_READ, cid=4, nsid=1, sgl_len=512), hdgst=hd) +
            capsule(sqe(IO_WZ, cid=5, nsid=1, cdw10=32, cdw12=7), hdgst=hd) +
            capsule(sqe(IO_FLUSH, cid=6, nsid=1), hdgst=hd) +
            capsule(sqe(IO_DSM, cid=7, nsid=1, sgl_id=SGL_INCAPSULE, sgl_len=16, cdw10=0, cdw11=4),
                    struct.pack("<IIQ", 0, 8, 64), hd, dd))


def two(flags, seed, first, second):
    return bytes([flags | TC_TWO, seed]) + struct.pack("<H", len(first)) + first + second


def tcp_conn_seeds():
    seeds = {}
    admin = (admin_session(kato=10000) + capsule(prop_sqe(False, 0x1C)) +
             capsule(sqe(ADM_IDENTIFY, sgl_len=4096, cdw10=1)) +
             capsule(sqe(ADM_IDENTIFY, nsid=1, sgl_len=4096, cdw10=0)) +
             capsule(sqe(ADM_GET_LOG, nsid=0xFFFFFFFF, sgl_len=512, cdw10=0x02 | (127 << 16))) +
             capsule(sqe(ADM_SET_FEAT, cdw10=0x07, cdw11=0x00030003)) +
             capsule(sqe(ADM_AER, cid=20)) + capsule(sqe(ADM_KEEP_ALIVE, cid=21)))
    seeds["admin"] = bytes([TC_PDU_WISE, 0]) + admin
    seeds["admin_glued"] = bytes([0, 0]) + admin
    seeds["admin_chunked"] = bytes([TC_PDU_WISE | TC_LEAVE_SHUT, 7]) + admin
    seeds["admin_bytewise_stuck"] = bytes([TC_STUCK | TC_SMALL_SNDBUF | TC_LEAVE_READ, 77]) + admin
    seeds["admin_digests"] = (bytes([TC_PDU_WISE | TC_LEAVE_SHUT, 0]) + admin_session(3) +
                              capsule(sqe(ADM_IDENTIFY, sgl_len=4096, cdw10=1), hdgst=True))
    seeds["discovery"] = (bytes([TC_PDU_WISE, 0]) + icreq() +
                          capsule(connect_sqe(0), connect_data(DISC_NQN)) +
                          capsule(prop_sqe(True, 0x14, CC_ENABLE)) +
                          capsule(sqe(ADM_GET_LOG, sgl_len=1024, cdw10=0x70 | (255 << 16))))
    seeds["io"] = two(TC_PDU_WISE, 0, admin_session(), io_session())
    seeds["io_digests"] = two(TC_PDU_WISE | TC_LEAVE_SHUT, 0, admin_session(3), io_session(3))
    seeds["io_chunked_small_sndbuf"] = two(TC_PDU_WISE | TC_SMALL_SNDBUF, 3, admin_session(),
                                           io_session())
    seeds["io_admin_leaves"] = two(TC_PDU_WISE | TC_FIRST_LEAVES, 0, admin_session(), io_session())
    seeds["io_glued"] = two(TC_LEAVE_READ, 0, admin_session(), io_session())
    seeds["term_after_connect"] = (bytes([TC_PDU_WISE | TC_LEAVE_SHUT, 0]) + admin_session() +
                                   term_req())
    seeds["icreq_timeout"] = bytes([TC_TIME_JUMP | TC_LEAVE_SHUT, 0])
    seeds["linger_after_term"] = (bytes([TC_PDU_WISE | TC_TIME_JUMP | TC_LEAVE_READ, 0]) +
                                  admin_session() + icreq())
    seeds["keep_alive_expires"] = two(TC_PDU_WISE | TC_TIME_JUMP, 0, admin_session(kato=1000),
                                      io_session())
    ttag_writes = b"".join(capsule(sqe(IO_WRITE, cid=c, nsid=1, sgl_len=131072, cdw12=255))
                           for c in range(5))
    seeds["io_buffer_wait"] = two(TC_PDU_WISE, 0, admin_session(),
                                  io_connect() + ttag_writes +
                                  h2c(0, 0, 0, bytes(131072), last=True))
    seeds["io_queue_full"] = two(TC_PDU_WISE | TC_LEAVE_SHUT, 0, admin_session(),
                                 io_connect() +
                                 b"".join(capsule(sqe(IO_WRITE, cid=c, nsid=1, sgl_len=512))
                                          for c in range(33)))
    seeds["io_read_128k"] = two(TC_PDU_WISE, 0, admin_session(3),
                                io_session(3) + capsule(sqe(IO_READ, cid=9, nsid=1,
                                                            sgl_len=131072, cdw12=255),
                                                        hdgst=True))
    seeds["io_digests_chunked"] = two(0, 5, admin_session(3), io_session(3))
    seeds["h2c_without_r2t"] = (bytes([TC_PDU_WISE | TC_LEAVE_SHUT, 0]) + admin_session() +
                                h2c(1, 0, 0, b"\0" * 512, last=True))
    return seeds


# ---- fuzz_rdma_capsule ----

R_CONNECT, R_CAPSULE, R_SEND_OK, R_SEND_ERR, R_SEND_ALL, R_DISCONNECT, R_CM_EVENT, R_TIME = range(8)
R_NO_POLL = 0x10
SGL_KEYED, SGL_KEYED_INV = 0x40, 0x4F


def keyed_sqe(opc, cid, length, nsid=1, cdw10=0, cdw12=0, sgl_id=SGL_KEYED):
    """A 64-byte SQE whose data is a keyed SGL data block (host address, 3-byte length, key)."""
    cmd = sqe(opc, cid=cid, nsid=nsid, cdw10=cdw10, cdw12=cdw12)
    struct.pack_into("<Q", cmd, 24, 0x10000000)
    cmd[32:35] = length.to_bytes(3, "little")
    struct.pack_into("<IB", cmd, 35, 0x1234, sgl_id)
    return cmd


def r_op(op, host=0):
    return bytes([op | (host << 3)])


def r_connect(host, qid, entries=32, cntlid=0xFFFF, depth=16, resources=16):
    """A connect request; depth and resources: the host's initiator depth and responder
    resources."""
    return r_op(R_CONNECT, host) + struct.pack("<HHHHH22x", 0, qid, entries, entries - 1,
                                               cntlid) + bytes([depth, resources])


def r_capsule(host, cmd, data=b""):
    return r_op(R_CAPSULE, host) + struct.pack("<H", len(cmd) + len(data)) + bytes(cmd) + data


def r_cmd(host, cmd, data=b""):
    """A capsule, then the target's work requests all complete (the host answers at once)."""
    return r_capsule(host, cmd, data) + r_op(R_SEND_ALL, host)


def r_admin(host=0, kato=0):
    return (r_connect(host, 0) + r_cmd(host, connect_sqe(0, kato=kato), connect_data(SUBNQN)) +
            r_cmd(host, prop_sqe(True, 0x14, CC_ENABLE)))


def r_io_connect(host=1, entries=32, depth=16):
    return (r_connect(host, 1, entries, cntlid=1, depth=depth) +
            r_cmd(host, connect_sqe(1, sqsize=entries - 1), connect_data(SUBNQN, 1)))


def r_io_cmds(host=1):
    block = bytes(range(256)) * 2
    return (r_cmd(host, sqe(IO_WRITE, cid=1, nsid=1, sgl_id=SGL_INCAPSULE, sgl_len=512), block) +
            r_capsule(host, keyed_sqe(IO_WRITE, 2, 8192, cdw10=8, cdw12=15)) +
            r_op(R_SEND_OK, host) + b"\x5a" + r_op(R_SEND_ALL, host) +
            r_cmd(host, keyed_sqe(IO_READ, 3, 8192, cdw10=8, cdw12=15)) +
            r_cmd(host, keyed_sqe(IO_READ, 4, 65536, cdw12=127, sgl_id=SGL_KEYED_INV)) +
            r_cmd(host, sqe(IO_WZ, cid=5, nsid=1, cdw10=32, cdw12=7)) +
            r_cmd(host, sqe(IO_FLUSH, cid=6, nsid=1)) +
            r_cmd(host, sqe(IO_DSM, cid=7, nsid=1, sgl_id=SGL_INCAPSULE, sgl_len=16, cdw11=4),
                  struct.pack("<IIQ", 0, 8, 64)))


def r_io(host=1):
    return r_io_connect(host) + r_io_cmds(host)


def rdma_capsule_seeds():
    seeds = {}
    admin = (r_admin(kato=10000) + r_cmd(0, prop_sqe(False, 0x1C)) +
             r_cmd(0, keyed_sqe(ADM_IDENTIFY, 1, 4096, nsid=0, cdw10=1)) +
             r_cmd(0, keyed_sqe(ADM_IDENTIFY, 2, 4096, cdw10=0)) +
             r_cmd(0, keyed_sqe(ADM_GET_LOG, 3, 512, nsid=0xFFFFFFFF, cdw10=0x02 | (127 << 16))) +
             r_cmd(0, sqe(ADM_SET_FEAT, cid=4, cdw10=0x07, cdw11=0x00030003)) +
             r_capsule(0, sqe(ADM_AER, cid=20)) + r_cmd(0, sqe(ADM_KEEP_ALIVE, cid=21)))
    # Byte 0: the device (bits 0-1: max_sge 1, 2, 4, 16; bit 2: 64 work requests per queue;
    # bit 3: no flush on the error state).
    seeds["admin"] = b"\x03" + admin
    seeds["admin_one_sge"] = b"\x00" + admin + r_op(R_DISCONNECT)
    seeds["io"] = b"\x03" + r_admin() + r_io()
    seeds["io_one_sge_small_queues"] = b"\x04" + r_admin() + r_io()
    seeds["io_admin_leaves"] = (b"\x01" + r_admin() + r_io_connect() + r_op(R_DISCONNECT, 0) +
                                r_io_cmds())
    seeds["read_error"] = (b"\x03" + r_admin() + r_io_connect() +
                           r_capsule(1, keyed_sqe(IO_WRITE, 2, 8192, cdw12=15)) +
                           r_op(R_SEND_ERR, 1) + b"\x00")
    seeds["pipelined"] = (b"\x02" + r_admin() + r_connect(1, 1, 4, cntlid=1) +
                          r_cmd(1, connect_sqe(1, sqsize=3), connect_data(SUBNQN, 1)) +
                          b"".join(r_op(R_CAPSULE | R_NO_POLL, 1) +
                                   r_capsule(1, keyed_sqe(IO_READ, c, 4096, cdw12=7))[1:]
                                   for c in range(6)) + r_op(R_SEND_ALL, 1))
    # A device that never flushes: the close timer gives up on a READ in flight.
    seeds["no_flush_timeout"] = (b"\x0b" + r_admin() + r_io_connect() +
                                 r_capsule(1, keyed_sqe(IO_WRITE, 2, 8192, cdw12=15)) +
                                 r_op(R_DISCONNECT, 1) + r_op(R_TIME) + r_op(R_SEND_ALL, 1))
    seeds["keep_alive_expires"] = b"\x03" + r_admin(kato=1000) + r_op(R_TIME)
    # Five 128 KiB writes whose READs never complete hold the 64 data buffers: one waits.
    seeds["buffer_wait"] = (b"\x03" + r_admin() + r_io_connect() +
                            b"".join(r_capsule(1, keyed_sqe(IO_WRITE, c, 131072, cdw12=255))
                                     for c in range(5)) + r_op(R_SEND_ALL, 1) +
                            r_op(R_SEND_ALL, 1))
    # One READ credit: writes wait for each other's READ.
    seeds["read_credits"] = (b"\x03" + r_admin() + r_io_connect(depth=1) +
                             b"".join(r_capsule(1, keyed_sqe(IO_WRITE, c, 8192, cdw12=15))
                                      for c in range(3)) +
                             (r_op(R_SEND_OK, 1) + b"\x11") * 6)
    # One SGE, 64 work requests per queue: eight 64 KiB reads (72 work requests) wait.
    seeds["send_queue_full"] = (b"\x04" + r_admin() + r_io_connect() +
                                b"".join(r_capsule(1, keyed_sqe(IO_READ, c, 65536, cdw12=127))
                                         for c in range(8)) + r_op(R_SEND_ALL, 1) +
                                r_op(R_SEND_ALL, 1))
    # Two capsule buffers, four requests: responses not yet sent keep requests busy.
    seeds["pending_capsules"] = (b"\x03" + r_admin() + r_io_connect(entries=2) +
                                 b"".join(r_capsule(1, sqe(IO_FLUSH, cid=c, nsid=1))
                                          for c in range(6)) + r_op(R_SEND_ALL, 1))
    seeds["queues_too_small"] = b"\x14" + r_connect(0, 0)
    seeds["accept_fails"] = b"\x23" + r_connect(0, 0)
    seeds["partial_post"] = (b"\x43" + r_admin() +
                             r_cmd(0, keyed_sqe(ADM_IDENTIFY, 1, 4096, nsid=0, cdw10=1)))
    seeds["rejected"] = b"\x03" + r_connect(0, 0, entries=1) + r_connect(1, 200)
    return seeds


def dhchap_seeds():
    """fuzz_dhchap: records [op][len16][data]; messages as nvme_auth.h lays them out."""
    def rec(op, data=b"", length=None):
        return struct.pack("<BH", op, len(data) if length is None else length) + data

    def negotiate(tid=1, hashes=(3, 2, 1), groups=(0,), sc_c=0):
        desc = bytes([1, 0, len(hashes), len(groups)]) + bytes(hashes).ljust(30, b"\0") + \
            bytes(groups).ljust(30, b"\0")
        return struct.pack("<BBHHBB", 0, 0, 0, tid, sc_c, 1) + desc

    def reply(tid=1, hl=64, cvalid=0, seq=0):
        return struct.pack("<BBHHBBBBHI", 1, 2, 0, tid, hl, 0, cvalid, 0, 0, seq) + bytes(2 * hl)

    def challenge(tid=3, hl=32, hash_id=1, dhg=0, seq=5):
        return struct.pack("<BBHHBBBBHI", 1, 1, 0, tid, hl, 0, hash_id, dhg, 0, seq) + bytes(hl)

    def success1(tid=3, hl=32, rvalid=0):
        return struct.pack("<BBHHBBB7s", 1, 3, 0, tid, hl, 0, rvalid, b"") + bytes(hl)

    seeds = {}
    seeds["ctrlr_wrong_reply"] = (b"\x00" + rec(0, negotiate()) + rec(1, length=1024) +
                                  rec(0, reply()) + rec(1, length=1024))
    seeds["ctrlr_bidir_reply"] = (b"\x02" + rec(0, negotiate(hashes=(1,))) + rec(1, length=1024) +
                                  rec(0, reply(hl=32, cvalid=1, seq=9)) + rec(1, length=1024))
    seeds["ctrlr_out_of_order"] = (b"\x00" + rec(1, length=64) + rec(0, reply()) +
                                   rec(0, negotiate(sc_c=1)) + rec(1, length=8))
    seeds["ctrlr_reauth"] = (b"\x00" + rec(0, negotiate()) + rec(0, negotiate(tid=2)) +
                             rec(1, length=1024) + rec(0, struct.pack("<BBHHBB", 0, 0xF0, 0, 2, 1, 1)))
    seeds["host_unidir"] = (b"\x00" + rec(3, length=1024) + rec(2, challenge()) +
                            rec(3, length=1024) + rec(2, success1()) + rec(3, length=64))
    seeds["host_bidir"] = (b"\x02" + rec(3, length=1024) + rec(2, challenge(hash_id=3, hl=64)) +
                           rec(3, length=1024) + rec(2, success1(hl=64, rvalid=1)) +
                           rec(3, length=64))
    seeds["host_failure1"] = (b"\x00" + rec(3, length=1024) +
                              rec(2, struct.pack("<BBHHBB", 0, 0xF1, 0, 3, 1, 4)))
    return seeds


def tls_seeds():
    """fuzz_tls: a configuration byte, then records [op][arg] (or forged bytes)."""
    def ops(*pairs):
        return b"".join(bytes(p) for p in pairs)

    seeds = {}
    seeds["sha256_mixed"] = b"\x00" + ops((0, 200), (1, 50), (3, 0), (2, 0), (0, 255),
                                          (1, 255), (2, 0), (0, 1), (1, 0))
    seeds["sha384_large"] = b"\x01" + ops(*([(0, 255)] * 12 + [(1, 255)] * 6 + [(2, 0)]))
    seeds["small_reads"] = b"\x00" + ops(*([(0, 30), (1, 0), (1, 1), (3, 7)] * 8))
    seeds["forged_data"] = b"\x02" + bytes([0x17, 3, 3, 0, 32]) + bytes(32)
    seeds["forged_alert"] = b"\x02" + bytes([0x15, 3, 3, 0, 2, 2, 40])
    return seeds


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")
    for harness, seeds in (("fuzz_tcp_pdu", tcp_pdu_seeds()), ("fuzz_nvmf_cmd", nvmf_cmd_seeds()),
                           ("fuzz_tcp_conn", tcp_conn_seeds()),
                           ("fuzz_rdma_capsule", rdma_capsule_seeds()),
                           ("fuzz_dhchap", dhchap_seeds()), ("fuzz_tls", tls_seeds())):
        d = os.path.join(root, harness)
        os.makedirs(d, exist_ok=True)
        for name, blob in seeds.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(blob)
        print(f"{d}: {len(seeds)} seeds")


if __name__ == "__main__":
    main()
