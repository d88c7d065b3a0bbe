/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GGA_NVME_TLS_SOCK_H
#define GGA_NVME_TLS_SOCK_H

/*
 * NVMe/TCP's secure channel (TP 8011): TLS 1.3 with a pre-shared key over a
 * non-blocking TCP socket, for the target's connections (target/tcp_conn.c)
 * and the host's (initiator/nvme_tcp.c). The record layer is OpenSSL's in
 * user space: this kernel has no kTLS, and OpenSSL 3.0 could offload only
 * the transmit side of TLS 1.3 (docs/DESIGN.md section 2.3).
 *
 * What the handshake allows, on both sides: TLS 1.3 only; the cipher
 * suites TLS_AES_128_GCM_SHA256 and TLS_AES_256_GCM_SHA384, the one whose
 * hash is the PSK's; PSK with (EC)DHE key exchange as OpenSSL offers it;
 * no certificates, no session tickets, no resumption, no early data. The
 * PSK is the only authentication: a host refuses any certificate a server
 * shows in its place, and both ends fail a completed handshake that did
 * not use the PSK (-EPROTO, why says so).
 *
 * nvme_sock_sendv()/nvme_sock_recvv() move bytes on a connection with or
 * without TLS (ts NULL: plain sendmsg/readv), so a transport has one code
 * path. Rules a caller must keep on a TLS connection:
 *  - A send that returned -EAGAIN must be repeated with at least the same
 *    bytes (the transports' transmit queues only grow until a send succeeds,
 *    and each send presents the queue from its head).
 *  - OpenSSL may hold decrypted bytes that epoll cannot see: keep reading
 *    while nvme_sock_pending() says so, whatever the read budget.
 *  - After -EAGAIN from a read or a send, watch the socket for writing as
 *    well when nvme_tls_sock_want_write() says so.
 * The calls retry EINTR themselves. OpenSSL writes to the socket with
 * write(): the process must ignore SIGPIPE, as gga's daemons do (lib/app).
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "gga/nvme_auth.h"

struct nvme_tls_sock;

/*
 * Target side: called during a handshake with the PSK identity a host
 * offered (NUL-terminated; any bytes the host chose, at most
 * NVME_TLS_IDENTITY_MAX - 1). Fill key->hash, key->len and key->psk (the
 * TLS PSK of that identity) and return 0, or return a negative errno to
 * refuse the identity, with a reason in why (why_len bytes) for the log.
 * Runs on the connection's thread.
 */
typedef int (*nvme_tls_psk_find_fn)(void *ctx, const char *identity, struct nvme_tls_key *key,
				    char *why, size_t why_len);

/*
 * A TLS connection on fd, which stays the caller's (nvme_tls_sock_free()
 * does not close it). fd is made non-blocking. 0, -ENOMEM, or -EIO (OpenSSL
 * could not set up; logged).
 */
int nvme_tls_sock_server(int fd, nvme_tls_psk_find_fn find, void *ctx, struct nvme_tls_sock **out);
int nvme_tls_sock_client(int fd, const struct nvme_tls_key *key, struct nvme_tls_sock **out);

/* Sends a close_notify alert if the connection is in good standing, then frees. NULL: no-op. */
void nvme_tls_sock_free(struct nvme_tls_sock *ts);

/*
 * Advance the handshake: 0 once it is complete, NVME_TLS_WANT_READ or
 * NVME_TLS_WANT_WRITE (call again when the socket is readable/writable), or
 * a negative errno with the reason in why: -EPROTO (the peer spoke
 * plaintext NVMe/TCP, or TLS failed: no shared cipher, an unknown
 * identity, a wrong key), -ECONNRESET (the peer closed). A server first
 * peeks at the first byte: a TLS handshake record starts with 0x16, a
 * plaintext ICReq with 0x00.
 */
#define NVME_TLS_WANT_READ  1
#define NVME_TLS_WANT_WRITE 2
int nvme_tls_sock_handshake(struct nvme_tls_sock *ts, char *why, size_t why_len);

/* After a completed server handshake: the identity the host authenticated with. */
const char *nvme_tls_sock_identity(const struct nvme_tls_sock *ts);
/* After a completed handshake: the cipher suite ("TLS_AES_128_GCM_SHA256"). */
const char *nvme_tls_sock_cipher(const struct nvme_tls_sock *ts);

/* The last call that returned -EAGAIN waits for the socket to take bytes. */
bool nvme_tls_sock_want_write(const struct nvme_tls_sock *ts);

/*
 * Send from iov (cnt > 0 entries): the count of bytes taken (> 0), -EAGAIN,
 * or a negative errno (the connection is dead: -EPIPE, -ECONNRESET,
 * -EPROTO...). A TLS send takes at most one record's worth (16 KiB).
 */
ssize_t nvme_sock_sendv(int fd, struct nvme_tls_sock *ts, const struct iovec *iov, int cnt);

/*
 * Receive into iov (cnt > 0 entries): the count of bytes (> 0), 0 when the
 * peer closed the connection, -EAGAIN, or a negative errno.
 */
ssize_t nvme_sock_recvv(int fd, struct nvme_tls_sock *ts, const struct iovec *iov, int cnt);

/* Bytes are buffered inside TLS that the socket's readiness does not show. */
bool nvme_sock_pending(const struct nvme_tls_sock *ts);

#endif /* GGA_NVME_TLS_SOCK_H */
