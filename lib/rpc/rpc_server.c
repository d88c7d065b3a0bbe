/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The JSON-RPC Unix socket server. Everything runs on the app thread: the
 * listening socket and every connection are fd events of that thread, so an
 * idle server costs nothing and needs no locks.
 *
 * Input framing: a connection carries a stream of JSON values. A small
 * scanner finds where each value ends (balanced brackets outside strings) as
 * bytes arrive, so a value split over many reads costs one pass, and several
 * values in one read are all found; only a complete value is handed to
 * jansson. Anything that cannot start a JSON value, a value jansson rejects,
 * or a value longer than RPC_MAX_REQUEST_SIZE gets a parse error, and the
 * connection is closed because the stream cannot be resynchronised. The
 * close is graceful: the error is flushed, the sending side shut down, and
 * what the client still sends is read and discarded (up to DISCARD_LIMIT)
 * until it hangs up, because closing a Unix socket with unread input resets
 * the connection and the client could lose the error before reading it.
 *
 * Connections are reference counted: one reference while the socket is
 * open, one per exchange whose answer is outstanding. A client that hangs up
 * before its handler answers leaves the connection struct alive (socket
 * closed) until the answer arrives and is dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "gga/log.h"
#include "gga/rpc.h"
#include "gga/thread.h"
#include "gga/util.h"

#include "rpc_internal.h"

#define READ_CHUNK         (64u * 1024)
/* Reads per readiness event, so one busy client cannot starve the others. */
#define READS_PER_EVENT    16
/* Stop reading a client that does not read its answers once this much is queued. */
#define MAX_PENDING_OUTPUT (16u * 1024 * 1024)
#define ACCEPT_RETRY_US    (100 * 1000)
/* After a parse error, input read and thrown away before the connection is just closed. */
#define DISCARD_LIMIT      (64u * 1024 * 1024)
#define LISTEN_BACKLOG     128

enum scan_state {
	SCAN_IDLE,       /* between values */
	SCAN_NESTED,     /* inside an object or array */
	SCAN_TOP_STRING, /* a bare string at top level */
	SCAN_TOP_TOKEN,  /* a bare number or literal at top level */
};

struct rpc_conn {
	int fd;
	uint32_t id;
	struct fd_event *ev;
	uint32_t ev_mask;
	uint32_t refs;
	/* Exchanges handed to the processor and not answered yet. */
	uint32_t pending;
	bool open;
	/* The client shut down its sending side: answer what is pending, then close. */
	bool eof;
	/* After a parse error: input is thrown away, answers are dropped. */
	bool discarding;
	bool write_shut;
	size_t discarded;

	char *in;
	size_t in_len;
	size_t in_cap;
	enum scan_state state;
	size_t scan;  /* next byte to scan */
	size_t start; /* first byte of the value being scanned */
	uint32_t depth;
	bool in_string;
	bool escape;

	char *out;
	size_t out_off;
	size_t out_len;
	size_t out_cap;

	TAILQ_ENTRY(rpc_conn) link;
};

static struct {
	int fd;
	struct fd_event *ev;
	struct poller *accept_retry;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t dev;
	ino_t ino;
	uint32_t next_conn_id;
	TAILQ_HEAD(, rpc_conn) conns;
} g_server = {
	.fd = -1,
	.conns = TAILQ_HEAD_INITIALIZER(g_server.conns),
};

static void conn_update_events(struct rpc_conn *conn);

static void
conn_get(struct rpc_conn *conn)
{
	conn->refs++;
}

static void
conn_put(struct rpc_conn *conn)
{
	if (--conn->refs == 0) {
		free(conn);
	}
}

static void
conn_close(struct rpc_conn *conn)
{
	if (!conn->open) {
		return;
	}
	DEBUGLOG(rpc, "connection %u closed (%u answers outstanding)\n", conn->id, conn->pending);
	conn->open = false;
	thread_fd_unregister(&conn->ev);
	close(conn->fd);
	conn->fd = -1;
	TAILQ_REMOVE(&g_server.conns, conn, link);
	free(conn->in);
	conn->in = NULL;
	free(conn->out);
	conn->out = NULL;
	conn_put(conn);
}

