/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe bdev: the other paths of a multipath name (their attach, the check
 * that they show the same namespaces, their teardown) and ANA (each path's
 * log page, read by a poller; the states I/O threads choose paths by). The
 * I/O path itself is in bdev_nvme.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/log.h"
#include "gga/util.h"

#include "bdev_nvme_internal.h"

/* A state the log gave that the spec does not define is shown as in transition. */
static const char *
ana_name(uint8_t state)
{
	const char *name = nvme_ana_state_name(state);

	return name != NULL ? name : "change";
}

const char *
nbc_multipath_name(enum bdev_nvme_multipath mp)
{
	switch (mp) {
	case BDEV_NVME_MP_FAILOVER:
		return "failover";
	case BDEV_NVME_MP_DISABLE:
		return "disable";
	default:
		return "multipath";
	}
}

/* Each path: where, its controller's state and id, and each namespace's ANA state there. */
json_t *
nbc_paths_json(const struct nvme_bdev_ctrlr *primary)
{
	const struct nvme_bdev_ctrlr *path;
	json_t *arr = json_array(), *ana;
	uint32_t i, k;

	for (i = 0; i < primary->num_paths; i++) {
		path = primary->paths[i];
		ana = json_array();
		for (k = 0; k < primary->num_bdevs; k++) {
			json_array_append_new(ana, json_pack("{s:I, s:s}", "nsid",
							     (json_int_t)nvme_ns_get_info(
								     path->path_ns[k])
								     ->nsid,
							     "ana_state",
							     path->ana_reporting ?
								     ana_name(path->ana[k]) :
								     "optimized"));
		}
		json_array_append_new(arr, json_pack("{s:o, s:s, s:I, s:o}", "trid",
						     nbc_trid_json(&path->trid), "state",
						     nvme_ctrlr_state_name(
							     nvme_ctrlr_get_state(path->ctrlr)),
						     "cntlid",
						     (json_int_t)nvme_ctrlr_get_cntlid(path->ctrlr),
						     "ana_states", ana));
	}
	for (i = 0; i < primary->num_pending; i++) {
		json_array_append_new(arr, json_pack("{s:o, s:s}", "trid",
						     nbc_trid_json(&primary->pending[i]->trid),
						     "state", "connecting"));
	}
	return arr;
}

/* One more of the primary's other paths is gone; the primary's controller goes after the last. */
static void
path_gone(struct nvme_bdev_ctrlr *primary)
{
	if (--primary->paths_left == 0) {
		nbc_primary_detach(primary);
	}
}

void
nbc_other_path_detached(void *cb_arg)
{
	struct nvme_bdev_ctrlr *path = cb_arg;
	struct nvme_bdev_ctrlr *primary = path->primary;

	NOTICELOG("nvme controller '%s': path %s:%s detached\n", path->name, path->trid.traddr,
		  path->trid.trsvcid);
	if (path->attach_cb != NULL) {
		/* A path abandoned in its first connect: its attach has not answered yet. */
		path->attach_cb(path->attach_cb_arg, -ECANCELED,
				"the controller was detached before this path connected", NULL, 0);
	}
	nbc_free(path);
	path_gone(primary);
}

void
nbc_other_path_io_device_gone(void *io_device)
{
	struct nvme_bdev_ctrlr *path = io_device;
	int rc;

	rc = nvme_ctrlr_detach(path->ctrlr, nbc_other_path_detached, path);
	if (rc != 0) {
		ERRLOG("nvme controller '%s': detach of path %s:%s failed: %s\n", path->name,
		       path->trid.traddr, path->trid.trsvcid, strerror(-rc));
		nbc_other_path_detached(path);
	}
}

static void
ana_log_done(void *cb_arg, const struct nvme_cpl *cpl)
{
	struct nvme_bdev_ctrlr *path = cb_arg;
	struct nvme_bdev_ctrlr *primary = path->primary;
	const uint8_t *log = path->ana_log;
	size_t off = 16, len = path->ana_log_len;
	uint32_t nns, nsid, k, i;
	uint16_t ngrps, g;
	uint8_t state;

	path->ana_inflight = false;
	if (!NVME_STATUS_IS_SUCCESS(cpl->status & (uint16_t)~NVME_STATUS_P)) {
		/* Lost meanwhile, or refused: the states stay as the I/O left them. */
		return;
	}
	memcpy(&ngrps, log + 8, sizeof(ngrps));
	for (g = 0; g < ngrps && off + 32 <= len; g++) {
		memcpy(&nns, log + off + 4, sizeof(nns));
		state = log[off + 16] & 0xf;
		if (nns > (len - off - 32) / 4) {
			break;
		}
		for (k = 0; k < nns; k++) {
			memcpy(&nsid, log + off + 32 + 4 * k, sizeof(nsid));
			for (i = 0; i < primary->num_bdevs; i++) {
				if (path->path_ns[i] != NULL &&
				    nvme_ns_get_info(path->path_ns[i])->nsid == nsid) {
					__atomic_store_n(&path->ana[i], state, __ATOMIC_RELAXED);
				}
			}
		}
		off += 32 + 4 * (size_t)nns;
	}
}

