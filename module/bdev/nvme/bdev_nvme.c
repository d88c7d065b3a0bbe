/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe bdev (see bdev_nvme.h).
 *
 * Each attached controller is an io_device; a thread's channel of it holds
 * that thread's I/O queue pair, and the bdevs of all its namespaces share
 * that channel. An I/O larger than one command allows (65536 blocks, or the
 * controller's MDTS) is sent as consecutive commands, each one started when
 * the previous completes; the per-I/O state lives in bdev_io->driver_ctx.
 *
 * Teardown (detach, a failed attach, shutdown) goes one way: unregister the
 * bdevs; the destruct of the last one unregisters the io_device (which waits
 * for every channel, and so every queue pair, to go), detaches the
 * controller, and only then completes, so the bdev layer's shutdown waits
 * for the controller to be shut down cleanly.
 *
 * Multipath (bdev_nvme.h; the other paths and ANA in bdev_nvme_paths.c): the
 * first attach of a name is its *primary* path:
 * it owns the bdevs and lists every path, itself first. A later path is an
 * nvme_bdev_ctrlr of its own (its own controller and io_device, not in the
 * list of names) whose namespaces match the primary's by nsid and NGUID. A
 * bdev's channel is the primary's; it takes a channel of another path on
 * its thread the first time it sends I/O there. Paths are only added while
 * the name lives (num_paths is published last) and all go in its teardown:
 * the primary's io_device goes first (its channels put the others'), then
 * every other path is detached, then the primary's controller.
 *
 * Each path of a multipath name whose subsystem reports ANA (CMIC bit 3)
 * reads its ANA log page every second, and within 100 ms of an I/O that met
 * an ANA status; the state of each namespace through each path is a byte
 * I/O threads read when they choose a path.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/bdev_module.h"
#include "gga/log.h"
#include "gga/util.h"

#include "bdev_nvme_internal.h"

static TAILQ_HEAD(, nvme_bdev_ctrlr) g_ctrlrs = TAILQ_HEAD_INITIALIZER(g_ctrlrs);
static struct bdev_module nvme_module;