static size_t
conn_output_pending(const struct rpc_conn *conn)
{
	return conn->out_len - conn->out_off;
}

/* Write what the socket takes now. Closes the connection on a write error. */
static void
conn_flush(struct rpc_conn *conn)
{
	ssize_t n;

	while (conn->open && conn->out_off < conn->out_len) {
		n = send(conn->fd, conn->out + conn->out_off, conn->out_len - conn->out_off,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			conn->out_off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			return;
		}
		DEBUGLOG(rpc, "connection %u: write failed: %s\n", conn->id, strerror(errno));
		conn_close(conn);
		return;
	}
	if (conn->open) {
		conn->out_off = 0;
		conn->out_len = 0;
		if (conn->discarding && conn->eof) {
			conn_close(conn);
		} else if (conn->discarding && !conn->write_shut) {
			/* The client reads the parse error, then EOF. */
			shutdown(conn->fd, SHUT_WR);
			conn->write_shut = true;
		}
	}
}

static int
conn_queue(struct rpc_conn *conn, json_t *response)
{
	size_t len, need;
	char *text, *p;

	text = json_dumps(response, JSON_COMPACT);
	if (text == NULL) {
		ERRLOG("rpc: connection %u: cannot encode an answer\n", conn->id);
		return -ENOMEM;
	}
	len = strlen(text);
	if (conn->out_off > 0) {
		memmove(conn->out, conn->out + conn->out_off, conn_output_pending(conn));
		conn->out_len -= conn->out_off;
		conn->out_off = 0;
	}
	/* A newline after each answer helps line-oriented clients (socat, nc). */
	need = conn->out_len + len + 1;
	if (need > conn->out_cap) {
		size_t cap = GGA_MAX(conn->out_cap * 2, need);

		p = realloc(conn->out, cap);
		if (p == NULL) {
			ERRLOG("rpc: connection %u: out of memory queueing an answer\n", conn->id);
			free(text);
			return -ENOMEM;
		}
		conn->out = p;
		conn->out_cap = cap;
	}
	memcpy(conn->out + conn->out_len, text, len);
	conn->out[conn->out_len + len] = '\n';
	conn->out_len += len + 1;
	free(text);
	return 0;
}

static bool
conn_done(const struct rpc_conn *conn)
{
	return conn->eof && conn->pending == 0 && conn_output_pending(conn) == 0;
}

/* Queue an answer, try to send it, and close if the client is finished. */
static void
conn_send(struct rpc_conn *conn, json_t *response)
{
	if (!conn->open) {
		return;
	}
	if (response != NULL && conn_queue(conn, response) != 0) {
		conn_close(conn);
		return;
	}
	conn_flush(conn);
	if (conn->open && conn_done(conn)) {
		conn_close(conn);
	}
}

static void
conn_answer(void *ctx, json_t *response)
{
	struct rpc_conn *conn = ctx;

	conn->pending--;
	if (conn->open && !conn->discarding) {
		conn_send(conn, response);
		if (conn->open) {
			conn_update_events(conn);
		}
	} else {
		DEBUGLOG(rpc, "connection %u gone: answer dropped\n", conn->id);
	}
	json_decref(response);
	conn_put(conn);
}

/* Answer with a parse error and stop: the stream cannot be resynchronised. */
static void conn_parse_error(struct rpc_conn *conn, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
conn_parse_error(struct rpc_conn *conn, const char *fmt, ...)
{
	char msg[256];
	json_t *resp;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	DEBUGLOG(rpc, "connection %u: %s\n", conn->id, msg);
	resp = rpc_error_response(NULL, RPC_ERROR_PARSE_ERROR, msg);
	if (resp == NULL || conn_queue(conn, resp) != 0) {
		json_decref(resp);
		conn_close(conn);
		return;
	}
	json_decref(resp);
	conn->discarding = true;
	free(conn->in);
	conn->in = NULL;
	conn->in_len = 0;
	conn->in_cap = 0;
	conn->state = SCAN_IDLE;
	conn_flush(conn);
}

/* Read and drop input after a parse error until the client hangs up. */
static void
conn_discard(struct rpc_conn *conn)
{
	char buf[READ_CHUNK];
	ssize_t n;
	int i;

	for (i = 0; i < READS_PER_EVENT && conn->open; i++) {
		n = recv(conn->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0) {
			conn->discarded += (size_t)n;
			if (conn->discarded > DISCARD_LIMIT) {
				conn_close(conn);
			}
			continue;
		}
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n == 0 && conn_output_pending(conn) > 0) {
			/* Half-closed: the parse error still goes out, then we close. */
			conn->eof = true;
		} else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
			conn_close(conn);
		}
		return;
	}
}

