/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The keyring: secrets (DH-HMAC-CHAP keys, TLS PSKs) referenced by name, as
 * SPDK has it. A key is added with the RPC keyring_file_add_key {name, path}
 * and then named wherever a secret is wanted ("dhchap_key": "key0"), so that
 * no secret travels in an RPC, a log line or a saved configuration.
 *
 * Keys live in key files. **The file is read at each key_get_key()**, not at
 * add time, as SPDK does: rewriting the file (a rotated key) takes effect at
 * the next use without touching the configuration. Every read checks the
 * file again (absolute path, a regular file owned by the process's effective
 * uid, no group/other permission bits, at most KEYRING_MAX_KEY_SIZE bytes)
 * on the open descriptor, so a file swapped between the check and the read
 * cannot slip through. keyring_file_add_key() reads the file once too, to
 * refuse a bad one at once, and wipes what it read. The keyring keeps only
 * names and paths in memory; whatever key material it reads into its own
 * buffers is wiped (explicit_bzero) before they are released.
 *
 * Names: any non-empty string without ':', or one starting with ':' (SPDK's
 * explicit "global keyring" prefix: ":key0" and "key0" are the same key).
 * SPDK's "keyring:key" names of other keyrings are refused (there is only the
 * global keyring).
 *
 * References: the keyring holds one reference to each live key.
 * keyring_file_remove_key() drops it and marks the key removed: it is no
 * longer found by keyring_get_key() nor written by save_config, but stays
 * allocated for those who still hold a reference, until the last
 * keyring_put_key(). key_get_key() on a removed key fails with -ENOKEY.
 *
 * Threads: the key list is guarded by a mutex; keyring_get_key(),
 * keyring_put_key(), key_get_name() and key_get_key() may be called from any
 * thread (a qpair on a poll group thread may drop its reference there). The
 * add/remove calls, the subsystem hooks and the RPCs run on the app thread.
 */
#ifndef GGA_KEYRING_H
#define GGA_KEYRING_H

#include <stddef.h>

#include <jansson.h>

/* The largest key file accepted, and so the most material a key can have. */
#define KEYRING_MAX_KEY_SIZE 4096
/* The longest key name, without the terminating NUL. */
#define KEYRING_MAX_NAME_LEN 255

struct key;

/*
 * Find a live (not removed) key by name and take a reference; NULL if there
 * is none. Release the reference with keyring_put_key().
 */
struct key *keyring_get_key(const char *name);

/*
 * Drop a reference; a removed key is freed with its last reference. NULL is a
 * no-op.
 */
void keyring_put_key(struct key *key);

/* The key's name as it was added (valid while a reference is held). */
const char *key_get_name(const struct key *key);

/*
 * Copy the key's material into buf: the key file's content with trailing
 * whitespace (spaces, tabs, CR, LF) trimmed. The file is read and checked
 * now (see above). Returns the material's length (at least 1), or:
 *   -ENOBUFS  buf is smaller than the material (nothing copied);
 *   -ENOKEY   the key was removed;
 *   -EPERM    bad permissions or owner;
 *   -EINVAL   not a regular file any more, or empty (only whitespace);
 *   -EFBIG    the file is larger than KEYRING_MAX_KEY_SIZE;
 *   another negative errno from open/read (-ENOENT: the file is gone).
 * Failures are logged with the key's name and path, never its material.
 * The caller wipes buf when done with it.
 */
int key_get_key(struct key *key, void *buf, size_t len);

/*
 * Add a key stored in the file at `path` (app thread). The file is checked
 * and read as key_get_key() does. When `msg` is not NULL it receives the
 * reason of a failure (naming the key, the path and, for permissions, the
 * mode), which is also logged. Returns 0, or:
 *   -EINVAL  empty, too long or other-keyring name; not a regular file; empty file;
 *   -EEXIST  a live key of that name exists;
 *   -EPERM   relative path, group/other permission bits, another owner;
 *   -EFBIG   file larger than KEYRING_MAX_KEY_SIZE;
 *   -ENOMEM, or the errno of open/read (-ENOENT: no such file).
 * Nothing is added on failure.
 */
int keyring_file_add_key(const char *name, const char *path, char *msg, size_t msg_len);

/*
 * Remove a live key (app thread): see "References" above. Returns 0, or
 * -ENOKEY if there is no live key of that name (msg, if not NULL, says so).
 */
int keyring_file_remove_key(const char *name, char *msg, size_t msg_len);

/*
 * The app framework's built-in "keyring" subsystem, first in line: its calls
 * are replayed (and saved) before those of bdev and nvmf, which name keys.
 * init registers the RPCs (keyring_file_add_key, keyring_file_remove_key,
 * keyring_get_keys); fini drops the keyring's reference to every key (a key
 * still referenced elsewhere is logged and freed with its last reference);
 * config_json appends one keyring_file_add_key {name, path} per live key.
 */
int keyring_subsystem_init(void);
void keyring_subsystem_fini(void (*done)(void *arg), void *done_arg);
void keyring_subsystem_config_json(json_t *config);

#endif /* GGA_KEYRING_H */
