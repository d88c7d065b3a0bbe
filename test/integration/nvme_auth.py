#!/usr/bin/env python3
"""NVMe in-band authentication (DH-HMAC-CHAP), host side, in pure Python.

An independent implementation of NVMe TP 8006 / NVMe Base 2.0 section 8.13
(and NVMe-oF 1.1 section 6.3) over the NVMe/TCP client in nvme_tcp_client.py,
written from the specification, standard library only (hashlib, hmac,
base64, zlib.crc32, secrets, struct and int pow() for the finite-field DH).

  nvme_auth.py connect --addr A --port P --subnqn NQN --hostnqn NQN \\
        --secret DHHC-1:HH:...: [--ctrl-secret DHHC-1:HH:...:] \\
        [--digest sha256|sha384|sha512[,...]] [--dhgroup null|ffdhe2048|...[,...]] \\
        [--io-queue] [--probe-before-auth] [--expect-atr 0|1]
      Connect the admin queue (and an I/O queue with --io-queue, which
      authenticates on its own, then reads a block), authenticate when the
      Connect response has ATR (bit 17 of dword 0; --always-auth: anyway),
      enable, Identify Controller. --probe-before-auth first checks that
      commands are refused with SCT 1 / SC 91h. --digest/--dhgroup take
      comma lists (default: all offered; the controller picks). Prints one
      line. Exit 0: authenticated and working; 1: authentication failed (the
      reason is printed); 2: any other error.
  nvme_auth.py gen-key --hash N [--key HEX] [--length L]
      Print a DHHC-1 secret (HH = N: 0 none, 1 SHA-256, 2 SHA-384, 3 SHA-512).
  nvme_auth.py check-key SECRET
      Parse a DHHC-1 secret; exit 0 and print HH and the key length if valid.
  nvme_auth.py kat
      Print known-answer values (secrets, transformed keys, DH public values
      and shared secrets from fixed exponents, augmented challenges, R1, R2,
      message bytes) as JSON, for a C unit test to compare against.
  nvme_auth.py scenario NAME|all --addr A --port P --subnqn NQN --hostnqn NQN --secret ...
      Protocol-abuse checks against a controller (see SCENARIOS); prints
      "ok - ..." / "not ok - ..." per scenario, exit 0 when all are ok.
  nvme_auth.py attack cntlids|qid|keepalive|flood|probe --addr A --port P ...
      An attacker who knows a keyed host's NQN (not its key) against what the
      target holds for unauthenticated queues, and a flood of costly
      exchanges; probe is the real host working meanwhile (see ATTACKS).

The computation (all integers little-endian, NQNs without their NUL):
  secret      DHHC-1:HH:base64(key || le32(crc32(key))):  key 32, 48 or 64 bytes
  transform   HH 0: K' = K;  else K' = HMAC_HH(K, NQN || "NVMe-over-Fabrics")
              (the host key with the host NQN, the controller key with the
              subsystem NQN)
  DH          ffdhe groups of RFC 7919, g = 2; public values and the shared
              secret Z big-endian, zero-padded to the size of p in bytes
  augmented   Ca = HMAC_H(H(Z), C) with a DH group, Ca = C with the null group
  R1          HMAC_H(Kh', Ca1 || le32(S1) || le16(T_ID) || 00h(SC_C) ||
                     "HostHost" || NQNh || 00h || NQNc)
  R2          HMAC_H(Kc', Ca2 || le32(S2) || le16(T_ID) || 00h(SC_C) ||
                     "Controller" || NQNc || 00h || NQNh)
where H is the hash the controller picked in the Challenge, C1/S1 the
controller's challenge and sequence number, C2/S2 the host's (S2 nonzero when
the host asks for bidirectional authentication, 0 otherwise).

From Python: authenticate(conn, subnqn, hostnqn, qid, secret, ctrl_secret,
digests, dhgroups) -> AuthResult on a connected nvme_tcp_client.Conn; the
HostAuth class has the steps one by one (and build_* / Msg / auth_send /
auth_recv the messages and commands) for tests that send messages of their
own making.
"""
import argparse
import base64
import hashlib
import hmac
import json
import os
import secrets
import struct
import sys
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nvme_tcp_client import (Conn, Cpl, Closed, Fail, expect, sqe, sgl_incapsule,  # noqa: E402
                             sgl_transport, RSP, C2H_DATA, C2H_TERM, F_SUCCESS,
                             OPC_FABRICS, OPC_IDENTIFY, OPC_READ)

# ---------------------------------------------------------------------------
# Identifiers.
FCT_AUTH_SEND, FCT_AUTH_RECV = 0x05, 0x06
SECP_NVME = 0xE9
SCT_CMD_SPECIFIC, SC_AUTH_REQUIRED = 1, 0x91
CONNECT_ATR = 1 << 17           # Connect response dword 0: authentication required
CONNECT_ASCR = 1 << 18          # ... secure channel concatenation required

AUTH_TYPE_COMMON, AUTH_TYPE_DHCHAP = 0x00, 0x01
ID_NEGOTIATE, ID_CHALLENGE, ID_REPLY, ID_SUCCESS1, ID_SUCCESS2 = 0x00, 0x01, 0x02, 0x03, 0x04
ID_FAILURE2, ID_FAILURE1 = 0xF0, 0xF1
AUTH_ID_DHCHAP = 0x01           # protocol descriptor auth_id
RC_FAILURE = 1

FAILED, PROTOCOL_UNUSABLE, SCC_MISMATCH, HASH_UNUSABLE, DHGROUP_UNUSABLE, \
    INCORRECT_PAYLOAD, INCORRECT_MESSAGE = 1, 2, 3, 4, 5, 6, 7
REASONS = {
    FAILED: "authentication failed",
    PROTOCOL_UNUSABLE: "authentication protocol not usable",
    SCC_MISMATCH: "secure channel concatenation mismatch",
    HASH_UNUSABLE: "hash function not usable",
    DHGROUP_UNUSABLE: "DH group not usable",
    INCORRECT_PAYLOAD: "incorrect payload",
    INCORRECT_MESSAGE: "incorrect protocol message",
}

HASHES = {1: ("sha256", 32), 2: ("sha384", 48), 3: ("sha512", 64)}
HASH_IDS = {name: hid for hid, (name, _) in HASHES.items()}
MSG_NAMES = {
    (AUTH_TYPE_COMMON, ID_NEGOTIATE): "AUTH_Negotiate",
    (AUTH_TYPE_DHCHAP, ID_CHALLENGE): "DH-HMAC-CHAP_Challenge",
    (AUTH_TYPE_DHCHAP, ID_REPLY): "DH-HMAC-CHAP_Reply",
    (AUTH_TYPE_DHCHAP, ID_SUCCESS1): "DH-HMAC-CHAP_Success1",
    (AUTH_TYPE_DHCHAP, ID_SUCCESS2): "DH-HMAC-CHAP_Success2",
    (AUTH_TYPE_COMMON, ID_FAILURE1): "AUTH_Failure1",
    (AUTH_TYPE_COMMON, ID_FAILURE2): "AUTH_Failure2",
}

# ---------------------------------------------------------------------------
# RFC 7919 finite field groups (g = 2). The hex below is what
# `openssl genpkey -genparam -algorithm DH -pkeyopt group:ffdheN` prints, and
# equals RFC 7919's p = 2^b - 2^(b-64) + (floor(2^(b-130) e) + X) * 2^64 - 1.
_FFDHE2048 = """
FFFFFFFFFFFFFFFFADF85458A2BB4A9AAFDC5620273D3CF1D8B9C583CE2D3695
A9E13641146433FBCC939DCE249B3EF97D2FE363630C75D8F681B202AEC4617A
D3DF1ED5D5FD65612433F51F5F066ED0856365553DED1AF3B557135E7F57C935
984F0C70E0E68B77E2A689DAF3EFE8721DF158A136ADE73530ACCA4F483A797A
BC0AB182B324FB61D108A94BB2C8E3FBB96ADAB760D7F4681D4F42A3DE394DF4
AE56EDE76372BB190B07A7C8EE0A6D709E02FCE1CDF7E2ECC03404CD28342F61
9172FE9CE98583FF8E4F1232EEF28183C3FE3B1B4C6FAD733BB5FCBC2EC22005
C58EF1837D1683B2C6F34A26C1B2EFFA886B423861285C97FFFFFFFFFFFFFFFF
"""

_FFDHE3072 = """
FFFFFFFFFFFFFFFFADF85458A2BB4A9AAFDC5620273D3CF1D8B9C583CE2D3695
A9E13641146433FBCC939DCE249B3EF97D2FE363630C75D8F681B202AEC4617A
D3DF1ED5D5FD65612433F51F5F066ED0856365553DED1AF3B557135E7F57C935
984F0C70E0E68B77E2A689DAF3EFE8721DF158A136ADE73530ACCA4F483A797A
BC0AB182B324FB61D108A94BB2C8E3FBB96ADAB760D7F4681D4F42A3DE394DF4
AE56EDE76372BB190B07A7C8EE0A6D709E02FCE1CDF7E2ECC03404CD28342F61
9172FE9CE98583FF8E4F1232EEF28183C3FE3B1B4C6FAD733BB5FCBC2EC22005
C58EF1837D1683B2C6F34A26C1B2EFFA886B4238611FCFDCDE355B3B6519035B
BC34F4DEF99C023861B46FC9D6E6C9077AD91D2691F7F7EE598CB0FAC186D91C
AEFE130985139270B4130C93BC437944F4FD4452E2D74DD364F2E21E71F54BFF
5CAE82AB9C9DF69EE86D2BC522363A0DABC521979B0DEADA1DBF9A42D5C4484E
0ABCD06BFA53DDEF3C1B20EE3FD59D7C25E41D2B66C62E37FFFFFFFFFFFFFFFF
"""

_FFDHE4096 = """
FFFFFFFFFFFFFFFFADF85458A2BB4A9AAFDC5620273D3CF1D8B9C583CE2D3695
A9E13641146433FBCC939DCE249B3EF97D2FE363630C75D8F681B202AEC4617A
D3DF1ED5D5FD65612433F51F5F066ED0856365553DED1AF3B557135E7F57C935
984F0C70E0E68B77E2A689DAF3EFE8721DF158A136ADE73530ACCA4F483A797A
BC0AB182B324FB61D108A94BB2C8E3FBB96ADAB760D7F4681D4F42A3DE394DF4
AE56EDE76372BB190B07A7C8EE0A6D709E02FCE1CDF7E2ECC03404CD28342F61
9172FE9CE98583FF8E4F1232EEF28183C3FE3B1B4C6FAD733BB5FCBC2EC22005
C58EF1837D1683B2C6F34A26C1B2EFFA886B4238611FCFDCDE355B3B6519035B
BC34F4DEF99C023861B46FC9D6E6C9077AD91D2691F7F7EE598CB0FAC186D91C
AEFE130985139270B4130C93BC437944F4FD4452E2D74DD364F2E21E71F54BFF
5CAE82AB9C9DF69EE86D2BC522363A0DABC521979B0DEADA1DBF9A42D5C4484E
0ABCD06BFA53DDEF3C1B20EE3FD59D7C25E41D2B669E1EF16E6F52C3164DF4FB
7930E9E4E58857B6AC7D5F42D69F6D187763CF1D5503400487F55BA57E31CC7A
7135C886EFB4318AED6A1E012D9E6832A907600A918130C46DC778F971AD0038
092999A333CB8B7A1A1DB93D7140003C2A4ECEA9F98D0ACC0A8291CDCEC97DCF
8EC9B55A7F88A46B4DB5A851F44182E1C68A007E5E655F6AFFFFFFFFFFFFFFFF
"""