static int
ana_poll(void *ctx)
{
	struct nvme_bdev_ctrlr *path = ctx;

	if (++path->ana_ticks < ANA_READ_TICKS &&
	    !__atomic_exchange_n(&path->ana_wanted, false, __ATOMIC_RELAXED)) {
		return POLLER_IDLE;
	}
	path->ana_ticks = 0;
	if (path->ana_inflight || path->ctrlr == NULL || path->state != NBC_ATTACHED) {
		return POLLER_IDLE;
	}
	if (nvme_ctrlr_get_log_page(path->ctrlr, NVME_LOG_ANA, NVME_NSID_ALL, path->ana_log,
				    path->ana_log_len, ana_log_done, path) == 0) {
		path->ana_inflight = true;
	}
	return POLLER_BUSY;
}

/*
 * Make nctrlr a path of primary (itself for the first): its namespace of
 * each bdev (ns[i]), their ANA states, and the ANA poller when the name is
 * multipath and the subsystem reports ANA.
 */
int
nbc_path_setup(struct nvme_bdev_ctrlr *path, struct nvme_bdev_ctrlr *primary, struct nvme_ns **ns)
{
	const struct nvme_identify_ctrlr *id = nvme_ctrlr_get_data(path->ctrlr);
	uint32_t n = GGA_MAX(primary->num_bdevs, 1u);
	uint64_t len;

	path->primary = primary;
	path->path_ns = calloc(n, sizeof(*path->path_ns));
	path->ana = malloc(n);
	if (path->path_ns == NULL || path->ana == NULL) {
		return -ENOMEM;
	}
	memcpy(path->path_ns, ns, primary->num_bdevs * sizeof(*ns));
	memset(path->ana, NVME_ANA_OPTIMIZED, n);
	path->ana_reporting = primary->multipath != BDEV_NVME_MP_DISABLE &&
			      (id->cmic & NVME_CMIC_ANA_REPORTING) && id->nanagrpid > 0;
	if (!path->ana_reporting) {
		return 0;
	}
	len = 16 + 32ull * id->nanagrpid + 4ull * id->nn;
	path->ana_log_len = (uint32_t)GGA_MIN((len + 3) & ~3ull, (uint64_t)ANA_LOG_MAX);
	path->ana_log = calloc(1, path->ana_log_len);
	path->ana_poller = poller_register(ana_poll, path, ANA_TICK_US, "nvme_ana");
	if (path->ana_log == NULL || path->ana_poller == NULL) {
		return -ENOMEM;
	}
	/* Read it at the first tick. */
	path->ana_wanted = true;
	return 0;
}

/* A new path that connected cannot be used: detach it, then answer its attach. */
static void
other_path_refused_detached(void *cb_arg)
{
	struct nvme_bdev_ctrlr *path = cb_arg;

	path->attach_cb(path->attach_cb_arg, path->attach_rc, path->attach_err, NULL, 0);
	nbc_free(path);
}

static void
other_path_refuse(struct nvme_bdev_ctrlr *path, int rc)
{
	ERRLOG("nvme controller '%s': path %s:%s: %s\n", path->name, path->trid.traddr,
	       path->trid.trsvcid, path->attach_err);
	path->attach_rc = rc;
	if (nvme_ctrlr_detach(path->ctrlr, other_path_refused_detached, path) != 0) {
		other_path_refused_detached(path);
	}
}

/* Do the new path's namespaces match the primary's (nsid, NGUID, geometry)? Fills ns. */
static int
other_path_match(struct nvme_bdev_ctrlr *path, struct nvme_bdev_ctrlr *primary, struct nvme_ns **ns)
{
	const struct nvme_ns_info *a, *b;
	uint32_t i;

	for (i = 0; i < primary->num_bdevs; i++) {
		a = nvme_ns_get_info(primary->path_ns[i]);
		ns[i] = nvme_ctrlr_get_ns(path->ctrlr, a->nsid);
		b = ns[i] != NULL ? nvme_ns_get_info(ns[i]) : NULL;
		if (b == NULL || memcmp(a->nguid, b->nguid, sizeof(a->nguid)) != 0 ||
		    a->num_blocks != b->num_blocks || a->block_size != b->block_size ||
		    a->md_size != b->md_size || a->extended_lba != b->extended_lba) {
			snprintf(
				path->attach_err, sizeof(path->attach_err),
				"namespace %u is not the same namespace there (missing, or another "
				"NGUID or geometry)",
				a->nsid);
			return -EINVAL;
		}
	}
	return 0;
}

