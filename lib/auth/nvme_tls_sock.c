/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TLS 1.3 with a pre-shared key on a non-blocking socket (include/gga/nvme_tls_sock.h),
 * on OpenSSL 3's libssl.
 *
 * The PSK reaches OpenSSL as a session: the TLS 1.3 external-PSK callbacks
 * (SSL_CTX_set_psk_find_session_callback on the target,
 * SSL_set_psk_use_session_callback on the host) hand over an SSL_SESSION
 * whose master key is the TLS PSK and whose cipher is the suite of the
 * PSK's hash. OpenSSL only uses a PSK with a suite of its hash, so a host
 * with a SHA-384 key and a target offering it as SHA-256 do not agree.
 *
 * The PSK is the only authentication, on both sides. A TLS 1.3 server that
 * ignores the PSK offered may answer with a certificate instead, and an
 * OpenSSL client that verifies nothing would accept it: the host would then
 * talk to whoever is at the address, without anyone knowing the key. So the
 * host refuses every certificate (SSL_VERIFY_PEER with a callback that
 * fails them all), and both sides check after the handshake that it was
 * the PSK's (SSL_session_reused(): the external PSK was accepted) and that
 * no certificate was seen. The target has no certificate to offer at all.
 *
 * Sends go through one staging buffer of a record's size: NVMe/TCP hands over
 * a PDU as an iovec (header, data, digest) and SSL_write_ex() takes one
 * buffer; copying into the record buffer is what the encryption does anyway.
 * SSL_MODE_ENABLE_PARTIAL_WRITE returns after each record, and
 * SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER lets a repeated send present the same
 * bytes from the same staging buffer; a repeated send always presents the
 * same first bytes and at least as many (the callers' queues keep them).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "gga/log.h"
#include "gga/nvme_tls_sock.h"
#include "gga/util.h"

/* The largest plaintext of one TLS record (RFC 8446 section 5.1). */
#define TLS_RECORD_MAX        16384
/* A TLS record header: content type 22 is a handshake. */
#define TLS_CONTENT_HANDSHAKE 0x16

struct nvme_tls_sock {
	SSL *ssl;
	int fd;
	bool server;
	bool peeked;     /* server: the first byte was a TLS handshake record */
	bool failed;     /* a fatal error: no close_notify, no more calls */
	bool want_write; /* the last -EAGAIN waits for the socket to take bytes */
	nvme_tls_psk_find_fn find;
	void *find_ctx;
	struct nvme_tls_key key;              /* host: its TLS PSK and identity; wiped at free */
	char identity[NVME_TLS_IDENTITY_MAX]; /* server: the identity accepted */
	char why[160]; /* server: why the identity was refused; host: the certificate refused */
	uint8_t wbuf[TLS_RECORD_MAX];
};

static pthread_once_t g_ctx_once = PTHREAD_ONCE_INIT;
static SSL_CTX *g_server_ctx;
static SSL_CTX *g_client_ctx;

/* The TLS 1.3 cipher suite IDs of RFC 8446 appendix B.4, by hash. */
static const SSL_CIPHER *
suite_of(SSL *ssl, uint8_t hash)
{
	static const unsigned char aes128[2] = { 0x13, 0x01 }, aes256[2] = { 0x13, 0x02 };

	switch (hash) {
	case NVME_AUTH_HASH_SHA256:
		return SSL_CIPHER_find(ssl, aes128);
	case NVME_AUTH_HASH_SHA384:
		return SSL_CIPHER_find(ssl, aes256);
	default:
		return NULL;
	}
}

/* A session carrying the TLS PSK, as the external-PSK callbacks want it. */
static SSL_SESSION *
psk_session(SSL *ssl, const struct nvme_tls_key *key)
{
	const SSL_CIPHER *cipher = suite_of(ssl, key->hash);
	SSL_SESSION *sess;

	if (cipher == NULL || (sess = SSL_SESSION_new()) == NULL) {
		return NULL;
	}
	if (SSL_SESSION_set1_master_key(sess, key->psk, key->len) != 1 ||
	    SSL_SESSION_set_cipher(sess, cipher) != 1 ||
	    SSL_SESSION_set_protocol_version(sess, TLS1_3_VERSION) != 1) {
		SSL_SESSION_free(sess);
		return NULL;
	}
	return sess;
}

/*
 * Target: the host offered identity; 1 with *sess set to accept it, 1 with
 * NULL when it is unknown (the handshake then fails: there is nothing else
 * to authenticate with), 0 on an internal error.
 */
static int
server_find_session(SSL *ssl, const unsigned char *identity, size_t len, SSL_SESSION **sess)
{
	struct nvme_tls_sock *ts = SSL_get_app_data(ssl);
	struct nvme_tls_key key;
	char id[NVME_TLS_IDENTITY_MAX];
	int rc;

	*sess = NULL;
	if (len == 0 || len >= sizeof(id) || memchr(identity, '\0', len) != NULL) {
		snprintf(ts->why, sizeof(ts->why), "a PSK identity of %zu bytes is not an NVMe one",
			 len);
		return 1;
	}
	memcpy(id, identity, len);
	id[len] = '\0';
	memset(&key, 0, sizeof(key));
	rc = ts->find(ts->find_ctx, id, &key, ts->why, sizeof(ts->why));
	if (rc == 0) {
		*sess = psk_session(ssl, &key);
		if (*sess == NULL) {
			snprintf(ts->why, sizeof(ts->why), "no TLS session for the key");
		} else {
			snprintf(ts->identity, sizeof(ts->identity), "%s", id);
		}
	}
	explicit_bzero(&key, sizeof(key));
	return *sess != NULL || rc != 0 ? 1 : 0;
}

/* Host: offer its identity with its PSK (md is set on a retry after HelloRetryRequest). */
static int
client_use_session(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen,
		   SSL_SESSION **sess)
{
	struct nvme_tls_sock *ts = SSL_get_app_data(ssl);
	const SSL_CIPHER *cipher = suite_of(ssl, ts->key.hash);

	*sess = NULL;
	*id = NULL;
	*idlen = 0;
	if (cipher == NULL) {
		return 0;
	}
	if (md != NULL && md != SSL_CIPHER_get_handshake_digest(cipher)) {
		/* The suite chosen has another hash: this key cannot be used. */
		return 1;
	}
	*sess = psk_session(ssl, &ts->key);
	if (*sess == NULL) {
		return 0;
	}
	*id = (const unsigned char *)ts->key.identity;
	*idlen = strlen(ts->key.identity);
	return 1;
}

/*
 * Host: called for each certificate of a server that answered the PSK
 * offered with a certificate. None is acceptable, whatever signed it.
 */
static int
client_refuse_cert(int preverify_ok, X509_STORE_CTX *x509_ctx)
{
	SSL *ssl = X509_STORE_CTX_get_ex_data(x509_ctx, SSL_get_ex_data_X509_STORE_CTX_idx());
	struct nvme_tls_sock *ts = ssl != NULL ? SSL_get_app_data(ssl) : NULL;

	(void)preverify_ok;
	if (ts != NULL) {
		snprintf(ts->why, sizeof(ts->why),
			 "the controller answered with a certificate instead of proving the "
			 "PSK: it does not hold the key (an impostor?); refused");
	}
	X509_STORE_CTX_set_error(x509_ctx, X509_V_ERR_APPLICATION_VERIFICATION);
	return 0;
}

static SSL_CTX *
ctx_new(const SSL_METHOD *method)
{
	SSL_CTX *ctx = SSL_CTX_new(method);

	if (ctx == NULL) {
		return NULL;
	}
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
	    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1 ||
	    SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384") != 1 ||
	    SSL_CTX_set_num_tickets(ctx, 0) != 1) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_IGNORE_UNEXPECTED_EOF |
					 SSL_OP_NO_COMPRESSION);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_max_early_data(ctx, 0);
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_default_read_buffer_len(ctx, 4 * TLS_RECORD_MAX);
	return ctx;
}