_FFDHE6144 = """
FFFFFFFFFFFFFFFFADF85458A2BB4A9AAFDC5620273D3CF1D8B9C583CE2D3695
A9E13641146433FBCC939DCE249B3EF97D2FE363630C75D8F681B202AEC4617A
D3DF1ED5D5FD65612433F51F5F066ED0856365553DED1AF3B557135E7F57C935
984F0C70E0E68B77E2A689DAF3EFE8721DF158A136ADE73530ACCA4F483A797A
BC0AB182B324FB61D108A94BB2C8E3FBB96ADAB760D7F4681D4F42A3DE394DF4
AE56EDE76372BB190B07A7C8EE0A6D709E02FCE1CDF7E2ECC03404CD28342F61
9172FE9CE98583FF8E4F1232EEF28183C3FE3B1B4C6FAD733BB5FCBC2EC22005
C58EF1837D1683B2C6F34A26C1B2EFFA886B4238611FCFDCDE355B3B6519035B
BC34F4DEF99C023861B46FC9D6E6C9077AD91D2691F7F7EE598CB0FAC186D91C
AEFE130985139270B4130C93BC437944F4FD4452E2D74DD364F2E21E71F54BFF
5CAE82AB9C9DF69EE86D2BC522363A0DABC521979B0DEADA1DBF9A42D5C4484E
0ABCD06BFA53DDEF3C1B20EE3FD59D7C25E41D2B669E1EF16E6F52C3164DF4FB
7930E9E4E58857B6AC7D5F42D69F6D187763CF1D5503400487F55BA57E31CC7A
7135C886EFB4318AED6A1E012D9E6832A907600A918130C46DC778F971AD0038
092999A333CB8B7A1A1DB93D7140003C2A4ECEA9F98D0ACC0A8291CDCEC97DCF
8EC9B55A7F88A46B4DB5A851F44182E1C68A007E5E0DD9020BFD64B645036C7A
4E677D2C38532A3A23BA4442CAF53EA63BB454329B7624C8917BDD64B1C0FD4C
B38E8C334C701C3ACDAD0657FCCFEC719B1F5C3E4E46041F388147FB4CFDB477
A52471F7A9A96910B855322EDB6340D8A00EF092350511E30ABEC1FFF9E3A26E
7FB29F8C183023C3587E38DA0077D9B4763E4E4B94B2BBC194C6651E77CAF992
EEAAC0232A281BF6B3A739C1226116820AE8DB5847A67CBEF9C9091B462D538C
D72B03746AE77F5E62292C311562A846505DC82DB854338AE49F5235C95B9117
8CCF2DD5CACEF403EC9D1810C6272B045B3B71F9DC6B80D63FDD4A8E9ADB1E69
62A69526D43161C1A41D570D7938DAD4A40E329CD0E40E65FFFFFFFFFFFFFFFF
"""

_FFDHE8192 = """
FFFFFFFFFFFFFFFFADF85458A2BB4A9AAFDC5620273D3CF1D8B9C583CE2D3695
A9E13641146433FBCC939DCE249B3EF97D2FE363630C75D8F681B202AEC4617A
D3DF1ED5D5FD65612433F51F5F066ED0856365553DED1AF3B557135E7F57C935
984F0C70E0E68B77E2A689DAF3EFE8721DF158A136ADE73530ACCA4F483A797A
BC0AB182B324FB61D108A94BB2C8E3FBB96ADAB760D7F4681D4F42A3DE394DF4
AE56EDE76372BB190B07A7C8EE0A6D709E02FCE1CDF7E2ECC03404CD28342F61
9172FE9CE98583FF8E4F1232EEF28183C3FE3B1B4C6FAD733BB5FCBC2EC22005
C58EF1837D1683B2C6F34A26C1B2EFFA886B4238611FCFDCDE355B3B6519035B
BC34F4DEF99C023861B46FC9D6E6C9077AD91D2691F7F7EE598CB0FAC186D91C
AEFE130985139270B4130C93BC437944F4FD4452E2D74DD364F2E21E71F54BFF
5CAE82AB9C9DF69EE86D2BC522363A0DABC521979B0DEADA1DBF9A42D5C4484E
0ABCD06BFA53DDEF3C1B20EE3FD59D7C25E41D2B669E1EF16E6F52C3164DF4FB
7930E9E4E58857B6AC7D5F42D69F6D187763CF1D5503400487F55BA57E31CC7A
7135C886EFB4318AED6A1E012D9E6832A907600A918130C46DC778F971AD0038
092999A333CB8B7A1A1DB93D7140003C2A4ECEA9F98D0ACC0A8291CDCEC97DCF
8EC9B55A7F88A46B4DB5A851F44182E1C68A007E5E0DD9020BFD64B645036C7A
4E677D2C38532A3A23BA4442CAF53EA63BB454329B7624C8917BDD64B1C0FD4C
B38E8C334C701C3ACDAD0657FCCFEC719B1F5C3E4E46041F388147FB4CFDB477
A52471F7A9A96910B855322EDB6340D8A00EF092350511E30ABEC1FFF9E3A26E
7FB29F8C183023C3587E38DA0077D9B4763E4E4B94B2BBC194C6651E77CAF992
EEAAC0232A281BF6B3A739C1226116820AE8DB5847A67CBEF9C9091B462D538C
D72B03746AE77F5E62292C311562A846505DC82DB854338AE49F5235C95B9117
8CCF2DD5CACEF403EC9D1810C6272B045B3B71F9DC6B80D63FDD4A8E9ADB1E69
62A69526D43161C1A41D570D7938DAD4A40E329CCFF46AAA36AD004CF600C838
1E425A31D951AE64FDB23FCEC9509D43687FEB69EDD1CC5E0B8CC3BDF64B10EF
86B63142A3AB8829555B2F747C932665CB2C0F1CC01BD70229388839D2AF05E4
54504AC78B7582822846C0BA35C35F5C59160CC046FD8251541FC68C9C86B022
BB7099876A460E7451A8A93109703FEE1C217E6C3826E52C51AA691E0E423CFC
99E9E31650C1217B624816CDAD9A95F9D5B8019488D9C0A0A1FE3075A577E231
83F81D4A3F2FA4571EFC8CE0BA8A4FE8B6855DFE72B0A66EDED2FBABFBE58A30
FAFABE1C5D71A87E2F741EF8C1FE86FEA6BBFDE530677F0D97D11D49F7A8443D
0822E506A9F4614E011E2A94838FF88CD68C8BB7C5C6424CFFFFFFFFFFFFFFFF
"""

DH_GENERATOR = 2
DHGROUPS = {
    0: ("null", None),
    1: ("ffdhe2048", int(_FFDHE2048.replace("\n", ""), 16)),
    2: ("ffdhe3072", int(_FFDHE3072.replace("\n", ""), 16)),
    3: ("ffdhe4096", int(_FFDHE4096.replace("\n", ""), 16)),
    4: ("ffdhe6144", int(_FFDHE6144.replace("\n", ""), 16)),
    5: ("ffdhe8192", int(_FFDHE8192.replace("\n", ""), 16)),
}
DHGROUP_IDS = {name: gid for gid, (name, _) in DHGROUPS.items()}
for _gid, (_name, _p) in DHGROUPS.items():
    assert _p is None or (_p.bit_length() == int(_name[5:]) and _p % 24 == 23), _name


def hash_name(hash_id):
    return HASHES[hash_id][0]


def hash_len(hash_id):
    return HASHES[hash_id][1]


def digest_id(name):
    """sha256 / sha384 / sha512 (or 1 / 2 / 3) -> hash id."""
    if isinstance(name, int) or str(name).isdigit():
        hid = int(name)
        if hid in HASHES:
            return hid
    elif name in HASH_IDS:
        return HASH_IDS[name]
    raise ValueError("unknown digest %r (sha256, sha384, sha512)" % (name,))


def dhgroup_id(name):
    """null / ffdhe2048 ... ffdhe8192 (or 0..5) -> DH group id."""
    if isinstance(name, int) or str(name).isdigit():
        gid = int(name)
        if gid in DHGROUPS:
            return gid
    elif name in DHGROUP_IDS:
        return DHGROUP_IDS[name]
    raise ValueError("unknown DH group %r (null, ffdhe2048 ... ffdhe8192)" % (name,))


def dhgroup_name(gid):
    if gid in DHGROUPS:
        return DHGROUPS[gid][0]
    return "0x%02x" % gid if isinstance(gid, int) else "?"


def dh_size(gid):
    """Bytes of a public value / shared secret in group gid (0 for null)."""
    p = DHGROUPS[gid][1]
    return 0 if p is None else (p.bit_length() + 7) // 8


def _hmac(hash_id, key, data):
    return hmac.new(key, data, hash_name(hash_id)).digest()


# ---------------------------------------------------------------------------
# Secrets: "DHHC-1:HH:" base64(key || le32(crc32(key))) ":".
SECRET_PREFIX = "DHHC-1:"
KEY_LENGTHS = (32, 48, 64)


