/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/auth/nvme_tls_sock.c: a host and a target end of TLS 1.3 with a PSK,
 * in this process over a socket pair, driven by hand (each side's calls
 * only when it asked for them, as the transports do with epoll):
 *  - the handshake with a SHA-256 and a SHA-384 key, and the suite each gets;
 *  - a megabyte each way through socket buffers of a few KiB, so that sends
 *    come back -EAGAIN in the middle of records and are repeated with more
 *    bytes queued behind them (the transports' queues), and reads end
 *    inside records (nvme_sock_pending), with every byte checked;
 *  - gathered sends (iovecs) and scattered reads;
 *  - refusals: a wrong key, an identity the target does not know, plaintext
 *    sent to a TLS server, the peer closing;
 *  - the PSK as the only authentication: a host refuses an impostor server
 *    that ignores the PSK and shows a self-signed certificate instead, and
 *    the target refuses a client that offers no PSK;
 *  - the identity parser: what it takes and what it refuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "gga/nvme_auth.h"
#include "gga/nvme_tls_sock.h"
#include "gga/util.h"
#include "gga_ut.h"

#define HOSTNQN "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"
#define SUBNQN  "nqn.2016-06.io.gga:ut"

/* The target's table: one host, one key (configured PSK). */
static struct nvme_tls_psk g_server_psk;
static int g_finds;

static int
find_psk(void *ctx, const char *identity, struct nvme_tls_key *key, char *why, size_t why_len)
{
	struct nvme_tls_identity id;

	(void)ctx;
	g_finds++;
	if (nvme_tls_identity_parse(identity, &id) != 0 || strcmp(id.hostnqn, HOSTNQN) != 0) {
		snprintf(why, why_len, "unknown identity");
		return -ENOKEY;
	}
	if (nvme_tls_key_derive(&g_server_psk, id.hostnqn, id.subnqn, id.version,
				NVME_TLS_KDF_RFC8446, key) != 0 ||
	    strcmp(key->identity, identity) != 0) {
		snprintf(why, why_len, "identity does not match the key");
		return -EKEYREJECTED;
	}
	return 0;
}

static void
make_psk(struct nvme_tls_psk *psk, uint8_t hash, uint8_t seed)
{
	uint8_t i;

	memset(psk, 0, sizeof(*psk));
	psk->hash = hash;
	psk->len = hash == NVME_AUTH_HASH_SHA256 ? 32 : 48;
	for (i = 0; i < psk->len; i++) {
		psk->key[i] = (uint8_t)(seed + i * 7);
	}
}

struct pair {
	int fd[2]; /* 0: host, 1: target */
	struct nvme_tls_sock *host;
	struct nvme_tls_sock *tgt;
};

static void
pair_open(struct pair *p, int bufsize)
{
	int i;

	UT_ASSERT_EQ_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, p->fd), 0);
	for (i = 0; i < 2 && bufsize > 0; i++) {
		setsockopt(p->fd[i], SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof(bufsize));
		setsockopt(p->fd[i], SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof(bufsize));
	}
	p->host = NULL;
	p->tgt = NULL;
}

static void
pair_close(struct pair *p)
{
	nvme_tls_sock_free(p->host);
	nvme_tls_sock_free(p->tgt);
	close(p->fd[0]);
	close(p->fd[1]);
}

/* Both ends' handshakes to the end: 0, or the first failure (why says it). */
static int
handshake(struct pair *p, char *why, size_t why_len)
{
	int h = NVME_TLS_WANT_WRITE, t = NVME_TLS_WANT_READ, rounds;

	for (rounds = 0; rounds < 100 && (h != 0 || t != 0); rounds++) {
		if (h != 0) {
			h = nvme_tls_sock_handshake(p->host, why, why_len);
			if (h < 0) {
				return h;
			}
		}
		if (t != 0) {
			t = nvme_tls_sock_handshake(p->tgt, why, why_len);
			if (t < 0) {
				return t;
			}
		}
	}
	return h == 0 && t == 0 ? 0 : -ETIMEDOUT;
}

/* Host and target connected with a host key of hash/seed (target: g_server_psk). */
static int
connect_pair(struct pair *p, uint8_t hash, uint8_t seed, unsigned int version, int bufsize,
	     char *why, size_t why_len)
{
	struct nvme_tls_psk psk;
	struct nvme_tls_key key;
	int rc;

	pair_open(p, bufsize);
	make_psk(&psk, hash, seed);
	UT_ASSERT_EQ_FATAL(nvme_tls_key_derive(&psk, HOSTNQN, SUBNQN, version, NVME_TLS_KDF_RFC8446,
					       &key),
			   0);
	UT_ASSERT_EQ_FATAL(nvme_tls_sock_client(p->fd[0], &key, &p->host), 0);
	UT_ASSERT_EQ_FATAL(nvme_tls_sock_server(p->fd[1], find_psk, NULL, &p->tgt), 0);
	rc = handshake(p, why, why_len);
	return rc;
}

