/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the keyring: references and removal, the checks of key
 * files (path, type, permissions, owner, size), trimming, -ENOBUFS, the
 * re-read at each use, the RPCs' answers and error codes, save_config's
 * calls, the subsystem's fini, and that no key material reaches a log line,
 * an RPC answer or the saved configuration. The sources are included to
 * reach the lists.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gga_ut.h"
#include "ut_rpc.h"
#include "lib/keyring/keyring.c"
#include "lib/keyring/keyring_rpc.c"

/* What every key file of these tests holds; searched for in logs and answers. */
#define MATERIAL "DHHC-1:00:c2VjcmV0LW1hdGVyaWFsLW9mLWtleXJpbmctdXQ=:"

static char g_dir[64];

/* Write `text` (len bytes) to DIR/name with the given mode; returns the path (static buffer). */
static const char *
write_key_len(const char *name, const void *text, size_t len, mode_t mode)
{
	static char path[4][128];
	static int slot;
	char *p = path[slot++ % 4];
	int fd;

	snprintf(p, sizeof(path[0]), "%s/%s", g_dir, name);
	unlink(p);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	UT_ASSERT_EQ_FATAL(write(fd, text, len), (ssize_t)len);
	close(fd);
	/* chmod after creation: the umask must not decide the mode. */
	UT_ASSERT_EQ_FATAL(chmod(p, mode), 0);
	return p;
}

static const char *
write_key(const char *name, const char *text, mode_t mode)
{
	return write_key_len(name, text, strlen(text), mode);
}

/* List the keys into *all (as keyring_get_keys does); the entry of `name`, borrowed from it. */
static json_t *
find_listed(json_t **all, const char *name, bool removed)
{
	json_t *k;
	size_t i;

	json_decref(*all);
	*all = keyring_dump_keys();
	CU_ASSERT_FATAL(*all != NULL);
	json_array_foreach(*all, i, k)
	{
		if (strcmp(json_string_value(json_object_get(k, "name")), name) == 0 &&
		    json_is_true(json_object_get(k, "removed")) == removed) {
			return k;
		}
	}
	return NULL;
}

static size_t
listed_count(void)
{
	json_t *all = keyring_dump_keys();
	size_t n = json_array_size(all);

	json_decref(all);
	return n;
}

/* Counts the fini callbacks. */
static void
fini_done(void *arg)
{
	(*(int *)arg)++;
}

static void
reset_keyring(void)
{
	int done = 0;

	keyring_subsystem_fini(fini_done, &done);
	UT_ASSERT_EQ(done, 1);
	UT_ASSERT_EQ(listed_count(), 0);
}

/* ---- In-process RPC calls ---- */

/* Call a method; returns the whole response (caller decrefs). params is consumed. */
static json_t *
call(const char *method, json_t *params)
{
	json_t *resp = ut_rpc_call(method, params);

	json_decref(params);
	return resp;
}

static json_int_t
error_code(json_t *resp)
{
	return json_integer_value(json_object_get(json_object_get(resp, "error"), "code"));
}

static const char *
error_message(json_t *resp)
{
	const char *m = json_string_value(
		json_object_get(json_object_get(resp, "error"), "message"));

	return m != NULL ? m : "";
}

/* No answer, log or configuration may ever hold the material. */
static void
assert_no_material(json_t *v)
{
	char *text = json_dumps(v, JSON_ENCODE_ANY);

	CU_ASSERT_FATAL(text != NULL);
	CU_ASSERT(strstr(text, MATERIAL) == NULL);
	CU_ASSERT(strstr(text, "c2VjcmV0") == NULL);
	free(text);
}

/* ---- Tests ---- */