def parse_dhchap_secret(s):
    """DHHC-1 secret -> (hash_id, key bytes). ValueError when malformed:
    prefix, HH (00..03), base64, length (32, 48 or 64 bytes + CRC), CRC-32,
    the closing ':'. Surrounding white space (a key file's newline) is allowed."""
    if not isinstance(s, str):
        raise ValueError("secret is not a string")
    s = s.strip()
    if not s.startswith(SECRET_PREFIX):
        raise ValueError("secret does not start with %r" % SECRET_PREFIX)
    rest = s[len(SECRET_PREFIX):]
    if len(rest) < 4 or rest[2] != ":" or not rest[:2].isdigit():
        raise ValueError("secret has no two-digit HH field")
    hh = int(rest[:2], 10)
    if hh not in (0, 1, 2, 3):
        raise ValueError("secret HH %02d is not 00, 01, 02 or 03" % hh)
    body = rest[3:]
    if not body.endswith(":"):
        raise ValueError("secret does not end with ':'")
    body = body[:-1]
    if ":" in body:
        raise ValueError("secret has extra ':' fields")
    try:
        raw = base64.b64decode(body.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as e:
        raise ValueError("secret is not valid base64: %s" % e)
    if len(raw) - 4 not in KEY_LENGTHS:
        raise ValueError("secret decodes to %d bytes; the key must be 32, 48 or 64 bytes "
                         "plus a 4-byte CRC" % len(raw))
    key, crc = raw[:-4], struct.unpack("<I", raw[-4:])[0]
    if zlib.crc32(key) & 0xFFFFFFFF != crc:
        raise ValueError("secret CRC-32 mismatch (stored 0x%08x, computed 0x%08x)" %
                         (crc, zlib.crc32(key) & 0xFFFFFFFF))
    return hh, key


def format_dhchap_secret(hash_id, key):
    if hash_id not in (0, 1, 2, 3):
        raise ValueError("HH must be 0..3")
    if len(key) not in KEY_LENGTHS:
        raise ValueError("key must be 32, 48 or 64 bytes")
    raw = bytes(key) + struct.pack("<I", zlib.crc32(key) & 0xFFFFFFFF)
    return "%s%02d:%s:" % (SECRET_PREFIX, hash_id, base64.b64encode(raw).decode())


def gen_dhchap_secret(hash_id, key=None, length=None):
    """A new DHHC-1 secret. The key is random unless given; its length is the
    hash's (32 for HH 00) unless `length` says otherwise."""
    if key is None:
        if length is None:
            length = hash_len(hash_id) if hash_id else 32
        key = secrets.token_bytes(length)
    return format_dhchap_secret(hash_id, key)


def transform_key(hash_id, key, nqn):
    """HH 0: the key itself; else HMAC(hash HH, key, NQN || "NVMe-over-Fabrics")."""
    if hash_id == 0:
        return bytes(key)
    return _hmac(hash_id, key, nqn.encode() + b"NVMe-over-Fabrics")


# ---------------------------------------------------------------------------
# Finite-field Diffie-Hellman.
def dh_private(gid):
    """A private exponent x, 1 < x < q = (p - 1) / 2 (full size)."""
    p = DHGROUPS[gid][1]
    return 2 + secrets.randbelow((p - 1) // 2 - 2)


def dh_public(gid, x):
    """g^x mod p, big-endian, zero-padded to the group's size."""
    p = DHGROUPS[gid][1]
    return pow(DH_GENERATOR, x, p).to_bytes(dh_size(gid), "big")


def dh_check_public(gid, value):
    """The peer's public value as an int; ValueError unless it is the group's
    size and 1 < Y < p - 1 (RFC 7919 section 5.1)."""
    p = DHGROUPS[gid][1]
    if len(value) != dh_size(gid):
        raise ValueError("DH value is %d bytes, %s needs %d" %
                         (len(value), dhgroup_name(gid), dh_size(gid)))
    y = int.from_bytes(value, "big")
    if not 1 < y < p - 1:
        raise ValueError("DH value out of range (1 < Y < p-1)")
    return y


def dh_exponent_with_leading_zero(gid, peer_public, public=False, shared=True):
    """A private exponent x for which g^x (public) and/or Z = Y^x (shared)
    start with a zero byte, so only a peer that handles them at the group's
    full size gets them right. Steps x by one (g^(x+1) = 2 g^x,
    Y^(x+1) = Y Y^x): about 256 tries for one condition, 65536 for both."""
    p = DHGROUPS[gid][1]
    y = dh_check_public(gid, peer_public)
    x = dh_private(gid) // 2
    pub, z = pow(DH_GENERATOR, x, p), pow(y, x, p)
    top = 1 << (8 * (dh_size(gid) - 1))
    while (public and pub >= top) or (shared and z >= top):
        x += 1
        pub = pub * DH_GENERATOR % p
        z = z * y % p
    return x


def dh_shared(gid, x, peer_public):
    """Z = (peer's g^y)^x mod p, big-endian, zero-padded to the group's size."""
    p = DHGROUPS[gid][1]
    y = dh_check_public(gid, peer_public)
    return pow(y, x, p).to_bytes(dh_size(gid), "big")


# ---------------------------------------------------------------------------
# The response computation.
def augment_challenge(hash_id, challenge, z):
    """Ca = HMAC(H(Z), C) with a DH group (z = the padded shared secret), C
    with the null group (z = None or empty)."""
    if not z:
        return bytes(challenge)
    return _hmac(hash_id, hashlib.new(hash_name(hash_id), z).digest(), challenge)


def dhchap_response(hash_id, key_t, challenge, seqnum, t_id, purpose, nqn1, nqn2, z=None,
                    sc_c=0):
    """HMAC(key_t, Ca || le32(seqnum) || le16(t_id) || sc_c || purpose || nqn1 || 00h || nqn2)."""
    ca = augment_challenge(hash_id, challenge, z)
    data = (ca + struct.pack("<IHB", seqnum, t_id, sc_c) + purpose + nqn1.encode() + b"\0" +
            nqn2.encode())
    return _hmac(hash_id, key_t, data)


def host_response(hash_id, hkey_hh, hkey, c1, s1, t_id, hostnqn, subnqn, z=None):
    """R1: what the host sends in the Reply."""
    return dhchap_response(hash_id, transform_key(hkey_hh, hkey, hostnqn), c1, s1, t_id,
                           b"HostHost", hostnqn, subnqn, z)


def ctrl_response(hash_id, ckey_hh, ckey, c2, s2, t_id, hostnqn, subnqn, z=None):
    """R2: what the controller must return in Success1."""
    return dhchap_response(hash_id, transform_key(ckey_hh, ckey, subnqn), c2, s2, t_id,
                           b"Controller", subnqn, hostnqn, z)


_seqnum = [0]


def next_seqnum():
    """S2 for the next bidirectional transaction: random start, +1, never 0."""
    if _seqnum[0] == 0:
        _seqnum[0] = secrets.randbits(32)
    _seqnum[0] = (_seqnum[0] + 1) & 0xFFFFFFFF or 1
    return _seqnum[0]


# ---------------------------------------------------------------------------
# Messages. Layouts (little-endian):
#  common header    auth_type u8, auth_id u8, rsvd u16, t_id u16
#  Negotiate        + sc_c u8, napd u8, napd x descriptor (64 bytes: auth_id u8,
#                   rsvd u8, halen u8, dhlen u8, hash_id_list[30], dhg_id_list[30])
#  Challenge        + hl u8, rsvd u8, hash_id u8, dhg_id u8, dhvlen u16,
#                   seqnum u32, cval[hl], dhv[dhvlen]
#  Reply            + hl u8, rsvd u8, cvalid u8, rsvd u8, dhvlen u16,
#                   seqnum u32, rval[hl], cval[hl], dhv[dhvlen]
#  Success1         + hl u8, rsvd u8, rvalid u8, rsvd[7], rval[hl] (if rvalid)
#  Success2         + rsvd[10]
#  Failure1/2       + rc u8, rce u8
_HDR16 = "<BBHHBBBBHI"


def build_negotiate(t_id, hash_ids, dhg_ids, sc_c=0, napd=None, auth_id=AUTH_ID_DHCHAP,
                    halen=None, dhlen=None, extra=b""):
    hl = bytes(hash_ids)
    dl = bytes(dhg_ids)
    desc = struct.pack("<BBBB30s30s", auth_id, 0, len(hl) if halen is None else halen,
                       len(dl) if dhlen is None else dhlen, hl, dl)
    n = 1 + len(extra) // 64 if napd is None else napd
    return struct.pack("<BBHHBB", AUTH_TYPE_COMMON, ID_NEGOTIATE, 0, t_id, sc_c, n) + desc + extra


def build_challenge(t_id, hash_id, dhg_id, seqnum, cval, dhv=b"", hl=None, dhvlen=None):
    return struct.pack(_HDR16, AUTH_TYPE_DHCHAP, ID_CHALLENGE, 0, t_id,
                       len(cval) if hl is None else hl, 0, hash_id, dhg_id,
                       len(dhv) if dhvlen is None else dhvlen, seqnum) + cval + dhv


def build_reply(t_id, rval, cval=None, seqnum=0, dhv=b"", cvalid=None, hl=None, dhvlen=None):
    """cval None: no controller challenge (cvalid 0, hl zero bytes in its place)."""
    n = len(rval) if hl is None else hl
    if cvalid is None:
        cvalid = 0 if cval is None else 1
    c = bytes(len(rval)) if cval is None else cval
    return struct.pack(_HDR16, AUTH_TYPE_DHCHAP, ID_REPLY, 0, t_id, n, 0, cvalid, 0,
                       len(dhv) if dhvlen is None else dhvlen, seqnum) + rval + c + dhv


def build_success1(t_id, hl, rval=None):
    return struct.pack("<BBHHBBB7x", AUTH_TYPE_DHCHAP, ID_SUCCESS1, 0, t_id, hl, 0,
                       0 if rval is None else 1) + (rval or b"")


def build_success2(t_id):
    return struct.pack("<BBHH10x", AUTH_TYPE_DHCHAP, ID_SUCCESS2, 0, t_id)


def build_failure(t_id, rce, failure1=False, rc=RC_FAILURE):
    return struct.pack("<BBHHBB", AUTH_TYPE_COMMON, ID_FAILURE1 if failure1 else ID_FAILURE2,
                       0, t_id, rc, rce)


class Msg:
    """A received (or built) message, parsed. Fields by name; .problem says
    what is wrong with the layout (None if nothing)."""

    def __init__(self, raw):
        self.raw = bytes(raw)
        self.problem = None
        self.auth_type = self.auth_id = self.t_id = None
        if len(raw) < 6:
            self.problem = "message of %d bytes" % len(raw)
            return
        self.auth_type, self.auth_id, _, self.t_id = struct.unpack_from("<BBHH", raw)
        key = (self.auth_type, self.auth_id)
        need = {(AUTH_TYPE_COMMON, ID_NEGOTIATE): 8, (AUTH_TYPE_COMMON, ID_FAILURE1): 8,
                (AUTH_TYPE_COMMON, ID_FAILURE2): 8}.get(key, 16)
        if key not in MSG_NAMES:
            self.problem = "unknown message type %d id 0x%02x" % key
            return
        if len(raw) < need:
            self.problem = "%s of %d bytes" % (self.name, len(raw))
            return
        if key in ((AUTH_TYPE_COMMON, ID_FAILURE1), (AUTH_TYPE_COMMON, ID_FAILURE2)):
            self.rc, self.rce = raw[6], raw[7]
        elif key == (AUTH_TYPE_COMMON, ID_NEGOTIATE):
            self.sc_c, self.napd = raw[6], raw[7]
            self.descriptors = []
            for i in range(self.napd):
                d = raw[8 + 64 * i:8 + 64 * (i + 1)]
                if len(d) < 64:
                    self.problem = "napd %d but %d bytes" % (self.napd, len(raw))
                    break
                aid, _, halen, dhlen = struct.unpack_from("<BBBB", d)
                self.descriptors.append((aid, list(d[4:4 + min(halen, 30)]),
                                         list(d[34:34 + min(dhlen, 30)])))
        elif key == (AUTH_TYPE_DHCHAP, ID_CHALLENGE):
            (_, _, _, _, self.hl, _, self.hash_id, self.dhg_id, self.dhvlen,
             self.seqnum) = struct.unpack_from(_HDR16, raw)
            self.cval = raw[16:16 + self.hl]
            self.dhv = raw[16 + self.hl:16 + self.hl + self.dhvlen]
            if len(raw) < 16 + self.hl + self.dhvlen:
                self.problem = "Challenge of %d bytes, hl %d dhvlen %d" % (
                    len(raw), self.hl, self.dhvlen)
        elif key == (AUTH_TYPE_DHCHAP, ID_REPLY):
            (_, _, _, _, self.hl, _, self.cvalid, _, self.dhvlen,
             self.seqnum) = struct.unpack_from(_HDR16, raw)
            self.rval = raw[16:16 + self.hl]
            self.cval = raw[16 + self.hl:16 + 2 * self.hl]
            self.dhv = raw[16 + 2 * self.hl:16 + 2 * self.hl + self.dhvlen]
            if len(raw) < 16 + 2 * self.hl + self.dhvlen:
                self.problem = "Reply of %d bytes, hl %d dhvlen %d" % (
                    len(raw), self.hl, self.dhvlen)
        elif key == (AUTH_TYPE_DHCHAP, ID_SUCCESS1):
            self.hl, self.rvalid = raw[6], raw[8]
            self.rval = raw[16:16 + self.hl] if self.rvalid else b""
            if self.rvalid and len(raw) < 16 + self.hl:
                self.problem = "Success1 of %d bytes with rvalid, hl %d" % (len(raw), self.hl)

    @property
    def name(self):
        return MSG_NAMES.get((self.auth_type, self.auth_id),
                             "message type %s id %s" % (self.auth_type, self.auth_id))

    def is_(self, auth_type, auth_id):
        return self.auth_type == auth_type and self.auth_id == auth_id

    @property
    def is_failure1(self):
        return self.is_(AUTH_TYPE_COMMON, ID_FAILURE1) and self.problem is None

    def __repr__(self):
        if self.is_failure1 or self.is_(AUTH_TYPE_COMMON, ID_FAILURE2):
            return "%s(t_id=%d rc=%d rce=%d %s)" % (self.name, self.t_id, self.rc, self.rce,
                                                    REASONS.get(self.rce, "?"))
        return "%s(t_id=%s, %d bytes%s)" % (self.name, self.t_id, len(self.raw),
                                            ", " + self.problem if self.problem else "")


# ---------------------------------------------------------------------------
# Transport: Authentication Send / Receive on a Conn (nvme_tcp_client).
def auth_sqe(fctype, cid, length, sgl, secp=SECP_NVME, spsp0=1, spsp1=1):
    """Fabrics Authentication Send (05h) / Receive (06h): cdw10 = SECP << 24 |
    SPSP1 << 16 | SPSP0 << 8, cdw11 = TL (send) or AL (receive). sqe() puts
    its nsid argument at byte 4, the fctype of a Fabrics command."""
    cdw10 = (secp << 24) | (spsp1 << 16) | (spsp0 << 8)
    return sqe(OPC_FABRICS, cid, nsid=fctype, cdw10=cdw10, cdw11=length, sgl=sgl)


def _wait_read(conn, cid, maxlen):
    """Collect C2HData for cid up to its completion (a response capsule, or a
    C2HData with the SUCCESS flag); the data may be shorter than asked."""
    buf = bytearray()
    while True:
        ptype, flags, psh, pdata = conn.recv_pdu()
        if ptype == RSP:
            cpl = Cpl(psh[:16])
            expect(cpl.cid == cid, "completion for cid %d, expected %d" % (cpl.cid, cid))
            return cpl, bytes(buf)
        if ptype == C2H_DATA:
            cccid, _, datao, datal = struct.unpack("<HHII", psh[:12])
            expect(cccid == cid, "C2HData for cid %d, expected %d" % (cccid, cid))
            expect(datal == len(pdata), "C2HData datal %d vs %d" % (datal, len(pdata)))
            expect(datao == len(buf), "C2HData offset %d, expected %d" % (datao, len(buf)))
            expect(len(buf) + datal <= maxlen, "C2HData beyond the %d bytes asked" % maxlen)
            buf += pdata
            if flags & F_SUCCESS:
                return Cpl(struct.pack("<IIHHHH", 0, 0, 0, 0, cid, 0)), bytes(buf)
            continue
        if ptype == C2H_TERM:
            (fes,) = struct.unpack("<H", psh[:2])
            raise Closed("C2HTermReq FES 0x%x" % fes)
        raise Fail("unexpected PDU type %d" % ptype)


def auth_send(conn, data, tl=None, sgl_len=None, incapsule=None, **fields):
    """Authentication Send of `data`; TL is len(data) unless given. fields:
    secp, spsp0, spsp1. Returns the completion."""
    cid = conn.next_cid()
    if incapsule is None:
        incapsule = len(data) <= conn.icd_max
    n = len(data) if sgl_len is None else sgl_len
    sgl = sgl_incapsule(n) if (data and incapsule) else sgl_transport(n)
    conn.send_cmd(auth_sqe(FCT_AUTH_SEND, cid, len(data) if tl is None else tl, sgl, **fields),
                  data, incapsule)
    cpl, _ = conn.wait_cpl(cid, data)
    return cpl


def auth_recv(conn, al=4096, sgl_len=None, **fields):
    """Authentication Receive with allocation length al: (completion, data)."""
    cid = conn.next_cid()
    n = al if sgl_len is None else sgl_len
    conn.send_cmd(auth_sqe(FCT_AUTH_RECV, cid, al, sgl_transport(n), **fields))
    return _wait_read(conn, cid, n)


def read_cmd(conn, opc, read_len, nsid=0, cdw10=0, cdw11=0, cdw12=0):
    """A command that reads read_len bytes (Identify, Read): (completion, data)."""
    cid = conn.next_cid()
    conn.send_cmd(sqe(opc, cid, nsid, cdw10, cdw11, cdw12, sgl=sgl_transport(read_len)))
    return _wait_read(conn, cid, read_len)


def identify(conn, cns, nsid=0):
    return read_cmd(conn, OPC_IDENTIFY, 4096, nsid=nsid, cdw10=cns)


def prop_get_cap(conn):
    """Property Get CAP (a Fabrics command that works right after Connect)."""
    cpl, _ = conn.prop_get(0x00, size8=True)
    return cpl


def is_auth_required(cpl):
    return cpl.sct == SCT_CMD_SPECIFIC and cpl.sc == SC_AUTH_REQUIRED


# ---------------------------------------------------------------------------
# The host's state machine.
class AuthResult:
    """ok: authenticated. Otherwise failure names who ended it:
    "Failure1" (the controller's AUTH_Failure1, rce its reason), "Failure2"
    (this host sent AUTH_Failure2 with rce), or "status" (a command failed,
    cpl has its completion)."""

    def __init__(self, ok, failure=None, rce=None, detail="", cpl=None):
        self.ok = ok
        self.failure = failure
        self.rce = rce
        self.detail = detail
        self.cpl = cpl
        self.digest = self.dhgroup = None
        self.bidirectional = False
        self.transcript = []

    @property
    def reason(self):
        return REASONS.get(self.rce, "reason 0x%02x" % self.rce) if self.rce is not None else ""

    def __str__(self):
        if self.ok:
            return "authenticated (%s, %s, %s)" % (
                HASHES.get(self.digest, ("?",))[0], dhgroup_name(self.dhgroup),
                "bidirectional" if self.bidirectional else "unidirectional")
        if self.failure == "Failure1":
            return "controller sent AUTH_Failure1 rce=%d (%s)%s" % (
                self.rce, self.reason, ": " + self.detail if self.detail else "")
        if self.failure == "Failure2":
            return "%s; host sent AUTH_Failure2 rce=%d (%s)" % (self.detail, self.rce,
                                                                self.reason)
        return self.detail


class HostAuth:
    """One DH-HMAC-CHAP transaction of the host on one queue. run() does it
    all; the steps (send_negotiate, recv_msg, check_challenge, take_challenge,
    reply_bytes, send, finish, check_success1, fail2) are there for tests that
    deviate: send any bytes with send(), read what comes back with recv_msg()."""

    def __init__(self, conn, subnqn, hostnqn, secret, ctrl_secret=None, digests=(1, 2, 3),
                 dhgroups=(0, 1, 2, 3, 4, 5), t_id=None, al=4096, qid=0):
        self.conn = conn
        self.subnqn = subnqn
        self.hostnqn = hostnqn
        self.qid = qid
        self.hkey_hh, self.hkey = (parse_dhchap_secret(secret) if isinstance(secret, str)
                                   else secret)
        self.ckey = None
        if ctrl_secret is not None:
            self.ckey_hh, self.ckey = (parse_dhchap_secret(ctrl_secret)
                                       if isinstance(ctrl_secret, str) else ctrl_secret)
        self.digests = [digest_id(d) for d in digests]
        self.dhgroups = [dhgroup_id(g) for g in dhgroups]
        self.t_id = secrets.randbits(16) if t_id is None else t_id
        self.al = al
        self.transcript = []
        # Filled in from the challenge.
        self.hash_id = self.dhg_id = None
        self.s1 = self.c1 = self.z = self.x = self.host_public = None
        self.c2 = None
        self.s2 = 0

    # -- raw steps ---------------------------------------------------------
    def send(self, data, **kw):
        self.transcript.append(("send", Msg(data)))
        return auth_send(self.conn, data, **kw)

    def recv_msg(self, al=None, **kw):
        cpl, data = auth_recv(self.conn, self.al if al is None else al, **kw)
        msg = Msg(data) if cpl.ok else None
        if msg is not None:
            self.transcript.append(("recv", msg))
        return cpl, msg

    def negotiate_bytes(self, **kw):
        return build_negotiate(self.t_id, self.digests, self.dhgroups, **kw)

    def send_negotiate(self, **kw):
        return self.send(self.negotiate_bytes(**kw))

    def check_challenge(self, m):
        """None if the Challenge is usable, else (rce, what)."""
        if m.problem:
            return INCORRECT_PAYLOAD, m.problem
        if not m.is_(AUTH_TYPE_DHCHAP, ID_CHALLENGE):
            return INCORRECT_MESSAGE, "expected a Challenge, got %s" % m.name
        if m.t_id != self.t_id:
            return INCORRECT_PAYLOAD, "Challenge t_id %d, expected %d" % (m.t_id, self.t_id)
        if m.hash_id not in HASHES or m.hash_id not in self.digests:
            return HASH_UNUSABLE, "Challenge hash id %d was not offered" % m.hash_id
        if m.hl != hash_len(m.hash_id):
            return INCORRECT_PAYLOAD, "Challenge hl %d for %s" % (m.hl, hash_name(m.hash_id))
        if m.dhg_id not in DHGROUPS or m.dhg_id not in self.dhgroups:
            return DHGROUP_UNUSABLE, "Challenge DH group %d was not offered" % m.dhg_id
        if m.dhvlen != dh_size(m.dhg_id):
            return INCORRECT_PAYLOAD, "Challenge dhvlen %d for %s" % (m.dhvlen,
                                                                      dhgroup_name(m.dhg_id))
        if m.seqnum == 0:
            return INCORRECT_PAYLOAD, "Challenge seqnum 0"
        if m.dhg_id:
            try:
                dh_check_public(m.dhg_id, m.dhv)
            except ValueError as e:
                return INCORRECT_PAYLOAD, "Challenge: %s" % e
        return None

    def take_challenge(self, m, x=None):
        """Compute everything the Reply needs from a checked Challenge (x: the
        private exponent to use, random by default)."""
        self.hash_id, self.dhg_id = m.hash_id, m.dhg_id
        self.s1, self.c1 = m.seqnum, m.cval
        self.z = None
        self.host_public = b""
        if self.dhg_id:
            self.x = dh_private(self.dhg_id) if x is None else x
            self.host_public = dh_public(self.dhg_id, self.x)
            self.z = dh_shared(self.dhg_id, self.x, m.dhv)
        self.r1 = host_response(self.hash_id, self.hkey_hh, self.hkey, self.c1, self.s1,
                                self.t_id, self.hostnqn, self.subnqn, self.z)
        if self.ckey is not None:
            self.c2 = secrets.token_bytes(hash_len(self.hash_id))
            self.s2 = next_seqnum()
            self.r2 = ctrl_response(self.hash_id, self.ckey_hh, self.ckey, self.c2, self.s2,
                                    self.t_id, self.hostnqn, self.subnqn, self.z)
        else:
            self.c2, self.s2, self.r2 = None, 0, None

    def reply_bytes(self, **kw):
        kw.setdefault("t_id", self.t_id)
        kw.setdefault("rval", self.r1)
        kw.setdefault("cval", self.c2)
        kw.setdefault("seqnum", self.s2)
        kw.setdefault("dhv", self.host_public)
        return build_reply(**kw)

    def check_success1(self, m):
        """None if the Success1 is right, else (rce, what)."""
        if m.problem:
            return INCORRECT_PAYLOAD, m.problem
        if not m.is_(AUTH_TYPE_DHCHAP, ID_SUCCESS1):
            return INCORRECT_MESSAGE, "expected Success1, got %s" % m.name
        if m.t_id != self.t_id:
            return INCORRECT_PAYLOAD, "Success1 t_id %d, expected %d" % (m.t_id, self.t_id)
        if m.hl != hash_len(self.hash_id):
            return INCORRECT_PAYLOAD, "Success1 hl %d" % m.hl
        if self.ckey is None:
            return None
        if m.rvalid != 1:
            return INCORRECT_PAYLOAD, "Success1 without the controller's response (rvalid %d)" \
                % m.rvalid
        if not hmac.compare_digest(m.rval, self.r2):
            return FAILED, "the controller's response R2 does not verify"
        return None

    def fail2(self, rce, detail):
        """Send AUTH_Failure2 and make the result."""
        cpl = self.send(build_failure(self.t_id, rce))
        r = AuthResult(False, "Failure2", rce, detail +
                       ("" if cpl.ok else " (Failure2 completed with %r)" % cpl), cpl)
        return r

    # -- the whole transaction ---------------------------------------------------
    def run(self):
        """The whole transaction: an AuthResult."""
        return self._result(self._run())

    def finish(self):
        """From a taken Challenge on (Reply, Success1, Success2): an AuthResult."""
        return self._result(self._finish())

    def _result(self, r):
        r.transcript = self.transcript
        r.digest, r.dhgroup = self.hash_id, self.dhg_id
        r.bidirectional = self.ckey is not None
        return r

    def _run(self):
        cpl = self.send_negotiate()
        if not cpl.ok:
            return AuthResult(False, "status", detail="Negotiate completed with %r" % cpl,
                              cpl=cpl)
        cpl, m = self.recv_msg()
        if not cpl.ok:
            return AuthResult(False, "status", detail="Receive (Challenge) completed with %r" %
                              cpl, cpl=cpl)
        if m.is_failure1:
            return AuthResult(False, "Failure1", m.rce, "after Negotiate")
        bad = self.check_challenge(m)
        if bad:
            return self.fail2(bad[0], bad[1])
        self.take_challenge(m)
        return self._finish()

    def _finish(self):
        cpl = self.send(self.reply_bytes())
        if not cpl.ok:
            return AuthResult(False, "status", detail="Reply completed with %r" % cpl, cpl=cpl)
        cpl, m = self.recv_msg()
        if not cpl.ok:
            return AuthResult(False, "status", detail="Receive (Success1) completed with %r" %
                              cpl, cpl=cpl)
        if m.is_failure1:
            return AuthResult(False, "Failure1", m.rce, "after Reply")
        bad = self.check_success1(m)
        if bad:
            return self.fail2(bad[0], bad[1])
        if self.ckey is not None:
            cpl = self.send(build_success2(self.t_id))
            if not cpl.ok:
                return AuthResult(False, "status", detail="Success2 completed with %r" % cpl,
                                  cpl=cpl)
        return AuthResult(True)


def authenticate(conn, subnqn, hostnqn, qid, secret, ctrl_secret=None,
                 digests=("sha256", "sha384", "sha512"),
                 dhgroups=("null", "ffdhe2048", "ffdhe3072", "ffdhe4096", "ffdhe6144",
                           "ffdhe8192"), **kw):
    """Authenticate the connected queue `conn` (qid); returns an AuthResult
    (.ok, or .failure / .rce / .reason / .detail)."""
    return HostAuth(conn, subnqn, hostnqn, secret, ctrl_secret, digests, dhgroups, qid=qid,
                    **kw).run()


# ---------------------------------------------------------------------------
# Known answers.
KAT_HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:00112233-4455-6677-8899-aabbccddeeff"
KAT_SUBNQN = "nqn.2016-06.io.gga:kat"
KAT_T_ID, KAT_S1, KAT_S2 = 0x1234, 0x01020304, 0xA0B0C0D0


def _kat_key(hh, salt):
    n = 32 if hh in (0, 1) else hash_len(hh)
    return bytes((salt + 7 * i) & 0xFF for i in range(n))


def _kat_exponent(gid, label):
    """A fixed private exponent: SHA-512 stream of label, reduced below q."""
    p = DHGROUPS[gid][1]
    stream = b"".join(hashlib.sha512(label + bytes([i])).digest() for i in range(20))
    return 2 + int.from_bytes(stream[:dh_size(gid)], "big") % ((p - 1) // 2 - 2)


def kat():
    out = {"hostnqn": KAT_HOSTNQN, "subnqn": KAT_SUBNQN, "t_id": KAT_T_ID, "s1": KAT_S1,
           "s2": KAT_S2, "secrets": [], "dh": [], "responses": [], "messages": {}}
    keys = {}
    for hh in (0, 1, 2, 3):
        hk, ck = _kat_key(hh, 0x11), _kat_key(hh, 0x80)
        keys[hh] = (hk, ck)
        hs, cs = format_dhchap_secret(hh, hk), format_dhchap_secret(hh, ck)
        assert parse_dhchap_secret(hs) == (hh, hk)
        out["secrets"].append({
            "hh": hh, "host_secret": hs, "host_key": hk.hex(),
            "host_key_transformed": transform_key(hh, hk, KAT_HOSTNQN).hex(),
            "ctrl_secret": cs, "ctrl_key": ck.hex(),
            "ctrl_key_transformed": transform_key(hh, ck, KAT_SUBNQN).hex()})
    zs = {0: None}
    pubs = {0: (b"", b"")}
    for gid in (1, 2):
        x, y = _kat_exponent(gid, b"host"), _kat_exponent(gid, b"ctrl")
        gx, gy = dh_public(gid, x), dh_public(gid, y)
        z = dh_shared(gid, x, gy)
        assert z == dh_shared(gid, y, gx)
        zs[gid] = z
        pubs[gid] = (gx, gy)
        out["dh"].append({"dhgroup": dhgroup_name(gid), "dhg_id": gid, "x": "%x" % x,
                          "y": "%x" % y, "host_public": gx.hex(), "ctrl_public": gy.hex(),
                          "z": z.hex(),
                          "h_z": {hash_name(h): hashlib.new(hash_name(h), z).hexdigest()
                                  for h in HASHES}})
    for hid in HASHES:
        hl = hash_len(hid)
        c1 = bytes(range(hl))
        c2 = bytes(range(0xFF, 0xFF - hl, -1))
        for gid in (0, 1, 2):
            for hh in sorted({0, hid}):
                hk, ck = keys[hh]
                z = zs[gid]
                r1 = host_response(hid, hh, hk, c1, KAT_S1, KAT_T_ID, KAT_HOSTNQN, KAT_SUBNQN, z)
                r2 = ctrl_response(hid, hh, ck, c2, KAT_S2, KAT_T_ID, KAT_HOSTNQN, KAT_SUBNQN, z)
                gx, gy = pubs[gid]
                out["responses"].append({
                    "hash": hash_name(hid), "hash_id": hid, "dhgroup": dhgroup_name(gid),
                    "dhg_id": gid, "key_hh": hh, "c1": c1.hex(), "c2": c2.hex(),
                    "ca1": augment_challenge(hid, c1, z).hex(),
                    "ca2": augment_challenge(hid, c2, z).hex(), "r1": r1.hex(), "r2": r2.hex(),
                    "challenge_msg": build_challenge(KAT_T_ID, hid, gid, KAT_S1, c1, gy).hex(),
                    "reply_msg": build_reply(KAT_T_ID, r1, c2, KAT_S2, gx).hex(),
                    "success1_msg": build_success1(KAT_T_ID, hl, r2).hex()})
    out["messages"] = {
        "negotiate_all": build_negotiate(KAT_T_ID, [1, 2, 3], [0, 1, 2, 3, 4, 5]).hex(),
        "success2": build_success2(KAT_T_ID).hex(),
        "failure1_failed": build_failure(KAT_T_ID, FAILED, failure1=True).hex(),
        "failure2_failed": build_failure(KAT_T_ID, FAILED).hex(),
        "auth_send_sqe_tl72_cid5": auth_sqe(FCT_AUTH_SEND, 5, 72, sgl_incapsule(72)).hex(),
        "auth_recv_sqe_al4096_cid6": auth_sqe(FCT_AUTH_RECV, 6, 4096,
                                              sgl_transport(4096)).hex(),
    }
    return out


# ---------------------------------------------------------------------------
# CLI helpers.
class Usage(Exception):
    pass


def _list(values, conv):
    out = []
    for v in values or []:
        for part in str(v).split(","):
            if part:
                out.append(conv(part.strip()))
    return out


def _open_queue(args, qid=0, cntlid=0xFFFF):
    conn = Conn(args.addr, args.port, timeout=args.timeout)
    cpl = conn.connect(args.subnqn, args.hostnqn, qid=qid, sqsize=31 if qid == 0 else 127,
                       cntlid=cntlid, kato=args.kato if qid == 0 else 0)
    if not cpl.ok:
        raise Fail("Connect qid %d: %r" % (qid, cpl))
    return conn, cpl, bool(cpl.cdw0 & CONNECT_ATR)


def _after_failure(conn):
    """What the controller does with a command after a failed transaction:
    (acceptable, text). Refusal (SCT 1 SC 91h) or a closed connection is fine."""
    try:
        conn.sock.settimeout(3)
        cpl = prop_get_cap(conn)
    except (Closed, OSError, Fail):
        return True, "connection closed"
    if is_auth_required(cpl):
        return True, "commands refused (Authentication Required)"
    if cpl.ok:
        return False, "Property Get ACCEPTED after the failed authentication"
    return True, "Property Get refused with %r" % cpl


def _probe_before_auth(conn, qid):
    """Commands before authentication must end with SCT 1 SC 91h."""
    got = []
    cpl = prop_get_cap(conn)
    got.append(("Property Get", cpl))
    if qid == 0:
        cpl, _ = identify(conn, 1)
        got.append(("Identify", cpl))
    else:
        cpl, _ = read_cmd(conn, OPC_READ, 512, nsid=1)
        got.append(("Read", cpl))
    bad = ["%s %r" % (n, c) for n, c in got if not is_auth_required(c)]
    if bad:
        raise Fail("qid %d before authentication: %s (expected SCT 1 SC 0x91)" %
                   (qid, ", ".join(bad)))
    return "qid %d refused %s before authentication" % (qid, " and ".join(n for n, _ in got))


def _auth_queue(args, conn, qid, atr):
    if not atr and not args.always_auth:
        return None
    if not args.secret:
        raise Usage("qid %d: the controller requires authentication (ATR=1) and there is "
                    "no --secret" % qid)
    return authenticate(conn, args.subnqn, args.hostnqn, qid, args.secret, args.ctrl_secret,
                        args.digests, args.dhgroups)


def _first_namespace(admin):
    cpl, lst = identify(admin, 2)
    if not cpl.ok:
        return None, 0
    ids = [i for i in struct.unpack_from("<1024I", lst.ljust(4096, b"\0")) if i]
    if not ids:
        return None, 0
    cpl, ns = identify(admin, 0, nsid=ids[0])
    if not cpl.ok or len(ns) < 192:
        return ids[0], 512
    flbas = ns[26] & 0x0F
    lbads = ns[128 + 4 * flbas + 2]
    return ids[0], 1 << lbads


def cmd_connect(args):
    notes = []
    admin, cpl, atr = _open_queue(args)
    cntlid = cpl.cdw0 & 0xFFFF
    if args.expect_atr is not None and int(atr) != args.expect_atr:
        raise Fail("Connect response ATR=%d, expected %d" % (atr, args.expect_atr))
    if args.probe_before_auth:
        if not atr:
            raise Fail("--probe-before-auth: the controller did not set ATR")
        notes.append(_probe_before_auth(admin, 0))
    r = _auth_queue(args, admin, 0, atr)
    if r is not None and not r.ok:
        fine, then = _after_failure(admin)
        print("FAIL qid 0: %s; then %s" % (r, then))
        return 1 if fine else 2
    what = ["qid 0 %s" % (r if r is not None else "not authenticated (ATR=0)")]
    admin.enable()
    cpl, idc = identify(admin, 1)
    if not cpl.ok:
        raise Fail("Identify Controller after authentication: %r" % cpl)
    subnqn = idc[768:1024].split(b"\0")[0].decode(errors="replace")
    if subnqn != args.subnqn:
        raise Fail("Identify SUBNQN %r" % subnqn)
    if args.io_queue:
        io, cpl, io_atr = _open_queue(args, qid=1, cntlid=cntlid)
        if args.probe_before_auth:
            if not io_atr:
                raise Fail("--probe-before-auth: the controller did not set ATR on qid 1")
            notes.append(_probe_before_auth(io, 1))
        r = _auth_queue(args, io, 1, io_atr)
        if r is not None and not r.ok:
            fine, then = _after_failure(io)
            print("FAIL qid 1: %s; then %s" % (r, then))
            return 1 if fine else 2
        what.append("qid 1 %s" % (r if r is not None else "not authenticated (ATR=0)"))
        nsid, bs = _first_namespace(admin)
        if nsid:
            cpl, _ = read_cmd(io, OPC_READ, bs, nsid=nsid)
            if not cpl.ok:
                raise Fail("Read of namespace %d on qid 1: %r" % (nsid, cpl))
            what.append("read nsid %d ok" % nsid)
        io.close()
    admin.close()
    print("ok: %s; cntlid %d, Identify ok%s" % (", ".join(what), cntlid,
                                                "".join("; " + n for n in notes)))
    return 0


# ---------------------------------------------------------------------------
# Scenarios: a controller's answers to a host that deviates. Each takes the
# parsed arguments, raises Fail when the controller does something else,
# returns a line saying what it saw.
def _sc_open(args):
    conn, cpl, atr = _open_queue(args)
    expect(atr, "Connect response without ATR")
    return conn, HostAuth(conn, args.subnqn, args.hostnqn, args.secret, args.ctrl_secret,
                          args.digests, args.dhgroups)


def _failure1(h, send_cpl, rces, what, check_tid=True):
    """The controller accepted the command carrying the message and answers
    the next Authentication Receive with AUTH_Failure1, rce in rces; then the
    queue takes no other command."""
    expect(send_cpl.ok, "%s: the Authentication Send completed with %r" % (what, send_cpl))
    cpl, m = h.recv_msg()
    expect(cpl.ok, "%s: the Authentication Receive completed with %r" % (what, cpl))
    expect(m.is_failure1, "%s: expected AUTH_Failure1, got %r" % (what, m))
    expect(m.rce in rces, "%s: AUTH_Failure1 rce %d (%s), expected %s" %
           (what, m.rce, REASONS.get(m.rce, "?"), "/".join(str(r) for r in rces)))
    expect(not check_tid or m.t_id == h.t_id,
           "%s: AUTH_Failure1 t_id %d, expected %d" % (what, m.t_id, h.t_id))
    fine, then = _after_failure(h.conn)
    expect(fine, "%s: %s" % (what, then))
    return "AUTH_Failure1 rce=%d (%s), then %s" % (m.rce, REASONS.get(m.rce, "?"), then)


def _to_challenge(h):
    expect(h.send_negotiate().ok, "Negotiate refused")
    cpl, m = h.recv_msg()
    expect(cpl.ok and not h.check_challenge(m), "no usable Challenge: %r %r" % (cpl, m))
    h.take_challenge(m)
    return m


def sc_cmd_before_auth(args):
    conn, h = _sc_open(args)
    note = _probe_before_auth(conn, 0)
    r = h.run()
    expect(r.ok, "authentication after the refused commands: %s" % r)
    conn.enable()
    cpl, _ = identify(conn, 1)
    expect(cpl.ok, "Identify after authentication: %r" % cpl)
    return note + "; accepted after authentication"


def sc_recv_first(args):
    conn, h = _sc_open(args)
    return _failure1(h, Cpl(bytes(16)), (INCORRECT_MESSAGE,), "Receive before Negotiate",
                    check_tid=False)


def sc_reply_first(args):
    conn, h = _sc_open(args)
    hl = 32
    cpl = h.send(build_reply(h.t_id, bytes(hl)))
    return _failure1(h, cpl, (INCORRECT_MESSAGE,), "Reply before Negotiate", check_tid=False)


def sc_negotiate_twice(args):
    conn, h = _sc_open(args)
    expect(h.send_negotiate().ok, "first Negotiate")
    cpl = h.send_negotiate()
    return _failure1(h, cpl, (INCORRECT_MESSAGE,), "second Negotiate")


def sc_bad_scc(args):
    conn, h = _sc_open(args)
    return _failure1(h, h.send_negotiate(sc_c=1), (SCC_MISMATCH,), "Negotiate SC_C=1")


def sc_no_dhchap(args):
    conn, h = _sc_open(args)
    return _failure1(h, h.send_negotiate(auth_id=0xFE), (PROTOCOL_UNUSABLE,),
                     "Negotiate without a DH-HMAC-CHAP descriptor")


def sc_bad_napd(args):
    conn, h = _sc_open(args)
    return _failure1(h, h.send_negotiate(napd=2), (INCORRECT_PAYLOAD,),
                     "Negotiate napd 2 with one descriptor")


def sc_no_common_hash(args):
    conn, h = _sc_open(args)
    h.digests = [0xFE]
    return _failure1(h, h.send_negotiate(), (HASH_UNUSABLE,), "Negotiate with hash id 0xFE only")


def sc_no_common_dhgroup(args):
    conn, h = _sc_open(args)
    h.dhgroups = [0xFE]
    return _failure1(h, h.send_negotiate(), (DHGROUP_UNUSABLE,),
                     "Negotiate with DH group 0xFE only")


def sc_wrong_tid(args):
    conn, h = _sc_open(args)
    _to_challenge(h)
    cpl = h.send(h.reply_bytes(t_id=h.t_id ^ 0x5A5A))
    return _failure1(h, cpl, (INCORRECT_PAYLOAD, INCORRECT_MESSAGE), "Reply with another t_id")


def sc_short_reply(args):
    conn, h = _sc_open(args)
    _to_challenge(h)
    cpl = h.send(h.reply_bytes()[:-4])
    return _failure1(h, cpl, (INCORRECT_PAYLOAD,), "Reply 4 bytes short")


def sc_bad_hl(args):
    conn, h = _sc_open(args)
    m = _to_challenge(h)
    cpl = h.send(h.reply_bytes(hl=m.hl + 16))
    return _failure1(h, cpl, (INCORRECT_PAYLOAD,), "Reply with hl %d" % (m.hl + 16))


def sc_bad_dhv(args):
    groups = [g for g in args.dhgroups if g]
    if not groups:
        return "skipped (no DH group among --dhgroup)"
    conn, h = _sc_open(args)
    h.dhgroups = groups
    m = _to_challenge(h)
    one = (1).to_bytes(dh_size(m.dhg_id), "big")
    cpl = h.send(h.reply_bytes(dhv=one))
    return _failure1(h, cpl, (FAILED, INCORRECT_PAYLOAD), "Reply with DH value 1")


def sc_wrong_response(args):
    conn, h = _sc_open(args)
    _to_challenge(h)
    cpl = h.send(h.reply_bytes(rval=bytes([h.r1[0] ^ 1]) + h.r1[1:]))
    return _failure1(h, cpl, (FAILED,), "Reply with a wrong response")


def sc_success2_early(args):
    conn, h = _sc_open(args)
    _to_challenge(h)
    cpl = h.send(build_success2(h.t_id))
    return _failure1(h, cpl, (INCORRECT_MESSAGE,), "Success2 in place of the Reply")


def sc_failure2_early(args):
    conn, h = _sc_open(args)
    _to_challenge(h)
    h.send(build_failure(h.t_id, FAILED))
    fine, then = _after_failure(conn)
    expect(fine, "after the host's Failure2: %s" % then)
    return "after the host's Failure2: %s" % then


def sc_c2_seqnum0(args):
    """Reply with CVALID 1 but S2 = 0. NVMe 2.2 (8.3.4.5.4, as Linux's nvmet
    cites it): S2 = 0 means no bidirectional authentication (C2 only feeds a
    generated TLS PSK), so the controller answers Success1 without RVALID and
    the queue is authenticated; SPDK rejects it (Failure1, incorrect payload).
    Either is ok; a Success1 carrying a response is not."""
    conn, h = _sc_open(args)
    _to_challenge(h)
    c2 = secrets.token_bytes(hash_len(h.hash_id))
    cpl = h.send(h.reply_bytes(cval=c2, seqnum=0, cvalid=1))
    expect(cpl.ok, "Reply completed with %r" % cpl)
    cpl, m = h.recv_msg()
    expect(cpl.ok, "Receive completed with %r" % cpl)
    if m.is_failure1:
        expect(m.rce in (INCORRECT_PAYLOAD, FAILED), "AUTH_Failure1 rce %d" % m.rce)
        return "rejected: AUTH_Failure1 rce=%d (%s)" % (m.rce, REASONS.get(m.rce, "?"))
    expect(m.is_(AUTH_TYPE_DHCHAP, ID_SUCCESS1) and not m.problem, "got %r" % m)
    expect(m.rvalid == 0, "Success1 with RVALID 1 although S2 = 0")
    cpl = prop_get_cap(conn)
    expect(cpl.ok, "Property Get after the Success1: %r" % cpl)
    return "accepted as unidirectional (Success1 without RVALID), queue usable"


def sc_dh_leading_zero(args):
    """Two transactions: the host's DH value starts with a zero byte, then
    the shared secret Z does. The controller must take the full-size public
    value and pad Z to the group's size before hashing it (else R1 does not
    verify at the controller, or R2 does not verify here)."""
    groups = [g for g in args.dhgroups if g]
    if not groups:
        return "skipped (no DH group among --dhgroup)"
    for what, public, shared in (("g^x", True, False), ("Z", False, True)):
        conn, h = _sc_open(args)
        h.dhgroups = groups[:1]
        expect(h.send_negotiate().ok, "Negotiate refused")
        cpl, m = h.recv_msg()
        expect(cpl.ok and not h.check_challenge(m), "no usable Challenge: %r %r" % (cpl, m))
        h.take_challenge(m, x=dh_exponent_with_leading_zero(m.dhg_id, m.dhv, public, shared))
        expect((h.host_public if public else h.z)[0] == 0, "exponent search")
        r = h.finish()
        expect(r.ok, "authentication with %s starting with 00h: %s" % (what, r))
        conn.close()
    return "authenticated (%s, %s, %s) with g^x, then Z, starting with 00h" % (
        hash_name(h.hash_id), dhgroup_name(h.dhg_id),
        "bidirectional" if h.ckey is not None else "unidirectional")


def sc_replay(args):
    conn, h = _sc_open(args)
    r = h.run()
    expect(r.ok, "first authentication: %s" % r)
    old = [m for d, m in h.transcript if d == "send" and m.is_(AUTH_TYPE_DHCHAP, ID_REPLY)][0]
    conn2, h2 = _sc_open(args)
    h2.t_id = h.t_id
    h2.digests, h2.dhgroups = [h.hash_id], [h.dhg_id]
    _to_challenge(h2)
    cpl = h2.send(old.raw)
    conn.close()
    return _failure1(h2, cpl, (FAILED,), "a Reply replayed from another transaction")


def sc_reauth(args):
    conn, h = _sc_open(args)
    r = h.run()
    expect(r.ok, "authentication: %s" % r)
    conn.enable()
    r = authenticate(conn, args.subnqn, args.hostnqn, 0, args.secret, args.ctrl_secret,
                     args.digests, args.dhgroups)
    expect(r.ok, "re-authentication of an enabled queue: %s" % r)
    cpl, _ = identify(conn, 1)
    expect(cpl.ok, "Identify after re-authentication: %r" % cpl)
    return "re-authenticated: %s" % r


def sc_bad_secp(args):
    conn, h = _sc_open(args)
    cpl = auth_send(conn, h.negotiate_bytes(), secp=0xEA)
    expect(not cpl.ok, "Authentication Send with SECP 0xEA accepted")
    cpl2 = auth_send(conn, h.negotiate_bytes(), spsp0=2)
    expect(not cpl2.ok, "Authentication Send with SPSP0 2 accepted")
    r = h.run()
    expect(r.ok, "authentication after the refused commands: %s" % r)
    return "SECP 0xEA: %r, SPSP0 2: %r; then authenticated" % (cpl, cpl2)


def sc_tl_mismatch(args):
    conn, h = _sc_open(args)
    data = h.negotiate_bytes()
    cpl = auth_send(conn, data, tl=len(data) + 8)
    expect(not cpl.ok, "Authentication Send with TL %d and %d bytes accepted" %
           (len(data) + 8, len(data)))
    return "TL larger than the data: %r" % cpl


SCENARIOS = {
    "cmd-before-auth": sc_cmd_before_auth,
    "recv-first": sc_recv_first,
    "reply-first": sc_reply_first,
    "negotiate-twice": sc_negotiate_twice,
    "bad-scc": sc_bad_scc,
    "no-dhchap": sc_no_dhchap,
    "bad-napd": sc_bad_napd,
    "no-common-hash": sc_no_common_hash,
    "no-common-dhgroup": sc_no_common_dhgroup,
    "wrong-tid": sc_wrong_tid,
    "short-reply": sc_short_reply,
    "bad-hl": sc_bad_hl,
    "bad-dhv": sc_bad_dhv,
    "wrong-response": sc_wrong_response,
    "success2-early": sc_success2_early,
    "failure2-early": sc_failure2_early,
    "c2-seqnum0": sc_c2_seqnum0,
    "dh-leading-zero": sc_dh_leading_zero,
    "replay": sc_replay,
    "reauth": sc_reauth,
    "bad-secp": sc_bad_secp,
    "tl-mismatch": sc_tl_mismatch,
}


def cmd_scenario(args):
    names = list(SCENARIOS) if args.names == ["all"] else args.names
    fails = 0
    for name in names:
        if name not in SCENARIOS:
            raise Usage("unknown scenario %r (%s)" % (name, ", ".join(SCENARIOS)))
        try:
            print("ok - %s: %s" % (name, SCENARIOS[name](args)), flush=True)
        except (Fail, Closed, OSError, struct.error, ValueError) as e:
            print("not ok - %s: %s: %s" % (name, type(e).__name__, e), flush=True)
            fails += 1
        except Exception as e:  # noqa: BLE001 - a bug here must not hide the rest
            print("not ok - %s: %s: %s (a bug in the scenario)" % (name, type(e).__name__, e),
                  flush=True)
            fails += 1
    return 1 if fails else 0


# ---------------------------------------------------------------------------
# Attacks on what the target holds for a queue that has not authenticated
# (attack NAME): each raises Fail when the target lets the attacker hurt the
# real host, returns a line saying what it saw. --hostnqn is the keyed host
# the attacker impersonates (knowing its NQN, not its key; --secret is the
# real host's), --other-hostnqn another host (--other-secret: its key, none:
# a host without a key).
def _attack_conn(args, qid=0, cntlid=0xFFFF, hostnqn=None):
    conn = Conn(args.addr, args.port, timeout=args.timeout)
    cpl = conn.connect(args.subnqn, hostnqn or args.hostnqn, qid=qid,
                       sqsize=31 if qid == 0 else 127, cntlid=cntlid,
                       kato=args.kato if qid == 0 else 0)
    return conn, cpl


def _real_admin(args, kato=None):
    """The real host's admin queue: connected, authenticated, enabled."""
    conn = Conn(args.addr, args.port, timeout=args.timeout)
    cpl = conn.connect(args.subnqn, args.hostnqn, kato=args.kato if kato is None else kato)
    expect(cpl.ok and cpl.cdw0 & CONNECT_ATR, "real host's Connect: %r" % cpl)
    r = authenticate(conn, args.subnqn, args.hostnqn, 0, args.secret, args.ctrl_secret,
                     args.digests, args.dhgroups)
    expect(r.ok, "real host's admin queue: %s" % r)
    conn.enable()
    return conn, cpl.cdw0 & 0xFFFF


def attack_cntlids(args):
    """Unauthenticated Connects as the keyed host, twice as many as there are
    controller ids: another host still gets a controller, and so does the real one."""
    held = []
    try:
        for _ in range(args.count):
            conn, cpl = _attack_conn(args)
            expect(cpl.ok, "unauthenticated Connect %d refused: %r" % (len(held) + 1, cpl))
            held.append(conn)
        other, cpl = _attack_conn(args, hostnqn=args.other_hostnqn)
        expect(cpl.ok, "host %s refused while %d unauthenticated Connects wait: %r" %
               (args.other_hostnqn, len(held), cpl))
        if cpl.cdw0 & CONNECT_ATR:
            expect(args.other_secret, "the other host has to authenticate and has no key")
            r = authenticate(other, args.subnqn, args.other_hostnqn, 0, args.other_secret,
                             None, args.digests, args.dhgroups)
            expect(r.ok, "the other host's authentication: %s" % r)
        other.enable()
        cpl, _ = identify(other, 1)
        expect(cpl.ok, "the other host's Identify: %r" % cpl)
        real, cntlid = _real_admin(args)
        cpl, _ = identify(real, 1)
        expect(cpl.ok, "the real host's Identify: %r" % cpl)
        other.close()
        real.close()
        return ("%d unauthenticated Connects held; host %s connected and the real host "
                "authenticated (cntlid %d)" % (len(held), args.other_hostnqn, cntlid))
    finally:
        for c in held:
            c.close()


def attack_qid(args):
    """Unauthenticated Connects for qids 1 and 2 of the real host's live
    controller (its cntlid and host id known): the real host's own still work."""
    real, cntlid = _real_admin(args)
    squat = []
    try:
        for qid in (1, 2):
            conn, cpl = _attack_conn(args, qid=qid, cntlid=cntlid)
            if cpl.ok:
                squat.append(conn)
            else:
                conn.close()
        io, cpl = _attack_conn(args, qid=1, cntlid=cntlid)
        expect(cpl.ok, "the real host's Connect of qid 1 while an unauthenticated one waits: "
               "%r" % cpl)
        if cpl.cdw0 & CONNECT_ATR:
            r = authenticate(io, args.subnqn, args.hostnqn, 1, args.secret, args.ctrl_secret,
                             args.digests, args.dhgroups)
            expect(r.ok, "the real host's qid 1: %s" % r)
        nsid, bs = _first_namespace(real)
        expect(nsid, "no namespace")
        cpl, _ = read_cmd(io, OPC_READ, bs, nsid=nsid)
        expect(cpl.ok, "Read on the real host's qid 1: %r" % cpl)
        io.close()
        return ("%d unauthenticated I/O Connects on controller %d; the real host's qid 1 "
                "connected, authenticated and read" % (len(squat), cntlid))
    finally:
        for c in squat:
            c.close()
        real.close()


def attack_keepalive(args):
    """The real host's controller (KATO args.kato) goes silent while an
    unauthenticated I/O queue of it keeps sending: the controller must still
    time out."""
    expect(args.kato > 0, "--kato is needed")
    real, cntlid = _real_admin(args)
    conn, cpl = _attack_conn(args, qid=2, cntlid=cntlid)
    sent = 0
    try:
        expect(cpl.ok, "the attacker's Connect of qid 2: %r" % cpl)
        deadline = time.time() + 4 * args.kato / 1000.0 + 2
        while time.time() < deadline:
            try:
                prop_get_cap(conn)
                sent += 1
            except (Closed, OSError, Fail):
                break  # the controller went, and its queues with it
            if real.is_closed(wait=0.2):
                return ("controller %d timed out (KATO %d ms) although an unauthenticated "
                        "queue sent %d commands" % (cntlid, args.kato, sent))
        expect(real.is_closed(wait=0.5), "controller %d still up %.0f s after its host went "
               "silent: %d commands of an unauthenticated queue kept it alive" %
               (cntlid, 4 * args.kato / 1000.0 + 2, sent))
        return "controller %d timed out (KATO %d ms)" % (cntlid, args.kato)
    finally:
        conn.close()
        real.close()


def _flood_round(args, out):
    conns = []
    gid = max(args.dhgroups)
    hid = max(args.digests)
    try:
        for _ in range(args.count):
            conn, cpl = _attack_conn(args)
            expect(cpl.ok and cpl.cdw0 & CONNECT_ATR, "attacker Connect: %r" % cpl)
            conns.append((conn, secrets.randbits(16)))
            expect(auth_send(conn, build_negotiate(conns[-1][1], [hid], [gid])).ok,
                   "Negotiate refused")
        # Every Receive at once: the target has args.count DH keys to make.
        cids = []
        for conn, _ in conns:
            cid = conn.next_cid()
            conn.send_cmd(auth_sqe(FCT_AUTH_RECV, cid, 4096, sgl_transport(4096)))
            cids.append(cid)
        admitted = []
        for (conn, t_id), cid in zip(conns, cids):
            try:
                cpl, data = _wait_read(conn, cid, 4096)
            except (Closed, OSError, Fail):
                out["errors"] += 1
                continue
            m = Msg(data) if cpl.ok else None
            if m is not None and m.is_failure1:
                out["refused"] += 1
            elif m is not None and m.is_(AUTH_TYPE_DHCHAP, ID_CHALLENGE):
                admitted.append((conn, t_id, m))
            else:
                out["errors"] += 1
        out["admitted"] += len(admitted)
        # A junk Reply (right lengths, a random DH value) for each admitted one, all at once.
        sent = []
        for conn, t_id, m in admitted:
            size = dh_size(m.dhg_id) if m.dhg_id else 0
            dhv = (secrets.randbits(8 * size - 2) | 2).to_bytes(size, "big") if size else b""
            junk = build_reply(t_id, secrets.token_bytes(hash_len(m.hash_id)), dhv=dhv)
            cid = conn.next_cid()
            conn.send_cmd(auth_sqe(FCT_AUTH_SEND, cid, len(junk), sgl_incapsule(len(junk))),
                          junk, True)
            sent.append((conn, cid, junk))
        if args.abandon:
            return  # gone while the target works on the Replies
        for conn, cid, junk in sent:
            try:
                conn.wait_cpl(cid, junk)
                cpl, data = auth_recv(conn)
            except (Closed, OSError, Fail):
                continue
            m = Msg(data) if cpl.ok else None
            expect(m is None or not m.is_(AUTH_TYPE_DHCHAP, ID_SUCCESS1),
                   "a junk Reply was taken for a good one")
    finally:
        for conn, _ in conns:
            conn.close()


def attack_flood(args):
    """args.rounds times args.count exchanges at once as the keyed host, each
    offering only the costliest group: Negotiate, a Receive (the target makes
    its DH key), a junk Reply (the target checks the value and derives).
    Prints a JSON line: admitted, refused (a Failure1 instead of the
    Challenge: the target's caps), errors."""
    out = {"exchanges": args.count * args.rounds, "admitted": 0, "refused": 0, "errors": 0}
    for _ in range(args.rounds):
        _flood_round(args, out)
    print(json.dumps(out), flush=True)
    return "%(exchanges)d exchanges: %(admitted)d admitted, %(refused)d refused, " \
        "%(errors)d errors" % out


def attack_probe(args):
    """Not an attack: the real host's established controller (admin and I/O
    queue, authenticated) runs Identify and Read for args.seconds; after
    args.new_queue_at seconds it authenticates a new I/O queue. Prints a JSON
    line: counts, failures, Identify latency (p50 / p99 / max ms)."""
    real, cntlid = _real_admin(args)
    io, cpl = _attack_conn(args, qid=1, cntlid=cntlid)
    expect(cpl.ok, "qid 1 Connect: %r" % cpl)
    r = authenticate(io, args.subnqn, args.hostnqn, 1, args.secret, args.ctrl_secret,
                     args.digests, args.dhgroups)
    expect(r.ok, "qid 1: %s" % r)
    nsid, bs = _first_namespace(real)
    expect(nsid, "no namespace")
    lat = []
    out = {"identify": 0, "read": 0, "failed": 0, "new_queue": None}
    if args.ready_file:
        open(args.ready_file, "w").close()
    start = time.time()
    while time.time() - start < args.seconds:
        if out["new_queue"] is None and time.time() - start >= args.new_queue_at:
            q, cpl = _attack_conn(args, qid=2, cntlid=cntlid)
            ok = cpl.ok and authenticate(q, args.subnqn, args.hostnqn, 2, args.secret,
                                         args.ctrl_secret, args.digests, args.dhgroups).ok
            if ok:
                cpl, _ = read_cmd(q, OPC_READ, bs, nsid=nsid)
                ok = cpl.ok
            out["new_queue"] = "ok" if ok else "failed (%r)" % cpl
            q.close()
        t0 = time.time()
        cpl, _ = identify(real, 1)
        lat.append((time.time() - t0) * 1000.0)
        out["identify"] += 1
        out["failed"] += 0 if cpl.ok else 1
        cpl, _ = read_cmd(io, OPC_READ, bs, nsid=nsid)
        out["read"] += 1
        out["failed"] += 0 if cpl.ok else 1
        time.sleep(0.02)
    lat.sort()
    if lat:
        out["identify_ms"] = {"p50": round(lat[len(lat) // 2], 2),
                              "p99": round(lat[min(len(lat) - 1, int(len(lat) * 0.99))], 2),
                              "max": round(lat[-1], 2)}
    io.close()
    real.close()
    print(json.dumps(out), flush=True)
    expect(out["failed"] == 0, "%d commands failed" % out["failed"])
    expect(out["new_queue"] == "ok", "the new queue: %s" % out["new_queue"])
    return "%d Identify, %d Read, new queue ok" % (out["identify"], out["read"])


def attack_hold(args):
    """Measurement (scripts/bench_admission.sh), not a test: args.count
    half-finished exchanges as the keyed host (Connect, a Negotiate, then
    silence) held for args.seconds; each one the target closes is opened
    again at once. Prints a JSON line: held, reopened, failed opens."""
    out = {"held": 0, "reopened": 0, "failed_opens": 0}

    def one():
        conn, cpl = _attack_conn(args)
        if cpl.ok and cpl.cdw0 & CONNECT_ATR:
            auth_send(conn, build_negotiate(secrets.randbits(16), [max(args.digests)],
                                            [max(args.dhgroups)]))
        return conn

    held = []
    deadline = time.time() + args.seconds
    while len(held) < args.count and time.time() < deadline:
        try:
            held.append(one())
        except (Closed, OSError, Fail):
            out["failed_opens"] += 1
            time.sleep(0.05)
    out["held"] = len(held)
    if args.ready_file:
        with open(args.ready_file + ".tmp", "w") as f:
            f.write(json.dumps(out) + "\n")
        os.rename(args.ready_file + ".tmp", args.ready_file)
    while time.time() < deadline:
        for i, conn in enumerate(held):
            try:
                gone = conn.is_closed(wait=0.001)
            except OSError:
                gone = True
            if not gone:
                continue
            conn.close()
            try:
                held[i] = one()
                out["reopened"] += 1
            except (Closed, OSError, Fail):
                out["failed_opens"] += 1
        time.sleep(0.05)
    for conn in held:
        conn.close()
    print(json.dumps(out), flush=True)
    return "%(held)d held, %(reopened)d reopened" % out


ATTACKS = {
    "cntlids": attack_cntlids,
    "hold": attack_hold,
    "qid": attack_qid,
    "keepalive": attack_keepalive,
    "flood": attack_flood,
    "probe": attack_probe,
}


def cmd_attack(args):
    try:
        print("ok - %s: %s" % (args.name, ATTACKS[args.name](args)), flush=True)
        return 0
    except (Fail, Closed, OSError, struct.error, ValueError) as e:
        print("not ok - %s: %s: %s" % (args.name, type(e).__name__, e), flush=True)
        return 1


# ---------------------------------------------------------------------------
def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    def target_opts(q, secret_required=True):
        q.add_argument("--addr", default="127.0.0.1")
        q.add_argument("--port", type=int, required=True)
        q.add_argument("--subnqn", required=True)
        q.add_argument("--hostnqn", required=True)
        q.add_argument("--secret", required=secret_required, help="the host's DHHC-1 secret")
        q.add_argument("--ctrl-secret", help="the controller's DHHC-1 secret (bidirectional)")
        q.add_argument("--digest", action="append",
                       help="hash(es) to offer: sha256, sha384, sha512 (repeat or comma "
                       "list; default all)")
        q.add_argument("--dhgroup", action="append",
                       help="DH group(s) to offer: null, ffdhe2048 ... ffdhe8192 (default all)")
        q.add_argument("--kato", type=int, default=0, help="Connect KATO in ms")
        q.add_argument("--timeout", type=float, default=10.0, help="socket timeout, s")

    q = sub.add_parser("connect", help="connect, authenticate, Identify")
    target_opts(q, secret_required=False)
    q.add_argument("--io-queue", action="store_true", help="also connect and authenticate qid 1")
    q.add_argument("--probe-before-auth", action="store_true",
                   help="first check that commands are refused with SCT 1 SC 91h")
    q.add_argument("--expect-atr", type=int, choices=(0, 1),
                   help="fail (exit 2) unless the Connect response's ATR is this")
    q.add_argument("--always-auth", action="store_true",
                   help="authenticate even when the controller does not ask (ATR=0)")
    q = sub.add_parser("scenario", help="protocol-abuse checks")
    q.add_argument("names", nargs="+", help="scenario names or 'all': " + ", ".join(SCENARIOS))
    target_opts(q)
    q = sub.add_parser("attack", help="attacks on an unauthenticated queue's holdings")
    q.add_argument("name", choices=sorted(ATTACKS))
    target_opts(q, secret_required=False)
    q.add_argument("--other-hostnqn", help="another host (cntlids)")
    q.add_argument("--other-secret", help="its DHHC-1 secret (none: a host without a key)")
    q.add_argument("--count", type=int, default=8, help="Connects (cntlids), exchanges (flood)")
    q.add_argument("--rounds", type=int, default=1, help="flood: rounds of --count exchanges")
    q.add_argument("--abandon", action="store_true",
                   help="flood: close the connections right after sending the Replies")
    q.add_argument("--seconds", type=float, default=5.0, help="probe: how long")
    q.add_argument("--new-queue-at", type=float, default=1.0,
                   help="probe: authenticate a new I/O queue after this many seconds")
    q.add_argument("--ready-file", help="probe: created once the controller is up")
    q = sub.add_parser("gen-key", help="print a new DHHC-1 secret")
    q.add_argument("--hash", type=int, default=0, choices=(0, 1, 2, 3),
                   help="HH: 0 none, 1 SHA-256, 2 SHA-384, 3 SHA-512")
    q.add_argument("--key", help="the key in hex (default random)")
    q.add_argument("--length", type=int, choices=KEY_LENGTHS,
                   help="key length (default the hash's, 32 for HH 0)")
    q = sub.add_parser("check-key", help="parse a DHHC-1 secret")
    q.add_argument("secret")
    sub.add_parser("kat", help="print known-answer values as JSON")
    args = p.parse_args(argv)

    try:
        if args.cmd == "gen-key":
            key = bytes.fromhex(args.key) if args.key else None
            print(gen_dhchap_secret(args.hash, key, args.length))
            return 0
        if args.cmd == "check-key":
            hh, key = parse_dhchap_secret(args.secret)
            print("ok: HH %02d, key %d bytes, CRC-32 0x%08x" % (hh, len(key),
                                                                zlib.crc32(key) & 0xFFFFFFFF))
            return 0
        if args.cmd == "kat":
            print(json.dumps(kat(), indent=1, sort_keys=True))
            return 0
        args.digests = _list(args.digest, digest_id) or [1, 2, 3]
        args.dhgroups = _list(args.dhgroup, dhgroup_id) or [0, 1, 2, 3, 4, 5]
        if args.secret:
            parse_dhchap_secret(args.secret)
        if args.ctrl_secret:
            parse_dhchap_secret(args.ctrl_secret)
        if args.cmd == "connect":
            return cmd_connect(args)
        if args.cmd == "attack":
            return cmd_attack(args)
        return cmd_scenario(args)
    except (ValueError, Usage) as e:
        print("error: %s" % e)
        return 2
    except (Fail, Closed, OSError, struct.error) as e:
        print("error: %s: %s" % (type(e).__name__, e))
        return 2


if __name__ == "__main__":
    sys.exit(main())