static void
test_handshake(void)
{
	char why[256];
	struct pair p;

	make_psk(&g_server_psk, NVME_AUTH_HASH_SHA256, 1);
	UT_ASSERT_EQ(connect_pair(&p, NVME_AUTH_HASH_SHA256, 1, 0, 0, why, sizeof(why)), 0);
	UT_ASSERT_STR_EQ(nvme_tls_sock_cipher(p.host), "TLS_AES_128_GCM_SHA256");
	UT_ASSERT_STR_EQ(nvme_tls_sock_cipher(p.tgt), "TLS_AES_128_GCM_SHA256");
	UT_ASSERT_STR_EQ(nvme_tls_sock_identity(p.tgt), "NVMe0R01 " HOSTNQN " " SUBNQN);
	pair_close(&p);

	make_psk(&g_server_psk, NVME_AUTH_HASH_SHA384, 2);
	UT_ASSERT_EQ(connect_pair(&p, NVME_AUTH_HASH_SHA384, 2, 1, 0, why, sizeof(why)), 0);
	UT_ASSERT_STR_EQ(nvme_tls_sock_cipher(p.tgt), "TLS_AES_256_GCM_SHA384");
	CU_ASSERT(strncmp(nvme_tls_sock_identity(p.tgt), "NVMe1R02 " HOSTNQN " " SUBNQN " ",
			  9 + strlen(HOSTNQN) + 1 + strlen(SUBNQN) + 1) == 0);
	pair_close(&p);
}

/*
 * One direction of a stream: the sender keeps a queue whose head it presents
 * at every send (up to 3 iovecs of odd sizes), adding bytes behind it as the
 * transports do; the receiver reads into odd-sized pieces. Each side is
 * called only when its last call would block or made progress.
 */
static void
stream(struct nvme_tls_sock *tx, int tx_fd, struct nvme_tls_sock *rx, int rx_fd, size_t total)
{
	uint8_t *src = malloc(total), *dst = calloc(1, total);
	size_t queued = 0, sent = 0, got = 0, rounds = 0;
	int again_tx = 0, pending_reads = 0;
	ssize_t n;

	CU_ASSERT_FATAL(src != NULL && dst != NULL);
	for (size_t i = 0; i < total; i++) {
		src[i] = (uint8_t)(i * 131 + (i >> 8));
	}
	while (got < total && rounds++ < 200000) {
		/* The queue grows in steps of 5000 bytes, never shrinks until sent. */
		if (queued < total && queued - sent < 40000) {
			queued = GGA_MIN(total, queued + 5000);
		}
		/* Send until the socket takes no more: sends end inside records. */
		while (sent < queued) {
			struct iovec iov[3];
			size_t left = queued - sent, a = GGA_MIN(left, (size_t)24);
			size_t b = GGA_MIN(left - a, (size_t)4093), c = left - a - b;
			int cnt = 1;

			iov[0].iov_base = src + sent;
			iov[0].iov_len = a;
			if (b > 0) {
				iov[cnt].iov_base = src + sent + a;
				iov[cnt++].iov_len = b;
			}
			if (c > 0) {
				iov[cnt].iov_base = src + sent + a + b;
				iov[cnt++].iov_len = c;
			}
			n = nvme_sock_sendv(tx_fd, tx, iov, cnt);
			if (n == -EAGAIN) {
				again_tx++;
				break;
			}
			CU_ASSERT_FATAL(n > 0 && (size_t)n <= left);
			sent += (size_t)n;
			if (queued < total && queued - sent < 40000) {
				queued = GGA_MIN(total, queued + 5000);
			}
		}
		do {
			struct iovec iov[2];
			size_t want = GGA_MIN(total - got, (size_t)777 + (rounds % 5000));

			iov[0].iov_base = dst + got;
			iov[0].iov_len = GGA_MIN(want, (size_t)100);
			iov[1].iov_base = dst + got + iov[0].iov_len;
			iov[1].iov_len = want - iov[0].iov_len;
			n = nvme_sock_recvv(rx_fd, rx, iov, iov[1].iov_len > 0 ? 2 : 1);
			if (n > 0) {
				got += (size_t)n;
				if (nvme_sock_pending(rx)) {
					pending_reads++;
				}
			}
			CU_ASSERT_FATAL(n > 0 || n == -EAGAIN);
		} while (n > 0 && nvme_sock_pending(rx) && got < total);
	}
	UT_ASSERT_EQ(got, total);
	CU_ASSERT(memcmp(src, dst, total) == 0);
	/* The small buffers made the paths this test is about happen. */
	CU_ASSERT(again_tx > 0);
	CU_ASSERT(pending_reads > 0);
	free(src);
	free(dst);
}

