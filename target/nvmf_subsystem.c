/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVM subsystems: NQN, serial and model, hosts, listeners, namespaces (bdevs)
 * and the discovery log built from them. Everything here runs on the app
 * thread; I/O threads only read namespace slots (see nvmf_io.c).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gga/log.h"
#include "gga/nvme_rdma.h"
#include "gga/util.h"
#include "gga/uuid.h"

#include "gga/nvme_auth.h"

#include "nvmf_internal.h"

/*
 * NQN rules (NVMe Base 1.4, 7.9): at most 223 bytes, either
 * "nqn.2014-08.org.nvmexpress:uuid:" + a UUID, or "nqn.yyyy-mm." + a reverse
 * domain name, optionally followed by ':' and a string of the owner's choice.
 */
bool
nvmf_nqn_is_valid(const char *nqn)
{
	static const char uuid_prefix[] = "nqn.2014-08.org.nvmexpress:uuid:";
	size_t len, i, domain_start, domain_len;
	int month;

	if (nqn == NULL) {
		return false;
	}
	len = strnlen(nqn, NVME_NQN_MAX_LEN + 1);
	if (len > NVME_NQN_MAX_LEN || len < 13) {
		return false;
	}
	for (i = 0; i < len; i++) {
		if ((unsigned char)nqn[i] < 0x20 || nqn[i] == 0x7f) {
			return false;
		}
	}
	if (strncmp(nqn, uuid_prefix, sizeof(uuid_prefix) - 1) == 0) {
		uint8_t uuid[UUID_LEN];

		return uuid_parse(nqn + sizeof(uuid_prefix) - 1, uuid) == 0;
	}
	if (strncmp(nqn, "nqn.", 4) != 0 || !isdigit((unsigned char)nqn[4]) ||
	    !isdigit((unsigned char)nqn[5]) || !isdigit((unsigned char)nqn[6]) ||
	    !isdigit((unsigned char)nqn[7]) || nqn[8] != '-' || !isdigit((unsigned char)nqn[9]) ||
	    !isdigit((unsigned char)nqn[10]) || nqn[11] != '.') {
		return false;
	}
	month = (nqn[9] - '0') * 10 + (nqn[10] - '0');
	if (month < 1 || month > 12) {
		return false;
	}
	domain_start = 12;
	domain_len = strcspn(nqn + domain_start, ":");
	if (domain_len == 0) {
		return false;
	}
	for (i = domain_start; i < domain_start + domain_len; i++) {
		if (!isalnum((unsigned char)nqn[i]) && nqn[i] != '.' && nqn[i] != '-') {
			return false;
		}
	}
	return true;
}

static bool
is_printable_ascii(const char *s)
{
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e) {
			return false;
		}
	}
	return true;
}

struct nvmf_subsystem *
nvmf_subsystem_find(const char *nqn)
{
	struct nvmf_subsystem *subsys;

	TAILQ_FOREACH(subsys, &g_nvmf_tgt.subsystems, link) {
		if (strcmp(subsys->nqn, nqn) == 0) {
			return subsys;
		}
	}
	return NULL;
}

int
nvmf_subsystem_create(const char *nqn, enum nvmf_subtype subtype, uint32_t max_nsid,
		      struct nvmf_subsystem **out)
{
	struct nvmf_subsystem *subsys;
	uint32_t id;

	if (subtype == NVMF_SUBTYPE_NVME &&
	    (!nvmf_nqn_is_valid(nqn) || strcmp(nqn, NVME_DISCOVERY_NQN) == 0)) {
		return -EINVAL;
	}
	if (max_nsid > NVMF_MAX_NAMESPACES) {
		return -ERANGE;
	}
	if (nvmf_subsystem_find(nqn) != NULL) {
		return -EEXIST;
	}
	for (id = 0; id < NVMF_MAX_SUBSYSTEMS && g_nvmf_tgt.by_id[id] != NULL; id++) {
	}
	if (id == NVMF_MAX_SUBSYSTEMS) {
		return -ENOSPC;
	}
	subsys = calloc(1, sizeof(*subsys));
	if (subsys == NULL) {
		return -ENOMEM;
	}
	if (max_nsid > 0) {
		subsys->ns = calloc(max_nsid, sizeof(*subsys->ns));
		if (subsys->ns == NULL) {
			free(subsys);
			return -ENOMEM;
		}
	}
	subsys->id = id;
	snprintf(subsys->nqn, sizeof(subsys->nqn), "%s", nqn);
	subsys->subtype = subtype;
	subsys->state = NVMF_SUBSYS_ACTIVE;
	snprintf(subsys->sn, sizeof(subsys->sn), "%s", NVMF_DEFAULT_SN);
	snprintf(subsys->mn, sizeof(subsys->mn), "%s", NVMF_DEFAULT_MN);
	subsys->max_nsid = max_nsid;
	subsys->next_cntlid = NVME_CNTLID_MIN;
	subsys->min_cntlid = NVME_CNTLID_MIN;
	subsys->max_cntlid = NVME_CNTLID_MAX;
	TAILQ_INIT(&subsys->hosts);
	TAILQ_INIT(&subsys->listeners);
	TAILQ_INIT(&subsys->ctrlrs);
	g_nvmf_tgt.by_id[id] = subsys;
	TAILQ_INSERT_TAIL(&g_nvmf_tgt.subsystems, subsys, link);
	if (subtype == NVMF_SUBTYPE_NVME) {
		nvmf_tgt_discovery_changed();
	}
	NOTICELOG("nvmf: subsystem %s created\n", subsys->nqn);
	*out = subsys;
	return 0;
}

