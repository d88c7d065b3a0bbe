/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gga_rpc: send one JSON-RPC request to a gga daemon and print the result.
 *
 *   gga_rpc [-s SOCK] [-t SECONDS] [-w] [-v] METHOD [--key value | --key=value ...]
 *   gga_rpc [options] METHOD '{"raw": "json params"}'
 *
 * Exit status: 0 with the result printed on stdout (pretty JSON); 1 when
 * the daemon answered with an error ("error CODE: MESSAGE" on stderr); 2 when
 * there is no answer (cannot connect, timeout, malformed reply) or on a
 * usage error. Scripts can therefore tell "the daemon said no" from "there
 * is no daemon".
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "gga/rpc.h"
#include "gga/util.h"

#define EXIT_RPC_ERROR 1
#define EXIT_NO_ANSWER 2
#define RETRY_MS       50

static bool g_verbose;

static void
usage(FILE *f)
{
	fprintf(f,
		"Usage: gga_rpc [options] METHOD [--key value | --key=value ...]\n"
		"       gga_rpc [options] METHOD '{JSON params}'\n"
		"\n"
		"Sends one JSON-RPC 2.0 request to a gga daemon and prints its result.\n"
		"\n"
		"Options:\n"
		"  -s SOCK     daemon's Unix socket (default %s)\n"
		"  -t SECONDS  how long to wait for the answer (default 60)\n"
		"  -w          wait for the socket to appear (a daemon starting up), within -t\n"
		"  -v          print the request on stderr\n"
		"  -h          print this help\n"
		"\n"
		"Parameters: --key value (or --key=value) sets params.key; '-' in keys becomes\n"
		"'_'. Values that look like integers are sent as integers, true/false/null as\n"
		"JSON literals, {...} or [...] as JSON, anything else as a string; trsvcid,\n"
		"serial_number, model_number, name, traddr, nqn, hostnqn, subnqn and uuid are\n"
		"always strings. A --key\n"
		"followed by another --key or nothing is true. A single JSON object or array\n"
		"argument is sent as the params.\n"
		"\n"
		"Exit status: 0 result printed; 1 the daemon answered with an error;\n"
		"2 no answer (connect failure, timeout, bad reply) or bad usage.\n"
		"\n"
		"Examples:\n"
		"  gga_rpc rpc_get_methods\n"
		"  gga_rpc bdev_malloc_create --name M0 --num_blocks 2048 --block_size 4096\n"
		"  gga_rpc -s /tmp/t.sock bdev_get_bdevs '{\"name\": \"M0\"}'\n",
		RPC_DEFAULT_SOCKET);
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool
is_integer_text(const char *s)
{
	if (*s == '-') {
		s++;
	}
	if (*s == '\0') {
		return false;
	}
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9') {
			return false;
		}
	}
	return true;
}

/*
 * Parameters that the methods take as strings although their values often
 * look like numbers (a port, a serial number): sent as typed, never as
 * integers, as SPDK's rpc.py types them.
 */
static const char *const g_string_keys[] = {
	"trsvcid", "serial_number", "model_number", "name", "traddr",
	"nqn",     "hostnqn",       "subnqn",       "uuid",
};

static bool
is_string_key(const char *key)
{
	size_t i;

	for (i = 0; i < sizeof(g_string_keys) / sizeof(g_string_keys[0]); i++) {
		if (strcmp(key, g_string_keys[i]) == 0) {
			return true;
		}
	}
	return false;
}

/* Turn a command-line value into JSON (see usage()). */
static json_t *
value_to_json(const char *key, const char *s)
{
	long long v;
	json_t *j;

	if (s != NULL && is_string_key(key)) {
		return json_string(s);
	}
	if (s == NULL || strcmp(s, "true") == 0) {
		return json_true();
	}
	if (strcmp(s, "false") == 0) {
		return json_false();
	}
	if (strcmp(s, "null") == 0) {
		return json_null();
	}
	if (is_integer_text(s)) {
		errno = 0;
		v = strtoll(s, NULL, 10);
		/* Beyond the range of a JSON integer here: let the daemon see the text. */
		if (errno == 0) {
			return json_integer(v);
		}
	}
	if (s[0] == '{' || s[0] == '[') {
		j = json_loads(s, 0, NULL);
		if (j != NULL) {
			return j;
		}
	}
	return json_string(s);
}

static bool
is_key_arg(const char *s)
{
	return s[0] == '-' && s[1] == '-' && s[2] != '\0';
}

