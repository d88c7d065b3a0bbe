#!/usr/bin/env python3
"""NVMe/TCP over TLS 1.3 with a PSK, with OpenSSL's own command-line client
as the TLS peer: `openssl s_client` does the handshake and the records, and
this script speaks NVMe/TCP (nvme_tcp_client.py) through it, over a socket
pair that is s_client's stdin and stdout. So gga_tgt's secure channel meets
a TLS implementation configured by other hands than gga's host library, and
the PSK identity and TLS PSK come from tls_kat.py, the Python derivation the
unit tests' known answers come from (not from gga's code).

  nvme_tls_peer.py gen-key --hash 1|2 [--hh 0|1|2]
      Print a fresh NVMeTLSkey-1 interchange PSK: --hash 1 a 32-byte key
      (TLS_AES_128_GCM_SHA256), 2 a 48-byte one (TLS_AES_256_GCM_SHA384);
      --hh the interchange hash (default: the same as --hash).
  nvme_tls_peer.py connect --port P --key KEY --hostnqn H --subnqn S
        [--version 0|1] [--identity-hostnqn H2] [--identity-subnqn S2]
        [--identity TEXT]
      TLS handshake offering the identity of (identity host, identity
      subsystem; by default the Connect's) with its TLS PSK (--identity:
      send TEXT as the identity instead, with the same PSK), then ICReq,
      Fabrics Connect of the admin queue as H to S, and Property Get CAP.
      Prints one line: "connected: ..." (exit 0), "refused: ..." for a
      Connect status (exit 1), "closed: ..." when the target closed the
      connection before answering (exit 1: a refused handshake), or an
      error (exit 2). OpenSSL 3.0's s_client offers an external PSK with
      SHA-256 only (its -psk session is TLS_AES_128_GCM_SHA256), so keys of
      --hash 1; gga's host covers SHA-384.
  nvme_tls_peer.py identity --key KEY --hostnqn H --subnqn S [--version 0|1]
      Print the PSK identity and, after a space, the TLS PSK in hex (what a
      server holding that key offers: openssl s_server -psk_identity -psk).
  nvme_tls_peer.py discovery --port P --hostnqn H
      Plaintext: the discovery log for H, one line per entry:
      "<subnqn> <trsvcid> treq=<TREQ> sectype=<TSAS byte 0>".
"""
import argparse
import base64
import os
import socket
import struct
import subprocess
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "unit", "lib", "tls"))
import nvme_tcp_client as tc  # noqa: E402
import tls_kat  # noqa: E402

CAP = 0x00


def parse_key(text):
    parts = text.strip().split(":")
    if len(parts) != 4 or parts[0] != "NVMeTLSkey-1" or parts[3] != "":
        raise ValueError("not an NVMeTLSkey-1 interchange PSK")
    raw = base64.b64decode(parts[2])
    key, crc = raw[:-4], raw[-4:]
    if zlib.crc32(key).to_bytes(4, "little") != crc or len(key) not in (32, 48):
        raise ValueError("bad key length or CRC")
    return int(parts[1]), key


def derive(text, hostnqn, subnqn, version):
    hh, key = parse_key(text)
    ch = tls_kat.cipher_hash(key)
    r = tls_kat.retained(hh, key, hostnqn, "rfc8446")
    dig = tls_kat.digest(ch, r, hostnqn, subnqn)
    ident = tls_kat.identity(version, ch, hostnqn, subnqn, dig)
    return ident, tls_kat.tls_psk(ch, r, version, ident, dig, "rfc8446"), ch


def cmd_gen_key(args):
    n = 32 if args.hash == 1 else 48
    hh = args.hash if args.hh is None else args.hh
    print(tls_kat.interchange(hh, os.urandom(n)))
    return 0


