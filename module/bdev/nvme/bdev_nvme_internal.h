/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe bdev internals, shared by bdev_nvme.c (controllers, bdevs, I/O,
 * teardown, attach) and bdev_nvme_paths.c (the other paths of a multipath
 * name, and ANA). See the top of bdev_nvme.c.
 */
#ifndef GGA_BDEV_NVME_INTERNAL_H
#define GGA_BDEV_NVME_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include <jansson.h>

#include "gga/bdev_module.h"
#include "gga/thread.h"

#include "bdev_nvme.h"

#define NVME_BDEV_NAME_MAX 64
/* A first connect that keeps failing is logged at its first failure, then every this many. */
#define RETRY_LOG_EVERY    50
/* I/O held for want of a usable path is tried again this often. */
#define HOLD_RETRY_US      20000
#define HOLD_DEFAULT_MS    10000
/* The ANA poller's tick; the log is read every ANA_READ_TICKS ticks, or at the next when asked. */
#define ANA_TICK_US        100000
#define ANA_READ_TICKS     10
#define ANA_LOG_MAX        65536

enum nvme_bdev_ctrlr_state {
	NBC_ATTACHING,
	NBC_ATTACHED,
	NBC_DETACHING,
};

struct nvme_bdev;

struct nvme_bdev_ctrlr {
	char *name;
	struct nvme_transport_id trid;
	char *hostnqn; /* as given, NULL for the default */
	/* DH-HMAC-CHAP keys by name (their secrets are in copts), NULL: none. */
	char *dhchap_key;
	char *dhchap_ctrlr_key;
	/* The TLS PSK by name (its PSK is in copts), NULL: plaintext. */
	char *psk;
	bool hdgst;
	bool ddgst;
	uint32_t timeout_ms; /* as given, 0 for the default */
	uint32_t keep_alive_timeout_ms;
	bool retry_first_connect;
	enum nvme_bdev_ctrlr_state state;
	struct nvme_ctrlr *ctrlr;
	/*
	 * The first connect: the attempt in flight (NULL between attempts), so
	 * that a detach or a shutdown can give it up. With retry_first_connect a
	 * failed attempt that can pass arms retry_poller, a one-shot timer, for
	 * the next one: reconnect_delay_min_ms doubling up to
	 * reconnect_delay_max_ms of the host library's options, as a lost
	 * controller reconnects.
	 */
	struct nvme_ctrlr *connecting;
	struct poller *retry_poller;
	struct nvme_ctrlr_opts copts;
	uint32_t retry_delay_ms;
	uint64_t failed_attempts;
	char last_error[256];
	bool io_device_registered;

	/* Multipath: see the top of the file. */
	enum bdev_nvme_multipath multipath;
	struct nvme_bdev_ctrlr *primary;
	struct nvme_bdev_ctrlr *paths[BDEV_NVME_MAX_PATHS]; /* primary: every path, itself first */
	uint32_t num_paths;                                 /* primary; read by I/O threads */
	uint32_t hold_ms;                                   /* primary */
	uint32_t paths_left; /* primary, in its teardown: other paths not detached yet */
	/* Primary: paths still in their first connect (not in paths[] yet). */
	struct nvme_bdev_ctrlr *pending[BDEV_NVME_MAX_PATHS];
	uint32_t num_pending;
	/* This path's namespace of each bdev of the primary, and its ANA state (I/O threads read). */
	struct nvme_ns **path_ns;
	uint8_t *ana;
	bool ana_reporting;
	bool ana_inflight;
	bool ana_wanted; /* atomic: an I/O thread met an ANA status */
	uint32_t ana_ticks;
	struct poller *ana_poller;
	void *ana_log;
	uint32_t ana_log_len;

	struct nvme_bdev **bdevs; /* one per namespace, NULL once destructed */
	uint32_t num_bdevs;
	uint32_t live_bdevs;         /* registered and not destructed yet */
	struct nvme_bdev *last_bdev; /* its destruct waits for the controller */

	/* NULL once answered (attached, or retrying in the background). */
	bdev_nvme_attach_cb attach_cb;
	void *attach_cb_arg;
	/* An attach that failed after connecting reports once the controller is gone. */
	int attach_rc;
	char attach_err[256];
	bdev_nvme_detach_cb detach_cb;
	void *detach_cb_arg;

	TAILQ_ENTRY(nvme_bdev_ctrlr) link;
};

struct nvme_bdev {
	struct bdev bdev;
	struct nvme_bdev_ctrlr *nctrlr;
	struct nvme_ns *ns;
	uint32_t index;
	uint32_t max_rw_blocks; /* per command */
};

struct nvme_bdev_io;

struct nvme_bdev_channel {
	struct nvme_qpair *qpair;
	/* A primary's channel: the other paths' channels on this thread, taken at first use. */
	struct io_channel *path_ch[BDEV_NVME_MAX_PATHS];
	/* I/O waiting for a usable path, and the timer that tries it again. */
	TAILQ_HEAD(, nvme_bdev_io) held;
	struct poller *hold_poller;
};

/* Per-I/O context in bdev_io->driver_ctx. */
struct nvme_bdev_io {
	struct nvme_qpair *qpair;
	struct nvme_ns *ns; /* of the path in use */
	uint64_t lba;       /* next block to send */
	uint64_t left;      /* blocks not sent yet */
	size_t iov_offset;  /* buffer offset of the next block */
	uint32_t chunk;     /* blocks of the command in flight */
	/* Multipath: the path in use, the paths that failed it, until when it may wait. */
	uint32_t path;
	uint32_t tried;
	uint64_t hold_deadline; /* ticks; 0: never held */
	struct nvme_bdev_channel *nch;
	struct bdev_io *io;
	TAILQ_ENTRY(nvme_bdev_io) link;
};

/* bdev_nvme.c */
void nbc_free(struct nvme_bdev_ctrlr *nctrlr);
void nbc_primary_detach(struct nvme_bdev_ctrlr *nctrlr);
void nbc_reconnected(void *cb_arg, struct nvme_ctrlr *ctrlr, bool connected);
int nbc_channel_create(void *io_device, void *ctx_buf);
void nbc_channel_destroy(void *io_device, void *ctx_buf);
json_t *nbc_trid_json(const struct nvme_transport_id *trid);

/* bdev_nvme_paths.c: the other paths of a name, and ANA */
const char *nbc_multipath_name(enum bdev_nvme_multipath mp);
json_t *nbc_paths_json(const struct nvme_bdev_ctrlr *primary);
int nbc_path_setup(struct nvme_bdev_ctrlr *path, struct nvme_bdev_ctrlr *primary,
		   struct nvme_ns **ns);
int nbc_other_path_check(struct nvme_bdev_ctrlr *primary, const struct bdev_nvme_attach_opts *opts);
/* The first connect of another path ended (its connect callback). */
void nbc_other_path_connected(struct nvme_bdev_ctrlr *path, struct nvme_ctrlr *ctrlr, int rc,
			      const char *reason);
/* The primary's teardown: another path's io_device is gone, then its controller. */
void nbc_other_path_io_device_gone(void *io_device);
void nbc_other_path_detached(void *cb_arg);

#endif /* GGA_BDEV_NVME_INTERNAL_H */