bool
nvmf_sn_is_valid(const char *sn)
{
	return strlen(sn) > 0 && strlen(sn) <= NVME_SN_LEN && is_printable_ascii(sn);
}

bool
nvmf_mn_is_valid(const char *mn)
{
	return strlen(mn) > 0 && strlen(mn) <= NVME_MN_LEN && is_printable_ascii(mn);
}

int
nvmf_subsystem_set_sn(struct nvmf_subsystem *subsys, const char *sn)
{
	if (!nvmf_sn_is_valid(sn)) {
		return -EINVAL;
	}
	snprintf(subsys->sn, sizeof(subsys->sn), "%s", sn);
	return 0;
}

int
nvmf_subsystem_set_mn(struct nvmf_subsystem *subsys, const char *mn)
{
	if (!nvmf_mn_is_valid(mn)) {
		return -EINVAL;
	}
	snprintf(subsys->mn, sizeof(subsys->mn), "%s", mn);
	return 0;
}

/*
 * Hosts.
 */

static struct nvmf_host *
find_host(const struct nvmf_subsystem *subsys, const char *hostnqn)
{
	struct nvmf_host *host;

	TAILQ_FOREACH(host, &subsys->hosts, link) {
		if (strcmp(host->nqn, hostnqn) == 0) {
			return host;
		}
	}
	return NULL;
}

bool
nvmf_subsystem_host_allowed(const struct nvmf_subsystem *subsys, const char *hostnqn)
{
	return subsys->allow_any_host || find_host(subsys, hostnqn) != NULL;
}

const struct nvmf_host *
nvmf_subsystem_find_host(const struct nvmf_subsystem *subsys, const char *hostnqn)
{
	return find_host(subsys, hostnqn);
}

static void
host_free(const struct nvmf_subsystem *subsys, struct nvmf_host *host)
{
	if (host->psk != NULL) {
		nvmf_tls_psk_remove(host->nqn, subsys->nqn);
		keyring_put_key(host->psk);
	}
	keyring_put_key(host->dhchap_key);
	keyring_put_key(host->dhchap_ctrlr_key);
	free(host);
}

int
nvmf_subsystem_add_host(struct nvmf_subsystem *subsys, const char *hostnqn,
			const struct nvmf_host_opts *opts, char *msg, size_t msg_len)
{
	static const struct nvmf_host_opts none;
	struct nvmf_host *host;
	int rc;

	opts = opts != NULL ? opts : &none;
	if (subsys->subtype == NVMF_SUBTYPE_DISCOVERY || !nvmf_nqn_is_valid(hostnqn)) {
		return -EINVAL;
	}
	if (find_host(subsys, hostnqn) != NULL) {
		return -EEXIST;
	}
	if (opts->dhchap_ctrlr_key != NULL && opts->dhchap_key == NULL) {
		snprintf(msg, msg_len, "dhchap_ctrlr_key needs dhchap_key");
		return -EINVAL;
	}
	host = calloc(1, sizeof(*host));
	if (host == NULL) {
		return -ENOMEM;
	}
	rc = 0;
	if (opts->dhchap_key != NULL) {
		rc = nvme_dhchap_key_lookup(opts->dhchap_key, &host->dhchap_key, NULL, msg,
					    msg_len);
	}
	if (rc == 0 && opts->dhchap_ctrlr_key != NULL) {
		rc = nvme_dhchap_key_lookup(opts->dhchap_ctrlr_key, &host->dhchap_ctrlr_key, NULL,
					    msg, msg_len);
	}
	snprintf(host->nqn, sizeof(host->nqn), "%s", hostnqn);
	if (rc == 0 && opts->psk != NULL) {
		rc = nvme_tls_key_lookup(opts->psk, &host->psk, NULL, msg, msg_len);
		if (rc == 0) {
			rc = nvmf_tls_psk_add(hostnqn, subsys->nqn, host->psk);
			if (rc != 0) {
				keyring_put_key(host->psk);
				host->psk = NULL;
			}
		}
	}
	if (rc != 0) {
		host_free(subsys, host);
		return rc;
	}
	TAILQ_INSERT_TAIL(&subsys->hosts, host, link);
	nvmf_tgt_discovery_changed();
	return 0;
}

/* Controllers of hosts that lost access are disconnected. */
static void
disconnect_disallowed_hosts(struct nvmf_subsystem *subsys)
{
	struct nvmf_ctrlr *ctrlr;

	TAILQ_FOREACH(ctrlr, &subsys->ctrlrs, link) {
		if (!nvmf_subsystem_host_allowed(subsys, ctrlr->hostnqn)) {
			NOTICELOG("nvmf: subsystem %s: host %s no longer allowed; "
				  "disconnecting controller %u\n",
				  subsys->nqn, LOG_ESC(ctrlr->hostnqn), ctrlr->cntlid);
			nvmf_ctrlr_disconnect(ctrlr);
		}
	}
}

int
nvmf_subsystem_remove_host(struct nvmf_subsystem *subsys, const char *hostnqn)
{
	struct nvmf_host *host = find_host(subsys, hostnqn);

	if (host == NULL) {
		return -ENOENT;
	}
	TAILQ_REMOVE(&subsys->hosts, host, link);
	host_free(subsys, host);
	disconnect_disallowed_hosts(subsys);
	nvmf_tgt_discovery_changed();
	return 0;
}

void
nvmf_subsystem_set_allow_any_host(struct nvmf_subsystem *subsys, bool allow)
{
	if (subsys->allow_any_host == allow) {
		return;
	}
	subsys->allow_any_host = allow;
	disconnect_disallowed_hosts(subsys);
	nvmf_tgt_discovery_changed();
}

