#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""
Known answers for lib/auth/nvme_tls.c, computed independently of it: HMAC
from Python's hmac/hashlib, HKDF and HKDF-Expand-Label written out here from
RFC 5869 and RFC 8446 section 7.1, the NVMe steps from the NVMe/TCP transport
specification 1.1 (section 3.6.1.3, TP 8011 and TP 8018) as SPDK, libnvme
(>= 1.16) and Linux implement them. test/unit/lib/tls/nvme_tls_ut.c carries
the values this prints.

    python3 test/unit/lib/tls/tls_kat.py

Two encodings of the HkdfLabel ("info") are computed:
  rfc8446 - uint16 length (big-endian), then label and context each
            preceded by its length byte (RFC 8446 3.4 and 7.1). SPDK,
            libnvme >= 1.16, Linux nvme_auth_derive_tls_psk() since 2025.
  compat  - what libnvme <= 1.15 computed (nvme_insert_tls_key_compat()):
            the length in host order (little-endian on x86-64 and arm64)
            and label and context with no length bytes.
"""
import base64
import hashlib
import hmac
import zlib

HASHES = {1: ("sha256", 32), 2: ("sha384", 48)}
CIPHERS = {1: "TLS_AES_128_GCM_SHA256", 2: "TLS_AES_256_GCM_SHA384"}


def hkdf_extract(h, salt, ikm):
    return hmac.new(salt, ikm, h).digest()


def hkdf_expand(h, prk, info, length):
    out, t, i = b"", b"", 1
    while len(out) < length:
        t = hmac.new(prk, t + info + bytes([i]), h).digest()
        out += t
        i += 1
    return out[:length]


def hkdf_label(label, context, length, kdf):
    label = b"tls13 " + label
    if kdf == "rfc8446":
        assert len(label) <= 255 and len(context) <= 255
        return (length.to_bytes(2, "big") + bytes([len(label)]) + label +
                bytes([len(context)]) + context)
    return length.to_bytes(2, "little") + label + context


def expand_label(h, ikm, label, context, length, kdf):
    # PRK = HKDF-Extract(0, IKM): the salt is HashLen zero bytes.
    prk = hkdf_extract(h, bytes(hashlib.new(h).digest_size), ikm)
    return hkdf_expand(h, prk, hkdf_label(label, context, length, kdf), length)


def interchange(hh, key):
    crc = zlib.crc32(key).to_bytes(4, "little")
    return "NVMeTLSkey-1:%02d:%s:" % (hh, base64.b64encode(key + crc).decode())


def cipher_hash(key):
    # The cipher suite follows the PSK's length (SPDK, libnvme).
    return 1 if len(key) == 32 else 2


def retained(hh, key, hostnqn, kdf):
    if hh == 0:
        return key
    h, _ = HASHES[hh]
    return expand_label(h, key, b"HostNQN", hostnqn.encode(), len(key), kdf)


def digest(hh, psk, hostnqn, subnqn):
    h, _ = HASHES[hh]
    msg = (hostnqn + " " + subnqn + " " + "NVMe-over-Fabrics").encode()
    return base64.b64encode(hmac.new(psk, msg, h).digest()).decode()


def identity(version, hh, hostnqn, subnqn, dig=None):
    if version == 0:
        return "NVMe0R%02d %s %s" % (hh, hostnqn, subnqn)
    return "NVMe1R%02d %s %s %s" % (hh, hostnqn, subnqn, dig)


def tls_psk(hh, psk, version, ident, dig, kdf):
    h, n = HASHES[hh]
    ctx = ident if version == 0 else "%02d %s" % (hh, dig)
    return expand_label(h, psk, b"nvme-tls-psk", ctx.encode(), n, kdf)


def case(name, hh, key, hostnqn, subnqn):
    ch = cipher_hash(key)
    print("[%s] hash %02d, %d-byte configured PSK, cipher %s" %
          (name, hh, len(key), CIPHERS[ch]))
    print("  hostnqn    %s" % hostnqn)
    print("  subnqn     %s" % subnqn)
    print("  configured %s" % key.hex())
    print("  interchange %s" % interchange(hh, key))
    print("  identity v0 %s" % identity(0, ch, hostnqn, subnqn))
    for kdf in ("rfc8446", "compat"):
        r = retained(hh, key, hostnqn, kdf)
        d = digest(ch, r, hostnqn, subnqn)
        i0 = identity(0, ch, hostnqn, subnqn)
        i1 = identity(1, ch, hostnqn, subnqn, d)
        print("  %s:" % kdf)
        print("    retained   %s" % r.hex())
        print("    digest     %s" % d)
        print("    identity v1 %s" % i1)
        print("    tls psk v0 %s" % tls_psk(ch, r, 0, i0, d, kdf).hex())
        print("    tls psk v1 %s" % tls_psk(ch, r, 1, i1, d, kdf).hex())


def main():
    # RFC 5869 test case 1, to show the HKDF here is HKDF.
    okm = hkdf_expand("sha256",
                      hkdf_extract("sha256", bytes(range(13)), b"\x0b" * 22),
                      bytes(range(0xf0, 0xfa)), 42)
    assert okm.hex() == ("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56"
                         "ecc4c5bf34007208d5b887185865"), okm.hex()

    host = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"
    sub = "nqn.2016-06.io.gga:kat"
    case("sha256", 1, bytes(range(0x00, 0x20)), host, sub)
    case("sha384", 2, bytes(range(0x30, 0x60)), host, sub)
    case("none-32", 0, bytes(range(0x80, 0xa0)), host, sub)
    case("none-48", 0, bytes(range(0xa0, 0xd0)), host, sub)

    # libnvme's own known answers (test/psk.c, test_data_identity and
    # test_data_identity_compat): their identities carry digests over the
    # retained PSK, so they pin the retained derivation in both encodings.
    k = bytes.fromhex("5512dbb6737d0106f65975b773dfb011ffc344bcf442e2dd6d8bc4870b5d5b03")
    case("libnvme-sha256", 1, k, "nqn.psk-test-host", "nqn.psk-test-subsys")
    case("libnvme-sha384", 2, k + k[16:], "nqn.psk-test-host", "nqn.psk-test-subsys")


if __name__ == "__main__":
    main()