static struct nvme_bdev_ctrlr *
nctrlr_by_name(const char *name)
{
	struct nvme_bdev_ctrlr *nctrlr;

	TAILQ_FOREACH(nctrlr, &g_ctrlrs, link) {
		if (strcmp(nctrlr->name, name) == 0) {
			return nctrlr;
		}
	}
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* I/O                                                                      */
/* ------------------------------------------------------------------------ */

static int submit_chunk(struct bdev_io *io);

/* Fail an I/O the queue pair refused; -ENOMEM makes the bdev layer retry it. */
static void
complete_submit_error(struct bdev_io *io, int rc)
{
	switch (rc) {
	case -ENOMEM:
		bdev_io_complete(io, BDEV_IO_STATUS_NOMEM);
		break;
	case -ENXIO:
		/* The controller is not connected: a path error, as a multipath host sees it. */
		bdev_io_complete_nvme_status(io, NVME_SCT_PATH, NVME_SC_HOST_PATH_ERROR);
		break;
	default:
		bdev_io_complete(io, BDEV_IO_STATUS_FAILED);
		break;
	}
}

static int submit_any_path(struct bdev_io *io);
static void path_retry(struct bdev_io *io);

/*
 * Does the name have another path to try? A name with one path keeps the
 * single-path behaviour whatever its mode: I/O fails at once when its
 * controller is lost (a gga bdev fails that member rather than wait).
 */
static bool
multipathed(const struct nvme_bdev_ctrlr *primary)
{
	return primary->multipath != BDEV_NVME_MP_DISABLE &&
	       __atomic_load_n(&primary->num_paths, __ATOMIC_ACQUIRE) > 1;
}

/* A status another path may not have (a path status without DNR). */
static bool
is_path_status(const struct nvme_bdev_ctrlr *primary, uint16_t status)
{
	return multipathed(primary) && NVME_STATUS_GET_SCT(status) == NVME_SCT_PATH &&
	       !(status & NVME_STATUS_DNR);
}

/* An ANA status tells the namespace's state through that path: note it, and read the log. */
static void
note_ana_status(struct nvme_bdev_ctrlr *path, uint32_t index, uint16_t status)
{
	uint8_t state;

	switch (NVME_STATUS_GET_SC(status)) {
	case NVME_SC_ANA_INACCESSIBLE:
		state = NVME_ANA_INACCESSIBLE;
		break;
	case NVME_SC_ANA_PERSISTENT_LOSS:
		state = NVME_ANA_PERSISTENT_LOSS;
		break;
	case NVME_SC_ANA_TRANSITION:
		state = NVME_ANA_CHANGE;
		break;
	default:
		return;
	}
	__atomic_store_n(&path->ana[index], state, __ATOMIC_RELAXED);
	__atomic_store_n(&path->ana_wanted, true, __ATOMIC_RELAXED);
}

static void
cmd_done(void *cb_arg, const struct nvme_cpl *cpl)
{
	struct bdev_io *io = cb_arg;
	struct nvme_bdev_io *nio = (struct nvme_bdev_io *)io->driver_ctx;
	struct nvme_bdev *nbdev = io->bdev->ctxt;
	struct nvme_bdev_ctrlr *primary = nbdev->nctrlr;
	uint16_t status = cpl->status & (uint16_t)~NVME_STATUS_P;
	int rc;

	if (unlikely(!NVME_STATUS_IS_SUCCESS(status))) {
		if (is_path_status(primary, status)) {
			note_ana_status(primary->paths[nio->path], nbdev->index, status);
			nio->tried |= 1u << nio->path;
			path_retry(io);
			return;
		}
		bdev_io_complete_nvme_status(io, NVME_STATUS_GET_SCT(status),
					     NVME_STATUS_GET_SC(status));
		return;
	}
	nio->lba += nio->chunk;
	nio->left -= nio->chunk;
	nio->iov_offset += (size_t)nio->chunk * nvme_ns_get_info(nio->ns)->xfer_block_size;
	if (likely(nio->left == 0)) {
		bdev_io_complete(io, BDEV_IO_STATUS_SUCCESS);
		return;
	}
	rc = submit_chunk(io);
	if (rc == -ENXIO && multipathed(primary)) {
		/* The path went away between two commands: the rest goes another way. */
		nio->tried |= 1u << nio->path;
		path_retry(io);
	} else if (rc != 0) {
		/* Part of the I/O is done: retrying from the start is not what NOMEM means here. */
		bdev_io_complete_nvme_status(io, NVME_SCT_PATH, NVME_SC_HOST_PATH_ERROR);
	}
}

static int
submit_resv(struct nvme_qpair *qp, struct nvme_ns *ns, const struct bdev_nvme_resv_cmd *c,
	    struct bdev_io *io)
{
	switch (c->op) {
	case BDEV_NVME_RESV_REGISTER:
		return nvme_ns_cmd_resv_register(qp, ns, c->action, c->iekey, c->cptpl, c->crkey,
						 c->nrkey, cmd_done, io);
	case BDEV_NVME_RESV_ACQUIRE:
		return nvme_ns_cmd_resv_acquire(qp, ns, c->action, c->rtype, c->crkey, c->nrkey,
						cmd_done, io);
	case BDEV_NVME_RESV_RELEASE:
		return nvme_ns_cmd_resv_release(qp, ns, c->action, c->rtype, c->crkey, cmd_done,
						io);
	case BDEV_NVME_RESV_REPORT:
		return nvme_ns_cmd_resv_report(qp, ns, c->buf, c->len, cmd_done, io);
	default:
		return -EINVAL;
	}
}

static int
submit_chunk(struct bdev_io *io)
{
	struct nvme_bdev_io *nio = (struct nvme_bdev_io *)io->driver_ctx;
	struct nvme_bdev *nbdev = io->bdev->ctxt;
	struct nvme_qpair *qp = nio->qpair;

	switch (io->type) {
	case BDEV_IO_TYPE_READ:
		nio->chunk = (uint32_t)GGA_MIN(nio->left, (uint64_t)nbdev->max_rw_blocks);
		return nvme_ns_cmd_readv(qp, nio->ns, nio->lba, nio->chunk, io->u.iovs,
					 io->u.iovcnt, nio->iov_offset, cmd_done, io);
	case BDEV_IO_TYPE_WRITE:
		nio->chunk = (uint32_t)GGA_MIN(nio->left, (uint64_t)nbdev->max_rw_blocks);
		return nvme_ns_cmd_writev(qp, nio->ns, nio->lba, nio->chunk, io->u.iovs,
					  io->u.iovcnt, nio->iov_offset, cmd_done, io);
	case BDEV_IO_TYPE_WRITE_ZEROES:
		nio->chunk = (uint32_t)GGA_MIN(nio->left, (uint64_t)NVME_RW_NLB_MASK + 1);
		return nvme_ns_cmd_write_zeroes(qp, nio->ns, nio->lba, nio->chunk, cmd_done, io);
	case BDEV_IO_TYPE_UNMAP:
		nio->chunk = (uint32_t)GGA_MIN(nio->left, (uint64_t)UINT32_MAX);
		return nvme_ns_cmd_deallocate(qp, nio->ns, nio->lba, nio->chunk, cmd_done, io);
	case BDEV_IO_TYPE_FLUSH:
		/* One Flush covers the namespace. */
		nio->chunk = (uint32_t)nio->left;
		return nvme_ns_cmd_flush(qp, nio->ns, cmd_done, io);
	case BDEV_IO_TYPE_NVME_RESV:
		nio->chunk = (uint32_t)nio->left;
		return submit_resv(qp, nio->ns, &io->u.resv, io);
	default:
		return -ENOTSUP;
	}
}

/* This thread's queue pair of path i (the primary's channel takes the others' at first use). */
static struct nvme_qpair *
path_qpair(struct nvme_bdev_channel *nch, struct nvme_bdev_ctrlr *primary, uint32_t i)
{
	if (i == 0) {
		return nch->qpair;
	}
	if (nch->path_ch[i] == NULL) {
		nch->path_ch[i] = io_channel_get(primary->paths[i]);
		if (nch->path_ch[i] == NULL) {
			return NULL;
		}
	}
	return ((struct nvme_bdev_channel *)io_channel_get_ctx(nch->path_ch[i]))->qpair;
}

/*
 * Send the I/O (from where it stands) on the first usable path it has not
 * failed on yet: with MULTIPATH the optimized paths, then the non-optimized
 * ones; with FAILOVER either, in order. -ENXIO: no path can take it now.
 */
static int
submit_any_path(struct bdev_io *io)
{
	struct nvme_bdev_io *nio = (struct nvme_bdev_io *)io->driver_ctx;
	struct nvme_bdev *nbdev = io->bdev->ctxt;
	struct nvme_bdev_ctrlr *primary = nbdev->nctrlr, *path;
	uint32_t n = __atomic_load_n(&primary->num_paths, __ATOMIC_ACQUIRE), i;
	bool prefer = primary->multipath == BDEV_NVME_MP_MULTIPATH;
	struct nvme_qpair *qp;
	int pass, rc;
	uint8_t st;

	for (pass = 0; pass < (prefer ? 2 : 1); pass++) {
		for (i = 0; i < n; i++) {
			if (nio->tried & (1u << i)) {
				continue;
			}
			path = primary->paths[i];
			st = __atomic_load_n(&path->ana[nbdev->index], __ATOMIC_RELAXED);
			if (prefer ? st != (pass == 0 ? NVME_ANA_OPTIMIZED :
							NVME_ANA_NON_OPTIMIZED) :
				     st != NVME_ANA_OPTIMIZED && st != NVME_ANA_NON_OPTIMIZED) {
				continue;
			}
			qp = path_qpair(nio->nch, primary, i);
			if (qp == NULL) {
				nio->tried |= 1u << i;
				continue;
			}
			nio->qpair = qp;
			nio->ns = path->path_ns[nbdev->index];
			nio->path = i;
			rc = submit_chunk(io);
			if (rc != -ENXIO) {
				return rc;
			}
			nio->tried |= 1u << i;
		}
	}
	return -ENXIO;
}

static int hold_poll(void *ctx);

/* No path for the I/O now: hold it for the rest of hold_ms, or fail it with a path error. */
static void
hold_or_fail(struct bdev_io *io)
{
	struct nvme_bdev_io *nio = (struct nvme_bdev_io *)io->driver_ctx;
	struct nvme_bdev_ctrlr *primary = ((struct nvme_bdev *)io->bdev->ctxt)->nctrlr;
	struct nvme_bdev_channel *nch = nio->nch;
	uint64_t now = ticks_get();
	uint32_t i, n;

	if (!multipathed(primary) || primary->state == NBC_DETACHING) {
		bdev_io_complete_nvme_status(io, NVME_SCT_PATH, NVME_SC_HOST_PATH_ERROR);
		return;
	}
	if (nio->hold_deadline == 0) {
		nio->hold_deadline = now + us_to_ticks(1000ull * primary->hold_ms);
	}
	if (now >= nio->hold_deadline) {
		bdev_io_complete_nvme_status(io, NVME_SCT_PATH, NVME_SC_HOST_PATH_ERROR);
		return;
	}
	/* What changed may be an ANA state: have every path read its log soon. */
	n = __atomic_load_n(&primary->num_paths, __ATOMIC_ACQUIRE);
	for (i = 0; i < n; i++) {
		__atomic_store_n(&primary->paths[i]->ana_wanted, true, __ATOMIC_RELAXED);
	}
	TAILQ_INSERT_TAIL(&nch->held, nio, link);
	if (nch->hold_poller == NULL) {
		nch->hold_poller = poller_register(hold_poll, nch, HOLD_RETRY_US, "nvme_mp_hold");
		if (nch->hold_poller == NULL) {
			TAILQ_REMOVE(&nch->held, nio, link);
			bdev_io_complete_nvme_status(io, NVME_SCT_PATH, NVME_SC_HOST_PATH_ERROR);
		}
	}
}

/* The path failed the I/O: another path, or hold it. */
static void
path_retry(struct bdev_io *io)
{
	int rc = submit_any_path(io);

	if (rc == -ENXIO) {
		hold_or_fail(io);
	} else if (rc != 0) {
		complete_submit_error(io, rc);
	}
}

static int
hold_poll(void *ctx)
{
	struct nvme_bdev_channel *nch = ctx;
	TAILQ_HEAD(, nvme_bdev_io) retry = TAILQ_HEAD_INITIALIZER(retry);
	struct nvme_bdev_io *nio;

	TAILQ_CONCAT(&retry, &nch->held, link);
	while ((nio = TAILQ_FIRST(&retry)) != NULL) {
		TAILQ_REMOVE(&retry, nio, link);
		/* Every path may have come back: try them all again. */
		nio->tried = 0;
		path_retry(nio->io);
	}
	if (TAILQ_EMPTY(&nch->held)) {
		poller_unregister(&nch->hold_poller);
	}
	return POLLER_BUSY;
}

static void
nvme_bdev_submit_request(struct io_channel *ch, struct bdev_io *io)
{
	struct nvme_bdev_channel *nch = io_channel_get_ctx(ch);
	struct nvme_bdev_io *nio = (struct nvme_bdev_io *)io->driver_ctx;
	struct nvme_bdev *nbdev = io->bdev->ctxt;
	struct nvme_bdev_ctrlr *primary = nbdev->nctrlr;
	uint32_t i, n;
	int rc;

	if (unlikely(io->type == BDEV_IO_TYPE_RESET)) {
		/*
		 * Each controller drops its association: every I/O in flight fails
		 * now rather than at its command timeout, and it reconnects.
		 */
		n = __atomic_load_n(&primary->num_paths, __ATOMIC_ACQUIRE);
		for (i = 0; i < n; i++) {
			nvme_ctrlr_request_reset(primary->paths[i]->ctrlr, "reset of its bdev");
		}
		bdev_io_complete(io, BDEV_IO_STATUS_SUCCESS);
		return;
	}
	nio->io = io;
	nio->nch = nch;
	nio->tried = 0;
	nio->hold_deadline = 0;
	nio->lba = io->u.offset_blocks;
	nio->left = io->u.num_blocks;
	nio->iov_offset = 0;
	if ((io->type == BDEV_IO_TYPE_FLUSH || io->type == BDEV_IO_TYPE_NVME_RESV) &&
	    nio->left == 0) {
		/* One command, as the chunk loop counts it. */
		nio->left = 1;
	}
	if (likely(!multipathed(primary))) {
		nio->qpair = nch->qpair;
		nio->ns = nbdev->ns;
		nio->path = 0;
		rc = submit_chunk(io);
	} else {
		rc = submit_any_path(io);
		if (rc == -ENXIO) {
			hold_or_fail(io);
			return;
		}
	}
	if (unlikely(rc != 0)) {
		complete_submit_error(io, rc);
	}
}

static bool
nvme_bdev_io_type_supported(void *ctxt, enum bdev_io_type type)
{
	struct nvme_bdev *nbdev = ctxt;
	const struct nvme_ns_info *info = nvme_ns_get_info(nbdev->ns);

	switch (type) {
	case BDEV_IO_TYPE_READ:
	case BDEV_IO_TYPE_WRITE:
	case BDEV_IO_TYPE_FLUSH:
	case BDEV_IO_TYPE_RESET:
		return true;
	case BDEV_IO_TYPE_NVME_RESV:
		return info->reservations_supported;
	case BDEV_IO_TYPE_WRITE_ZEROES:
		return info->write_zeroes_supported;
	case BDEV_IO_TYPE_UNMAP:
		return info->dsm_supported;
	default:
		return false;
	}
}

static struct io_channel *
nvme_bdev_get_io_channel(void *ctxt)
{
	struct nvme_bdev *nbdev = ctxt;

	return io_channel_get(nbdev->nctrlr);
}

int
nbc_channel_create(void *io_device, void *ctx_buf)
{
	struct nvme_bdev_ctrlr *nctrlr = io_device;
	struct nvme_bdev_channel *nch = ctx_buf;

	TAILQ_INIT(&nch->held);
	nch->qpair = nvme_ctrlr_alloc_io_qpair(nctrlr->ctrlr);
	if (nch->qpair == NULL) {
		ERRLOG("nvme controller '%s': no I/O queue for thread %s: %s\n", nctrlr->name,
		       thread_get_name(thread_get_current()), strerror(errno));
		return -errno;
	}
	return 0;
}

void
nbc_channel_destroy(void *io_device, void *ctx_buf)
{
	struct nvme_bdev_channel *nch = ctx_buf;
	struct nvme_bdev_io *nio;
	uint32_t i;

	/* Nothing is held by a channel that goes (the bdev layer has no I/O on it). */
	while ((nio = TAILQ_FIRST(&nch->held)) != NULL) {
		TAILQ_REMOVE(&nch->held, nio, link);
		bdev_io_complete_nvme_status(nio->io, NVME_SCT_PATH, NVME_SC_HOST_PATH_ERROR);
	}
	poller_unregister(&nch->hold_poller);
	for (i = 1; i < BDEV_NVME_MAX_PATHS; i++) {
		if (nch->path_ch[i] != NULL) {
			io_channel_put(nch->path_ch[i]);
			nch->path_ch[i] = NULL;
		}
	}
	nvme_ctrlr_free_io_qpair(nch->qpair);
	nch->qpair = NULL;
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                     */
/* ------------------------------------------------------------------------ */

json_t *
nbc_trid_json(const struct nvme_transport_id *trid)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s}", "trtype",
			 nvme_transport_type_name(trid->trtype), "adrfam",
			 nvme_adrfam_name(trid->adrfam), "traddr", trid->traddr, "trsvcid",
			 trid->trsvcid, "subnqn", trid->subnqn);
}