static void
test_add_get_put_remove(void)
{
	const char *path = write_key("k0", MATERIAL "\n", 0600);
	char buf[KEYRING_MAX_KEY_SIZE];
	struct key *a, *b;
	json_t *all = NULL, *k;

	UT_ASSERT_EQ(keyring_file_add_key("key0", path, NULL, 0), 0);
	k = find_listed(&all, "key0", false);
	CU_ASSERT_FATAL(k != NULL);
	UT_ASSERT_EQ(json_integer_value(json_object_get(k, "refcnt")), 1);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(k, "module")), "keyring_file");
	CU_ASSERT(json_is_false(json_object_get(k, "probed")));
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(k, "path")), path);

	a = keyring_get_key("key0");
	b = keyring_get_key("key0");
	CU_ASSERT_FATAL(a != NULL && a == b);
	UT_ASSERT_STR_EQ(key_get_name(a), "key0");
	k = find_listed(&all, "key0", false);
	UT_ASSERT_EQ(json_integer_value(json_object_get(k, "refcnt")), 3);
	UT_ASSERT_EQ(key_get_key(a, buf, sizeof(buf)), strlen(MATERIAL));
	CU_ASSERT(memcmp(buf, MATERIAL, strlen(MATERIAL)) == 0);
	explicit_bzero(buf, sizeof(buf));

	keyring_put_key(b);
	keyring_put_key(NULL);
	k = find_listed(&all, "key0", false);
	UT_ASSERT_EQ(json_integer_value(json_object_get(k, "refcnt")), 2);
	keyring_put_key(a);
	CU_ASSERT(keyring_get_key("nope") == NULL);
	CU_ASSERT(keyring_get_key("") == NULL);
	CU_ASSERT(keyring_get_key(NULL) == NULL);

	/* Unreferenced: removal frees it at once. */
	UT_ASSERT_EQ(keyring_file_remove_key("key0", NULL, 0), 0);
	CU_ASSERT(keyring_get_key("key0") == NULL);
	UT_ASSERT_EQ(listed_count(), 0);
	UT_ASSERT_EQ(keyring_file_remove_key("key0", NULL, 0), -ENOKEY);
	json_decref(all);
}

static void
test_remove_referenced(void)
{
	const char *p1 = write_key("r1", MATERIAL, 0600);
	const char *p2 = write_key("r2", "second", 0600);
	char buf[64], msg[256];
	struct key *old, *cur;
	json_t *all = NULL, *k, *config;

	UT_ASSERT_EQ(keyring_file_add_key("key0", p1, NULL, 0), 0);
	old = keyring_get_key("key0");
	CU_ASSERT_FATAL(old != NULL);
	UT_ASSERT_EQ(keyring_file_remove_key("key0", msg, sizeof(msg)), 0);

	/* Alive for its holder, but not found, not live, not saved, not usable. */
	CU_ASSERT(keyring_get_key("key0") == NULL);
	UT_ASSERT_STR_EQ(key_get_name(old), "key0");
	UT_ASSERT_EQ(key_get_key(old, buf, sizeof(buf)), -ENOKEY);
	CU_ASSERT(find_listed(&all, "key0", false) == NULL);
	k = find_listed(&all, "key0", true);
	CU_ASSERT_FATAL(k != NULL);
	UT_ASSERT_EQ(json_integer_value(json_object_get(k, "refcnt")), 1);
	CU_ASSERT(json_object_get(k, "path") == NULL);
	config = json_array();
	keyring_subsystem_config_json(config);
	UT_ASSERT_EQ(json_array_size(config), 0);
	json_decref(config);
	/* Removing it again: it is no longer a live key. */
	UT_ASSERT_EQ(keyring_file_remove_key("key0", NULL, 0), -ENOKEY);

	/* The name is free again while the old key is still held. */
	UT_ASSERT_EQ(keyring_file_add_key("key0", p2, NULL, 0), 0);
	cur = keyring_get_key("key0");
	CU_ASSERT_FATAL(cur != NULL && cur != old);
	UT_ASSERT_EQ(key_get_key(cur, buf, sizeof(buf)), 6);
	UT_ASSERT_EQ(listed_count(), 2);
	keyring_put_key(cur);

	/* The last reference frees the removed key (ASan would see a leak or a reuse). */
	keyring_put_key(old);
	CU_ASSERT(find_listed(&all, "key0", true) == NULL);
	CU_ASSERT(find_listed(&all, "key0", false) != NULL);
	UT_ASSERT_EQ(listed_count(), 1);
	json_decref(all);
	reset_keyring();
}