static void
conn_handle_value(struct rpc_conn *conn, size_t end)
{
	json_error_t err;
	json_t *value;
	int rc;

	conn->state = SCAN_IDLE;
	value = json_loadb(conn->in + conn->start, end - conn->start, JSON_DECODE_ANY, &err);
	if (value == NULL) {
		conn_parse_error(conn, "Parse error: %s", err.text);
		return;
	}
	conn->pending++;
	conn_get(conn);
	rc = rpc_process_value(value, conn_answer, conn);
	json_decref(value);
	if (rc != 0) {
		json_t *resp = rpc_error_response(NULL, RPC_ERROR_INTERNAL_ERROR,
						  "Internal error: out of memory");

		conn_answer(conn, resp);
	}
}

static bool
is_token_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c == '-' || c == '+' || c == '.';
}

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/*
 * A byte no JSON text can hold at this point: a control character inside a
 * string (even after a backslash), or, outside strings, anything but
 * whitespace, punctuation and the characters of numbers and literals. The
 * value is refused at once; waiting for its end would leave the client
 * without an answer until it sent more (or 4 MiB).
 */
static bool
scan_bad_char(const struct rpc_conn *conn, char c)
{
	if ((unsigned char)c < 0x20) {
		return conn->in_string || !is_space(c);
	}
	return !conn->in_string && c != ' ' && !is_token_char(c) && strchr("{}[]\":,", c) == NULL;
}

/* Track string state; returns true if `c` was consumed as part of a string. */
static bool
scan_string_char(struct rpc_conn *conn, char c)
{
	if (!conn->in_string) {
		return false;
	}
	if (conn->escape) {
		conn->escape = false;
	} else if (c == '\\') {
		conn->escape = true;
	} else if (c == '"') {
		conn->in_string = false;
	}
	return true;
}

/*
 * Find and handle every complete value in the input buffer, then move the
 * unfinished tail to the front of the buffer.
 */
