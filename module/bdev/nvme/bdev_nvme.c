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
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/bdev_module.h"
#include "gga/log.h"
#include "gga/util.h"

#include "bdev_nvme.h"

#define NVME_BDEV_NAME_MAX 64
/* A first connect that keeps failing is logged at its first failure, then every this many. */
#define RETRY_LOG_EVERY    50

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

struct nvme_bdev_channel {
	struct nvme_qpair *qpair;
};

/* Per-I/O context in bdev_io->driver_ctx. */
struct nvme_bdev_io {
	struct nvme_qpair *qpair;
	uint64_t lba;      /* next block to send */
	uint64_t left;     /* blocks not sent yet */
	size_t iov_offset; /* buffer offset of the next block */
	uint32_t chunk;    /* blocks of the command in flight */
};

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

static void
cmd_done(void *cb_arg, const struct nvme_cpl *cpl)
{
	struct bdev_io *io = cb_arg;
	struct nvme_bdev_io *nio = (struct nvme_bdev_io *)io->driver_ctx;
	struct nvme_bdev *nbdev = io->bdev->ctxt;
	int rc;

	if (unlikely(!NVME_STATUS_IS_SUCCESS(cpl->status))) {
		bdev_io_complete_nvme_status(io, NVME_STATUS_GET_SCT(cpl->status),
					     NVME_STATUS_GET_SC(cpl->status));
		return;
	}
	nio->lba += nio->chunk;
	nio->left -= nio->chunk;
	nio->iov_offset += (size_t)nio->chunk * nvme_ns_get_info(nbdev->ns)->xfer_block_size;
	if (likely(nio->left == 0)) {
		bdev_io_complete(io, BDEV_IO_STATUS_SUCCESS);
		return;
	}
	rc = submit_chunk(io);
	if (rc != 0) {
		/* Part of the I/O is done: retrying from the start is not what NOMEM means here. */
		bdev_io_complete_nvme_status(io, NVME_SCT_PATH, NVME_SC_HOST_PATH_ERROR);
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
		return nvme_ns_cmd_readv(qp, nbdev->ns, nio->lba, nio->chunk, io->u.iovs,
					 io->u.iovcnt, nio->iov_offset, cmd_done, io);
	case BDEV_IO_TYPE_WRITE:
		nio->chunk = (uint32_t)GGA_MIN(nio->left, (uint64_t)nbdev->max_rw_blocks);
		return nvme_ns_cmd_writev(qp, nbdev->ns, nio->lba, nio->chunk, io->u.iovs,
					  io->u.iovcnt, nio->iov_offset, cmd_done, io);
	case BDEV_IO_TYPE_WRITE_ZEROES:
		nio->chunk = (uint32_t)GGA_MIN(nio->left, (uint64_t)NVME_RW_NLB_MASK + 1);
		return nvme_ns_cmd_write_zeroes(qp, nbdev->ns, nio->lba, nio->chunk, cmd_done, io);
	case BDEV_IO_TYPE_UNMAP:
		nio->chunk = (uint32_t)GGA_MIN(nio->left, (uint64_t)UINT32_MAX);
		return nvme_ns_cmd_deallocate(qp, nbdev->ns, nio->lba, nio->chunk, cmd_done, io);
	case BDEV_IO_TYPE_FLUSH:
		/* One Flush covers the namespace. */
		nio->chunk = (uint32_t)nio->left;
		return nvme_ns_cmd_flush(qp, nbdev->ns, cmd_done, io);
	default:
		return -ENOTSUP;
	}
}