static void
test_stream(void)
{
	char why[256];
	struct pair p;

	make_psk(&g_server_psk, NVME_AUTH_HASH_SHA256, 3);
	UT_ASSERT_EQ_FATAL(connect_pair(&p, NVME_AUTH_HASH_SHA256, 3, 0, 4096, why, sizeof(why)),
			   0);
	stream(p.host, p.fd[0], p.tgt, p.fd[1], 1 << 20);
	stream(p.tgt, p.fd[1], p.host, p.fd[0], 1 << 20);
	pair_close(&p);
}

static void
test_plain(void)
{
	struct iovec iov = { .iov_base = "abc", .iov_len = 3 };
	char buf[8];
	struct iovec riov = { .iov_base = buf, .iov_len = sizeof(buf) };
	int fd[2];

	UT_ASSERT_EQ_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fd), 0);
	UT_ASSERT_EQ(nvme_sock_recvv(fd[1], NULL, &riov, 1), -EAGAIN);
	UT_ASSERT_EQ(nvme_sock_sendv(fd[0], NULL, &iov, 1), 3);
	UT_ASSERT_EQ(nvme_sock_recvv(fd[1], NULL, &riov, 1), 3);
	CU_ASSERT(memcmp(buf, "abc", 3) == 0);
	CU_ASSERT(!nvme_sock_pending(NULL));
	CU_ASSERT(!nvme_tls_sock_want_write(NULL));
	close(fd[0]);
	UT_ASSERT_EQ(nvme_sock_recvv(fd[1], NULL, &riov, 1), 0);
	close(fd[1]);
}

static void
test_refusals(void)
{
	char why[256] = "";
	struct pair p;
	uint8_t icreq[128] = { 0 };
	int rc;

	/* A wrong key: the binder does not verify. */
	make_psk(&g_server_psk, NVME_AUTH_HASH_SHA256, 4);
	rc = connect_pair(&p, NVME_AUTH_HASH_SHA256, 5, 0, 0, why, sizeof(why));
	UT_ASSERT_EQ(rc, -EPROTO);
	CU_ASSERT(why[0] != '\0');
	pair_close(&p);

	/* A key of the other hash: nothing in common. */
	rc = connect_pair(&p, NVME_AUTH_HASH_SHA384, 4, 0, 0, why, sizeof(why));
	CU_ASSERT(rc == -EPROTO || rc == -ECONNRESET);
	pair_close(&p);

	/* Plaintext to a TLS server: refused at the first byte, saying so. */
	pair_open(&p, 0);
	UT_ASSERT_EQ_FATAL(nvme_tls_sock_server(p.fd[1], find_psk, NULL, &p.tgt), 0);
	UT_ASSERT_EQ(nvme_tls_sock_handshake(p.tgt, why, sizeof(why)), NVME_TLS_WANT_READ);
	UT_ASSERT_EQ(write(p.fd[0], icreq, sizeof(icreq)), (ssize_t)sizeof(icreq));
	UT_ASSERT_EQ(nvme_tls_sock_handshake(p.tgt, why, sizeof(why)), -EPROTO);
	CU_ASSERT(strstr(why, "plaintext NVMe/TCP ICReq") != NULL);
	/* It read the ICReq away, so the close is orderly, and it stays failed. */
	UT_ASSERT_EQ(recv(p.fd[1], icreq, 1, MSG_DONTWAIT | MSG_PEEK), -1);
	UT_ASSERT_EQ(nvme_tls_sock_handshake(p.tgt, why, sizeof(why)), -EPROTO);
	pair_close(&p);

	/* The peer closes during the handshake. */
	pair_open(&p, 0);
	UT_ASSERT_EQ_FATAL(nvme_tls_sock_server(p.fd[1], find_psk, NULL, &p.tgt), 0);
	close(p.fd[0]);
	p.fd[0] = -1;
	UT_ASSERT_EQ(nvme_tls_sock_handshake(p.tgt, why, sizeof(why)), -ECONNRESET);
	pair_close(&p);

	/* A client key without a suite. */
	{
		struct nvme_tls_key key = { .hash = NVME_AUTH_HASH_SHA512, .len = 64 };
		struct nvme_tls_sock *ts;

		UT_ASSERT_EQ(nvme_tls_sock_client(0, &key, &ts), -EINVAL);
	}

	/* After the handshake: the peer goes away; reads see the end, sends fail. */
	make_psk(&g_server_psk, NVME_AUTH_HASH_SHA256, 6);
	UT_ASSERT_EQ_FATAL(connect_pair(&p, NVME_AUTH_HASH_SHA256, 6, 0, 0, why, sizeof(why)), 0);
	nvme_tls_sock_free(p.host); /* sends close_notify */
	p.host = NULL;
	{
		char buf[16];
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };

		UT_ASSERT_EQ(nvme_sock_recvv(p.fd[1], p.tgt, &iov, 1), 0);
		close(p.fd[0]);
		p.fd[0] = -1;
		iov.iov_len = 8;
		CU_ASSERT(nvme_sock_sendv(p.fd[1], p.tgt, &iov, 1) < 0);
	}
	pair_close(&p);
}