static void
nvme_bdev_dump_info_json(void *ctxt, json_t *info)
{
	struct nvme_bdev *nbdev = ctxt;
	struct nvme_bdev_ctrlr *nctrlr = nbdev->nctrlr;
	const struct nvme_ns_info *ns = nvme_ns_get_info(nbdev->ns);

	json_object_set_new(info, "nvme",
			    json_pack("{s:s, s:o, s:I, s:s, s:b}", "controller", nctrlr->name,
				      "trid", nbc_trid_json(&nctrlr->trid), "nsid",
				      (json_int_t)ns->nsid, "state",
				      nvme_ctrlr_state_name(nvme_ctrlr_get_state(nctrlr->ctrlr)),
				      "extended_lba", ns->extended_lba));
}

static const char *
nctrlr_state_name(const struct nvme_bdev_ctrlr *nctrlr)
{
	switch (nctrlr->state) {
	case NBC_ATTACHING:
		return "attaching";
	case NBC_DETACHING:
		return "detaching";
	default:
		return nvme_ctrlr_state_name(nvme_ctrlr_get_state(nctrlr->ctrlr));
	}
}

static json_t *
nctrlr_json(const struct nvme_bdev_ctrlr *nctrlr)
{
	json_t *obj, *namespaces, *ns_obj;
	const struct nvme_ns_info *info;
	struct nvme_bdev *nbdev;
	uint32_t i;

	namespaces = json_array();
	for (i = 0; i < nctrlr->num_bdevs; i++) {
		nbdev = nctrlr->bdevs[i];
		if (nbdev == NULL) {
			continue;
		}
		info = nvme_ns_get_info(nbdev->ns);
		ns_obj = json_pack("{s:I, s:s, s:I, s:I, s:I}", "nsid", (json_int_t)info->nsid,
				   "bdev_name", nbdev->bdev.name, "block_size",
				   (json_int_t)info->block_size, "md_size",
				   (json_int_t)(info->extended_lba ? info->md_size : 0),
				   "num_blocks", (json_int_t)info->num_blocks);
		json_array_append_new(namespaces, ns_obj);
	}
	obj = json_pack("{s:s, s:o, s:s, s:b, s:b, s:s}", "name", nctrlr->name, "trid",
			nbc_trid_json(&nctrlr->trid), "hostnqn",
			nctrlr->ctrlr != NULL ? nvme_ctrlr_get_opts(nctrlr->ctrlr)->hostnqn :
						(nctrlr->hostnqn != NULL ? nctrlr->hostnqn : ""),
			"hdgst", nctrlr->hdgst, "ddgst", nctrlr->ddgst, "state",
			nctrlr_state_name(nctrlr));
	if (obj == NULL) {
		json_decref(namespaces);
		return NULL;
	}
	json_object_set_new(obj, "cntlid",
			    json_integer(nctrlr->ctrlr != NULL ?
						 nvme_ctrlr_get_cntlid(nctrlr->ctrlr) :
						 0));
	json_object_set_new(obj, "reconnects",
			    json_integer(nctrlr->ctrlr != NULL ?
						 (json_int_t)nvme_ctrlr_get_reconnect_count(
							 nctrlr->ctrlr) :
						 0));
	json_object_set_new(obj, "namespaces", namespaces);
	json_object_set_new(obj, "retry_first_connect", json_boolean(nctrlr->retry_first_connect));
	json_object_set_new(obj, "multipath", json_string(nbc_multipath_name(nctrlr->multipath)));
	if (nctrlr->multipath != BDEV_NVME_MP_DISABLE) {
		json_object_set_new(obj, "fast_io_fail_timeout_sec",
				    json_integer(nctrlr->hold_ms / 1000));
		json_object_set_new(obj, "paths", nbc_paths_json(nctrlr));
	}
	if (nctrlr->state == NBC_ATTACHING && nctrlr->failed_attempts > 0) {
		/* Why it is not connected yet, and how long it has been trying. */
		json_object_set_new(obj, "connect_attempts",
				    json_integer((json_int_t)nctrlr->failed_attempts));
		json_object_set_new(obj, "last_error", json_string(nctrlr->last_error));
	}
	return obj;
}