/* Build params from the arguments after METHOD. Returns 0, or -EINVAL (message printed). */
static int
build_params(int argc, char **argv, json_t **params)
{
	json_t *p = NULL, *raw = NULL, *value;
	const char *val, *eq;
	char *key, *c;
	int i;

	for (i = 0; i < argc; i++) {
		if (!is_key_arg(argv[i])) {
			if (raw != NULL) {
				fprintf(stderr, "gga_rpc: unexpected argument '%s'\n", argv[i]);
				goto out_free_json;
			}
			raw = json_loads(argv[i], 0, NULL);
			if (!json_is_object(raw) && !json_is_array(raw)) {
				fprintf(stderr,
					"gga_rpc: '%s' is neither --key nor a JSON "
					"object or array\n",
					argv[i]);
				goto out_free_json;
			}
			continue;
		}
		eq = strchr(argv[i] + 2, '=');
		if (eq != NULL) {
			key = strndup(argv[i] + 2, (size_t)(eq - argv[i] - 2));
			val = eq + 1;
		} else {
			key = strdup(argv[i] + 2);
			val = (i + 1 < argc && !is_key_arg(argv[i + 1])) ? argv[++i] : NULL;
		}
		if (key == NULL || *key == '\0') {
			fprintf(stderr, "gga_rpc: empty parameter name in '%s'\n", argv[i]);
			free(key);
			goto out_free_json;
		}
		for (c = key; *c != '\0'; c++) {
			if (*c == '-') {
				*c = '_';
			}
		}
		if (p == NULL) {
			p = json_object();
		}
		value = value_to_json(key, val);
		if (p == NULL || value == NULL || json_object_set_new(p, key, value) != 0) {
			fprintf(stderr, "gga_rpc: out of memory\n");
			free(key);
			goto out_free_json;
		}
		free(key);
	}
	if (raw != NULL && p != NULL) {
		fprintf(stderr, "gga_rpc: give either --key value pairs or one JSON argument\n");
		goto out_free_json;
	}
	*params = raw != NULL ? raw : p;
	return 0;
out_free_json:
	json_decref(p);
	json_decref(raw);
	return -EINVAL;
}

static int
connect_socket(const char *path, bool wait, uint64_t deadline)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "gga_rpc: socket path too long: %s\n", path);
		return -ENAMETOOLONG;
	}
	memcpy(addr.sun_path, path, strlen(path) + 1);
	for (;;) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			err = errno;
			fprintf(stderr, "gga_rpc: socket: %s\n", strerror(err));
			return -err;
		}
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0) {
			return fd;
		}
		err = errno;
		close(fd);
		if (!wait || (err != ENOENT && err != ECONNREFUSED && err != EAGAIN) ||
		    now_ms() >= deadline) {
			fprintf(stderr, "gga_rpc: cannot connect to %s: %s\n", path, strerror(err));
			return -err;
		}
		usleep(RETRY_MS * 1000);
	}
}

static int
send_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Length of the first complete JSON object or array in buf (after leading
 * whitespace), or 0 if it is not complete yet; -1 if buf cannot start one.
 */
static ssize_t
complete_value_len(const char *buf, size_t len)
{
	bool in_string = false, escape = false;
	size_t i = 0, depth = 0;

	while (i < len && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t')) {
		i++;
	}
	if (i < len && buf[i] != '{' && buf[i] != '[') {
		return -1;
	}
	for (; i < len; i++) {
		char c = buf[i];

		if (in_string) {
			if (escape) {
				escape = false;
			} else if (c == '\\') {
				escape = true;
			} else if (c == '"') {
				in_string = false;
			}
		} else if (c == '"') {
			in_string = true;
		} else if (c == '{' || c == '[') {
			depth++;
		} else if ((c == '}' || c == ']') && --depth == 0) {
			return (ssize_t)(i + 1);
		}
	}
	return 0;
}