/*
 * Listeners.
 */

static struct nvmf_subsystem_listener *
find_listener(const struct nvmf_subsystem *subsys, const struct nvmf_listen_addr *addr)
{
	struct nvmf_subsystem_listener *l;

	TAILQ_FOREACH(l, &subsys->listeners, link) {
		if (nvmf_listen_addr_equal(&l->tl->addr, addr)) {
			return l;
		}
	}
	return NULL;
}

int
nvmf_subsystem_set_cntlid_range(struct nvmf_subsystem *subsys, uint16_t min, uint16_t max)
{
	if (min < NVME_CNTLID_MIN || max > NVME_CNTLID_MAX || min > max) {
		return -EINVAL;
	}
	subsys->min_cntlid = min;
	subsys->max_cntlid = max;
	subsys->next_cntlid = min;
	return 0;
}

/* The states an RPC may set, in the order of their values. */
static const uint8_t g_ana_states[] = {
	NVME_ANA_OPTIMIZED,       NVME_ANA_NON_OPTIMIZED, NVME_ANA_INACCESSIBLE,
	NVME_ANA_PERSISTENT_LOSS, NVME_ANA_CHANGE,
};

const char *
nvmf_ana_state_str(uint8_t state)
{
	const char *name = nvme_ana_state_name(state);

	return name != NULL ? name : "?";
}

int
nvmf_ana_state_parse(const char *s, uint8_t *state)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(g_ana_states); i++) {
		if (strcmp(nvme_ana_state_name(g_ana_states[i]), s) == 0) {
			*state = g_ana_states[i];
			return 0;
		}
	}
	return -EINVAL;
}

const uint8_t *
nvmf_subsystem_listener_ana(const struct nvmf_subsystem *subsys,
			    const struct nvmf_listen_addr *addr)
{
	const struct nvmf_subsystem_listener *l = find_listener(subsys, addr);

	return l != NULL ? l->ana_state : NULL;
}

int
nvmf_subsystem_set_ana_state(struct nvmf_subsystem *subsys, const struct nvmf_listen_addr *addr,
			     uint32_t anagrpid, uint8_t state)
{
	struct nvmf_subsystem_listener *l = find_listener(subsys, addr);
	struct nvmf_ctrlr *ctrlr;
	uint32_t g, first = anagrpid > 0 ? anagrpid : 1;
	uint32_t last = anagrpid > 0 ? anagrpid : subsys->max_nsid;

	if (l == NULL) {
		return -ENOENT;
	}
	if (!subsys->ana_reporting || anagrpid > subsys->max_nsid) {
		return -EINVAL;
	}
	for (g = first; g <= last; g++) {
		l->ana_state[g - 1] = state;
	}
	subsys->ana_chgcnt++;
	/* Controllers that came in through this address see it, and are told. */
	TAILQ_FOREACH(ctrlr, &subsys->ctrlrs, link) {
		if (ctrlr->admin_qpair == NULL || ctrlr->ana_state == NULL ||
		    !nvmf_listen_addr_equal(&ctrlr->admin_qpair->listen, addr)) {
			continue;
		}
		for (g = first; g <= last; g++) {
			__atomic_store_n(&ctrlr->ana_state[g - 1], state, __ATOMIC_SEQ_CST);
		}
		nvmf_ctrlr_event_post(ctrlr, NVMF_EVENT_ANA_CHANGED);
	}
	if (anagrpid > 0) {
		NOTICELOG("nvmf: subsystem %s listener %s:%s: ANA group %u %s\n", subsys->nqn,
			  addr->traddr, addr->trsvcid, anagrpid, nvmf_ana_state_str(state));
	} else {
		NOTICELOG("nvmf: subsystem %s listener %s:%s: every ANA group %s\n", subsys->nqn,
			  addr->traddr, addr->trsvcid, nvmf_ana_state_str(state));
	}
	return 0;
}

int
nvmf_subsystem_add_listener(struct nvmf_subsystem *subsys, const struct nvmf_listen_addr *addr,
			    uint8_t ana_state)
{
	struct nvmf_subsystem_listener *l;
	uint32_t g;
	int rc;

	if (find_listener(subsys, addr) != NULL) {
		return -EEXIST;
	}
	if (ana_state != NVME_ANA_OPTIMIZED && !subsys->ana_reporting) {
		return -EINVAL;
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL) {
		return -ENOMEM;
	}
	l->ana_state = malloc(subsys->max_nsid > 0 ? subsys->max_nsid : 1);
	if (l->ana_state == NULL) {
		free(l);
		return -ENOMEM;
	}
	for (g = 0; g < subsys->max_nsid; g++) {
		l->ana_state[g] = ana_state;
	}
	rc = nvmf_tgt_listen(addr, &l->tl);
	if (rc != 0) {
		free(l->ana_state);
		free(l);
		return rc;
	}
	TAILQ_INSERT_TAIL(&subsys->listeners, l, link);
	if (subsys->subtype == NVMF_SUBTYPE_NVME) {
		nvmf_tgt_discovery_changed();
	}
	NOTICELOG("nvmf: subsystem %s listens on %s %s:%s\n", subsys->nqn,
		  nvmf_trtype_str(addr->trtype), addr->traddr, addr->trsvcid);
	return 0;
}

static void
listener_free(struct nvmf_subsystem *subsys, struct nvmf_subsystem_listener *l)
{
	TAILQ_REMOVE(&subsys->listeners, l, link);
	nvmf_tgt_unlisten(l->tl);
	free(l->ana_state);
	free(l);
}