json_t *
bdev_nvme_get_controllers_json(const char *name)
{
	struct nvme_bdev_ctrlr *nctrlr;
	json_t *arr = json_array();

	if (arr == NULL) {
		return NULL;
	}
	TAILQ_FOREACH(nctrlr, &g_ctrlrs, link) {
		if (name == NULL || strcmp(name, nctrlr->name) == 0) {
			json_array_append_new(arr, nctrlr_json(nctrlr));
		}
	}
	if (name != NULL && json_array_size(arr) == 0) {
		json_decref(arr);
		return NULL;
	}
	return arr;
}

/* The DH-HMAC-CHAP digests and groups offered (bdev_nvme_set_options). */
static uint8_t g_dhchap_digests = NVME_AUTH_DIGESTS_ALL;
static uint8_t g_dhchap_dhgroups = NVME_AUTH_DHGROUPS_ALL;

void
bdev_nvme_set_dhchap_options(uint8_t digests, uint8_t dhgroups)
{
	if (digests != 0) {
		g_dhchap_digests = digests;
	}
	if (dhgroups != 0) {
		g_dhchap_dhgroups = dhgroups;
	}
}

/* save_config: one attach per controller (module options come before every bdev). */
static void
nvme_module_config_json(json_t *config)
{
	struct nvme_bdev_ctrlr *nctrlr;
	json_t *params;
	uint32_t i;

	/* bdev_nvme_set_options, when it changed anything. */
	nvme_auth_rpc_lists_config(config, "bdev_nvme_set_options", g_dhchap_digests,
				   g_dhchap_dhgroups);
	TAILQ_FOREACH(nctrlr, &g_ctrlrs, link) {
		/*
		 * A controller still retrying its first connect is configured too: a
		 * restart must keep trying it (the RPC that made it has succeeded).
		 */
		if (nctrlr->state != NBC_ATTACHED &&
		    !(nctrlr->state == NBC_ATTACHING && nctrlr->attach_cb == NULL)) {
			continue;
		}
		params = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:b, s:s}", "name",
				   nctrlr->name, "trtype",
				   nctrlr->trid.trtype == NVME_TRANSPORT_TCP ? "tcp" : "rdma",
				   "adrfam", "ipv4", "traddr", nctrlr->trid.traddr, "trsvcid",
				   nctrlr->trid.trsvcid, "subnqn", nctrlr->trid.subnqn, "hdgst",
				   nctrlr->hdgst, "ddgst", nctrlr->ddgst, "multipath",
				   nbc_multipath_name(nctrlr->multipath));
		if (params == NULL) {
			ERRLOG("nvme controller '%s': out of memory writing its configuration\n",
			       nctrlr->name);
			continue;
		}
		if (nctrlr->hostnqn != NULL) {
			json_object_set_new(params, "hostnqn", json_string(nctrlr->hostnqn));
		}
		if (nctrlr->dhchap_key != NULL) {
			json_object_set_new(params, "dhchap_key", json_string(nctrlr->dhchap_key));
		}
		if (nctrlr->dhchap_ctrlr_key != NULL) {
			json_object_set_new(params, "dhchap_ctrlr_key",
					    json_string(nctrlr->dhchap_ctrlr_key));
		}
		if (nctrlr->psk != NULL) {
			json_object_set_new(params, "psk", json_string(nctrlr->psk));
		}
		if (nctrlr->timeout_ms != 0) {
			json_object_set_new(params, "timeout_ms", json_integer(nctrlr->timeout_ms));
		}
		if (nctrlr->keep_alive_timeout_ms != 0) {
			json_object_set_new(params, "keep_alive_timeout_ms",
					    json_integer(nctrlr->keep_alive_timeout_ms));
		}
		if (nctrlr->retry_first_connect) {
			json_object_set_new(params, "retry_first_connect", json_true());
		}
		if (nctrlr->multipath != BDEV_NVME_MP_DISABLE &&
		    nctrlr->hold_ms != HOLD_DEFAULT_MS) {
			json_object_set_new(params, "fast_io_fail_timeout_sec",
					    json_integer(nctrlr->hold_ms / 1000));
		}
		json_array_append_new(config,
				      json_pack("{s:s, s:o}", "method",
						"bdev_nvme_attach_controller", "params", params));
		/* Its other paths: the same call at their addresses. */
		for (i = 1; i < nctrlr->num_paths; i++) {
			json_t *p = json_deep_copy(params);

			json_object_set_new(p, "traddr",
					    json_string(nctrlr->paths[i]->trid.traddr));
			json_object_set_new(p, "trsvcid",
					    json_string(nctrlr->paths[i]->trid.trsvcid));
			json_object_del(p, "retry_first_connect");
			json_array_append_new(config, json_pack("{s:s, s:o}", "method",
								"bdev_nvme_attach_controller",
								"params", p));
		}
	}
}

