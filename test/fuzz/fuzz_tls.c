/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness for the secure channel's byte stream
 * (lib/auth/nvme_tls_sock.c) at the TLS record boundary: a host end and a
 * target end, handshaken over a socket pair whose buffers hold a few KiB,
 * then driven by the input: how much the host queues and sends at a time,
 * how it splits its iovecs, how much the target reads at a time and into how
 * many pieces. Records therefore end anywhere in the reads, sends come back
 * -EAGAIN in the middle of records and are repeated with more bytes queued,
 * and OpenSSL holds bytes the socket's readiness does not show.
 *
 * Input: a configuration byte, then records [op][arg].
 *   config bit 0: a SHA-384 key (TLS_AES_256_GCM_SHA384), else SHA-256;
 *   config bit 1: after the handshake, the rest of the input goes straight
 *                 into the host's socket, bypassing TLS: forged records;
 *   op % 4: 0 queue arg * 61 + 1 bytes and send once (iovecs split at arg);
 *           1 the target reads up to arg * 37 + 1 bytes (two pieces);
 *           2 the target reads while TLS holds bytes (nvme_sock_pending);
 *           3 the host sends once what it has queued.
 * Properties: the target reads exactly the bytes the host queued, in order
 * (after the input the two ends finish the transfer, bounded); forged records
 * never yield a byte (AEAD), only an error or nothing; no crash, leak or
 * out-of-bounds access (ASan).
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gga/nvme_auth.h"
#include "gga/nvme_tls_sock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HOSTNQN   "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"
#define SUBNQN    "nqn.2016-06.io.gga:fuzz"
#define MAX_BYTES (1u << 20)

static struct nvme_tls_psk g_psk;

static void
make_psk(uint8_t hash)
{
	memset(&g_psk, 0, sizeof(g_psk));
	g_psk.hash = hash;
	g_psk.len = hash == NVME_AUTH_HASH_SHA256 ? 32 : 48;
	memset(g_psk.key, 0x3c, g_psk.len);
}

static int
find_psk(void *ctx, const char *identity, struct nvme_tls_key *key, char *why, size_t why_len)
{
	struct nvme_tls_identity id;

	(void)ctx;
	(void)why;
	(void)why_len;
	if (nvme_tls_identity_parse(identity, &id) != 0 ||
	    nvme_tls_key_derive(&g_psk, id.hostnqn, id.subnqn, id.version, NVME_TLS_KDF_RFC8446,
				key) != 0 ||
	    strcmp(key->identity, identity) != 0) {
		return -ENOKEY;
	}
	return 0;
}

struct stream {
	int fd[2];
	struct nvme_tls_sock *host, *tgt;
	uint8_t *src, *dst;
	size_t queued, sent, got;
};

static void
host_send(struct stream *s, size_t split)
{
	struct iovec iov[2];
	size_t left = s->queued - s->sent;
	ssize_t n;
	int cnt = 1;

	if (left == 0) {
		return;
	}
	split = split % left;
	iov[0].iov_base = s->src + s->sent;
	iov[0].iov_len = split > 0 ? split : left;
	if (split > 0) {
		iov[1].iov_base = s->src + s->sent + split;
		iov[1].iov_len = left - split;
		cnt = 2;
	}
	n = nvme_sock_sendv(s->fd[0], s->host, iov, cnt);
	if (n == -EAGAIN) {
		return;
	}
	if (n <= 0 || (size_t)n > left) {
		abort();
	}
	s->sent += (size_t)n;
}

/* One read of up to want bytes into two pieces: the count, 0 (nothing now). */
static size_t
tgt_read(struct stream *s, size_t want)
{
	struct iovec iov[2];
	size_t room = s->queued - s->got;
	ssize_t n;

	want = want < room ? want : room;
	if (want == 0) {
		return 0;
	}
	iov[0].iov_base = s->dst + s->got;
	iov[0].iov_len = (want + 1) / 2;
	iov[1].iov_base = s->dst + s->got + iov[0].iov_len;
	iov[1].iov_len = want - iov[0].iov_len;
	n = nvme_sock_recvv(s->fd[1], s->tgt, iov, iov[1].iov_len > 0 ? 2 : 1);
	if (n == -EAGAIN) {
		return 0;
	}
	if (n <= 0 || (size_t)n > want) {
		abort();
	}
	if (memcmp(s->dst + s->got, s->src + s->got, (size_t)n) != 0) {
		abort();
	}
	s->got += (size_t)n;
	return (size_t)n;
}