int
nvmf_subsystem_remove_listener(struct nvmf_subsystem *subsys, const struct nvmf_listen_addr *addr)
{
	struct nvmf_subsystem_listener *l = find_listener(subsys, addr);
	struct nvmf_ctrlr *ctrlr;

	if (l == NULL) {
		return -ENOENT;
	}
	listener_free(subsys, l);
	/* Hosts that came in through this address lose it too. */
	TAILQ_FOREACH(ctrlr, &subsys->ctrlrs, link) {
		if (ctrlr->admin_qpair != NULL &&
		    nvmf_listen_addr_equal(&ctrlr->admin_qpair->listen, addr)) {
			nvmf_ctrlr_disconnect(ctrlr);
		}
	}
	if (subsys->subtype == NVMF_SUBTYPE_NVME) {
		nvmf_tgt_discovery_changed();
	}
	return 0;
}

/* The discovery service answers on every address the target listens on. */
bool
nvmf_subsystem_listener_allowed(const struct nvmf_subsystem *subsys,
				const struct nvmf_listen_addr *addr)
{
	if (subsys->subtype == NVMF_SUBTYPE_DISCOVERY) {
		return true;
	}
	return find_listener(subsys, addr) != NULL;
}

/*
 * Namespaces.
 */

struct nvmf_ns *
nvmf_subsystem_get_ns(const struct nvmf_subsystem *subsys, uint32_t nsid)
{
	if (nsid == 0 || nsid > subsys->max_nsid) {
		return NULL;
	}
	return subsys->ns[nsid - 1];
}

static void
notify_ns_changed(struct nvmf_subsystem *subsys, uint32_t nsid)
{
	struct nvmf_ctrlr *ctrlr;

	TAILQ_FOREACH(ctrlr, &subsys->ctrlrs, link) {
		nvmf_ctrlr_ns_changed(ctrlr, nsid);
	}
}

/* Follow bdev_is_accessible: the namespace's ANA group, through every listener, and the event. */
static void
ns_set_accessible(struct nvmf_ns *ns, bool accessible)
{
	struct nvmf_subsystem *subsys = ns->subsys;
	struct nvmf_ctrlr *ctrlr;

	if (ns->inaccessible == !accessible) {
		return;
	}
	__atomic_store_n(&ns->inaccessible, !accessible, __ATOMIC_RELEASE);
	if (accessible) {
		__atomic_fetch_sub(&subsys->inaccessible_ns, 1, __ATOMIC_RELEASE);
	} else {
		__atomic_fetch_add(&subsys->inaccessible_ns, 1, __ATOMIC_RELEASE);
	}
	NOTICELOG("nvmf: subsystem %s: namespace %u (bdev %s) is %s from here\n", subsys->nqn,
		  ns->nsid, ns->bdev_name, accessible ? "served" : "inaccessible");
	if (!subsys->ana_reporting) {
		return;
	}
	subsys->ana_chgcnt++;
	TAILQ_FOREACH(ctrlr, &subsys->ctrlrs, link) {
		if (ctrlr->ana_state != NULL) {
			nvmf_ctrlr_event_post(ctrlr, NVMF_EVENT_ANA_CHANGED);
		}
	}
}

static bool
bdev_degraded(const struct bdev *bdev)
{
	struct bdev_health h;

	bdev_get_health(bdev, &h);
	return h.degraded;
}

/* The bdev's health changed: log it once, and let every controller look at its warning. */
static void
ns_health_changed(struct nvmf_ns *ns)
{
	struct nvmf_ctrlr *ctrlr;
	struct bdev_health h;

	bdev_get_health(ns->bdev, &h);
	if (h.degraded != ns->degraded) {
		ns->degraded = h.degraded;
		NOTICELOG("nvmf: subsystem %s: namespace %u (bdev %s) is %s (spare %u%%, threshold "
			  "%u%%, %" PRIu64 " media errors)\n",
			  ns->subsys->nqn, ns->nsid, ns->bdev_name,
			  h.degraded ? "degraded" : "whole again", h.spare_pct,
			  h.spare_threshold_pct, h.media_errors);
	}
	TAILQ_FOREACH(ctrlr, &ns->subsys->ctrlrs, link) {
		nvmf_ctrlr_health_check(ctrlr);
	}
}

static void
ns_bdev_event(enum bdev_event_type type, struct bdev *bdev, void *ctx)
{
	struct nvmf_ns *ns = ctx;
	int rc;

	if ((type == BDEV_EVENT_ACCESS_CHANGED || type == BDEV_EVENT_HEALTH_CHANGED) &&
	    !ns->removing) {
		if (type == BDEV_EVENT_ACCESS_CHANGED) {
			ns_set_accessible(ns, bdev_is_accessible(bdev));
		}
		/* What the bdev reports may have changed with who serves it. */
		ns_health_changed(ns);
		return;
	}
	if (type != BDEV_EVENT_REMOVE || ns->removing) {
		return;
	}
	NOTICELOG("nvmf: subsystem %s: bdev %s is going away; removing namespace %u\n",
		  ns->subsys->nqn, ns->bdev_name, ns->nsid);
	rc = nvmf_subsystem_remove_ns(ns->subsys, ns->nsid, NULL, NULL);
	if (rc != 0) {
		ERRLOG("nvmf: subsystem %s: cannot remove namespace %u: %s\n", ns->subsys->nqn,
		       ns->nsid, strerror(-rc));
	}
}

static void
ns_free(struct nvmf_ns *ns)
{
	if (ns->resv_inited) {
		nvmf_ns_resv_fini(ns);
	}
	free(ns->bdev_name);
	free(ns);
}