/* ------------------------------------------------------------------------ */
/* Teardown                                                                 */
/* ------------------------------------------------------------------------ */

void
nbc_free(struct nvme_bdev_ctrlr *nctrlr)
{
	poller_unregister(&nctrlr->ana_poller);
	free(nctrlr->ana_log);
	free(nctrlr->ana);
	free(nctrlr->path_ns);
	free(nctrlr->bdevs);
	free(nctrlr->hostnqn);
	free(nctrlr->dhchap_key);
	free(nctrlr->dhchap_ctrlr_key);
	free(nctrlr->psk);
	free(nctrlr->name);
	explicit_bzero(&nctrlr->copts, sizeof(nctrlr->copts));
	free(nctrlr);
}

static void
free_nbdev(struct nvme_bdev *nbdev)
{
	free(nbdev->bdev.name);
	free(nbdev);
}

/* The controller is detached: finish whatever asked for it. */
static void
ctrlr_detached(void *cb_arg)
{
	struct nvme_bdev_ctrlr *nctrlr = cb_arg;
	struct nvme_bdev *last = nctrlr->last_bdev;

	TAILQ_REMOVE(&g_ctrlrs, nctrlr, link);
	if (last != NULL) {
		bdev_destruct_done(&last->bdev, 0);
		free_nbdev(last);
	}
	if (nctrlr->attach_cb != NULL) {
		nctrlr->attach_cb(nctrlr->attach_cb_arg, nctrlr->attach_rc, nctrlr->attach_err,
				  NULL, 0);
	}
	if (nctrlr->detach_cb != NULL) {
		nctrlr->detach_cb(nctrlr->detach_cb_arg, 0);
	}
	NOTICELOG("nvme controller '%s' detached\n", nctrlr->name);
	nbc_free(nctrlr);
}

void
nbc_primary_detach(struct nvme_bdev_ctrlr *nctrlr)
{
	int rc;

	rc = nvme_ctrlr_detach(nctrlr->ctrlr, ctrlr_detached, nctrlr);
	if (rc != 0) {
		ERRLOG("nvme controller '%s': detach failed: %s\n", nctrlr->name, strerror(-rc));
		ctrlr_detached(nctrlr);
	}
}

/*
 * The primary's channels are gone (and with them their references to the
 * other paths' channels): detach every other path, and abandon those still
 * connecting, then the primary's own controller.
 */
static void
io_device_gone(void *io_device)
{
	struct nvme_bdev_ctrlr *nctrlr = io_device, *path;
	uint32_t i, n = nctrlr->num_paths, pending = nctrlr->num_pending;
	int rc;

	if (nctrlr->primary != nctrlr || (n <= 1 && pending == 0)) {
		nbc_primary_detach(nctrlr);
		return;
	}
	nctrlr->paths_left = (n - 1) + pending;
	nctrlr->num_pending = 0;
	for (i = 0; i < pending; i++) {
		path = nctrlr->pending[i];
		path->state = NBC_DETACHING;
		rc = path->connecting != NULL ?
			     nvme_ctrlr_detach(path->connecting, nbc_other_path_detached, path) :
			     -ENODEV;
		if (rc != 0) {
			nbc_other_path_detached(path);
		}
	}
	for (i = 1; i < n; i++) {
		path = nctrlr->paths[i];
		path->state = NBC_DETACHING;
		poller_unregister(&path->ana_poller);
		io_device_unregister(path, nbc_other_path_io_device_gone);
	}
}

/* Every bdev is gone: drop the channels (queue pairs), then the controller. */
static void
release_ctrlr(struct nvme_bdev_ctrlr *nctrlr)
{
	nctrlr->state = NBC_DETACHING;
	poller_unregister(&nctrlr->ana_poller);
	if (nctrlr->io_device_registered) {
		io_device_unregister(nctrlr, io_device_gone);
	} else {
		io_device_gone(nctrlr);
	}
}

static int
nvme_bdev_destruct(void *ctxt)
{
	struct nvme_bdev *nbdev = ctxt;
	struct nvme_bdev_ctrlr *nctrlr = nbdev->nctrlr;

	nctrlr->bdevs[nbdev->index] = NULL;
	if (--nctrlr->live_bdevs > 0) {
		free_nbdev(nbdev);
		return 0;
	}
	/* The last one: its removal completes once the controller is shut down. */
	nctrlr->last_bdev = nbdev;
	release_ctrlr(nctrlr);
	return 1;
}

/* Start removing everything of a controller: its bdevs first. */
static void
nctrlr_teardown(struct nvme_bdev_ctrlr *nctrlr)
{
	uint32_t i;

	nctrlr->state = NBC_DETACHING;
	if (nctrlr->live_bdevs == 0) {
		release_ctrlr(nctrlr);
		return;
	}
	for (i = 0; i < nctrlr->num_bdevs; i++) {
		if (nctrlr->bdevs[i] != NULL) {
			bdev_unregister(&nctrlr->bdevs[i]->bdev, NULL, NULL);
		}
	}
}

/* A controller that never connected is given up: finish whoever waits, and forget it. */
static void
connect_given_up(void *cb_arg)
{
	struct nvme_bdev_ctrlr *nctrlr = cb_arg;

	TAILQ_REMOVE(&g_ctrlrs, nctrlr, link);
	NOTICELOG("nvme controller '%s' detached before it connected\n", nctrlr->name);
	if (nctrlr->attach_cb != NULL) {
		nctrlr->attach_cb(nctrlr->attach_cb_arg, -ECANCELED,
				  "detached before the first connect finished", NULL, 0);
	}
	if (nctrlr->detach_cb != NULL) {
		nctrlr->detach_cb(nctrlr->detach_cb_arg, 0);
	}
	nbc_free(nctrlr);
}