void
nbc_other_path_connected(struct nvme_bdev_ctrlr *path, struct nvme_ctrlr *ctrlr, int rc,
			 const char *reason)
{
	struct nvme_bdev_ctrlr *primary = path->primary;
	bdev_nvme_attach_cb cb = path->attach_cb;
	const char **names;
	struct nvme_ns **ns;
	uint32_t i, k, n;

	for (i = 0; i < primary->num_pending; i++) {
		if (primary->pending[i] == path) {
			primary->pending[i] = primary->pending[--primary->num_pending];
			break;
		}
	}
	path->connecting = NULL;
	if (rc != 0) {
		cb(path->attach_cb_arg, rc, reason, NULL, 0);
		nbc_free(path);
		return;
	}
	path->ctrlr = ctrlr;
	n = primary->num_bdevs;
	ns = calloc(GGA_MAX(n, 1u), sizeof(*ns));
	names = calloc(GGA_MAX(n, 1u), sizeof(*names));
	if (ns == NULL || names == NULL) {
		free(ns);
		free(names);
		snprintf(path->attach_err, sizeof(path->attach_err), "out of memory");
		other_path_refuse(path, -ENOMEM);
		return;
	}
	if (primary->state != NBC_ATTACHED) {
		snprintf(path->attach_err, sizeof(path->attach_err),
			 "the controller is being detached");
		rc = -ECANCELED;
	} else if (primary->num_paths == BDEV_NVME_MAX_PATHS) {
		snprintf(path->attach_err, sizeof(path->attach_err), "it has %u paths already",
			 BDEV_NVME_MAX_PATHS);
		rc = -ENOSPC;
	} else {
		rc = other_path_match(path, primary, ns);
	}
	if (rc == 0) {
		rc = nbc_path_setup(path, primary, ns);
		if (rc != 0) {
			snprintf(path->attach_err, sizeof(path->attach_err), "out of memory");
		}
	}
	free(ns);
	if (rc != 0) {
		free(names);
		other_path_refuse(path, rc);
		return;
	}
	io_device_register(path, nbc_channel_create, nbc_channel_destroy,
			   sizeof(struct nvme_bdev_channel), path->name);
	path->io_device_registered = true;
	path->state = NBC_ATTACHED;
	path->attach_cb = NULL;
	primary->paths[primary->num_paths] = path;
	/* Published last: an I/O thread that sees the count sees the path whole. */
	__atomic_store_n(&primary->num_paths, primary->num_paths + 1, __ATOMIC_RELEASE);
	nvme_ctrlr_set_reconnect_cb(ctrlr, nbc_reconnected, path);
	NOTICELOG("nvme controller '%s': path %u at %s:%s added (%s)\n", primary->name,
		  primary->num_paths, path->trid.traddr, path->trid.trsvcid,
		  primary->multipath == BDEV_NVME_MP_FAILOVER ? "failover" : "multipath");
	for (i = 0, k = 0; i < n; i++) {
		if (primary->bdevs[i] != NULL) {
			names[k++] = primary->bdevs[i]->bdev.name;
		}
	}
	cb(path->attach_cb_arg, 0, NULL, names, k);
	free(names);
}

/*
 * May this attach add a path to the existing name? 0, or: -EEXIST (either
 * says multipath disable), -EBUSY (not attached yet or being detached),
 * -EXDEV (another subsystem NQN), -EALREADY (that address is a path of it
 * already), -ENOSPC (BDEV_NVME_MAX_PATHS), -EPERM (another host NQN or
 * digests), -ENOTSUP (retry_first_connect, for a first path only).
 */
int
nbc_other_path_check(struct nvme_bdev_ctrlr *primary, const struct bdev_nvme_attach_opts *opts)
{
	const struct nvme_transport_id *t;
	uint32_t i;

	if (opts->multipath == BDEV_NVME_MP_DISABLE || primary->multipath == BDEV_NVME_MP_DISABLE) {
		return -EEXIST;
	}
	if (primary->state != NBC_ATTACHED) {
		return -EBUSY;
	}
	if (strcmp(opts->trid.subnqn, primary->trid.subnqn) != 0) {
		return -EXDEV;
	}
	for (i = 0; i < primary->num_paths + primary->num_pending; i++) {
		t = i < primary->num_paths ? &primary->paths[i]->trid :
					     &primary->pending[i - primary->num_paths]->trid;
		if (t->trtype == opts->trid.trtype && strcmp(t->traddr, opts->trid.traddr) == 0 &&
		    strcmp(t->trsvcid, opts->trid.trsvcid) == 0) {
			return -EALREADY;
		}
	}
	if (primary->num_paths + primary->num_pending >= BDEV_NVME_MAX_PATHS) {
		return -ENOSPC;
	}
	if ((opts->hostnqn == NULL) != (primary->hostnqn == NULL) ||
	    (opts->hostnqn != NULL && strcmp(opts->hostnqn, primary->hostnqn) != 0) ||
	    opts->hdgst != primary->hdgst || opts->ddgst != primary->ddgst) {
		return -EPERM;
	}
	if (opts->retry_first_connect) {
		return -ENOTSUP;
	}
	return 0;
}