int
nvmf_subsystem_add_ns(struct nvmf_subsystem *subsys, const char *bdev_name, uint32_t nsid,
		      struct nvmf_ns_opts *opts, uint32_t *nsid_out)
{
	struct nvmf_ns_opts none = { 0 };
	struct nvmf_ns *ns;
	struct bdev *bdev;
	uint32_t i;
	int rc;

	if (opts == NULL) {
		opts = &none;
	}
	if (subsys->subtype != NVMF_SUBTYPE_NVME) {
		return -EINVAL;
	}
	if (subsys->state != NVMF_SUBSYS_ACTIVE) {
		return -EBUSY;
	}
	/* Two namespaces of one subsystem must not share a bdev (and its NGUID/UUID). */
	for (i = 0; i < subsys->max_nsid; i++) {
		if (subsys->ns[i] != NULL && strcmp(subsys->ns[i]->bdev_name, bdev_name) == 0) {
			return -EALREADY;
		}
	}
	if (nsid == 0) {
		for (nsid = 1; nsid <= subsys->max_nsid && subsys->ns[nsid - 1] != NULL; nsid++) {
		}
		if (nsid > subsys->max_nsid) {
			return -ENOSPC;
		}
	} else if (nsid > subsys->max_nsid) {
		return -ERANGE;
	} else if (subsys->ns[nsid - 1] != NULL) {
		return -EEXIST;
	}
	if (opts->anagrpid > subsys->max_nsid) {
		return -EDOM;
	}
	ns = calloc(1, sizeof(*ns));
	if (ns == NULL) {
		return -ENOMEM;
	}
	ns->subsys = subsys;
	ns->nsid = nsid;
	ns->anagrpid = opts->anagrpid > 0 ? opts->anagrpid : nsid;
	/* Whole: a name cut short would be written by save_config and not found again. */
	ns->bdev_name = strdup(bdev_name);
	if (ns->bdev_name == NULL) {
		free(ns);
		return -ENOMEM;
	}
	rc = nvmf_ns_resv_init(ns, opts->ptpl_file, opts->why, sizeof(opts->why));
	if (rc != 0) {
		ns_free(ns);
		return rc;
	}
	ns->resv_inited = true;
	rc = bdev_open(bdev_name, true, ns_bdev_event, ns, &ns->desc);
	if (rc != 0) {
		ns_free(ns);
		return rc;
	}
	bdev = bdev_desc_get_bdev(ns->desc);
	ns->bdev = bdev;
	ns->block_size = bdev_get_block_size(bdev);
	ns->md_size = bdev_get_md_size(bdev);
	ns->buf_block_size = bdev_get_buf_block_size(bdev);
	ns->num_blocks = bdev_get_num_blocks(bdev);
	/* An LBA format needs a power-of-two data size of at least 512 bytes. */
	if (!is_pow2(ns->block_size) || ns->block_size < 512 || ns->md_size > UINT16_MAX) {
		bdev_close(ns->desc);
		ns_free(ns);
		return -EINVAL;
	}
	ns->has_unmap = bdev_io_type_supported(bdev, BDEV_IO_TYPE_UNMAP);
	ns->has_write_zeroes = bdev_io_type_supported(bdev, BDEV_IO_TYPE_WRITE_ZEROES);
	ns->has_flush = bdev_io_type_supported(bdev, BDEV_IO_TYPE_FLUSH);
	memcpy(ns->uuid, bdev_get_uuid(bdev), sizeof(ns->uuid));
	rc = nvmf_ns_io_device_register(ns);
	if (rc != 0) {
		bdev_close(ns->desc);
		ns_free(ns);
		return rc;
	}
	ns->inaccessible = !bdev_is_accessible(bdev);
	ns->degraded = bdev_degraded(bdev);
	if (ns->inaccessible) {
		__atomic_fetch_add(&subsys->inaccessible_ns, 1, __ATOMIC_RELEASE);
	}
	/* Publish last: I/O threads read the slot without a lock. */
	__atomic_store_n(&subsys->ns[nsid - 1], ns, __ATOMIC_RELEASE);
	subsys->num_ns++;
	notify_ns_changed(subsys, nsid);
	NOTICELOG("nvmf: subsystem %s: namespace %u is bdev %s (%llu blocks of %u+%u bytes)\n",
		  subsys->nqn, nsid, bdev_name, (unsigned long long)ns->num_blocks, ns->block_size,
		  ns->md_size);
	*nsid_out = nsid;
	return 0;
}

static void
ns_removed(struct nvmf_ns *ns)
{
	struct nvmf_subsystem *subsys = ns->subsys;
	void (*cb)(void *arg, int rc) = ns->remove_cb;
	void *arg = ns->remove_arg;
	uint32_t nsid = ns->nsid;

	bdev_close(ns->desc);
	__atomic_store_n(&subsys->ns[nsid - 1], NULL, __ATOMIC_RELEASE);
	if (ns->inaccessible) {
		__atomic_fetch_sub(&subsys->inaccessible_ns, 1, __ATOMIC_RELEASE);
	}
	subsys->num_ns--;
	NOTICELOG("nvmf: subsystem %s: namespace %u (bdev %s) removed\n", subsys->nqn, nsid,
		  ns->bdev_name);
	ns_free(ns);
	notify_ns_changed(subsys, nsid);
	if (cb != NULL) {
		cb(arg, 0);
	}
}