def cmd_connect(args):
    ih = args.identity_hostnqn or args.hostnqn
    isub = args.identity_subnqn or args.subnqn
    ident, psk, ch = derive(args.key, ih, isub, args.version)
    if ch != 1:
        print("error: s_client offers external PSKs with SHA-256 only")
        return 2
    ident = args.identity or ident
    cipher = tls_kat.CIPHERS[ch]
    ours, theirs = socket.socketpair()
    proc = subprocess.Popen(
        ["openssl", "s_client", "-connect", "127.0.0.1:%d" % args.port, "-tls1_3",
         "-ciphersuites", cipher, "-psk_identity", ident, "-psk", psk.hex(), "-quiet",
         "-no_ign_eof", "-nocommands", "-no_ticket"],
        stdin=theirs, stdout=theirs, stderr=subprocess.PIPE)
    theirs.close()
    rc = 2
    try:
        try:
            conn = tc.Conn(None, None, sock=ours, timeout=args.timeout)
        except tc.Closed:
            print("closed: the target closed the connection before the ICResp")
            return 1
        cpl = conn.connect(args.subnqn, args.hostnqn)
        if not cpl.ok:
            print("refused: Connect status SCT %d SC 0x%02x" % (cpl.sct, cpl.sc))
            return 1
        pcpl, cap = conn.prop_get(CAP, size8=True)
        if not pcpl.ok:
            print("error: Property Get CAP: %r" % pcpl)
            return 2
        print("connected: cntlid %d, CAP 0x%x, identity %s, %s" %
              (cpl.cdw0 & 0xFFFF, cap, ident, cipher))
        rc = 0
    except tc.Closed as e:
        print("closed: %s" % e)
        rc = 1
    except (tc.Fail, OSError) as e:
        print("error: %s" % e)
    finally:
        ours.close()
        try:
            _, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        if rc != 0 and err:
            sys.stderr.write(err.decode(errors="replace"))
    return rc


def cmd_identity(args):
    ident, psk, _ = derive(args.key, args.hostnqn, args.subnqn, args.version)
    print("%s %s" % (ident, psk.hex()))
    return 0


def cmd_discovery(args):
    conn = tc.Conn("127.0.0.1", args.port, timeout=args.timeout)
    tc.expect(conn.connect(tc.DISCOVERY_NQN, args.hostnqn).ok, "discovery Connect")
    conn.enable(discovery=True)
    cpl, hdr = conn.get_log(0x70, 1024)
    tc.expect(cpl.ok, "discovery log header: %r" % cpl)
    numrec = struct.unpack_from("<Q", hdr, 8)[0]
    cpl, log = conn.get_log(0x70, 1024 * (1 + numrec))
    tc.expect(cpl.ok, "discovery log: %r" % cpl)
    for i in range(numrec):
        e = log[1024 * (i + 1):1024 * (i + 2)]
        print("%s %s treq=%d sectype=%d" % (e[256:512].rstrip(b"\0").decode(),
                                            e[32:64].rstrip(b"\0 ").decode(), e[3], e[768]))
    conn.close()
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen-key")
    g.add_argument("--hash", type=int, choices=(1, 2), required=True)
    g.add_argument("--hh", type=int, choices=(0, 1, 2))
    c = sub.add_parser("connect")
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--key", required=True)
    c.add_argument("--hostnqn", required=True)
    c.add_argument("--subnqn", required=True)
    c.add_argument("--version", type=int, choices=(0, 1), default=0)
    c.add_argument("--identity-hostnqn")
    c.add_argument("--identity-subnqn")
    c.add_argument("--identity")
    c.add_argument("--timeout", type=float, default=10.0)
    i = sub.add_parser("identity")
    i.add_argument("--key", required=True)
    i.add_argument("--hostnqn", required=True)
    i.add_argument("--subnqn", required=True)
    i.add_argument("--version", type=int, choices=(0, 1), default=0)
    d = sub.add_parser("discovery")
    d.add_argument("--port", type=int, required=True)
    d.add_argument("--hostnqn", required=True)
    d.add_argument("--timeout", type=float, default=10.0)
    args = ap.parse_args()
    return {"gen-key": cmd_gen_key, "connect": cmd_connect, "identity": cmd_identity,
            "discovery": cmd_discovery}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