static void
ctx_init(void)
{
	g_server_ctx = ctx_new(TLS_server_method());
	g_client_ctx = ctx_new(TLS_client_method());
	if (g_server_ctx != NULL) {
		/* No certificate is ever loaded: a host without the PSK has nothing to accept. */
		SSL_CTX_set_verify(g_server_ctx, SSL_VERIFY_NONE, NULL);
		SSL_CTX_set_psk_find_session_callback(g_server_ctx, server_find_session);
	}
	if (g_client_ctx != NULL) {
		SSL_CTX_set_verify(g_client_ctx, SSL_VERIFY_PEER, client_refuse_cert);
	}
}

/*
 * After a completed handshake: was it authenticated by the PSK? true, or
 * false with the reason in why. An external PSK that both sides used makes
 * the session a "resumed" one; a certificate means some other way in.
 */
static bool
psk_was_used(struct nvme_tls_sock *ts, char *why, size_t why_len)
{
	X509 *cert = SSL_get1_peer_certificate(ts->ssl);

	if (cert != NULL) {
		X509_free(cert);
		snprintf(why, why_len,
			 "the peer presented a certificate: only the PSK may "
			 "authenticate a secure channel; refused");
		return false;
	}
	if (SSL_session_reused(ts->ssl) != 1) {
		snprintf(why, why_len, "the handshake completed without the PSK; refused");
		return false;
	}
	if (ts->server && ts->identity[0] == '\0') {
		snprintf(why, why_len,
			 "the handshake completed with no PSK identity accepted; "
			 "refused");
		return false;
	}
	return true;
}