/*
 * A TLS 1.3 server (with a fresh self-signed certificate) or client
 * of plain OpenSSL, with no PSK at all: someone who does not hold the key.
 */
static SSL_CTX *
stranger_ctx(bool server)
{
	SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	EVP_PKEY *pkey;
	X509 *x;

	CU_ASSERT_FATAL(ctx != NULL);
	UT_ASSERT_EQ_FATAL(SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION), 1);
	if (!server) {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
		return ctx;
	}
	pkey = EVP_EC_gen("P-256");
	x = X509_new();
	CU_ASSERT_FATAL(pkey != NULL && x != NULL);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, pkey);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
				   (const unsigned char *)"impostor", -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(x));
	CU_ASSERT_FATAL(X509_sign(x, pkey, EVP_sha256()) > 0);
	UT_ASSERT_EQ_FATAL(SSL_CTX_use_certificate(ctx, x), 1);
	UT_ASSERT_EQ_FATAL(SSL_CTX_use_PrivateKey(ctx, pkey), 1);
	X509_free(x);
	EVP_PKEY_free(pkey);
	return ctx;
}

/*
 * gga's end (mine, already set up) against the stranger's OpenSSL end on
 * the other fd, until mine fails or both are done: mine's result.
 */
static int
against_stranger(struct nvme_tls_sock *mine, SSL *theirs, char *why, size_t why_len)
{
	int m = NVME_TLS_WANT_WRITE, rounds;
	bool theirs_done = false;

	for (rounds = 0; rounds < 100 && (m != 0 || !theirs_done); rounds++) {
		if (m > 0) {
			m = nvme_tls_sock_handshake(mine, why, why_len);
			if (m < 0) {
				break;
			}
		}
		if (!theirs_done) {
			int r = SSL_do_handshake(theirs);

			if (r == 1) {
				theirs_done = true;
			} else if (SSL_get_error(theirs, r) != SSL_ERROR_WANT_READ &&
				   SSL_get_error(theirs, r) != SSL_ERROR_WANT_WRITE) {
				theirs_done = true; /* their failure: mine decides the outcome */
			}
		}
	}
	ERR_clear_error();
	return m;
}