/* Read one complete JSON value, waiting until the deadline. NULL on failure (printed). */
static json_t *
read_response(int fd, const char *path, uint64_t deadline)
{
	size_t len = 0, cap = 64 * 1024;
	char *buf = malloc(cap), *p;
	json_error_t err;
	json_t *resp = NULL;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	ssize_t n, vlen;
	uint64_t now;
	int rc;

	while (buf != NULL) {
		vlen = complete_value_len(buf, len);
		if (vlen < 0) {
			fprintf(stderr, "gga_rpc: %s: the reply is not JSON\n", path);
			break;
		}
		if (vlen > 0) {
			resp = json_loadb(buf, (size_t)vlen, 0, &err);
			if (resp == NULL) {
				fprintf(stderr, "gga_rpc: %s: malformed reply: %s\n", path,
					err.text);
			}
			break;
		}
		now = now_ms();
		if (now >= deadline) {
			fprintf(stderr, "gga_rpc: %s: no answer within the timeout\n", path);
			break;
		}
		rc = poll(&pfd, 1, (int)GGA_MIN(deadline - now, (uint64_t)INT_MAX));
		if (rc < 0 && errno != EINTR) {
			fprintf(stderr, "gga_rpc: poll: %s\n", strerror(errno));
			break;
		}
		if (rc <= 0) {
			continue;
		}
		if (cap - len < 4096) {
			p = realloc(buf, cap * 2);
			if (p == NULL) {
				break;
			}
			buf = p;
			cap *= 2;
		}
		n = recv(fd, buf + len, cap - len, 0);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			fprintf(stderr, "gga_rpc: %s: connection closed before a full answer%s%s\n",
				path, n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
			break;
		}
		len += (size_t)n;
	}
	if (buf == NULL) {
		fprintf(stderr, "gga_rpc: out of memory\n");
	}
	free(buf);
	return resp;
}

static int
print_response(json_t *resp)
{
	json_t *error, *result;
	char *text;

	error = json_object_get(resp, "error");
	if (json_is_object(error)) {
		fprintf(stderr, "error %lld: %s\n",
			(long long)json_integer_value(json_object_get(error, "code")),
			json_string_value(json_object_get(error, "message")) ?: "(no message)");
		return EXIT_RPC_ERROR;
	}
	result = json_object_get(resp, "result");
	if (result == NULL) {
		fprintf(stderr, "gga_rpc: the reply has neither a result nor an error\n");
		return EXIT_NO_ANSWER;
	}
	text = json_dumps(result, JSON_INDENT(2) | JSON_ENCODE_ANY);
	if (text == NULL) {
		fprintf(stderr, "gga_rpc: out of memory\n");
		return EXIT_NO_ANSWER;
	}
	printf("%s\n", text);
	free(text);
	return fflush(stdout) == 0 ? 0 : EXIT_NO_ANSWER;
}

int
main(int argc, char **argv)
{
	const char *path = RPC_DEFAULT_SOCKET, *method;
	double timeout_s = 60.0;
	bool wait = false;
	json_t *params = NULL, *req, *resp;
	uint64_t deadline;
	char *text, *end;
	int ch, fd, rc;

	if (argc > 1 && strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return 0;
	}
	while ((ch = getopt(argc, argv, "+s:t:wvh")) != -1) {
		switch (ch) {
		case 's':
			path = optarg;
			break;
		case 't':
			timeout_s = strtod(optarg, &end);
			if (*end != '\0' || !(timeout_s > 0) || timeout_s > 86400 * 365) {
				fprintf(stderr, "gga_rpc: invalid timeout '%s'\n", optarg);
				return EXIT_NO_ANSWER;
			}
			break;
		case 'w':
			wait = true;
			break;
		case 'v':
			g_verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_NO_ANSWER;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "gga_rpc: no method given\n");
		usage(stderr);
		return EXIT_NO_ANSWER;
	}
	method = argv[optind];
	if (build_params(argc - optind - 1, argv + optind + 1, &params) != 0) {
		return EXIT_NO_ANSWER;
	}
	req = json_pack("{s:s, s:i, s:s}", "jsonrpc", "2.0", "id", 1, "method", method);
	if (req == NULL || (params != NULL && json_object_set_new(req, "params", params) != 0)) {
		fprintf(stderr, "gga_rpc: out of memory\n");
		return EXIT_NO_ANSWER;
	}
	text = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (text == NULL) {
		fprintf(stderr, "gga_rpc: out of memory\n");
		return EXIT_NO_ANSWER;
	}
	if (g_verbose) {
		fprintf(stderr, "request: %s\n", text);
	}

	deadline = now_ms() + (uint64_t)(timeout_s * 1000.0);
	fd = connect_socket(path, wait, deadline);
	if (fd < 0) {
		free(text);
		return EXIT_NO_ANSWER;
	}
	rc = send_all(fd, text, strlen(text));
	free(text);
	if (rc != 0) {
		fprintf(stderr, "gga_rpc: %s: cannot send the request: %s\n", path, strerror(-rc));
		close(fd);
		return EXIT_NO_ANSWER;
	}
	resp = read_response(fd, path, deadline);
	close(fd);
	if (resp == NULL) {
		return EXIT_NO_ANSWER;
	}
	if (g_verbose) {
		text = json_dumps(resp, JSON_COMPACT);
		fprintf(stderr, "response: %s\n", text ? text : "?");
		free(text);
	}
	rc = print_response(resp);
	json_decref(resp);
	return rc;
}