/* The last OpenSSL error's text, for a log line; clears the thread's queue. */
static void
ssl_reason(char *buf, size_t len)
{
	unsigned long e = ERR_peek_last_error();
	const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;

	snprintf(buf, len, "%s", r != NULL ? r : "TLS error");
	ERR_clear_error();
}

static int
sock_new(int fd, bool server, struct nvme_tls_sock **out)
{
	struct nvme_tls_sock *ts;
	SSL_CTX *ctx;
	int fl;

	pthread_once(&g_ctx_once, ctx_init);
	ctx = server ? g_server_ctx : g_client_ctx;
	if (ctx == NULL) {
		ERRLOG("tls: OpenSSL cannot make a TLS 1.3 context\n");
		return -EIO;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
		return -errno;
	}
	ts = calloc(1, sizeof(*ts));
	if (ts == NULL) {
		return -ENOMEM;
	}
	ts->fd = fd;
	ts->server = server;
	ERR_clear_error();
	ts->ssl = SSL_new(ctx);
	if (ts->ssl == NULL || SSL_set_fd(ts->ssl, fd) != 1) {
		ERR_clear_error();
		SSL_free(ts->ssl);
		free(ts);
		return -ENOMEM;
	}
	SSL_set_app_data(ts->ssl, ts);
	*out = ts;
	return 0;
}

int
nvme_tls_sock_server(int fd, nvme_tls_psk_find_fn find, void *ctx, struct nvme_tls_sock **out)
{
	int rc = sock_new(fd, true, out);

	if (rc == 0) {
		(*out)->find = find;
		(*out)->find_ctx = ctx;
		SSL_set_accept_state((*out)->ssl);
	}
	return rc;
}