/*
 * Give up the first connect of a controller (detach, shutdown): no further
 * attempt, and the one in flight, if any, is abandoned by the host library,
 * whose callback then never runs. Completes later, from a message.
 */
static void
connect_give_up(struct nvme_bdev_ctrlr *nctrlr)
{
	struct nvme_ctrlr *connecting = nctrlr->connecting;
	int rc;

	nctrlr->state = NBC_DETACHING;
	poller_unregister(&nctrlr->retry_poller);
	nctrlr->connecting = NULL;
	if (connecting != NULL) {
		rc = nvme_ctrlr_detach(connecting, connect_given_up, nctrlr);
		if (rc == 0) {
			return;
		}
		/* Cannot happen: a connecting controller has no queue pair and no detach. */
		ERRLOG("nvme controller '%s': cannot abandon its connect: %s\n", nctrlr->name,
		       strerror(-rc));
	}
	if (thread_send_msg(thread_get_current(), connect_given_up, nctrlr) != 0) {
		ERRLOG("nvme controller '%s': cannot finish the detach (message queue full)\n",
		       nctrlr->name);
	}
}

int
bdev_nvme_detach_controller(const char *name, bdev_nvme_detach_cb cb, void *cb_arg)
{
	struct nvme_bdev_ctrlr *nctrlr = name != NULL ? nctrlr_by_name(name) : NULL;

	if (nctrlr == NULL) {
		return -ENODEV;
	}
	if (nctrlr->state == NBC_ATTACHING && nctrlr->attach_cb == NULL) {
		/* Retrying its first connect in the background. */
		nctrlr->detach_cb = cb;
		nctrlr->detach_cb_arg = cb_arg;
		connect_give_up(nctrlr);
		return 0;
	}
	if (nctrlr->state != NBC_ATTACHED) {
		return -EBUSY;
	}
	nctrlr->detach_cb = cb;
	nctrlr->detach_cb_arg = cb_arg;
	nctrlr_teardown(nctrlr);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Attach                                                                   */
/* ------------------------------------------------------------------------ */

static const struct bdev_fn_table nvme_fn_table = {
	.destruct = nvme_bdev_destruct,
	.submit_request = nvme_bdev_submit_request,
	.io_type_supported = nvme_bdev_io_type_supported,
	.get_io_channel = nvme_bdev_get_io_channel,
	.dump_info_json = nvme_bdev_dump_info_json,
};

static int
create_bdev(struct nvme_bdev_ctrlr *nctrlr, uint32_t index, struct nvme_ns *ns)
{
	const struct nvme_ns_info *info = nvme_ns_get_info(ns);
	uint32_t max_xfer = nvme_ctrlr_get_max_xfer_size(nctrlr->ctrlr);
	struct nvme_bdev *nbdev;
	int rc;

	nbdev = calloc(1, sizeof(*nbdev));
	if (nbdev == NULL) {
		return -ENOMEM;
	}
	if (asprintf(&nbdev->bdev.name, "%sn%u", nctrlr->name, info->nsid) < 0) {
		free(nbdev);
		return -ENOMEM;
	}
	nbdev->nctrlr = nctrlr;
	nbdev->ns = ns;
	nbdev->index = index;
	nbdev->max_rw_blocks = (uint32_t)GGA_MIN((uint64_t)max_xfer / info->xfer_block_size,
						 (uint64_t)NVME_RW_NLB_MASK + 1);
	if (nbdev->max_rw_blocks == 0) {
		nbdev->max_rw_blocks = 1;
	}
	nbdev->bdev.product_name = "NVMe-oF disk";
	nbdev->bdev.block_size = info->block_size;
	nbdev->bdev.md_size = info->extended_lba ? info->md_size : 0;
	nbdev->bdev.num_blocks = info->num_blocks;
	nbdev->bdev.buf_align = 1;
	/* The namespace's NGUID names the same disk across reconnects and restarts. */
	if (!mem_is_zero(info->nguid, sizeof(info->nguid))) {
		memcpy(nbdev->bdev.uuid, info->nguid, sizeof(nbdev->bdev.uuid));
	}
	nbdev->bdev.ctxt = nbdev;
	nbdev->bdev.fn_table = &nvme_fn_table;
	nbdev->bdev.module = &nvme_module;

	rc = bdev_register(&nbdev->bdev);
	if (rc != 0) {
		snprintf(nctrlr->attach_err, sizeof(nctrlr->attach_err),
			 "cannot register bdev '%s' for namespace %u: %s", nbdev->bdev.name,
			 info->nsid, rc == -EEXIST ? "a bdev of that name exists" : strerror(-rc));
		free_nbdev(nbdev);
		return rc;
	}
	nctrlr->bdevs[index] = nbdev;
	nctrlr->live_bdevs++;
	return 0;
}

/*
 * The controller is lost: its namespaces fail I/O until it is back, so tell
 * their users at once (a gga bdev fails the member, whatever its I/O mix).
 * It is connected again: the target may have restarted on other media, so
 * tell them too (a gga bdev checks its member).
 */
void
nbc_reconnected(void *cb_arg, struct nvme_ctrlr *ctrlr, bool connected)
{
	struct nvme_bdev_ctrlr *path = cb_arg;
	struct nvme_bdev_ctrlr *nctrlr = path->primary != NULL ? path->primary : path;
	uint32_t i;

	if (connected) {
		/* Its ANA states may have changed while it was away. */
		__atomic_store_n(&path->ana_wanted, true, __ATOMIC_RELAXED);
	}
	/* With another path connected, the namespaces never went away. */
	for (i = 0; i < nctrlr->num_paths; i++) {
		if (nctrlr->paths[i] != path && nctrlr->paths[i]->ctrlr != NULL &&
		    nvme_ctrlr_get_state(nctrlr->paths[i]->ctrlr) == NVME_CTRLR_CONNECTED) {
			NOTICELOG("nvme controller '%s': path %s:%s %s; I/O goes by the other "
				  "paths\n",
				  nctrlr->name, path->trid.traddr, path->trid.trsvcid,
				  connected ? "is back" : "is lost");
			return;
		}
	}
	for (i = 0; i < nctrlr->num_bdevs; i++) {
		if (nctrlr->bdevs[i] == NULL) {
			continue;
		}
		if (connected) {
			bdev_notify_media_changed(&nctrlr->bdevs[i]->bdev);
		} else {
			bdev_notify_offline(&nctrlr->bdevs[i]->bdev);
		}
	}
}

/*
 * A failed first connect that may succeed later: nothing answers (refused,
 * unreachable, timed out, reset), or the subsystem is not there yet (the
 * target is still being configured: Connect Invalid Parameters). Not: a
 * protocol violation, a refused host, another status, a local error.
 */
static bool
connect_error_can_pass(int rc)
{
	switch (rc) {
	case -ECONNREFUSED:
	case -ETIMEDOUT:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -EHOSTDOWN:
	case -ENETDOWN:
	case -ECONNRESET:
	case -ECONNABORTED:
	case -EPIPE:
	case -EAGAIN:
	case -ENODEV:
		return true;
	default:
		return false;
	}
}

static void attach_connected(void *cb_arg, struct nvme_ctrlr *ctrlr, int rc, const char *reason);

static int
connect_attempt(struct nvme_bdev_ctrlr *nctrlr)
{
	return nvme_ctrlr_connect_start(&nctrlr->trid, &nctrlr->copts, attach_connected, nctrlr,
					&nctrlr->connecting);
}

static void schedule_retry(struct nvme_bdev_ctrlr *nctrlr);

/* Record a failed attempt, log it (not every one), and arm the next. */
static void
attempt_failed(struct nvme_bdev_ctrlr *nctrlr, int rc, const char *reason)
{
	nctrlr->failed_attempts++;
	snprintf(nctrlr->last_error, sizeof(nctrlr->last_error), "%s",
		 reason != NULL ? reason : strerror(-rc));
	if (nctrlr->failed_attempts == 1 || nctrlr->failed_attempts % RETRY_LOG_EVERY == 0) {
		WARNLOG("nvme controller '%s': connect attempt %" PRIu64 " failed (%s); "
			"retrying every %u..%u ms until it connects or is detached%s\n",
			nctrlr->name, nctrlr->failed_attempts, nctrlr->last_error,
			nctrlr->copts.reconnect_delay_min_ms, nctrlr->copts.reconnect_delay_max_ms,
			nctrlr->failed_attempts == 1 ? " (failures logged every 50 attempts)" : "");
	}
	schedule_retry(nctrlr);
}

static int
retry_poll(void *ctx)
{
	struct nvme_bdev_ctrlr *nctrlr = ctx;
	int rc;

	poller_unregister(&nctrlr->retry_poller);
	rc = connect_attempt(nctrlr);
	if (rc != 0) {
		/* Only a local failure (memory) gets here: the checks passed once. */
		attempt_failed(nctrlr, rc, strerror(-rc));
	}
	return POLLER_BUSY;
}

static void
schedule_retry(struct nvme_bdev_ctrlr *nctrlr)
{
	uint32_t delay = nctrlr->retry_delay_ms;

	nctrlr->retry_delay_ms = GGA_MIN(delay * 2, nctrlr->copts.reconnect_delay_max_ms);
	nctrlr->retry_poller = poller_register(retry_poll, nctrlr, 1000ull * delay,
					       "nvme_attach_retry");
	if (nctrlr->retry_poller == NULL) {
		ERRLOG("nvme controller '%s': cannot schedule a connect attempt; detach it and "
		       "attach it again\n",
		       nctrlr->name);
	}
}

static void
attach_connected(void *cb_arg, struct nvme_ctrlr *ctrlr, int rc, const char *reason)
{
	struct nvme_bdev_ctrlr *nctrlr = cb_arg;
	bdev_nvme_attach_cb cb = nctrlr->attach_cb;
	void *cb_arg2 = nctrlr->attach_cb_arg;
	const char **names;
	uint32_t i, n;

	if (nctrlr->primary != NULL && nctrlr->primary != nctrlr) {
		nbc_other_path_connected(nctrlr, ctrlr, rc, reason);
		return;
	}
	nctrlr->connecting = NULL;
	if (rc != 0) {
		/*
		 * Retrying: the first failure must be one that can pass (else the
		 * call fails as without the option); once the call has answered,
		 * every failure is retried, as a lost controller's reconnects are:
		 * the controller is configured, and only a detach removes it.
		 */
		if (nctrlr->retry_first_connect && (cb == NULL || connect_error_can_pass(rc))) {
			attempt_failed(nctrlr, rc, reason);
			if (cb != NULL) {
				/* Attached, without bdevs yet: they appear once it connects. */
				nctrlr->attach_cb = NULL;
				cb(cb_arg2, 0, NULL, NULL, 0);
			}
			return;
		}
		TAILQ_REMOVE(&g_ctrlrs, nctrlr, link);
		nbc_free(nctrlr);
		cb(cb_arg2, rc, reason, NULL, 0);
		return;
	}
	if (nctrlr->failed_attempts > 0) {
		NOTICELOG("nvme controller '%s': connected after %" PRIu64 " failed attempt(s)\n",
			  nctrlr->name, nctrlr->failed_attempts);
	}
	nctrlr->ctrlr = ctrlr;
	n = nvme_ctrlr_get_num_ns(ctrlr);
	if (n == 0) {
		/*
		 * Nothing to serve (no namespace, or none of a usable format or
		 * size): a controller without bdevs would never be detached.
		 */
		rc = -ENODEV;
		snprintf(nctrlr->attach_err, sizeof(nctrlr->attach_err),
			 "the controller has no usable namespace");
		goto out_teardown;
	}
	nctrlr->bdevs = calloc(GGA_MAX(n, 1u), sizeof(*nctrlr->bdevs));
	names = calloc(GGA_MAX(n, 1u), sizeof(*names));
	if (nctrlr->bdevs == NULL || names == NULL) {
		free(names);
		rc = -ENOMEM;
		snprintf(nctrlr->attach_err, sizeof(nctrlr->attach_err), "out of memory");
		goto out_teardown;
	}
	nctrlr->num_bdevs = n;
	/* The first path, itself: set up before any bdev can take I/O. */
	{
		struct nvme_ns **ns = calloc(n, sizeof(*ns));

		if (ns == NULL) {
			free(names);
			rc = -ENOMEM;
			snprintf(nctrlr->attach_err, sizeof(nctrlr->attach_err), "out of memory");
			goto out_teardown;
		}
		for (i = 0; i < n; i++) {
			ns[i] = nvme_ctrlr_get_ns_by_index(ctrlr, i);
		}
		rc = nbc_path_setup(nctrlr, nctrlr, ns);
		free(ns);
		if (rc != 0) {
			free(names);
			snprintf(nctrlr->attach_err, sizeof(nctrlr->attach_err), "out of memory");
			goto out_teardown;
		}
	}
	nctrlr->paths[0] = nctrlr;
	nctrlr->num_paths = 1;
	io_device_register(nctrlr, nbc_channel_create, nbc_channel_destroy,
			   sizeof(struct nvme_bdev_channel), nctrlr->name);
	nctrlr->io_device_registered = true;
	for (i = 0; i < n; i++) {
		rc = create_bdev(nctrlr, i, nvme_ctrlr_get_ns_by_index(ctrlr, i));
		if (rc != 0) {
			free(names);
			goto out_teardown;
		}
		names[i] = nctrlr->bdevs[i]->bdev.name;
	}
	nctrlr->state = NBC_ATTACHED;
	nctrlr->attach_cb = NULL;
	nvme_ctrlr_set_reconnect_cb(ctrlr, nbc_reconnected, nctrlr);
	NOTICELOG("nvme controller '%s' attached: %s at %s:%s, %u bdev(s)\n", nctrlr->name,
		  nctrlr->trid.subnqn, nctrlr->trid.traddr, nctrlr->trid.trsvcid, n);
	if (cb != NULL) {
		cb(cb_arg2, 0, NULL, names, n);
	}
	free(names);
	return;

out_teardown:
	/* Nothing may stay: remove what was registered, then report (ctrlr_detached). */
	ERRLOG("nvme controller '%s': %s\n", nctrlr->name, nctrlr->attach_err);
	nctrlr->attach_rc = rc;
	nctrlr_teardown(nctrlr);
}

int
bdev_nvme_attach_controller(const struct bdev_nvme_attach_opts *opts, bdev_nvme_attach_cb cb,
			    void *cb_arg)
{
	struct nvme_bdev_ctrlr *nctrlr, *primary;
	struct nvme_ctrlr_opts copts;
	int rc;

	if (opts->name == NULL || opts->name[0] == '\0' ||
	    strlen(opts->name) > NVME_BDEV_NAME_MAX) {
		return -EINVAL;
	}
	if (opts->hostnqn != NULL && strlen(opts->hostnqn) > NVME_NQN_MAX_LEN) {
		return -EINVAL;
	}
	primary = nctrlr_by_name(opts->name);
	if (primary != NULL) {
		rc = nbc_other_path_check(primary, opts);
		if (rc != 0) {
			return rc;
		}
	}
	nvme_ctrlr_opts_init(&copts);
	copts.header_digest = opts->hdgst;
	copts.data_digest = opts->ddgst;
	if (opts->hostnqn != NULL) {
		snprintf(copts.hostnqn, sizeof(copts.hostnqn), "%s", opts->hostnqn);
	}
	if (opts->timeout_ms != 0) {
		copts.command_timeout_ms = opts->timeout_ms;
	}
	if (opts->keep_alive_timeout_ms != 0) {
		copts.keep_alive_timeout_ms = opts->keep_alive_timeout_ms;
	}
	/* Retrying: attempt_failed() logs the failures, not every one of them. */
	copts.quiet_connect_failure = opts->retry_first_connect;
	copts.dhchap_key = opts->dhchap_key;
	copts.dhchap_ctrlr_key = opts->dhchap_ctrlr_key;
	copts.dhchap_digests = g_dhchap_digests;
	copts.dhchap_dhgroups = g_dhchap_dhgroups;
	copts.tls_psk = opts->psk;
	if (primary != NULL) {
		/* One host: every path has the first one's host identifier. */
		memcpy(copts.hostid, nvme_ctrlr_get_opts(primary->ctrlr)->hostid,
		       sizeof(copts.hostid));
	}

	nctrlr = calloc(1, sizeof(*nctrlr));
	if (nctrlr == NULL) {
		return -ENOMEM;
	}
	nctrlr->name = strdup(opts->name);
	nctrlr->hostnqn = opts->hostnqn != NULL ? strdup(opts->hostnqn) : NULL;
	nctrlr->dhchap_key = opts->dhchap_key_name != NULL ? strdup(opts->dhchap_key_name) : NULL;
	nctrlr->dhchap_ctrlr_key = opts->dhchap_ctrlr_key_name != NULL ?
					   strdup(opts->dhchap_ctrlr_key_name) :
					   NULL;
	nctrlr->psk = opts->psk_name != NULL ? strdup(opts->psk_name) : NULL;
	if (nctrlr->name == NULL || (opts->hostnqn != NULL && nctrlr->hostnqn == NULL) ||
	    (opts->dhchap_key_name != NULL && nctrlr->dhchap_key == NULL) ||
	    (opts->psk_name != NULL && nctrlr->psk == NULL) ||
	    (opts->dhchap_ctrlr_key_name != NULL && nctrlr->dhchap_ctrlr_key == NULL)) {
		explicit_bzero(&copts, sizeof(copts));
		nbc_free(nctrlr);
		return -ENOMEM;
	}
	nctrlr->trid = opts->trid;
	nctrlr->hdgst = opts->hdgst;
	nctrlr->ddgst = opts->ddgst;
	nctrlr->timeout_ms = opts->timeout_ms;
	nctrlr->keep_alive_timeout_ms = opts->keep_alive_timeout_ms;
	nctrlr->retry_first_connect = opts->retry_first_connect;
	nctrlr->state = NBC_ATTACHING;
	nctrlr->attach_cb = cb;
	nctrlr->attach_cb_arg = cb_arg;
	nctrlr->copts = copts;
	explicit_bzero(&copts, sizeof(copts));
	nctrlr->retry_delay_ms = GGA_MAX(copts.reconnect_delay_min_ms, 1u);
	nctrlr->multipath = primary != NULL ? primary->multipath : opts->multipath;
	nctrlr->hold_ms = opts->hold_ms != 0 ? opts->hold_ms : HOLD_DEFAULT_MS;
	nctrlr->primary = primary;

	rc = connect_attempt(nctrlr);
	if (rc != 0) {
		nbc_free(nctrlr);
		return rc;
	}
	if (primary != NULL) {
		/* Another path of the name: the primary knows it until it connects. */
		primary->pending[primary->num_pending++] = nctrlr;
		return 0;
	}
	/* Listed from now on, so that the name stays reserved while connecting. */
	TAILQ_INSERT_TAIL(&g_ctrlrs, nctrlr, link);
	return 0;
}

static size_t
nvme_get_ctx_size(void)
{
	return sizeof(struct nvme_bdev_io);
}

/*
 * Shutdown, once every bdev is gone: what is left is a controller still in
 * its first connect (retrying, or an attach not answered yet). Give each up:
 * the connect in flight is closed, and the messages that finish it run before
 * the bdev layer's own teardown completes, so nothing is left at exit and
 * nothing waits for a target that is down.
 */
static void
nvme_module_fini(void)
{
	struct nvme_bdev_ctrlr *nctrlr;

	/* connect_give_up() removes from the list later, from a message. */
	TAILQ_FOREACH(nctrlr, &g_ctrlrs, link) {
		if (nctrlr->state == NBC_ATTACHING) {
			connect_give_up(nctrlr);
		}
	}
}

static struct bdev_module nvme_module = {
	.name = "nvme",
	.module_fini = nvme_module_fini,
	.get_ctx_size = nvme_get_ctx_size,
	.config_json = nvme_module_config_json,
};

void
bdev_nvme_module_register(void)
{
	bdev_module_register(&nvme_module);
	bdev_nvme_rpc_register();
}