static bool
handshake(struct stream *s)
{
	char why[128];
	int h = NVME_TLS_WANT_WRITE, t = NVME_TLS_WANT_READ, i;

	for (i = 0; i < 100 && (h != 0 || t != 0); i++) {
		if (h != 0 && (h = nvme_tls_sock_handshake(s->host, why, sizeof(why))) < 0) {
			return false;
		}
		if (t != 0 && (t = nvme_tls_sock_handshake(s->tgt, why, sizeof(why))) < 0) {
			return false;
		}
	}
	return h == 0 && t == 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool once;
	struct stream s = { .fd = { -1, -1 } };
	struct nvme_tls_key key;
	int bufsize = 4096, i;
	size_t pos = 1;
	uint8_t cfg;

	if (!once) {
		signal(SIGPIPE, SIG_IGN);
		once = true;
	}
	if (size < 1) {
		return 0;
	}
	cfg = data[0];
	make_psk((cfg & 1) ? NVME_AUTH_HASH_SHA384 : NVME_AUTH_HASH_SHA256);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, s.fd) != 0) {
		abort();
	}
	for (i = 0; i < 2; i++) {
		setsockopt(s.fd[i], SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof(bufsize));
		setsockopt(s.fd[i], SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof(bufsize));
	}
	if (nvme_tls_key_derive(&g_psk, HOSTNQN, SUBNQN, 0, NVME_TLS_KDF_RFC8446, &key) != 0 ||
	    nvme_tls_sock_client(s.fd[0], &key, &s.host) != 0 ||
	    nvme_tls_sock_server(s.fd[1], find_psk, NULL, &s.tgt) != 0 || !handshake(&s)) {
		abort();
	}
	s.src = malloc(MAX_BYTES);
	s.dst = malloc(MAX_BYTES);
	if (s.src == NULL || s.dst == NULL) {
		abort();
	}
	if (cfg & 2) {
		/* Forged records from a peer that did the handshake: never a byte of plaintext. */
		uint8_t buf[4096];
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };

		if (size > pos && write(s.fd[0], data + pos, size - pos) < 0) {
			/* A full socket: what went in is the input. */
		}
		for (i = 0; i < 4; i++) {
			ssize_t n = nvme_sock_recvv(s.fd[1], s.tgt, &iov, 1);

			if (n > 0) {
				abort();
			}
			if (n != -EAGAIN) {
				break;
			}
		}
		goto out;
	}
	while (pos + 1 < size) {
		uint8_t op = data[pos], arg = data[pos + 1];

		pos += 2;
		switch (op % 4) {
		case 0: {
			size_t n = (size_t)arg * 61 + 1, k;

			if (s.queued + n > MAX_BYTES) {
				n = MAX_BYTES - s.queued;
			}
			for (k = 0; k < n; k++) {
				s.src[s.queued + k] = (uint8_t)((s.queued + k) * 131 + op);
			}
			s.queued += n;
			host_send(&s, arg);
			break;
		}
		case 1:
			tgt_read(&s, (size_t)arg * 37 + 1);
			break;
		case 2:
			while (nvme_sock_pending(s.tgt) && tgt_read(&s, 4096) > 0) {
			}
			break;
		default:
			host_send(&s, arg);
			break;
		}
	}
	/* Finish the transfer: every queued byte must arrive, in order. */
	for (i = 0; i < 100000 && s.got < s.queued; i++) {
		host_send(&s, 24);
		while (tgt_read(&s, 65536) > 0) {
		}
	}
	if (s.got != s.queued) {
		abort();
	}

out:
	nvme_tls_sock_free(s.host);
	nvme_tls_sock_free(s.tgt);
	close(s.fd[0]);
	close(s.fd[1]);
	explicit_bzero(&key, sizeof(key));
	free(s.src);
	free(s.dst);
	return 0;
}