int
nvme_tls_sock_client(int fd, const struct nvme_tls_key *key, struct nvme_tls_sock **out)
{
	const char *suite = nvme_tls_cipher_suite(key->hash);
	struct nvme_tls_sock *ts;
	int rc;

	if (suite == NULL || key->len == 0 || key->len > sizeof(key->psk)) {
		return -EINVAL;
	}
	rc = sock_new(fd, false, &ts);
	if (rc != 0) {
		return rc;
	}
	ts->key = *key;
	/* Offer the one suite the key is for. */
	if (SSL_set_ciphersuites(ts->ssl, suite) != 1) {
		ERR_clear_error();
		nvme_tls_sock_free(ts);
		return -EIO;
	}
	SSL_set_psk_use_session_callback(ts->ssl, client_use_session);
	SSL_set_connect_state(ts->ssl);
	*out = ts;
	return 0;
}

void
nvme_tls_sock_free(struct nvme_tls_sock *ts)
{
	if (ts == NULL) {
		return;
	}
	if (!ts->failed && SSL_is_init_finished(ts->ssl)) {
		/* Best effort, never waits: a close_notify if the socket takes it. */
		(void)SSL_shutdown(ts->ssl);
	}
	ERR_clear_error();
	SSL_free(ts->ssl);
	explicit_bzero(&ts->key, sizeof(ts->key));
	explicit_bzero(ts->wbuf, sizeof(ts->wbuf));
	free(ts);
}

/*
 * What an SSL call's failure r means: -EAGAIN (want_write says which way),
 * 0 (the peer closed), or a negative errno and ts failed.
 */
static int
ssl_failure(struct nvme_tls_sock *ts, int r, char *why, size_t why_len)
{
	int err = SSL_get_error(ts->ssl, r), saved = errno;

	switch (err) {
	case SSL_ERROR_WANT_READ:
		ts->want_write = false;
		return -EAGAIN;
	case SSL_ERROR_WANT_WRITE:
		ts->want_write = true;
		return -EAGAIN;
	case SSL_ERROR_ZERO_RETURN:
		ERR_clear_error();
		return 0;
	case SSL_ERROR_SYSCALL:
		ts->failed = true;
		ERR_clear_error();
		if (why != NULL) {
			snprintf(why, why_len, "%s",
				 saved != 0 ? strerror(saved) : "connection closed by the peer");
		}
		return saved == EPIPE || saved == 0 ? -ECONNRESET : -saved;
	default:
		ts->failed = true;
		if (why != NULL) {
			ssl_reason(why, why_len);
		} else {
			ERR_clear_error();
		}
		return -EPROTO;
	}
}

/* Server: is the first byte the start of a TLS handshake? 1 yes, 0 not yet, < 0 no. */
static int
peek_first(struct nvme_tls_sock *ts, char *why, size_t why_len)
{
	unsigned char b;
	ssize_t n;

	do {
		n = recv(ts->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			return 0;
		}
		snprintf(why, why_len, "%s", strerror(errno));
		return -errno;
	}
	if (n == 0) {
		snprintf(why, why_len, "connection closed by the peer");
		return -ECONNRESET;
	}
	if (b != TLS_CONTENT_HANDSHAKE) {
		/*
		 * Take what the peer sent (an ICReq is 128 bytes), so that the close
		 * is an orderly one (FIN) rather than a reset for unread data.
		 */
		uint8_t sink[256];

		while (recv(ts->fd, sink, sizeof(sink), MSG_DONTWAIT) > 0) {
		}
		snprintf(why, why_len,
			 "the first byte is 0x%02x, not a TLS handshake (0x16)%s: this listener "
			 "requires a secure channel",
			 b, b == 0 ? " but a plaintext NVMe/TCP ICReq" : "");
		return -EPROTO;
	}
	ts->peeked = true;
	return 1;
}