static void
test_psk_only(void)
{
	struct nvme_tls_psk psk;
	struct nvme_tls_key key;
	char why[256] = "";
	struct pair p;
	SSL_CTX *ctx;
	SSL *theirs;
	int rc;

	/*
	 * An impostor at the controller's address: a TLS 1.3 server without the
	 * PSK, with a self-signed certificate. It ignores the PSK offered and
	 * answers with its certificate; the host must not take that for a
	 * secure channel.
	 */
	ctx = stranger_ctx(true);
	pair_open(&p, 0);
	make_psk(&psk, NVME_AUTH_HASH_SHA256, 9);
	UT_ASSERT_EQ_FATAL(nvme_tls_key_derive(&psk, HOSTNQN, SUBNQN, 0, NVME_TLS_KDF_RFC8446,
					       &key),
			   0);
	UT_ASSERT_EQ_FATAL(nvme_tls_sock_client(p.fd[0], &key, &p.host), 0);
	UT_ASSERT_EQ_FATAL(fcntl(p.fd[1], F_SETFL, O_NONBLOCK), 0);
	theirs = SSL_new(ctx);
	CU_ASSERT_FATAL(theirs != NULL);
	SSL_set_fd(theirs, p.fd[1]);
	SSL_set_accept_state(theirs);
	rc = against_stranger(p.host, theirs, why, sizeof(why));
	UT_ASSERT_EQ(rc, -EPROTO);
	CU_ASSERT(strstr(why, "certificate") != NULL);
	/* And the connection stays failed: nothing can be sent through it. */
	{
		struct iovec iov = { .iov_base = why, .iov_len = 8 };

		CU_ASSERT(nvme_sock_sendv(p.fd[0], p.host, &iov, 1) < 0);
	}
	SSL_free(theirs);
	SSL_CTX_free(ctx);
	pair_close(&p);

	/* A client without a PSK: the target has no certificate, nothing else to offer. */
	ctx = stranger_ctx(false);
	pair_open(&p, 0);
	UT_ASSERT_EQ_FATAL(nvme_tls_sock_server(p.fd[1], find_psk, NULL, &p.tgt), 0);
	UT_ASSERT_EQ_FATAL(fcntl(p.fd[0], F_SETFL, O_NONBLOCK), 0);
	theirs = SSL_new(ctx);
	CU_ASSERT_FATAL(theirs != NULL);
	SSL_set_fd(theirs, p.fd[0]);
	SSL_set_connect_state(theirs);
	g_finds = 0;
	/* The client speaks first: one step of theirs before the target's. */
	(void)SSL_do_handshake(theirs);
	rc = against_stranger(p.tgt, theirs, why, sizeof(why));
	UT_ASSERT_EQ(rc, -EPROTO);
	UT_ASSERT_EQ(g_finds, 0);
	SSL_free(theirs);
	SSL_CTX_free(ctx);
	pair_close(&p);
}

static void
test_identity_parse(void)
{
	struct nvme_tls_identity id;

	UT_ASSERT_EQ(nvme_tls_identity_parse("NVMe0R01 h s", &id), 0);
	UT_ASSERT_EQ(id.version, 0);
	UT_ASSERT_EQ(id.hash, NVME_AUTH_HASH_SHA256);
	UT_ASSERT_STR_EQ(id.hostnqn, "h");
	UT_ASSERT_STR_EQ(id.subnqn, "s");
	UT_ASSERT_EQ(nvme_tls_identity_parse("NVMe1R02 h s d==", &id), 0);
	UT_ASSERT_EQ(id.version, 1);
	UT_ASSERT_EQ(id.hash, NVME_AUTH_HASH_SHA384);
	UT_ASSERT_STR_EQ(id.digest, "d==");

	UT_ASSERT_EQ(nvme_tls_identity_parse("", &id), -EINVAL);
	UT_ASSERT_EQ(nvme_tls_identity_parse("NVMe0R03 h s", &id), -EINVAL);
	UT_ASSERT_EQ(nvme_tls_identity_parse("NVMe2R01 h s", &id), -EINVAL);
	UT_ASSERT_EQ(nvme_tls_identity_parse("NVMe0R01 h", &id), -EINVAL);
	UT_ASSERT_EQ(nvme_tls_identity_parse("NVMe0R01 h s d", &id), -EINVAL);
	UT_ASSERT_EQ(nvme_tls_identity_parse("NVMe1R01 h s", &id), -EINVAL);
	UT_ASSERT_EQ(nvme_tls_identity_parse("NVMe1R01 h s d e", &id), -EINVAL);
	UT_ASSERT_EQ(nvme_tls_identity_parse("NVMe0R01  h s", &id), -EINVAL);
	UT_ASSERT_EQ(nvme_tls_identity_parse("NVMe0R01 h s ", &id), -EINVAL);
	CU_ASSERT(id.hostnqn[0] == '\0');
	{
		char big[NVME_TLS_IDENTITY_MAX + 300];

		/* A 224-byte host NQN is one too long. */
		memset(big, 'a', sizeof(big));
		memcpy(big, "NVMe0R01 ", 9);
		big[9 + 224] = ' ';
		strcpy(big + 9 + 224 + 1, "s");
		UT_ASSERT_EQ(nvme_tls_identity_parse(big, &id), -EINVAL);
		big[9 + 223] = ' ';
		strcpy(big + 9 + 223 + 1, "s");
		UT_ASSERT_EQ(nvme_tls_identity_parse(big, &id), 0);
	}
}

int
main(void)
{
	/* As the daemons do (lib/app): a write to a closed socket is an error, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	static const struct ut_test tests[] = {
		UT_TEST(test_handshake), UT_TEST(test_stream),         UT_TEST(test_plain),
		UT_TEST(test_refusals),  UT_TEST(test_identity_parse), UT_TEST(test_psk_only),
	};

	return ut_run("nvme_tls_sock", tests, ARRAY_SIZE(tests), NULL, NULL);
}
