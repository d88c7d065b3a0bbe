/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The keyring: named keys kept in files (SPDK's keyring_file), their
 * references, and the one function that checks and reads a key file. The
 * contract is in include/gga/keyring.h; the RPCs are in keyring_rpc.c.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gga/keyring.h"
#include "gga/log.h"

#include "keyring_internal.h"

/* Room for a message naming a key, its path and what is wrong with the file. */
#define KEYRING_MSG_LEN 1024

struct key {
	char *name;
	char *path;
	/* The keyring's own reference while the key is live, plus one per keyring_get_key(). */
	int refcnt;
	bool removed;
	TAILQ_ENTRY(key) link;
};

TAILQ_HEAD(key_list, key);

/* Guards both lists and every key's refcnt and removed flag. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
/* Live keys, in the order they were added: save_config writes them so. */
static struct key_list g_keys = TAILQ_HEAD_INITIALIZER(g_keys);
/* Removed keys that someone still holds a reference to. */
static struct key_list g_removed = TAILQ_HEAD_INITIALIZER(g_removed);

static void set_msg(char *msg, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
set_msg(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (msg == NULL || len == 0) {
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
}

/* SPDK's ":key0" is key0 of the global keyring, the only one there is. */
static const char *
canonical_name(const char *name)
{
	return name[0] == ':' ? name + 1 : name;
}

static struct key *
find_live_locked(const char *name)
{
	const char *want = canonical_name(name);
	struct key *key;

	TAILQ_FOREACH(key, &g_keys, link) {
		if (strcmp(canonical_name(key->name), want) == 0) {
			return key;
		}
	}
	return NULL;
}

static void
key_free(struct key *key)
{
	free(key->name);
	free(key->path);
	free(key);
}

/*
 * Drop one reference (lock held). Returns true when it was the last: the key
 * is then off both lists and the caller frees it once the lock is released.
 */
static bool
key_unref_locked(struct key *key)
{
	assert(key->refcnt > 0);
	if (--key->refcnt > 0) {
		return false;
	}
	/* Only a removed key loses its last reference; a live one would be a put too many. */
	assert(key->removed);
	TAILQ_REMOVE(key->removed ? &g_removed : &g_keys, key, link);
	return true;
}

/* Mark a live key removed and drop the keyring's reference (lock held); see key_unref_locked. */
static bool
key_remove_locked(struct key *key)
{
	key->removed = true;
	TAILQ_REMOVE(&g_keys, key, link);
	TAILQ_INSERT_TAIL(&g_removed, key, link);
	return key_unref_locked(key);
}

static const char *
file_type_name(mode_t mode)
{
	if (S_ISDIR(mode)) {
		return "a directory";
	}
	if (S_ISFIFO(mode)) {
		return "a FIFO";
	}
	if (S_ISCHR(mode)) {
		return "a character device";
	}
	if (S_ISBLK(mode)) {
		return "a block device";
	}
	if (S_ISSOCK(mode)) {
		return "a socket";
	}
	return "a special file";
}

static bool
is_trailing_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Read all of fd into buf (cap bytes); returns the bytes read or a negative errno. */
static ssize_t
read_all(int fd, char *buf, size_t cap)
{
	size_t total = 0;
	ssize_t n;

	while (total < cap) {
		n = read(fd, buf + total, cap - total);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0) {
			return -errno;
		}
		if (n == 0) {
			break;
		}
		total += (size_t)n;
	}
	return (ssize_t)total;
}

/*
 * Check and read key `name`'s file into buf (KEYRING_MAX_KEY_SIZE + 1
 * bytes). Returns the length of the material (trailing whitespace trimmed),
 * or a negative errno with `err` saying why. The checks are made on the
 * open descriptor: the file read is the file checked. The caller wipes buf
 * whatever the outcome.
 */
static int
key_file_read(const char *name, const char *path, char *buf, char *err, size_t err_len)
{
	struct stat st;
	ssize_t n;
	int fd, rc;

	if (path[0] != '/') {
		set_msg(err, err_len, "key '%s': path '%s' is not absolute", name, path);
		return -EPERM;
	}
	/* O_NONBLOCK: a FIFO put at the path must not hang the thread (it is refused below). */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		set_msg(err, err_len, "key '%s': cannot open key file '%s': %s", name, path,
			strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) != 0) {
		rc = -errno;
		set_msg(err, err_len, "key '%s': cannot stat key file '%s': %s", name, path,
			strerror(-rc));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		set_msg(err, err_len, "key '%s': key file '%s' is %s, not a regular file", name,
			path, file_type_name(st.st_mode));
		rc = -EINVAL;
		goto out_close;
	}
	if ((st.st_mode & 077) != 0) {
		set_msg(err, err_len,
			"key '%s': key file '%s' has mode 0%03o; 0%03o required (no group or other "
			"permission bits)",
			name, path, (unsigned int)(st.st_mode & 07777),
			(unsigned int)(st.st_mode & 07700));
		rc = -EPERM;
		goto out_close;
	}
	if (st.st_uid != geteuid()) {
		set_msg(err, err_len, "key '%s': key file '%s' is owned by uid %u, not by uid %u",
			name, path, (unsigned int)st.st_uid, (unsigned int)geteuid());
		rc = -EPERM;
		goto out_close;
	}
	if (st.st_size > KEYRING_MAX_KEY_SIZE) {
		set_msg(err, err_len, "key '%s': key file '%s' has %lld bytes; at most %d allowed",
			name, path, (long long)st.st_size, KEYRING_MAX_KEY_SIZE);
		rc = -EFBIG;
		goto out_close;
	}
	/* One byte more than allowed: a file that grew since fstat is caught too. */
	n = read_all(fd, buf, KEYRING_MAX_KEY_SIZE + 1);
	if (n < 0) {
		rc = (int)n;
		set_msg(err, err_len, "key '%s': cannot read key file '%s': %s", name, path,
			strerror(-rc));
		goto out_close;
	}
	if (n > KEYRING_MAX_KEY_SIZE) {
		set_msg(err, err_len, "key '%s': key file '%s' has more than %d bytes", name, path,
			KEYRING_MAX_KEY_SIZE);
		rc = -EFBIG;
		goto out_close;
	}
	while (n > 0 && is_trailing_space(buf[n - 1])) {
		n--;
	}
	if (n == 0) {
		set_msg(err, err_len,
			"key '%s': key file '%s' holds no key (empty or only whitespace)", name,
			path);
		rc = -EINVAL;
		goto out_close;
	}
	rc = (int)n;

out_close:
	close(fd);
	return rc;
}

static int
check_name(const char *name, char *err, size_t err_len)
{
	const char *base, *colon;

	if (name == NULL || canonical_name(name)[0] == '\0') {
		set_msg(err, err_len, "key name must not be empty");
		return -EINVAL;
	}
	if (strlen(name) > KEYRING_MAX_NAME_LEN) {
		set_msg(err, err_len, "key name '%.32s...' is longer than %d characters", name,
			KEYRING_MAX_NAME_LEN);
		return -EINVAL;
	}
	/* SPDK's "keyring:key": gga has only the global keyring (":key" or "key"). */
	base = canonical_name(name);
	colon = strchr(base, ':');
	if (colon != NULL) {
		set_msg(err, err_len,
			"key '%s': keyring '%.*s' does not exist (only the global keyring: a name "
			"may hold ':' only as its first character)",
			name, (int)(colon - base), base);
		return -EINVAL;
	}
	return 0;
}

int
keyring_file_add_key(const char *name, const char *path, char *msg, size_t msg_len)
{
	char material[KEYRING_MAX_KEY_SIZE + 1];
	char err[KEYRING_MSG_LEN];
	struct key *key = NULL;
	bool exists;
	int rc;

	rc = check_name(name, err, sizeof(err));
	if (rc != 0) {
		goto out_fail;
	}
	if (path == NULL) {
		set_msg(err, sizeof(err), "key '%s': no path", name);
		rc = -EINVAL;
		goto out_fail;
	}
	pthread_mutex_lock(&g_lock);
	exists = find_live_locked(name) != NULL;
	pthread_mutex_unlock(&g_lock);
	if (exists) {
		set_msg(err, sizeof(err), "key '%s' already exists", name);
		rc = -EEXIST;
		goto out_fail;
	}
	/* Read once to refuse a bad file now rather than at first use; kept nowhere. */
	rc = key_file_read(name, path, material, err, sizeof(err));
	explicit_bzero(material, sizeof(material));
	if (rc < 0) {
		goto out_fail;
	}

	key = calloc(1, sizeof(*key));
	if (key == NULL || (key->name = strdup(name)) == NULL ||
	    (key->path = strdup(path)) == NULL) {
		set_msg(err, sizeof(err), "key '%s': out of memory", name);
		rc = -ENOMEM;
		goto out_free_key;
	}
	key->refcnt = 1;
	pthread_mutex_lock(&g_lock);
	/* Checked again: the file was read without the lock. */
	if (find_live_locked(name) != NULL) {
		pthread_mutex_unlock(&g_lock);
		set_msg(err, sizeof(err), "key '%s' already exists", name);
		rc = -EEXIST;
		goto out_free_key;
	}
	TAILQ_INSERT_TAIL(&g_keys, key, link);
	pthread_mutex_unlock(&g_lock);
	INFOLOG("keyring: key '%s' added (file %s)\n", name, path);
	return 0;

out_free_key:
	if (key != NULL) {
		key_free(key);
	}
out_fail:
	ERRLOG("keyring: %s\n", err);
	set_msg(msg, msg_len, "%s", err);
	return rc;
}

int
keyring_file_remove_key(const char *name, char *msg, size_t msg_len)
{
	struct key *key;
	bool last;

	pthread_mutex_lock(&g_lock);
	key = name != NULL ? find_live_locked(name) : NULL;
	if (key == NULL) {
		pthread_mutex_unlock(&g_lock);
		ERRLOG("keyring: key '%s' does not exist\n", name ? name : "(null)");
		set_msg(msg, msg_len, "key '%s' does not exist", name ? name : "(null)");
		return -ENOKEY;
	}
	last = key_remove_locked(key);
	if (!last) {
		INFOLOG("keyring: key '%s' removed; %d reference(s) still hold it\n", key->name,
			key->refcnt);
	}
	pthread_mutex_unlock(&g_lock);
	if (last) {
		INFOLOG("keyring: key '%s' removed\n", name);
		key_free(key);
	}
	return 0;
}

struct key *
keyring_get_key(const char *name)
{
	struct key *key;

	if (name == NULL) {
		return NULL;
	}
	pthread_mutex_lock(&g_lock);
	key = find_live_locked(name);
	if (key != NULL) {
		key->refcnt++;
	}
	pthread_mutex_unlock(&g_lock);
	return key;
}

void
keyring_put_key(struct key *key)
{
	bool last;

	if (key == NULL) {
		return;
	}
	pthread_mutex_lock(&g_lock);
	last = key_unref_locked(key);
	pthread_mutex_unlock(&g_lock);
	if (last) {
		key_free(key);
	}
}

const char *
key_get_name(const struct key *key)
{
	return key->name;
}

int
key_get_key(struct key *key, void *buf, size_t len)
{
	char material[KEYRING_MAX_KEY_SIZE + 1];
	char err[KEYRING_MSG_LEN];
	bool removed;
	int rc;

	pthread_mutex_lock(&g_lock);
	removed = key->removed;
	pthread_mutex_unlock(&g_lock);
	if (removed) {
		ERRLOG("keyring: key '%s' was removed\n", key->name);
		return -ENOKEY;
	}
	/* The name and path do not change while the caller holds its reference. */
	rc = key_file_read(key->name, key->path, material, err, sizeof(err));
	if (rc < 0) {
		ERRLOG("keyring: %s\n", err);
		goto out_wipe;
	}
	if ((size_t)rc > len) {
		ERRLOG("keyring: key '%s': a buffer of %zu bytes is too small for it\n", key->name,
		       len);
		rc = -ENOBUFS;
		goto out_wipe;
	}
	memcpy(buf, material, (size_t)rc);

out_wipe:
	explicit_bzero(material, sizeof(material));
	return rc;
}

static json_t *
key_info_json(const struct key *key)
{
	json_t *info;

	info = json_pack("{s:s, s:s, s:b, s:b, s:i}", "name", key->name, "module",
			 KEYRING_FILE_MODULE, "removed", (int)key->removed, "probed", 0, "refcnt",
			 key->refcnt);
	/* A removed key's file is no business of the keyring's any more (SPDK omits it too). */
	if (info != NULL && !key->removed &&
	    json_object_set_new(info, "path", json_string(key->path)) != 0) {
		json_decref(info);
		return NULL;
	}
	return info;
}

json_t *
keyring_dump_keys(void)
{
	struct key_list *lists[] = { &g_keys, &g_removed };
	json_t *result, *info;
	struct key *key;
	size_t i;

	result = json_array();
	if (result == NULL) {
		return NULL;
	}
	pthread_mutex_lock(&g_lock);
	for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		TAILQ_FOREACH(key, lists[i], link) {
			info = key_info_json(key);
			if (info == NULL || json_array_append_new(result, info) != 0) {
				pthread_mutex_unlock(&g_lock);
				json_decref(result);
				return NULL;
			}
		}
	}
	pthread_mutex_unlock(&g_lock);
	return result;
}