static void
test_duplicate_and_names(void)
{
	const char *path = write_key("d0", MATERIAL, 0600);
	char longname[KEYRING_MAX_NAME_LEN + 2];
	char msg[512];
	struct key *key;

	UT_ASSERT_EQ(keyring_file_add_key("key0", path, NULL, 0), 0);
	UT_ASSERT_EQ(keyring_file_add_key("key0", path, msg, sizeof(msg)), -EEXIST);
	UT_ASSERT_STR_EQ(msg, "key 'key0' already exists");
	/* SPDK's ":name" is the same key of the global keyring. */
	UT_ASSERT_EQ(keyring_file_add_key(":key0", path, NULL, 0), -EEXIST);
	key = keyring_get_key(":key0");
	CU_ASSERT(key != NULL && strcmp(key_get_name(key), "key0") == 0);
	keyring_put_key(key);
	UT_ASSERT_EQ(listed_count(), 1);

	UT_ASSERT_EQ(keyring_file_add_key("", path, NULL, 0), -EINVAL);
	UT_ASSERT_EQ(keyring_file_add_key(":", path, NULL, 0), -EINVAL);
	UT_ASSERT_EQ(keyring_file_add_key(NULL, path, NULL, 0), -EINVAL);
	UT_ASSERT_EQ(keyring_file_add_key("key1", NULL, NULL, 0), -EINVAL);
	UT_ASSERT_EQ(keyring_file_add_key("ring0:key1", path, msg, sizeof(msg)), -EINVAL);
	CU_ASSERT(strstr(msg, "keyring 'ring0' does not exist") != NULL);
	UT_ASSERT_EQ(keyring_file_add_key(":ring0:key1", path, NULL, 0), -EINVAL);
	UT_ASSERT_EQ(keyring_file_add_key(":key1", path, NULL, 0), 0);
	UT_ASSERT_EQ(keyring_file_add_key("key1", path, NULL, 0), -EEXIST);
	UT_ASSERT_EQ(keyring_file_remove_key("key1", NULL, 0), 0);
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	UT_ASSERT_EQ(keyring_file_add_key(longname, path, NULL, 0), -EINVAL);
	longname[KEYRING_MAX_NAME_LEN] = '\0';
	UT_ASSERT_EQ(keyring_file_add_key(longname, path, NULL, 0), 0);
	UT_ASSERT_EQ(listed_count(), 2);
	reset_keyring();
}

static void
test_path_checks(void)
{
	const char *path;
	char msg[512], expect[256];

	UT_ASSERT_EQ(keyring_file_add_key("key0", "k0", msg, sizeof(msg)), -EPERM);
	UT_ASSERT_STR_EQ(msg, "key 'key0': path 'k0' is not absolute");
	UT_ASSERT_EQ(keyring_file_add_key("key0", "./k0", NULL, 0), -EPERM);

	snprintf(expect, sizeof(expect), "%s/missing", g_dir);
	UT_ASSERT_EQ(keyring_file_add_key("key0", expect, msg, sizeof(msg)), -ENOENT);
	CU_ASSERT(strstr(msg, expect) != NULL);

	/* Group or other bits: refused, naming the path and the mode. */
	path = write_key("p0", MATERIAL, 0644);
	UT_ASSERT_EQ(keyring_file_add_key("key0", path, msg, sizeof(msg)), -EPERM);
	snprintf(expect, sizeof(expect), "key 'key0': key file '%s' has mode 0644; 0600 required",
		 path);
	CU_ASSERT(strncmp(msg, expect, strlen(expect)) == 0);
	if (strncmp(msg, expect, strlen(expect)) != 0) {
		fprintf(stderr, "got: %s\n", msg);
	}
	path = write_key("p1", MATERIAL, 0640);
	UT_ASSERT_EQ(keyring_file_add_key("key0", path, NULL, 0), -EPERM);
	path = write_key("p2", MATERIAL, 0604);
	UT_ASSERT_EQ(keyring_file_add_key("key0", path, NULL, 0), -EPERM);
	path = write_key("p3", MATERIAL, 0601);
	UT_ASSERT_EQ(keyring_file_add_key("key0", path, NULL, 0), -EPERM);
	UT_ASSERT_EQ(listed_count(), 0);

	path = write_key("p4", MATERIAL, 0600);
	UT_ASSERT_EQ(keyring_file_add_key("key0", path, NULL, 0), 0);
	path = write_key("p5", MATERIAL, 0400);
	UT_ASSERT_EQ(keyring_file_add_key("key1", path, NULL, 0), 0);
	UT_ASSERT_EQ(listed_count(), 2);

	/* Another owner (only root can give a file away). */
	if (geteuid() == 0) {
		path = write_key("p6", MATERIAL, 0600);
		UT_ASSERT_EQ_FATAL(chown(path, 65534, 65534), 0);
		UT_ASSERT_EQ(keyring_file_add_key("key2", path, msg, sizeof(msg)), -EPERM);
		CU_ASSERT(strstr(msg, "owned by uid 65534") != NULL);
	}
	UT_ASSERT_EQ(listed_count(), 2);
	reset_keyring();
}

