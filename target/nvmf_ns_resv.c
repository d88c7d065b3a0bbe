/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reservation commands of a namespace, carried out around the pure
 * module nvmf_resv.c: the commands run on the app thread, one at a time per
 * namespace; a change is persisted first (when persist through power loss
 * is on), then made the namespace's state, then installed on every thread
 * by a channel walk that also waits, on each thread, for the commands
 * admitted under the old state. The command completes after the walk: from
 * then on no command the new state forbids runs, and none admitted before
 * is still in flight. That is what lets a preempt fence a host at this
 * namespace: a write of the preempted host either finished before the
 * preempt completed or fails with Reservation Conflict.
 *
 * Preempt and Abort therefore waits for the preempted hosts' commands
 * instead of aborting them; either way none is left when it completes.
 *
 * The persist file is JSON (jansson), written to a temporary file, synced
 * and renamed over the old one, so a crash leaves the old state or the new.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gga/log.h"
#include "gga/util.h"
#include "gga/uuid.h"

#include "nvmf_internal.h"

#define RESV_STATUS(sc) STATUS_DNR(NVME_SCT_GENERIC, sc)
#define INVALID_NS      RESV_STATUS(NVME_SC_INVALID_NAMESPACE_OR_FORMAT)
#define PTPL_FORMAT     "gga-nvmf-reservations-1"

/* Command dword 10 of Register, Acquire and Release. */
#define RESV_ACTION(cdw10) ((cdw10)&0x7u)
#define RESV_IEKEY(cdw10)  (((cdw10) >> 3) & 1u)
#define RESV_RTYPE(cdw10)  (((cdw10) >> 8) & 0xffu)
#define RESV_CPTPL(cdw10)  ((cdw10) >> 30)

/*
 * The persist file.
 */

static json_t *
resv_to_json(const struct nvmf_resv *r)
{
	char id[UUID_STR_LEN], key[19];
	json_t *regs = json_array(), *o;
	uint32_t i;

	for (i = 0; i < r->nregs; i++) {
		uuid_format(r->regs[i].hostid, id);
		/* Hex: a key is 64 bits, more than a JSON integer of jansson holds. */
		snprintf(key, sizeof(key), "0x%016" PRIx64, r->regs[i].key);
		json_array_append_new(regs, json_pack("{s:s, s:s, s:i}", "hostid", id, "key", key,
						      "cntlid", (int)r->regs[i].cntlid));
	}
	uuid_format(r->holder, id);
	o = json_pack("{s:s, s:b, s:I, s:i, s:s, s:o}", "format", PTPL_FORMAT, "ptpl", r->ptpl,
		      "generation", (json_int_t)r->generation, "rtype", (int)r->type, "holder", id,
		      "registrants", regs);
	return o;
}

static int
resv_from_json(json_t *o, struct nvmf_resv *r, char *why, size_t why_len)
{
	const char *format = NULL, *holder = NULL, *id, *key;
	json_t *regs = NULL, *e;
	json_int_t gen = 0, cntlid;
	int ptpl = 0, rtype = 0;
	char *end;
	size_t i;

	nvmf_resv_init(r);
	if (json_unpack(o, "{s:s, s:b, s:I, s:i, s:s, s:o}", "format", &format, "ptpl", &ptpl,
			"generation", &gen, "rtype", &rtype, "holder", &holder, "registrants",
			&regs) != 0 ||
	    strcmp(format, PTPL_FORMAT) != 0) {
		snprintf(why, why_len, "not a reservations file of gga (format %s)", PTPL_FORMAT);
		return -EINVAL;
	}
	if (!ptpl) {
		/* Persistence was turned off: nothing survives. */
		return 0;
	}
	if (rtype < NVMF_RESV_NONE || rtype > NVMF_RESV_EXCLUSIVE_ACCESS_ALL_REGS || gen < 0 ||
	    gen > UINT32_MAX || !json_is_array(regs) ||
	    json_array_size(regs) > NVMF_RESV_MAX_REGS || uuid_parse(holder, r->holder) != 0) {
		snprintf(why, why_len, "bad reservation, generation, holder or registrants");
		return -EINVAL;
	}
	r->ptpl = true;
	r->generation = (uint32_t)gen;
	r->type = (uint8_t)rtype;
	json_array_foreach(regs, i, e)
	{
		struct nvmf_resv_reg *reg = &r->regs[r->nregs];

		if (json_unpack(e, "{s:s, s:s, s:I}", "hostid", &id, "key", &key, "cntlid",
				&cntlid) != 0 ||
		    uuid_parse(id, reg->hostid) != 0 || cntlid < 0 || cntlid > UINT16_MAX) {
			snprintf(why, why_len, "registrant %zu: bad hostid, key or cntlid", i);
			return -EINVAL;
		}
		errno = 0;
		reg->key = strtoull(key, &end, 16);
		if (errno != 0 || *end != '\0' || strncmp(key, "0x", 2) != 0) {
			snprintf(why, why_len, "registrant %zu: bad key %s", i, key);
			return -EINVAL;
		}
		reg->cntlid = (uint16_t)cntlid;
		r->nregs++;
	}
	/* The types with one holder: it is a registrant (the others have none). */
	if (r->type != NVMF_RESV_NONE && r->type < NVMF_RESV_WRITE_EXCLUSIVE_ALL_REGS &&
	    !nvmf_resv_is_registered(r, r->holder)) {
		snprintf(why, why_len, "the holder is not a registrant");
		return -EINVAL;
	}
	return 0;
}