int
nvmf_subsystem_remove_ns(struct nvmf_subsystem *subsys, uint32_t nsid,
			 void (*cb)(void *arg, int rc), void *arg)
{
	struct nvmf_ns *ns = nvmf_subsystem_get_ns(subsys, nsid);

	if (ns == NULL) {
		return -ENOENT;
	}
	if (ns->removing) {
		return -EBUSY;
	}
	ns->remove_cb = cb;
	ns->remove_arg = arg;
	/* New I/O sees this and fails; the walk below waits for I/O in flight. */
	__atomic_store_n(&ns->removing, true, __ATOMIC_SEQ_CST);
	/* A reservation change being installed finishes first (its walk uses ns). */
	if (nvmf_ns_resv_defer_release(ns, ns_removed) == 0) {
		nvmf_ns_channels_release(ns, ns_removed);
	}
	return 0;
}

/*
 * Deletion: listeners (no new connections), controllers, namespaces, the
 * per-poll-group state, then the subsystem.
 */
struct subsys_delete_ctx {
	struct nvmf_subsystem *subsys;
	void (*cb)(void *arg);
	void *arg;
	struct poller *retry;
};

static void delete_next_ns(struct subsys_delete_ctx *ctx);

static void
delete_pg_state_fn(struct nvmf_poll_group *pg, void *arg)
{
	struct subsys_delete_ctx *ctx = arg;

	nvmf_pg_subsys_free(pg, ctx->subsys->id);
}

static void
delete_finish(void *arg)
{
	struct subsys_delete_ctx *ctx = arg;
	struct nvmf_subsystem *subsys = ctx->subsys;
	struct nvmf_host *host;
	bool was_nvme = subsys->subtype == NVMF_SUBTYPE_NVME;

	while ((host = TAILQ_FIRST(&subsys->hosts)) != NULL) {
		TAILQ_REMOVE(&subsys->hosts, host, link);
		host_free(subsys, host);
	}
	TAILQ_REMOVE(&g_nvmf_tgt.subsystems, subsys, link);
	g_nvmf_tgt.by_id[subsys->id] = NULL;
	if (g_nvmf_tgt.discovery == subsys) {
		g_nvmf_tgt.discovery = NULL;
	}
	NOTICELOG("nvmf: subsystem %s deleted\n", subsys->nqn);
	free(subsys->ns);
	free(subsys);
	if (was_nvme) {
		nvmf_tgt_discovery_changed();
	}
	ctx->cb(ctx->arg);
	free(ctx);
}

static void
delete_ns_done(void *arg, int rc)
{
	delete_next_ns(arg);
}

static int
delete_retry(void *arg)
{
	struct subsys_delete_ctx *ctx = arg;

	poller_unregister(&ctx->retry);
	delete_next_ns(ctx);
	return POLLER_BUSY;
}

static void
delete_next_ns(struct subsys_delete_ctx *ctx)
{
	struct nvmf_subsystem *subsys = ctx->subsys;
	struct nvmf_ns *ns = NULL;
	uint32_t i;

	for (i = 0; i < subsys->max_nsid && ns == NULL; i++) {
		ns = subsys->ns[i];
	}
	if (ns == NULL) {
		if (nvmf_tgt_for_each_pg(delete_pg_state_fn, ctx, delete_finish) != 0) {
			ERRLOG("nvmf: subsystem %s: cannot free its poll group state\n",
			       subsys->nqn);
			delete_finish(ctx);
		}
		return;
	}
	if (ns->removing) {
		/* A hot remove or an RPC is removing it already: check again shortly. */
		ctx->retry = poller_register(delete_retry, ctx, 5000, "nvmf_subsys_delete");
		if (ctx->retry == NULL) {
			ERRLOG("nvmf: subsystem %s: cannot wait for namespace %u\n", subsys->nqn,
			       ns->nsid);
		}
		return;
	}
	if (nvmf_subsystem_remove_ns(subsys, ns->nsid, delete_ns_done, ctx) != 0) {
		ERRLOG("nvmf: subsystem %s: cannot remove namespace %u\n", subsys->nqn, ns->nsid);
	}
}

static void
ctrlrs_gone(struct nvmf_subsystem *subsys)
{
	struct subsys_delete_ctx *ctx = subsys->delete_ctx;

	subsys->delete_ctx = NULL;
	subsys->ctrlrs_gone_cb = NULL;
	delete_next_ns(ctx);
}

int
nvmf_subsystem_delete(struct nvmf_subsystem *subsys, void (*cb)(void *arg), void *arg)
{
	struct subsys_delete_ctx *ctx;
	struct nvmf_subsystem_listener *l;
	struct nvmf_ctrlr *ctrlr, *tmp;

	if (subsys->state == NVMF_SUBSYS_DELETING) {
		return -EBUSY;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL) {
		return -ENOMEM;
	}
	ctx->subsys = subsys;
	ctx->cb = cb;
	ctx->arg = arg;
	subsys->state = NVMF_SUBSYS_DELETING;
	while ((l = TAILQ_FIRST(&subsys->listeners)) != NULL) {
		listener_free(subsys, l);
	}
	if (TAILQ_EMPTY(&subsys->ctrlrs)) {
		delete_next_ns(ctx);
		return 0;
	}
	subsys->delete_ctx = ctx;
	subsys->ctrlrs_gone_cb = ctrlrs_gone;
	TAILQ_FOREACH_SAFE(ctrlr, &subsys->ctrlrs, link, tmp) {
		nvmf_ctrlr_disconnect(ctrlr);
	}
	return 0;
}

void
nvmf_pg_subsys_free(struct nvmf_poll_group *pg, uint32_t sid)
{
	free(pg->subsys[sid]);
	pg->subsys[sid] = NULL;
}

/*
 * The discovery log page: one entry per (subsystem the host may use, listener).
 */