static void
conn_scan(struct rpc_conn *conn, bool at_eof)
{
	size_t consumed;
	char c;

	while (conn->open && !conn->discarding && conn->scan < conn->in_len) {
		c = conn->in[conn->scan];
		if ((conn->state == SCAN_NESTED || conn->state == SCAN_TOP_STRING) &&
		    scan_bad_char(conn, c)) {
			conn_parse_error(conn,
					 "Parse error: invalid character 0x%02x at offset %zu",
					 (unsigned char)c, conn->scan - conn->start);
			return;
		}
		switch (conn->state) {
		case SCAN_IDLE:
			if (is_space(c)) {
				conn->scan++;
				continue;
			}
			conn->start = conn->scan;
			conn->in_string = false;
			conn->escape = false;
			if (c == '{' || c == '[') {
				conn->state = SCAN_NESTED;
				conn->depth = 1;
			} else if (c == '"') {
				conn->state = SCAN_TOP_STRING;
				conn->in_string = true;
			} else if (is_token_char(c)) {
				conn->state = SCAN_TOP_TOKEN;
			} else {
				conn_parse_error(conn, "Parse error: invalid character 0x%02x",
						 (unsigned char)c);
				return;
			}
			conn->scan++;
			break;
		case SCAN_NESTED:
			conn->scan++;
			if (scan_string_char(conn, c)) {
				break;
			}
			if (c == '"') {
				conn->in_string = true;
			} else if (c == '{' || c == '[') {
				conn->depth++;
			} else if (c == '}' || c == ']') {
				if (--conn->depth == 0) {
					conn_handle_value(conn, conn->scan);
				}
			}
			break;
		case SCAN_TOP_STRING:
			conn->scan++;
			scan_string_char(conn, c);
			if (!conn->in_string) {
				conn_handle_value(conn, conn->scan);
			}
			break;
		case SCAN_TOP_TOKEN:
			if (is_token_char(c)) {
				conn->scan++;
			} else {
				conn_handle_value(conn, conn->scan);
			}
			break;
		}
	}
	if (!conn->open || conn->discarding) {
		return;
	}
	/*
	 * A bare number or literal has no closing character: take it as
	 * complete when the data that carried it ends. It is not a valid
	 * request anyway; this only decides how it is rejected.
	 */
	if (conn->state == SCAN_TOP_TOKEN || (at_eof && conn->state != SCAN_IDLE)) {
		conn_handle_value(conn, conn->scan);
		if (!conn->open || conn->discarding) {
			return;
		}
	}

	consumed = conn->state == SCAN_IDLE ? conn->scan : conn->start;
	if (consumed > 0) {
		memmove(conn->in, conn->in + consumed, conn->in_len - consumed);
		conn->in_len -= consumed;
		conn->scan -= consumed;
		conn->start = 0;
	}
	if (conn->state != SCAN_IDLE && conn->in_len > RPC_MAX_REQUEST_SIZE) {
		conn_parse_error(conn, "Parse error: request larger than %u bytes",
				 RPC_MAX_REQUEST_SIZE);
	}
}

static void
conn_read(struct rpc_conn *conn)
{
	ssize_t n;
	char *p;
	int i;

	for (i = 0; i < READS_PER_EVENT && conn->open && !conn->eof && !conn->discarding; i++) {
		if (conn_output_pending(conn) > MAX_PENDING_OUTPUT) {
			/* The client is not reading its answers; wait until it does. */
			return;
		}
		if (conn->in_cap - conn->in_len < READ_CHUNK) {
			size_t cap = GGA_MAX(conn->in_cap * 2, conn->in_len + READ_CHUNK);

			p = realloc(conn->in, cap);
			if (p == NULL) {
				ERRLOG("rpc: connection %u: out of memory for input\n", conn->id);
				conn_close(conn);
				return;
			}
			conn->in = p;
			conn->in_cap = cap;
		}
		n = recv(conn->fd, conn->in + conn->in_len, READ_CHUNK, MSG_DONTWAIT);
		if (n > 0) {
			conn->in_len += (size_t)n;
			conn_scan(conn, false);
			continue;
		}
		if (n == 0) {
			conn->eof = true;
			conn_scan(conn, true);
			if (conn->open && conn_done(conn)) {
				conn_close(conn);
			}
			return;
		}
		if (errno == EINTR) {
			continue;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			DEBUGLOG(rpc, "connection %u: read failed: %s\n", conn->id,
				 strerror(errno));
			conn_close(conn);
		}
		return;
	}
}

static int
conn_event(void *ctx, uint32_t events)
{
	struct rpc_conn *conn = ctx;

	conn_get(conn);
	if (events & THREAD_FD_OUT) {
		conn_flush(conn);
	}
	if (conn->open && conn->discarding) {
		if (events & (THREAD_FD_IN | THREAD_FD_HUP | THREAD_FD_ERR)) {
			conn_discard(conn);
		}
	} else if (conn->open && !conn->eof &&
		   (events & (THREAD_FD_IN | THREAD_FD_HUP | THREAD_FD_ERR))) {
		conn_read(conn);
	} else if (conn->open && (events & (THREAD_FD_HUP | THREAD_FD_ERR))) {
		/* The client is gone entirely: answers still outstanding will be dropped. */
		conn_close(conn);
	}
	/*
	 * A client that half-closed after its last request is finished once the
	 * last answer has been flushed, possibly by this very writability event.
	 */
	if (conn->open && conn_done(conn)) {
		conn_close(conn);
	}
	if (conn->open) {
		conn_update_events(conn);
	}
	conn_put(conn);
	return POLLER_BUSY;
}