/* Write r to path: a temporary file, synced, renamed over path, the directory synced. */
static int
resv_persist(const char *path, const struct nvmf_resv *r)
{
	json_t *o = resv_to_json(r);
	char *text = o != NULL ? json_dumps(o, JSON_INDENT(2)) : NULL;
	char *tmp = NULL, *dir_copy = NULL;
	size_t len, off = 0;
	ssize_t n;
	int fd = -1, dfd, rc = 0;

	json_decref(o);
	if (text == NULL || asprintf(&tmp, "%s.tmp", path) < 0) {
		tmp = NULL;
		rc = -ENOMEM;
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	len = strlen(text);
	while (off < len) {
		n = write(fd, text + off, len - off);
		if (n < 0) {
			if (errno == EINTR) {
				continue;
			}
			rc = -errno;
			goto out;
		}
		off += (size_t)n;
	}
	if (fsync(fd) != 0) {
		rc = -errno;
		goto out;
	}
	close(fd);
	fd = -1;
	if (rename(tmp, path) != 0) {
		rc = -errno;
		goto out;
	}
	dir_copy = strdup(path);
	if (dir_copy != NULL) {
		dfd = open(dirname(dir_copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			(void)fsync(dfd);
			close(dfd);
		}
	}
out:
	if (fd >= 0) {
		close(fd);
	}
	if (rc != 0 && tmp != NULL) {
		unlink(tmp);
	}
	free(dir_copy);
	free(tmp);
	free(text);
	return rc;
}

int
nvmf_ns_resv_init(struct nvmf_ns *ns, const char *ptpl_file, char *why, size_t why_len)
{
	json_error_t err;
	json_t *o;
	int rc;

	nvmf_resv_init(&ns->resv);
	TAILQ_INIT(&ns->resv_queue);
	if (ptpl_file != NULL) {
		if (access(ptpl_file, F_OK) == 0) {
			o = json_load_file(ptpl_file, 0, &err);
			if (o == NULL) {
				snprintf(why, why_len, "%s: %s", ptpl_file, err.text);
				return -EINVAL;
			}
			rc = resv_from_json(o, &ns->resv, why, why_len);
			json_decref(o);
			if (rc != 0) {
				return rc;
			}
		}
		ns->ptpl_file = strdup(ptpl_file);
		if (ns->ptpl_file == NULL) {
			snprintf(why, why_len, "out of memory");
			return -ENOMEM;
		}
	}
	pthread_mutex_init(&ns->resv_lock, NULL);
	return 0;
}

void
nvmf_ns_resv_fini(struct nvmf_ns *ns)
{
	pthread_mutex_destroy(&ns->resv_lock);
	free(ns->ptpl_file);
	ns->ptpl_file = NULL;
}

uint8_t
nvmf_ns_resv_rescap(const struct nvmf_ns *ns)
{
	/* Bit 0 persist through power loss, bits 1..6 the six types, bit 7 IEKEY as of NVMe 1.3. */
	return (uint8_t)(0xfe | (ns->ptpl_file != NULL ? 1 : 0));
}

uint16_t
nvmf_ns_resv_get_ptpl(const struct nvmf_ns *ns, uint32_t *value)
{
	*value = ns->resv.ptpl ? 1 : 0;
	return 0;
}

uint16_t
nvmf_ns_resv_set_ptpl(struct nvmf_ns *ns, bool ptpl)
{
	struct nvmf_resv next = ns->resv;

	if (ns->ptpl_file == NULL) {
		return ptpl ? RESV_STATUS(NVME_SC_INVALID_FIELD) : 0;
	}
	if (next.ptpl == ptpl) {
		return 0;
	}
	next.ptpl = ptpl;
	if (resv_persist(ns->ptpl_file, &next) != 0) {
		ERRLOG("nvmf: namespace %u: cannot write %s\n", ns->nsid, ns->ptpl_file);
		return RESV_STATUS(NVME_SC_INTERNAL_DEVICE_ERROR);
	}
	/* Access is unchanged: no walk, only the flag. */
	pthread_mutex_lock(&ns->resv_lock);
	ns->resv.ptpl = ptpl;
	pthread_mutex_unlock(&ns->resv_lock);
	return 0;
}

/*
 * I/O threads.
 */

void
nvmf_ns_resv_channel_init(struct nvmf_ns *ns, struct nvmf_ns_channel *nsch)
{
	pthread_mutex_lock(&ns->resv_lock);
	nsch->resv = ns->resv;
	pthread_mutex_unlock(&ns->resv_lock);
}

uint16_t
nvmf_ns_resv_check(const struct nvmf_ns_channel *nsch, const struct nvmf_request *req)
{
	bool write;

	if (nsch->resv.type == NVMF_RESV_NONE) {
		return 0;
	}
	switch (req->cmd.opc) {
	case NVME_OPC_READ:
	case NVME_OPC_COMPARE:
	case NVME_OPC_VERIFY:
		write = false;
		break;
	case NVME_OPC_WRITE:
	case NVME_OPC_WRITE_ZEROES:
	case NVME_OPC_WRITE_UNCORRECTABLE:
	case NVME_OPC_DATASET_MANAGEMENT:
	case NVME_OPC_FLUSH:
		write = true;
		break;
	default:
		/* Not a command of the namespace's data: its own checks answer it. */
		return 0;
	}
	if (nvmf_resv_check(&nsch->resv, req->qpair->ctrlr->hostid, write) != NVME_SC_SUCCESS) {
		return RESV_STATUS(NVME_SC_RESERVATION_CONFLICT);
	}
	return 0;
}

void
nvmf_ns_resv_io_done(struct nvmf_ns_channel *nsch, uint8_t epoch)
{
	struct io_channel_iter *i;

	if (--nsch->resv_inflight[epoch] == 0 && epoch != nsch->resv_epoch &&
	    nsch->resv_iter != NULL) {
		i = nsch->resv_iter;
		nsch->resv_iter = NULL;
		io_channel_iter_continue(i, 0);
	}
}

/* The walk on one thread: the new state, a new epoch, then wait for the old one. */
static void
resv_install_fn(struct io_channel_iter *i)
{
	struct nvmf_ns *ns = io_channel_iter_get_io_device(i);
	struct nvmf_ns_channel *nsch = io_channel_get_ctx(io_channel_iter_get_channel(i));
	uint8_t old = nsch->resv_epoch;

	nvmf_ns_resv_channel_init(ns, nsch);
	nsch->resv_epoch = old ^ 1;
	if (nsch->resv_inflight[old] == 0) {
		io_channel_iter_continue(i, 0);
		return;
	}
	nsch->resv_iter = i;
}

/*
 * The app thread.
 */

static void resv_run(struct nvmf_ns *ns, struct nvmf_request *req);

static void
resv_complete(struct nvmf_request *req, uint16_t status)
{
	nvmf_request_set_status(req, status);
	nvmf_request_complete(req);
}

/* The change's walk ended: the command completes; the next one runs. */
static void
resv_install_done(struct io_channel_iter *i, int status)
{
	struct nvmf_ns *ns = io_channel_iter_get_io_device(i);
	struct nvmf_request *req = io_channel_iter_get_ctx(i);
	void (*release)(struct nvmf_ns * ns);

	resv_complete(req, 0);
	ns->resv_busy = false;
	while ((req = TAILQ_FIRST(&ns->resv_queue)) != NULL && !ns->resv_busy) {
		TAILQ_REMOVE(&ns->resv_queue, req, resv_link);
		resv_run(ns, req);
	}
	if (!ns->resv_busy && ns->resv_then_release != NULL) {
		release = ns->resv_then_release;
		ns->resv_then_release = NULL;
		nvmf_ns_channels_release(ns, release);
	}
}

int
nvmf_ns_resv_defer_release(struct nvmf_ns *ns, void (*cb)(struct nvmf_ns *ns))
{
	if (!ns->resv_busy) {
		return 0;
	}
	ns->resv_then_release = cb;
	return 1;
}

static uint16_t
resv_report(struct nvmf_ns *ns, struct nvmf_request *req)
{
	size_t len = ((size_t)req->cmd.cdw10 + 1) * 4;
	bool eds = req->cmd.cdw11 & 1u;
	uint8_t *buf;
	int sc;

	if (req->xfer != NVME_XFER_CTRLR_TO_HOST) {
		return RESV_STATUS(NVME_SC_INVALID_FIELD);
	}
	len = GGA_MIN(len, (size_t)req->length);
	buf = calloc(1, len > 0 ? len : 1);
	if (buf == NULL) {
		return nvmf_errno_to_status(-ENOMEM);
	}
	sc = nvmf_resv_report(&ns->resv, eds, buf, len);
	if (sc == NVME_SC_SUCCESS) {
		nvmf_request_copy_to(req, buf, len);
	}
	free(buf);
	return sc == NVME_SC_SUCCESS ? 0 : RESV_STATUS(sc);
}

/* Register, Acquire or Release on a copy of the state; *changed when it differs. */
static uint16_t
resv_decide(struct nvmf_ns *ns, struct nvmf_request *req, struct nvmf_resv *next,
	    struct nvmf_resv_result *res)
{
	const struct nvmf_ctrlr *ctrlr = req->qpair->ctrlr;
	uint32_t cdw10 = req->cmd.cdw10;
	uint64_t keys[2] = { 0, 0 };
	size_t need = req->cmd.opc == NVME_OPC_RESERVATION_RELEASE ? 8 : 16;
	int sc;

	if (req->xfer != NVME_XFER_HOST_TO_CTRLR || req->length < need) {
		return RESV_STATUS(NVME_SC_DATA_SGL_LENGTH_INVALID);
	}
	nvmf_request_copy_from(req, keys, need);
	*next = ns->resv;
	switch (req->cmd.opc) {
	case NVME_OPC_RESERVATION_REGISTER:
		/* Persist through power loss needs somewhere to persist to. */
		if (RESV_CPTPL(cdw10) == NVMF_RESV_PTPL_SET && ns->ptpl_file == NULL) {
			return RESV_STATUS(NVME_SC_INVALID_FIELD);
		}
		sc = nvmf_resv_register(next, ctrlr->hostid, ctrlr->cntlid, RESV_ACTION(cdw10),
					RESV_IEKEY(cdw10), RESV_CPTPL(cdw10), keys[0], keys[1],
					res);
		break;
	case NVME_OPC_RESERVATION_ACQUIRE:
		sc = nvmf_resv_acquire(next, ctrlr->hostid, RESV_ACTION(cdw10), RESV_IEKEY(cdw10),
				       RESV_RTYPE(cdw10), keys[0], keys[1], res);
		break;
	default:
		sc = nvmf_resv_release(next, ctrlr->hostid, RESV_ACTION(cdw10), RESV_IEKEY(cdw10),
				       RESV_RTYPE(cdw10), keys[0], res);
		break;
	}
	return sc == NVME_SC_SUCCESS ? 0 : RESV_STATUS(sc);
}

/* Tell the controllers of one host (log page 80h and its event). */
static void
notify_host(struct nvmf_ns *ns, const uint8_t *hostid, uint8_t type)
{
	struct nvmf_ctrlr *ctrlr;

	TAILQ_FOREACH(ctrlr, &ns->subsys->ctrlrs, link) {
		if (ctrlr->state == NVMF_CTRLR_LIVE &&
		    memcmp(ctrlr->hostid, hostid, NVMF_RESV_HOSTID_LEN) == 0) {
			nvmf_ctrlr_resv_notify(ctrlr, ns->nsid, type);
		}
	}
}

/*
 * The notifications of a change, to hosts other than the one that made it:
 * a preempt tells the hosts it unregistered (Registration Preempted); a
 * release of a registrants-only or all-registrants reservation tells the
 * other registrants (Reservation Released); a clear tells every other
 * former registrant (Reservation Preempted).
 */
static void
resv_notify(struct nvmf_ns *ns, const struct nvmf_request *req, const struct nvmf_resv *old,
	    const struct nvmf_resv_result *res)
{
	const uint8_t *self = req->qpair->ctrlr->hostid;
	uint32_t action = RESV_ACTION(req->cmd.cdw10), i;
	const struct nvmf_resv *now = &ns->resv;

	if (req->cmd.opc == NVME_OPC_RESERVATION_ACQUIRE && action != NVMF_RESV_ACQUIRE) {
		for (i = 0; i < res->npreempted; i++) {
			notify_host(ns, res->preempted[i], NVME_RESV_NOTIF_REGISTRATION_PREEMPTED);
		}
		return;
	}
	if (req->cmd.opc != NVME_OPC_RESERVATION_RELEASE) {
		return;
	}
	if (action == NVMF_RESV_CLEAR) {
		for (i = 0; i < old->nregs; i++) {
			if (memcmp(old->regs[i].hostid, self, NVMF_RESV_HOSTID_LEN) != 0) {
				notify_host(ns, old->regs[i].hostid,
					    NVME_RESV_NOTIF_RESERVATION_PREEMPTED);
			}
		}
	} else if (old->type >= NVMF_RESV_WRITE_EXCLUSIVE_REG_ONLY && now->type == NVMF_RESV_NONE) {
		for (i = 0; i < now->nregs; i++) {
			if (memcmp(now->regs[i].hostid, self, NVMF_RESV_HOSTID_LEN) != 0) {
				notify_host(ns, now->regs[i].hostid,
					    NVME_RESV_NOTIF_RESERVATION_RELEASED);
			}
		}
	}
}

static void
resv_run(struct nvmf_ns *ns, struct nvmf_request *req)
{
	struct nvmf_resv_result res;
	struct nvmf_resv next, old;
	char id[UUID_STR_LEN];
	uint16_t status;
	uint32_t k;
	int rc;

	if (ns->removing) {
		resv_complete(req, INVALID_NS);
		return;
	}
	if (req->cmd.opc == NVME_OPC_RESERVATION_REPORT) {
		resv_complete(req, resv_report(ns, req));
		return;
	}
	status = resv_decide(ns, req, &next, &res);
	if (status != 0 || !res.changed) {
		resv_complete(req, status);
		return;
	}
	/* Persisted before it takes effect: what a host was told survives a restart. */
	if (ns->ptpl_file != NULL && (next.ptpl || ns->resv.ptpl)) {
		rc = resv_persist(ns->ptpl_file, &next);
		if (rc != 0) {
			ERRLOG("nvmf: subsystem %s namespace %u: cannot persist reservations to %s: "
			       "%s\n",
			       ns->subsys->nqn, ns->nsid, ns->ptpl_file, strerror(-rc));
			resv_complete(req, RESV_STATUS(NVME_SC_INTERNAL_DEVICE_ERROR));
			return;
		}
	}
	for (k = 0; k < res.npreempted; k++) {
		uuid_format(res.preempted[k], id);
		NOTICELOG("nvmf: subsystem %s namespace %u: host %s preempted by controller %u\n",
			  ns->subsys->nqn, ns->nsid, id, req->qpair->ctrlr->cntlid);
	}
	old = ns->resv;
	pthread_mutex_lock(&ns->resv_lock);
	ns->resv = next;
	pthread_mutex_unlock(&ns->resv_lock);
	resv_notify(ns, req, &old, &res);
	ns->resv_busy = true;
	io_device_for_each_channel(ns, resv_install_fn, req, resv_install_done);
}

static void
resv_exec_msg(void *arg)
{
	struct nvmf_request *req = arg;
	struct nvmf_ns *ns = nvmf_subsystem_get_ns(req->qpair->ctrlr->subsys, req->cmd.nsid);

	uint16_t status;

	if (ns == NULL) {
		resv_complete(req, INVALID_NS);
		return;
	}
	/* A path that may not reach the namespace may not change its reservations. */
	status = nvmf_ctrlr_ana_check(req->qpair->ctrlr, ns);
	if (status != 0) {
		resv_complete(req, status);
		return;
	}
	if (ns->resv_busy) {
		TAILQ_INSERT_TAIL(&ns->resv_queue, req, resv_link);
		return;
	}
	resv_run(ns, req);
}

void
nvmf_ns_resv_exec(struct nvmf_request *req)
{
	if (thread_send_msg(thread_get_app(), resv_exec_msg, req) != 0) {
		resv_complete(req, nvmf_errno_to_status(-ENOMEM));
	}
}