static void
test_not_regular(void)
{
	char path[128], msg[512];

	/* A directory, even with mode 0700. */
	snprintf(path, sizeof(path), "%s/dir", g_dir);
	UT_ASSERT_EQ_FATAL(mkdir(path, 0700), 0);
	UT_ASSERT_EQ(keyring_file_add_key("key0", path, msg, sizeof(msg)), -EINVAL);
	CU_ASSERT(strstr(msg, "is a directory, not a regular file") != NULL);
	rmdir(path);

	/* A FIFO must neither hang the caller nor pass. */
	snprintf(path, sizeof(path), "%s/fifo", g_dir);
	UT_ASSERT_EQ_FATAL(mkfifo(path, 0600), 0);
	UT_ASSERT_EQ(keyring_file_add_key("key0", path, msg, sizeof(msg)), -EINVAL);
	CU_ASSERT(strstr(msg, "a FIFO") != NULL);
	unlink(path);

	UT_ASSERT_EQ(keyring_file_add_key("key0", "/dev/null", NULL, 0), -EINVAL);
	UT_ASSERT_EQ(listed_count(), 0);
}

static void
test_size_limits(void)
{
	static char big[KEYRING_MAX_KEY_SIZE + 2];
	char buf[KEYRING_MAX_KEY_SIZE], msg[512];
	const char *path;
	struct key *key;

	memset(big, 'k', sizeof(big));
	path = write_key_len("big", big, KEYRING_MAX_KEY_SIZE + 1, 0600);
	UT_ASSERT_EQ(keyring_file_add_key("key0", path, msg, sizeof(msg)), -EFBIG);
	CU_ASSERT(strstr(msg, "has 4097 bytes; at most 4096 allowed") != NULL);
	UT_ASSERT_EQ(listed_count(), 0);

	/* Exactly the limit is fine. */
	path = write_key_len("max", big, KEYRING_MAX_KEY_SIZE, 0600);
	UT_ASSERT_EQ(keyring_file_add_key("key0", path, NULL, 0), 0);
	key = keyring_get_key("key0");
	CU_ASSERT_FATAL(key != NULL);
	UT_ASSERT_EQ(key_get_key(key, buf, sizeof(buf)), KEYRING_MAX_KEY_SIZE);

	/* Grown past the limit after the add: refused at use. */
	write_key_len("max", big, sizeof(big), 0600);
	UT_ASSERT_EQ(key_get_key(key, buf, sizeof(buf)), -EFBIG);
	keyring_put_key(key);

	/* Empty, or nothing but whitespace. */
	path = write_key("empty", "", 0600);
	UT_ASSERT_EQ(keyring_file_add_key("key1", path, msg, sizeof(msg)), -EINVAL);
	CU_ASSERT(strstr(msg, "holds no key") != NULL);
	path = write_key("blank", " \n\t\r\n", 0600);
	UT_ASSERT_EQ(keyring_file_add_key("key1", path, NULL, 0), -EINVAL);
	UT_ASSERT_EQ(listed_count(), 1);
	reset_keyring();
}

static void
test_trim_and_enobufs(void)
{
	char buf[16];
	struct key *key;
	const char *path;

	path = write_key("t0", "  a b\tc \t\r\n\n\n", 0600);
	UT_ASSERT_EQ_FATAL(keyring_file_add_key("key0", path, NULL, 0), 0);
	key = keyring_get_key("key0");
	CU_ASSERT_FATAL(key != NULL);
	/* Trailing whitespace goes; leading and inner whitespace stays. */
	memset(buf, 'X', sizeof(buf));
	UT_ASSERT_EQ(key_get_key(key, buf, sizeof(buf)), 7);
	CU_ASSERT(memcmp(buf, "  a b\tc", 7) == 0);
	UT_ASSERT_EQ(buf[7], 'X');

	/* Exactly big enough, then one byte short: nothing copied. */
	memset(buf, 'X', sizeof(buf));
	UT_ASSERT_EQ(key_get_key(key, buf, 7), 7);
	memset(buf, 'X', sizeof(buf));
	UT_ASSERT_EQ(key_get_key(key, buf, 6), -ENOBUFS);
	UT_ASSERT_EQ(buf[0], 'X');
	UT_ASSERT_EQ(key_get_key(key, buf, 0), -ENOBUFS);
	keyring_put_key(key);
	reset_keyring();
}