/*
 * Watch for input while the client may send and we are not too far behind
 * on its answers, and for writability while answers are queued. With neither
 * the fd is not watched at all (it waits for outstanding answers).
 */
static void
conn_update_events(struct rpc_conn *conn)
{
	uint32_t mask = 0;

	if (!conn->eof && (conn->discarding || conn_output_pending(conn) <= MAX_PENDING_OUTPUT)) {
		mask |= THREAD_FD_IN;
	}
	if (conn_output_pending(conn) > 0) {
		mask |= THREAD_FD_OUT;
	}
	if (mask == conn->ev_mask && (mask == 0) == (conn->ev == NULL)) {
		return;
	}
	if (mask == 0) {
		thread_fd_unregister(&conn->ev);
	} else if (conn->ev == NULL) {
		conn->ev = thread_fd_register(conn->fd, mask, conn_event, conn, "rpc_conn");
		if (conn->ev == NULL) {
			ERRLOG("rpc: connection %u: cannot watch its socket: %s\n", conn->id,
			       strerror(errno));
			conn_close(conn);
			return;
		}
	} else if (thread_fd_modify(conn->ev, mask) != 0) {
		ERRLOG("rpc: connection %u: cannot change its events\n", conn->id);
		conn_close(conn);
		return;
	}
	conn->ev_mask = mask;
}

static int
conn_create(int fd)
{
	struct rpc_conn *conn;

	conn = calloc(1, sizeof(*conn));
	if (conn == NULL) {
		return -ENOMEM;
	}
	conn->fd = fd;
	conn->id = g_server.next_conn_id++;
	conn->refs = 1;
	conn->open = true;
	conn->ev = thread_fd_register(fd, THREAD_FD_IN, conn_event, conn, "rpc_conn");
	if (conn->ev == NULL) {
		free(conn);
		return -errno;
	}
	conn->ev_mask = THREAD_FD_IN;
	TAILQ_INSERT_TAIL(&g_server.conns, conn, link);
	DEBUGLOG(rpc, "connection %u accepted\n", conn->id);
	return 0;
}

static int accept_event(void *ctx, uint32_t events);

static int
accept_retry(void *ctx)
{
	poller_unregister(&g_server.accept_retry);
	if (g_server.fd >= 0 && g_server.ev == NULL) {
		g_server.ev = thread_fd_register(g_server.fd, THREAD_FD_IN, accept_event, NULL,
						 "rpc_listen");
		if (g_server.ev == NULL) {
			ERRLOG("rpc: cannot watch the listening socket %s: %s\n", g_server.path,
			       strerror(errno));
		}
	}
	return POLLER_BUSY;
}

/*
 * Out of fds or memory: the listening socket stays readable, so stop
 * watching it for a while instead of spinning on it.
 */
static void
accept_pause(int err)
{
	WARNLOG("rpc: cannot accept connections on %s for now: %s\n", g_server.path, strerror(err));
	thread_fd_unregister(&g_server.ev);
	if (g_server.accept_retry == NULL) {
		g_server.accept_retry = poller_register(accept_retry, NULL, ACCEPT_RETRY_US,
							"rpc_accept_retry");
	}
}

static int
accept_event(void *ctx, uint32_t events)
{
	int fd, rc, i;

	for (i = 0; i < 64 && g_server.fd >= 0; i++) {
		fd = accept4(g_server.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED) {
				continue;
			}
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				accept_pause(errno);
			} else if (errno != EAGAIN && errno != EWOULDBLOCK) {
				ERRLOG("rpc: accept on %s failed: %s\n", g_server.path,
				       strerror(errno));
			}
			break;
		}
		rc = conn_create(fd);
		if (rc != 0) {
			ERRLOG("rpc: cannot set up a connection on %s: %s\n", g_server.path,
			       strerror(-rc));
			close(fd);
		}
	}
	return POLLER_BUSY;
}

/*
 * Is a server answering on `path`? 1 yes, 0 no (a stale socket file), or a
 * negative errno when that cannot be told.
 */