static void
discovery_entry_fill(struct nvme_discovery_log_entry *e, const struct nvmf_subsystem *subsys,
		     const struct nvmf_tgt_listener *tl)
{
	memset(e, 0, sizeof(*e));
	e->trtype = (uint8_t)tl->addr.trtype;
	e->adrfam = (uint8_t)tl->addr.adrfam;
	e->subtype = NVME_SUBTYPE_NVME;
	e->treq = tl->addr.secure_channel ? NVME_TREQ_SECURE_REQUIRED :
					    NVME_TREQ_SECURE_NOT_REQUIRED;
	e->portid = tl->portid;
	e->cntlid = NVME_CNTLID_DYNAMIC;
	e->asqsz = (uint16_t)tl->transport->opts.max_aq_depth;
	/* ASCII strings, NUL padded (the fields are zeroed above). */
	memcpy(e->trsvcid, tl->addr.trsvcid, strnlen(tl->addr.trsvcid, sizeof(e->trsvcid)));
	memcpy(e->traddr, tl->addr.traddr, strnlen(tl->addr.traddr, sizeof(e->traddr)));
	memcpy(e->subnqn, subsys->nqn, strnlen(subsys->nqn, sizeof(e->subnqn)));
	if (tl->addr.trtype == NVME_TRTYPE_RDMA) {
		e->tsas[NVME_RDMA_TSAS_QPTYPE] = NVME_RDMA_QPTYPE_CONNECTED;
		e->tsas[NVME_RDMA_TSAS_PRTYPE] = NVME_RDMA_PRTYPE_NONE;
		e->tsas[NVME_RDMA_TSAS_CMS] = NVME_RDMA_CMS_RDMA_CM;
	} else {
		e->tsas[0] = tl->addr.secure_channel ? NVME_TCP_SECTYPE_TLS13 :
						       NVME_TCP_SECTYPE_NONE;
	}
}

void *
nvmf_discovery_log_build(const char *hostnqn, size_t *len)
{
	struct nvme_discovery_log_hdr *hdr;
	struct nvmf_subsystem *subsys;
	struct nvmf_subsystem_listener *l;
	uint64_t n = 0;

	TAILQ_FOREACH(subsys, &g_nvmf_tgt.subsystems, link) {
		if (subsys->subtype != NVMF_SUBTYPE_NVME || subsys->state != NVMF_SUBSYS_ACTIVE ||
		    !nvmf_subsystem_host_allowed(subsys, hostnqn)) {
			continue;
		}
		TAILQ_FOREACH(l, &subsys->listeners, link) {
			n++;
		}
	}
	*len = sizeof(*hdr) + n * sizeof(struct nvme_discovery_log_entry);
	hdr = calloc(1, *len);
	if (hdr == NULL) {
		return NULL;
	}
	hdr->genctr = g_nvmf_tgt.discovery_genctr;
	hdr->numrec = n;
	hdr->recfmt = 0;
	n = 0;
	TAILQ_FOREACH(subsys, &g_nvmf_tgt.subsystems, link) {
		if (subsys->subtype != NVMF_SUBTYPE_NVME || subsys->state != NVMF_SUBSYS_ACTIVE ||
		    !nvmf_subsystem_host_allowed(subsys, hostnqn)) {
			continue;
		}
		TAILQ_FOREACH(l, &subsys->listeners, link) {
			discovery_entry_fill(&hdr->entries[n++], subsys, l->tl);
		}
	}
	return hdr;
}

/*
 * JSON: nvmf_get_subsystems and save_config.
 */

static json_t *
listen_addr_json(const struct nvmf_listen_addr *addr)
{
	return json_pack("{s:s, s:s, s:s, s:s}", "trtype", nvmf_trtype_str(addr->trtype), "adrfam",
			 nvmf_adrfam_str(addr->adrfam), "traddr", addr->traddr, "trsvcid",
			 addr->trsvcid);
}

/* A host as nvmf_get_subsystems and save_config show it: keys by name only. */
static json_t *
host_json(const struct nvmf_host *host)
{
	json_t *obj = json_pack("{s:s}", "nqn", host->nqn);

	if (host->psk != NULL) {
		json_object_set_new(obj, "psk", json_string(key_get_name(host->psk)));
	}

	if (host->dhchap_key != NULL) {
		json_object_set_new(obj, "dhchap_key", json_string(key_get_name(host->dhchap_key)));
	}
	if (host->dhchap_ctrlr_key != NULL) {
		json_object_set_new(obj, "dhchap_ctrlr_key",
				    json_string(key_get_name(host->dhchap_ctrlr_key)));
	}
	return obj;
}