int
nvme_tls_sock_handshake(struct nvme_tls_sock *ts, char *why, size_t why_len)
{
	int r;

	if (ts->failed) {
		snprintf(why, why_len, "the connection failed before");
		return -EPROTO;
	}
	if (ts->server && !ts->peeked) {
		r = peek_first(ts, why, why_len);
		if (r <= 0) {
			if (r < 0) {
				ts->failed = true;
			}
			return r == 0 ? NVME_TLS_WANT_READ : r;
		}
	}
	ERR_clear_error();
	r = SSL_do_handshake(ts->ssl);
	if (r == 1) {
		ts->want_write = false;
		if (!psk_was_used(ts, why, why_len)) {
			ts->failed = true;
			return -EPROTO;
		}
		return 0;
	}
	r = ssl_failure(ts, r, why, why_len);
	if (r == -EAGAIN) {
		return ts->want_write ? NVME_TLS_WANT_WRITE : NVME_TLS_WANT_READ;
	}
	if (r == 0) {
		ts->failed = true;
		snprintf(why, why_len, "connection closed by the peer");
		return -ECONNRESET;
	}
	if (ts->why[0] != '\0') {
		/* The identity's (certificate's) refusal says more than OpenSSL's alert. */
		snprintf(why, why_len, "%s", ts->why);
	}
	return r;
}

const char *
nvme_tls_sock_identity(const struct nvme_tls_sock *ts)
{
	return ts->identity[0] != '\0' ? ts->identity : NULL;
}

const char *
nvme_tls_sock_cipher(const struct nvme_tls_sock *ts)
{
	return SSL_get_cipher_name(ts->ssl);
}

bool
nvme_tls_sock_want_write(const struct nvme_tls_sock *ts)
{
	return ts != NULL && ts->want_write;
}

ssize_t
nvme_sock_sendv(int fd, struct nvme_tls_sock *ts, const struct iovec *iov, int cnt)
{
	struct msghdr msg = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)cnt };
	size_t len = 0, written = 0, k;
	ssize_t n;
	int i, r;

	if (ts == NULL) {
		do {
			n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		} while (n < 0 && errno == EINTR);
		if (n < 0) {
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
		}
		return n > 0 ? n : -EIO;
	}
	if (ts->failed) {
		return -EPROTO;
	}
	for (i = 0; i < cnt && len < sizeof(ts->wbuf); i++) {
		k = GGA_MIN(iov[i].iov_len, sizeof(ts->wbuf) - len);
		memcpy(ts->wbuf + len, iov[i].iov_base, k);
		len += k;
	}
	if (len == 0) {
		return -EIO;
	}
	ERR_clear_error();
	errno = 0;
	if (SSL_write_ex(ts->ssl, ts->wbuf, len, &written) == 1) {
		ts->want_write = false;
		return (ssize_t)written;
	}
	r = ssl_failure(ts, 0, NULL, 0);
	return r == 0 ? -ECONNRESET : r;
}

ssize_t
nvme_sock_recvv(int fd, struct nvme_tls_sock *ts, const struct iovec *iov, int cnt)
{
	size_t total = 0, got;
	ssize_t n;
	int i, r;

	if (ts == NULL) {
		do {
			n = cnt == 1 ? recv(fd, iov[0].iov_base, iov[0].iov_len, MSG_DONTWAIT) :
				       readv(fd, iov, cnt);
		} while (n < 0 && errno == EINTR);
		if (n < 0) {
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
		}
		return n;
	}
	if (ts->failed) {
		return -EPROTO;
	}
	for (i = 0; i < cnt; i++) {
		if (iov[i].iov_len == 0) {
			continue;
		}
		/* After the first bytes, only what TLS holds already: never block. */
		if (total > 0 && SSL_pending(ts->ssl) == 0) {
			break;
		}
		ERR_clear_error();
		errno = 0;
		if (SSL_read_ex(ts->ssl, iov[i].iov_base, iov[i].iov_len, &got) != 1) {
			if (total > 0) {
				ERR_clear_error();
				break;
			}
			r = ssl_failure(ts, 0, NULL, 0);
			return r;
		}
		ts->want_write = false;
		total += got;
		if (got < iov[i].iov_len) {
			break;
		}
	}
	return (ssize_t)total;
}

bool
nvme_sock_pending(const struct nvme_tls_sock *ts)
{
	return ts != NULL && !ts->failed && SSL_has_pending(ts->ssl) == 1;
}