static int
probe_live(const struct sockaddr_un *addr)
{
	int fd, rc;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		return -errno;
	}
	/* Non-blocking: a live server with a full backlog answers EAGAIN. */
	rc = connect(fd, (const struct sockaddr *)addr, sizeof(*addr));
	if (rc == 0 || errno == EAGAIN || errno == EINPROGRESS) {
		rc = 1;
	} else if (errno == ECONNREFUSED || errno == ENOENT) {
		rc = 0;
	} else {
		rc = -errno;
	}
	close(fd);
	return rc;
}

int
rpc_server_listen(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, rc;

	if (g_server.fd >= 0) {
		ERRLOG("rpc: already listening on %s\n", g_server.path);
		return -EALREADY;
	}
	if (path == NULL || path[0] == '\0') {
		return -EINVAL;
	}
	if (strlen(path) >= sizeof(addr.sun_path)) {
		ERRLOG("rpc: socket path %s is too long (at most %zu bytes)\n", path,
		       sizeof(addr.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	memcpy(addr.sun_path, path, strlen(path) + 1);
	rpc_register_builtin_methods();

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		ERRLOG("rpc: cannot create a socket: %s\n", strerror(errno));
		return rc;
	}
	rc = bind(fd, (struct sockaddr *)&addr, sizeof(addr));
	if (rc != 0 && errno == EADDRINUSE) {
		/* Only a stale socket file may be replaced, never a live server or a file. */
		if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
			ERRLOG("rpc: %s exists and is not a socket\n", path);
			rc = -EEXIST;
			goto out_close_fd;
		}
		rc = probe_live(&addr);
		if (rc != 0) {
			if (rc == 1) {
				rc = -EADDRINUSE;
			}
			ERRLOG("rpc: %s is in use by another server: %s\n", path, strerror(-rc));
			goto out_close_fd;
		}
		NOTICELOG("rpc: replacing stale socket file %s\n", path);
		unlink(path);
		rc = bind(fd, (struct sockaddr *)&addr, sizeof(addr));
	}
	if (rc != 0) {
		rc = -errno;
		ERRLOG("rpc: cannot bind %s: %s\n", path, strerror(errno));
		goto out_close_fd;
	}
	/* Only the owner may configure the daemon. */
	chmod(path, 0600);
	if (listen(fd, LISTEN_BACKLOG) != 0) {
		rc = -errno;
		ERRLOG("rpc: cannot listen on %s: %s\n", path, strerror(errno));
		goto out_unlink_path;
	}
	if (stat(path, &st) != 0) {
		rc = -errno;
		ERRLOG("rpc: %s vanished after bind: %s\n", path, strerror(errno));
		goto out_unlink_path;
	}
	g_server.ev = thread_fd_register(fd, THREAD_FD_IN, accept_event, NULL, "rpc_listen");
	if (g_server.ev == NULL) {
		rc = errno ? -errno : -ENOMEM;
		ERRLOG("rpc: cannot watch the listening socket %s: %s\n", path, strerror(-rc));
		goto out_unlink_path;
	}
	g_server.fd = fd;
	g_server.dev = st.st_dev;
	g_server.ino = st.st_ino;
	memcpy(g_server.path, path, strlen(path) + 1);
	NOTICELOG("rpc: listening on %s\n", path);
	return 0;

out_unlink_path:
	unlink(path);
out_close_fd:
	close(fd);
	return rc;
}

void
rpc_server_close(void)
{
	struct rpc_conn *conn;
	struct stat st;

	while ((conn = TAILQ_FIRST(&g_server.conns)) != NULL) {
		conn_close(conn);
	}
	if (g_server.fd < 0) {
		return;
	}
	poller_unregister(&g_server.accept_retry);
	thread_fd_unregister(&g_server.ev);
	close(g_server.fd);
	g_server.fd = -1;
	/* Remove the socket file only if it is still ours. */
	if (stat(g_server.path, &st) == 0 && st.st_dev == g_server.dev &&
	    st.st_ino == g_server.ino) {
		unlink(g_server.path);
	}
	DEBUGLOG(rpc, "stopped listening on %s\n", g_server.path);
	g_server.path[0] = '\0';
}