static void
nvme_bdev_submit_request(struct io_channel *ch, struct bdev_io *io)
{
	struct nvme_bdev_channel *nch = io_channel_get_ctx(ch);
	struct nvme_bdev_io *nio = (struct nvme_bdev_io *)io->driver_ctx;
	int rc;

	if (unlikely(io->type == BDEV_IO_TYPE_RESET)) {
		/*
		 * The controller drops its association: every I/O in flight fails
		 * now rather than at its command timeout, and it reconnects.
		 */
		nvme_ctrlr_request_reset(((struct nvme_bdev *)io->bdev->ctxt)->nctrlr->ctrlr,
					 "reset of its bdev");
		bdev_io_complete(io, BDEV_IO_STATUS_SUCCESS);
		return;
	}
	nio->qpair = nch->qpair;
	nio->lba = io->u.offset_blocks;
	nio->left = io->u.num_blocks;
	nio->iov_offset = 0;
	if (io->type == BDEV_IO_TYPE_FLUSH && nio->left == 0) {
		nio->left = 1;
	}
	rc = submit_chunk(io);
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

static int
nvme_channel_create(void *io_device, void *ctx_buf)
{
	struct nvme_bdev_ctrlr *nctrlr = io_device;
	struct nvme_bdev_channel *nch = ctx_buf;

	nch->qpair = nvme_ctrlr_alloc_io_qpair(nctrlr->ctrlr);
	if (nch->qpair == NULL) {
		ERRLOG("nvme controller '%s': no I/O queue for thread %s: %s\n", nctrlr->name,
		       thread_get_name(thread_get_current()), strerror(errno));
		return -errno;
	}
	return 0;
}

static void
nvme_channel_destroy(void *io_device, void *ctx_buf)
{
	struct nvme_bdev_channel *nch = ctx_buf;

	nvme_ctrlr_free_io_qpair(nch->qpair);
	nch->qpair = NULL;
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                     */
/* ------------------------------------------------------------------------ */

static json_t *
trid_json(const struct nvme_transport_id *trid)
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
				      "trid", trid_json(&nctrlr->trid), "nsid",
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
			trid_json(&nctrlr->trid), "hostnqn",
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

/* save_config: one attach per controller (module options come before every bdev). */
static void
nvme_module_config_json(json_t *config)
{
	struct nvme_bdev_ctrlr *nctrlr;
	json_t *params;

	TAILQ_FOREACH(nctrlr, &g_ctrlrs, link) {
		/*
		 * A controller still retrying its first connect is configured too: a
		 * restart must keep trying it (the RPC that made it has succeeded).
		 */
		if (nctrlr->state != NBC_ATTACHED &&
		    !(nctrlr->state == NBC_ATTACHING && nctrlr->attach_cb == NULL)) {
			continue;
		}
		params = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:b}", "name", nctrlr->name,
				   "trtype",
				   nctrlr->trid.trtype == NVME_TRANSPORT_TCP ? "tcp" : "rdma",
				   "adrfam", "ipv4", "traddr", nctrlr->trid.traddr, "trsvcid",
				   nctrlr->trid.trsvcid, "subnqn", nctrlr->trid.subnqn, "hdgst",
				   nctrlr->hdgst, "ddgst", nctrlr->ddgst);
		if (params == NULL) {
			ERRLOG("nvme controller '%s': out of memory writing its configuration\n",
			       nctrlr->name);
			continue;
		}
		if (nctrlr->hostnqn != NULL) {
			json_object_set_new(params, "hostnqn", json_string(nctrlr->hostnqn));
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
		json_array_append_new(config,
				      json_pack("{s:s, s:o}", "method",
						"bdev_nvme_attach_controller", "params", params));
	}
}

/* ------------------------------------------------------------------------ */
/* Teardown                                                                 */
/* ------------------------------------------------------------------------ */

static void
nctrlr_free(struct nvme_bdev_ctrlr *nctrlr)
{
	free(nctrlr->bdevs);
	free(nctrlr->hostnqn);
	free(nctrlr->name);
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
	nctrlr_free(nctrlr);
}

static void
io_device_gone(void *io_device)
{
	struct nvme_bdev_ctrlr *nctrlr = io_device;
	int rc;

	rc = nvme_ctrlr_detach(nctrlr->ctrlr, ctrlr_detached, nctrlr);
	if (rc != 0) {
		ERRLOG("nvme controller '%s': detach failed: %s\n", nctrlr->name, strerror(-rc));
		ctrlr_detached(nctrlr);
	}
}

/* Every bdev is gone: drop the channels (queue pairs), then the controller. */
static void
release_ctrlr(struct nvme_bdev_ctrlr *nctrlr)
{
	nctrlr->state = NBC_DETACHING;
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
	nctrlr_free(nctrlr);
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
static void
ctrlr_reconnected(void *cb_arg, struct nvme_ctrlr *ctrlr, bool connected)
{
	struct nvme_bdev_ctrlr *nctrlr = cb_arg;
	uint32_t i;

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
		nctrlr_free(nctrlr);
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
	io_device_register(nctrlr, nvme_channel_create, nvme_channel_destroy,
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
	nvme_ctrlr_set_reconnect_cb(ctrlr, ctrlr_reconnected, nctrlr);
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
	struct nvme_bdev_ctrlr *nctrlr;
	struct nvme_ctrlr_opts copts;
	int rc;

	if (opts->name == NULL || opts->name[0] == '\0' ||
	    strlen(opts->name) > NVME_BDEV_NAME_MAX) {
		return -EINVAL;
	}
	if (opts->hostnqn != NULL && strlen(opts->hostnqn) > NVME_NQN_MAX_LEN) {
		return -EINVAL;
	}
	if (nctrlr_by_name(opts->name) != NULL) {
		return -EEXIST;
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

	nctrlr = calloc(1, sizeof(*nctrlr));
	if (nctrlr == NULL) {
		return -ENOMEM;
	}
	nctrlr->name = strdup(opts->name);
	nctrlr->hostnqn = opts->hostnqn != NULL ? strdup(opts->hostnqn) : NULL;
	if (nctrlr->name == NULL || (opts->hostnqn != NULL && nctrlr->hostnqn == NULL)) {
		nctrlr_free(nctrlr);
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
	nctrlr->retry_delay_ms = GGA_MAX(copts.reconnect_delay_min_ms, 1u);

	rc = connect_attempt(nctrlr);
	if (rc != 0) {
		nctrlr_free(nctrlr);
		return rc;
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