static void
test_reread_at_use(void)
{
	char buf[64];
	struct key *key;
	const char *path;

	path = write_key("rot", "first-key\n", 0600);
	UT_ASSERT_EQ_FATAL(keyring_file_add_key("key0", path, NULL, 0), 0);
	key = keyring_get_key("key0");
	CU_ASSERT_FATAL(key != NULL);
	UT_ASSERT_EQ(key_get_key(key, buf, sizeof(buf)), 9);
	CU_ASSERT(memcmp(buf, "first-key", 9) == 0);

	/* Rotated: the next use reads the new content. */
	write_key("rot", "second-key-longer\n", 0600);
	UT_ASSERT_EQ(key_get_key(key, buf, sizeof(buf)), 17);
	CU_ASSERT(memcmp(buf, "second-key-longer", 17) == 0);

	/* Permissions are checked at each read too. */
	UT_ASSERT_EQ_FATAL(chmod(path, 0640), 0);
	UT_ASSERT_EQ(key_get_key(key, buf, sizeof(buf)), -EPERM);
	UT_ASSERT_EQ_FATAL(chmod(path, 0600), 0);
	UT_ASSERT_EQ(key_get_key(key, buf, sizeof(buf)), 17);

	/* Gone, then back. */
	unlink(path);
	UT_ASSERT_EQ(key_get_key(key, buf, sizeof(buf)), -ENOENT);
	write_key("rot", "third", 0600);
	UT_ASSERT_EQ(key_get_key(key, buf, sizeof(buf)), 5);
	explicit_bzero(buf, sizeof(buf));
	keyring_put_key(key);
	reset_keyring();
}

static json_t *
add_params(const char *name, const char *path)
{
	return json_pack("{s:s, s:s}", "name", name, "path", path);
}

static void
test_rpc(void)
{
	const char *good = write_key("g0", MATERIAL "\n", 0600);
	const char *loose = write_key("g1", MATERIAL, 0644);
	json_t *resp, *k;
	char missing[128];

	resp = call("keyring_file_add_key", add_params("key0", good));
	CU_ASSERT(json_is_true(json_object_get(resp, "result")));
	assert_no_material(resp);
	json_decref(resp);

	/* SPDK's codes: -EEXIST, -EPERM, -ENOENT, -ENOKEY; bad parameters -32602. */
	resp = call("keyring_file_add_key", add_params("key0", good));
	UT_ASSERT_EQ(error_code(resp), -EEXIST);
	UT_ASSERT_STR_EQ(error_message(resp), "key 'key0' already exists");
	json_decref(resp);
	resp = call("keyring_file_add_key", add_params("key1", "key.txt"));
	UT_ASSERT_EQ(error_code(resp), -EPERM);
	UT_ASSERT_STR_EQ(error_message(resp), "key 'key1': path 'key.txt' is not absolute");
	json_decref(resp);
	resp = call("keyring_file_add_key", add_params("key1", loose));
	UT_ASSERT_EQ(error_code(resp), -EPERM);
	CU_ASSERT(strstr(error_message(resp), loose) != NULL);
	CU_ASSERT(strstr(error_message(resp), "mode 0644") != NULL);
	assert_no_material(resp);
	json_decref(resp);
	snprintf(missing, sizeof(missing), "%s/none", g_dir);
	resp = call("keyring_file_add_key", add_params("key1", missing));
	UT_ASSERT_EQ(error_code(resp), -ENOENT);
	json_decref(resp);
	resp = call("keyring_file_add_key", add_params("key1", g_dir));
	UT_ASSERT_EQ(error_code(resp), RPC_ERROR_INVALID_PARAMS);
	json_decref(resp);
	resp = call("keyring_file_add_key", json_pack("{s:s}", "name", "key1"));
	UT_ASSERT_EQ(error_code(resp), RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_STR_EQ(error_message(resp), "path: required");
	json_decref(resp);
	resp = call("keyring_file_add_key",
		    json_pack("{s:s, s:s, s:b}", "name", "key1", "path", good, "secret", 1));
	UT_ASSERT_EQ(error_code(resp), RPC_ERROR_INVALID_PARAMS);
	UT_ASSERT_STR_EQ(error_message(resp), "unknown parameter 'secret'");
	json_decref(resp);
	resp = call("keyring_file_add_key", add_params("", good));
	UT_ASSERT_EQ(error_code(resp), RPC_ERROR_INVALID_PARAMS);
	json_decref(resp);
	UT_ASSERT_EQ(listed_count(), 1);

	/* keyring_get_keys: SPDK's fields, the path, never the material. */
	resp = call("keyring_get_keys", NULL);
	k = json_array_get(json_object_get(resp, "result"), 0);
	UT_ASSERT_EQ(json_array_size(json_object_get(resp, "result")), 1);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(k, "name")), "key0");
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(k, "module")), "keyring_file");
	CU_ASSERT(json_is_false(json_object_get(k, "removed")));
	CU_ASSERT(json_is_false(json_object_get(k, "probed")));
	UT_ASSERT_EQ(json_integer_value(json_object_get(k, "refcnt")), 1);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(k, "path")), good);
	UT_ASSERT_EQ(json_object_size(k), 6);
	assert_no_material(resp);
	json_decref(resp);
	resp = call("keyring_get_keys", json_pack("{s:s}", "name", "key0"));
	UT_ASSERT_EQ(error_code(resp), RPC_ERROR_INVALID_PARAMS);
	json_decref(resp);

	resp = call("keyring_file_remove_key", json_pack("{s:s}", "name", "nope"));
	UT_ASSERT_EQ(error_code(resp), -ENOKEY);
	UT_ASSERT_STR_EQ(error_message(resp), "key 'nope' does not exist");
	json_decref(resp);
	resp = call("keyring_file_remove_key", json_pack("{}"));
	UT_ASSERT_EQ(error_code(resp), RPC_ERROR_INVALID_PARAMS);
	json_decref(resp);
	resp = call("keyring_file_remove_key", json_pack("{s:s}", "name", "key0"));
	CU_ASSERT(json_is_true(json_object_get(resp, "result")));
	json_decref(resp);
	resp = call("keyring_get_keys", NULL);
	UT_ASSERT_EQ(json_array_size(json_object_get(resp, "result")), 0);
	json_decref(resp);
}