json_t *
nvmf_subsystem_info_json(const struct nvmf_subsystem *subsys)
{
	const struct nvmf_subsystem_listener *l;
	const struct nvmf_host *host;
	json_t *obj, *listeners, *hosts, *nss;
	uint32_t i;

	listeners = json_array();
	hosts = json_array();
	obj = json_pack("{s:s, s:s, s:o, s:b, s:o}", "nqn", subsys->nqn, "subtype",
			subsys->subtype == NVMF_SUBTYPE_DISCOVERY ? "Discovery" : "NVMe",
			"listen_addresses", listeners, "allow_any_host", subsys->allow_any_host,
			"hosts", hosts);
	if (obj == NULL) {
		return NULL;
	}
	TAILQ_FOREACH(l, &subsys->listeners, link) {
		json_t *la = listen_addr_json(&l->tl->addr);

		if (l->tl->addr.secure_channel) {
			json_object_set_new(la, "secure_channel", json_true());
		}
		json_array_append_new(listeners, la);
	}
	TAILQ_FOREACH(host, &subsys->hosts, link) {
		json_array_append_new(hosts, host_json(host));
	}
	if (subsys->subtype == NVMF_SUBTYPE_DISCOVERY) {
		return obj;
	}
	nss = json_array();
	json_object_set_new(obj, "serial_number", json_string(subsys->sn));
	json_object_set_new(obj, "model_number", json_string(subsys->mn));
	json_object_set_new(obj, "max_namespaces", json_integer(subsys->max_nsid));
	json_object_set_new(obj, "min_cntlid", json_integer(subsys->min_cntlid));
	json_object_set_new(obj, "max_cntlid", json_integer(subsys->max_cntlid));
	json_object_set_new(obj, "ana_reporting", json_boolean(subsys->ana_reporting));
	json_object_set_new(obj, "namespaces", nss);
	for (i = 0; i < subsys->max_nsid; i++) {
		const struct nvmf_ns *ns = subsys->ns[i];

		if (ns == NULL || ns->removing) {
			continue;
		}
		json_array_append_new(nss, json_pack("{s:I, s:s, s:s, s:s, s:I}", "nsid",
						     (json_int_t)ns->nsid, "bdev_name",
						     ns->bdev_name, "name", ns->bdev_name, "uuid",
						     bdev_get_uuid_str(ns->bdev), "anagrpid",
						     (json_int_t)ns->anagrpid));
	}
	return obj;
}

json_t *
nvmf_subsystem_listeners_json(const struct nvmf_subsystem *subsys)
{
	const struct nvmf_subsystem_listener *l;
	json_t *arr = json_array(), *states;
	uint32_t g;

	TAILQ_FOREACH(l, &subsys->listeners, link) {
		states = json_array();
		for (g = 1; subsys->ana_reporting && g <= subsys->max_nsid; g++) {
			json_array_append_new(states,
					      json_pack("{s:I, s:s}", "ana_group", (json_int_t)g,
							"ana_state",
							nvmf_ana_state_str(l->ana_state[g - 1])));
		}
		json_array_append_new(arr, json_pack("{s:o, s:o}", "address",
						     listen_addr_json(&l->tl->addr), "ana_states",
						     states));
	}
	return arr;
}

static void
config_append(json_t *config, const char *method, json_t *params)
{
	json_array_append_new(config, json_pack("{s:s, s:o}", "method", method, "params", params));
}

void
nvmf_subsystem_write_config_json(const struct nvmf_subsystem *subsys, json_t *config)
{
	const struct nvmf_subsystem_listener *l;
	const struct nvmf_host *host;
	uint32_t i;

	if (subsys->state != NVMF_SUBSYS_ACTIVE) {
		return;
	}
	if (subsys->subtype == NVMF_SUBTYPE_NVME) {
		config_append(config, "nvmf_create_subsystem",
			      json_pack("{s:s, s:s, s:s, s:b, s:I, s:b, s:I, s:I}", "nqn",
					subsys->nqn, "serial_number", subsys->sn, "model_number",
					subsys->mn, "allow_any_host", subsys->allow_any_host,
					"max_namespaces", (json_int_t)subsys->max_nsid,
					"ana_reporting", subsys->ana_reporting, "min_cntlid",
					(json_int_t)subsys->min_cntlid, "max_cntlid",
					(json_int_t)subsys->max_cntlid));
		TAILQ_FOREACH(host, &subsys->hosts, link) {
			json_t *params = host_json(host);

			json_object_set_new(params, "host", json_string(host->nqn));
			json_object_set_new(params, "nqn", json_string(subsys->nqn));
			config_append(config, "nvmf_subsystem_add_host", params);
		}
		for (i = 0; i < subsys->max_nsid; i++) {
			const struct nvmf_ns *ns = subsys->ns[i];

			if (ns == NULL || ns->removing) {
				continue;
			}
			json_t *nso = json_pack("{s:s, s:I, s:I}", "bdev_name", ns->bdev_name,
						"nsid", (json_int_t)ns->nsid, "anagrpid",
						(json_int_t)ns->anagrpid);

			if (ns->ptpl_file != NULL) {
				json_object_set_new(nso, "ptpl_file", json_string(ns->ptpl_file));
			}
			config_append(config, "nvmf_subsystem_add_ns",
				      json_pack("{s:s, s:o}", "nqn", subsys->nqn, "namespace",
						nso));
		}
	}
	TAILQ_FOREACH(l, &subsys->listeners, link) {
		json_t *params = json_pack("{s:s, s:o}", "nqn", subsys->nqn, "listen_address",
					   listen_addr_json(&l->tl->addr));
		uint32_t g;

		if (l->tl->addr.secure_channel) {
			json_object_set_new(params, "secure_channel", json_true());
		}
		if (subsys->ana_reporting) {
			json_object_set_new(params, "ana_state",
					    json_string(nvmf_ana_state_str(l->ana_state[0])));
		}
		config_append(config, "nvmf_subsystem_add_listener", params);
		if (!subsys->ana_reporting) {
			continue;
		}
		/* The groups whose state differs from the first's. */
		for (g = 2; g <= subsys->max_nsid; g++) {
			if (l->ana_state[g - 1] == l->ana_state[0]) {
				continue;
			}
			config_append(config, "nvmf_subsystem_listener_set_ana_state",
				      json_pack("{s:s, s:o, s:s, s:I}", "nqn", subsys->nqn,
						"listen_address", listen_addr_json(&l->tl->addr),
						"ana_state",
						nvmf_ana_state_str(l->ana_state[g - 1]), "anagrpid",
						(json_int_t)g));
		}
	}
}
