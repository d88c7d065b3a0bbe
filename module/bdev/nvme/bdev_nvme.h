/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe bdev: the namespaces of a remote NVMe-oF controller as local bdevs,
 * through the host library (gga/nvme_host.h).
 *
 * A controller is attached under a name; each active namespace becomes the
 * bdev "<name>n<nsid>" with block_size the LBA data size, md_size the
 * metadata size of an extended-LBA format, and num_blocks NSZE. Each thread
 * that does I/O gets its own I/O queue pair, created with its channel.
 *
 * Failures: NVMe errors from the target complete the bdev_io with that NVMe
 * status. While the controller is lost (target down) I/O fails at once with
 * a path status (Host Pathing Error), so a layer above (the gga bdev) marks
 * the member failed; the controller reconnects in the background and I/O
 * works again once it is back.
 *
 * RPCs: bdev_nvme_attach_controller {name, trtype, adrfam?, traddr, trsvcid,
 * subnqn, hostnqn?, hdgst?, ddgst?, timeout_ms?, keep_alive_timeout_ms?,
 * retry_first_connect?} answers (once connected) the list of bdev names, or
 * with retry_first_connect, once a first attempt failed for a reason that can
 * pass, an empty list (the bdevs appear when a later attempt connects);
 * bdev_nvme_detach_controller {name} answers true once the bdevs are gone
 * and the controller is shut down; bdev_nvme_get_controllers {name?} lists
 * controllers. save_config writes one attach per controller.
 */
#ifndef GGA_BDEV_NVME_H
#define GGA_BDEV_NVME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "gga/nvme_host.h"

/*
 * Multipath (SPDK's `multipath`): a second attach of a name with another
 * address of the same subsystem adds a path to it, unless either attach says
 * DISABLE. Every path stays connected; I/O goes to the first usable path in
 * the order the paths were attached: with MULTIPATH, ANA optimized paths
 * before non-optimized ones; with FAILOVER, in that order whatever their ANA
 * state. A path whose namespace is ANA inaccessible, lost or changing, or
 * whose controller is lost, is not used. I/O that fails with a path status
 * is retried on another path; with no path usable it is held, and tried
 * again every 20 ms, for at most hold_ms (fast_io_fail_timeout_sec).
 */
enum bdev_nvme_multipath {
	BDEV_NVME_MP_MULTIPATH = 0, /* SPDK's default */
	BDEV_NVME_MP_FAILOVER,
	BDEV_NVME_MP_DISABLE,
};

/* The most paths one controller name has. */
#define BDEV_NVME_MAX_PATHS 4

struct bdev_nvme_attach_opts {
	const char *name; /* controller name, the prefix of its bdev names */
	enum bdev_nvme_multipath multipath;
	/* Multipath: how long I/O waits for a usable path (ms); 0: the default, 10 s. */
	uint32_t hold_ms;
	struct nvme_transport_id trid;
	const char *hostnqn; /* NULL: the library's default */
	bool hdgst;
	bool ddgst;
	uint32_t timeout_ms;            /* per-command timeout; 0: the library default (30 s) */
	uint32_t keep_alive_timeout_ms; /* 0: the library default (10 s) */
	/*
	 * A first connect that fails for a reason that can pass (refused,
	 * unreachable, timed out, unknown subsystem NQN) does not fail the
	 * attach: the controller stays listed ("attaching", with the last error)
	 * and is retried with the host library's reconnect backoff until it
	 * connects (its bdevs are registered then) or is detached.
	 */
	bool retry_first_connect;
	/* DH-HMAC-CHAP: the keys' names (for save_config) and their secrets. */
	const char *dhchap_key_name;
	const char *dhchap_ctrlr_key_name;
	struct nvme_dhchap_secret dhchap_key;
	struct nvme_dhchap_secret dhchap_ctrlr_key;
	/* NVMe/TCP secure channel: the PSK key's name and its PSK (len 0: none). */
	const char *psk_name;
	struct nvme_tls_psk psk;
};

/*
 * The DH-HMAC-CHAP digests and groups the host offers at the next attaches
 * (bit 1 << id; 0 leaves that one as it is; all by default).
 */
void bdev_nvme_set_dhchap_options(uint8_t digests, uint8_t dhgroups);

/* Register the module and its RPCs (once, before bdev_subsystem_init). */
void bdev_nvme_module_register(void);

/*
 * Attach result: rc 0 and the names of the bdevs created (valid during the
 * call), or a negative errno and a message naming the address and cause.
 */
typedef void (*bdev_nvme_attach_cb)(void *cb_arg, int rc, const char *errmsg,
				    const char *const *names, size_t count);

/*
 * Connect to a controller and create a bdev per active namespace (app
 * thread). Returns 0 (cb will be called once, later), or -EINVAL (empty or
 * too long name, bad address), -EEXIST (a controller of that name exists),
 * -EPROTONOSUPPORT (rdma), -ENOMEM; then nothing is created. A connect or
 * bdev registration failure reaches cb with nothing left behind; with
 * retry_first_connect a connect failure that can pass reaches cb as rc 0 and
 * no names, and the controller keeps trying. A later attempt that connects
 * but whose namespaces cannot become bdevs removes the controller (logged).
 */
int bdev_nvme_attach_controller(const struct bdev_nvme_attach_opts *opts, bdev_nvme_attach_cb cb,
				void *cb_arg);

typedef void (*bdev_nvme_detach_cb)(void *cb_arg, int rc);

/*
 * Unregister the controller's bdevs, shut it down and forget it (app thread).
 * Returns 0 (cb, if not NULL, called once done), -ENODEV (no such
 * controller), -EBUSY (its attach call not answered yet, or already
 * detaching). A controller retrying its first connect is given up: no more
 * attempts, the one in flight is closed.
 */
int bdev_nvme_detach_controller(const char *name, bdev_nvme_detach_cb cb, void *cb_arg);

/*
 * The controllers as bdev_nvme_get_controllers answers: all of them, or the
 * one named (NULL when there is no such controller). New reference.
 */
json_t *bdev_nvme_get_controllers_json(const char *name);

/* Internal: registers the RPC methods (bdev_nvme_rpc.c). */
void bdev_nvme_rpc_register(void);

#endif /* GGA_BDEV_NVME_H */