static void
test_save_config(void)
{
	const char *p0 = write_key("s0", MATERIAL "\n", 0600);
	const char *p1 = write_key("s1", MATERIAL "x", 0600);
	json_t *config, *c;
	struct key *held;

	UT_ASSERT_EQ_FATAL(keyring_file_add_key("key0", p0, NULL, 0), 0);
	UT_ASSERT_EQ_FATAL(keyring_file_add_key("key1", p1, NULL, 0), 0);
	UT_ASSERT_EQ_FATAL(keyring_file_add_key("gone", p1, NULL, 0), 0);
	held = keyring_get_key("gone");
	UT_ASSERT_EQ(keyring_file_remove_key("gone", NULL, 0), 0);

	config = json_array();
	keyring_subsystem_config_json(config);
	/* The live keys, in order, as {name, path} only; not the removed one. */
	UT_ASSERT_EQ_FATAL(json_array_size(config), 2);
	c = json_array_get(config, 0);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(c, "method")), "keyring_file_add_key");
	UT_ASSERT_EQ(json_object_size(json_object_get(c, "params")), 2);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(json_object_get(c, "params"), "name")),
			 "key0");
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(json_object_get(c, "params"), "path")),
			 p0);
	c = json_array_get(config, 1);
	UT_ASSERT_STR_EQ(json_string_value(json_object_get(json_object_get(c, "params"), "name")),
			 "key1");
	assert_no_material(config);
	json_decref(config);
	keyring_put_key(held);
	reset_keyring();
}

static void
test_fini_with_references(void)
{
	const char *path = write_key("f0", MATERIAL, 0600);
	json_t *all = NULL, *k;
	struct key *held;
	int done = 0;

	UT_ASSERT_EQ_FATAL(keyring_file_add_key("key0", path, NULL, 0), 0);
	UT_ASSERT_EQ_FATAL(keyring_file_add_key("key1", path, NULL, 0), 0);
	held = keyring_get_key("key1");
	keyring_subsystem_fini(fini_done, &done);
	UT_ASSERT_EQ(done, 1);
	/* key0 is gone; key1 stays for its holder, removed, until the last put. */
	CU_ASSERT(keyring_get_key("key0") == NULL);
	CU_ASSERT(keyring_get_key("key1") == NULL);
	k = find_listed(&all, "key1", true);
	CU_ASSERT_FATAL(k != NULL);
	UT_ASSERT_EQ(json_integer_value(json_object_get(k, "refcnt")), 1);
	UT_ASSERT_EQ(json_array_size(all), 1);
	keyring_put_key(held);
	UT_ASSERT_EQ(listed_count(), 0);
	/* A second start works, and a stop without keys. */
	UT_ASSERT_EQ(keyring_subsystem_init(), 0);
	reset_keyring();
	json_decref(all);
}