int
keyring_subsystem_init(void)
{
	keyring_rpc_register();
	return 0;
}

void
keyring_subsystem_fini(void (*done)(void *arg), void *done_arg)
{
	struct key_list dead = TAILQ_HEAD_INITIALIZER(dead);
	struct key *key;

	pthread_mutex_lock(&g_lock);
	while ((key = TAILQ_FIRST(&g_keys)) != NULL) {
		if (key_remove_locked(key)) {
			TAILQ_INSERT_TAIL(&dead, key, link);
		}
	}
	/*
	 * Whoever still holds one of these should have let go in its own fini,
	 * which ran before this one. The key stays allocated so that a late
	 * keyring_put_key() is still safe.
	 */
	TAILQ_FOREACH(key, &g_removed, link) {
		WARNLOG("keyring: key '%s' still has %d reference(s) at shutdown\n", key->name,
			key->refcnt);
	}
	pthread_mutex_unlock(&g_lock);
	while ((key = TAILQ_FIRST(&dead)) != NULL) {
		TAILQ_REMOVE(&dead, key, link);
		key_free(key);
	}
	if (done != NULL) {
		done(done_arg);
	}
}

void
keyring_subsystem_config_json(json_t *config)
{
	struct key *key;
	json_t *call;

	pthread_mutex_lock(&g_lock);
	TAILQ_FOREACH(key, &g_keys, link) {
		call = json_pack("{s:s, s:{s:s, s:s}}", "method", "keyring_file_add_key", "params",
				 "name", key->name, "path", key->path);
		if (call == NULL || json_array_append_new(config, call) != 0) {
			ERRLOG("keyring: out of memory writing the configuration of key '%s'\n",
			       key->name);
		}
	}
	pthread_mutex_unlock(&g_lock);
}