/* Each thread takes and drops references while the app thread removes and re-adds. */
static void *
ref_worker(void *arg)
{
	struct key *key;
	int i;

	for (i = 0; i < 20000; i++) {
		key = keyring_get_key("key0");
		keyring_put_key(key);
	}
	return arg;
}

static void
test_threads(void)
{
	const char *path = write_key("th", MATERIAL, 0600);
	pthread_t t[2];
	int i;

	UT_ASSERT_EQ_FATAL(keyring_file_add_key("key0", path, NULL, 0), 0);
	for (i = 0; i < 2; i++) {
		UT_ASSERT_EQ_FATAL(pthread_create(&t[i], NULL, ref_worker, NULL), 0);
	}
	for (i = 0; i < 200; i++) {
		UT_ASSERT_EQ(keyring_file_remove_key("key0", NULL, 0), 0);
		UT_ASSERT_EQ(keyring_file_add_key("key0", path, NULL, 0), 0);
	}
	for (i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
	}
	UT_ASSERT_EQ(listed_count(), 1);
	reset_keyring();
}

/* Every failure path logs; none of its lines may hold the material. */
static void
test_no_material_in_logs(void)
{
	const char *path = write_key("l0", MATERIAL "\n", 0600);
	char log_path[128], text[16384], buf[8];
	struct key *key;
	int fd, saved;
	ssize_t n;

	snprintf(log_path, sizeof(log_path), "%s/stderr.log", g_dir);
	fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	close(fd);
	log_set_level(LOG_LEVEL_DEBUG);

	keyring_file_add_key("key0", path, NULL, 0);
	keyring_file_add_key("key0", path, NULL, 0);
	key = keyring_get_key("key0");
	key_get_key(key, buf, sizeof(buf));
	chmod(path, 0644);
	key_get_key(key, buf, sizeof(buf));
	keyring_file_add_key("key1", path, NULL, 0);
	keyring_file_remove_key("key0", NULL, 0);
	key_get_key(key, buf, sizeof(buf));
	keyring_put_key(key);
	explicit_bzero(buf, sizeof(buf));

	log_set_level(LOG_LEVEL_NOTICE);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	fd = open(log_path, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	CU_ASSERT_FATAL(n > 0);
	text[n] = '\0';
	/* The failures were logged, by name... */
	CU_ASSERT(strstr(text, "key 'key0' already exists") != NULL);
	CU_ASSERT(strstr(text, "too small") != NULL);
	CU_ASSERT(strstr(text, "mode 0644") != NULL);
	/* ...and nothing of the key itself. */
	CU_ASSERT(strstr(text, MATERIAL) == NULL);
	CU_ASSERT(strstr(text, "c2VjcmV0") == NULL);
	CU_ASSERT(strstr(text, "DHHC") == NULL);
	unlink(log_path);
	reset_keyring();
}

static int
suite_init(void)
{
	snprintf(g_dir, sizeof(g_dir), "/tmp/keyring_ut.XXXXXX");
	if (mkdtemp(g_dir) == NULL) {
		return 1;
	}
	return keyring_subsystem_init();
}

static int
suite_fini(void)
{
	char cmd[128];

	/* No CUnit assert here: this runs outside any test. */
	keyring_subsystem_fini(NULL, NULL);
	rpc_unregister_all();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
	return system(cmd) == 0 ? 0 : 1;
}

int
main(void)
{
	static const struct ut_test tests[] = {
		UT_TEST(test_add_get_put_remove),
		UT_TEST(test_remove_referenced),
		UT_TEST(test_duplicate_and_names),
		UT_TEST(test_path_checks),
		UT_TEST(test_not_regular),
		UT_TEST(test_size_limits),
		UT_TEST(test_trim_and_enobufs),
		UT_TEST(test_reread_at_use),
		UT_TEST(test_rpc),
		UT_TEST(test_save_config),
		UT_TEST(test_fini_with_references),
		UT_TEST(test_threads),
		UT_TEST(test_no_material_in_logs),
	};

	return ut_run("keyring", tests, ARRAY_SIZE(tests), suite_init, suite_fini);
}
