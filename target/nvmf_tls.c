/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe/TCP secure channels on the target (TP 8011): which PSK a TLS identity
 * names, and what a Connect over TLS may claim.
 *
 * The PSK of a host is set on the app thread (nvmf_subsystem_add_host psk),
 * but the handshake that needs it runs on a poll group thread, inside
 * OpenSSL's callback, which cannot wait for a message. So the (host NQN,
 * subsystem NQN, key) triples live in a table of their own under a mutex,
 * next to the subsystems: add_host adds, remove_host and the subsystem's
 * deletion remove. A lookup reads the key file (the keyring reads keys at
 * each use) and derives the TLS PSK under the mutex; both are short.
 *
 * What a secure channel proves is the identity's pair: the Connect on it
 * must name that host and that subsystem. A host given a PSK must come over
 * a secure channel: a plaintext Connect in its name is refused, as an
 * attacker without the key would send it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "gga/keyring.h"
#include "gga/log.h"

#include "nvmf_internal.h"

struct psk_entry {
	char hostnqn[NVME_NQN_FIELD_LEN];
	char subnqn[NVME_NQN_FIELD_LEN];
	struct key *key; /* a reference of its own */
	TAILQ_ENTRY(psk_entry) link;
};

static pthread_mutex_t g_psk_lock = PTHREAD_MUTEX_INITIALIZER;
static TAILQ_HEAD(, psk_entry) g_psks = TAILQ_HEAD_INITIALIZER(g_psks);

static struct psk_entry *
psk_find_locked(const char *hostnqn, const char *subnqn)
{
	struct psk_entry *e;

	TAILQ_FOREACH(e, &g_psks, link) {
		if (strcmp(e->hostnqn, hostnqn) == 0 && strcmp(e->subnqn, subnqn) == 0) {
			return e;
		}
	}
	return NULL;
}

int
nvmf_tls_psk_add(const char *hostnqn, const char *subnqn, struct key *key)
{
	struct psk_entry *e = calloc(1, sizeof(*e));

	if (e == NULL) {
		return -ENOMEM;
	}
	e->key = keyring_get_key(key_get_name(key));
	if (e->key == NULL) {
		free(e);
		return -ENOKEY;
	}
	snprintf(e->hostnqn, sizeof(e->hostnqn), "%s", hostnqn);
	snprintf(e->subnqn, sizeof(e->subnqn), "%s", subnqn);
	pthread_mutex_lock(&g_psk_lock);
	TAILQ_INSERT_TAIL(&g_psks, e, link);
	pthread_mutex_unlock(&g_psk_lock);
	return 0;
}

void
nvmf_tls_psk_remove(const char *hostnqn, const char *subnqn)
{
	struct psk_entry *e;

	pthread_mutex_lock(&g_psk_lock);
	e = psk_find_locked(hostnqn, subnqn);
	if (e != NULL) {
		TAILQ_REMOVE(&g_psks, e, link);
	}
	pthread_mutex_unlock(&g_psk_lock);
	if (e != NULL) {
		keyring_put_key(e->key);
		free(e);
	}
}

int
nvmf_tls_psk_find(void *ctx, const char *identity, struct nvme_tls_key *key, char *why,
		  size_t why_len)
{
	struct nvme_tls_identity id;
	struct nvme_tls_psk configured;
	struct psk_entry *e;
	int rc;

	(void)ctx;
	if (nvme_tls_identity_parse(identity, &id) != 0) {
		char shown[68];

		snprintf(why, why_len, "'%s' is not an NVMe PSK identity",
			 log_escape(shown, sizeof(shown), identity));
		return -EINVAL;
	}
	pthread_mutex_lock(&g_psk_lock);
	e = psk_find_locked(id.hostnqn, id.subnqn);
	rc = e != NULL ? nvme_tls_psk_load(e->key, &configured) : -ENOKEY;
	pthread_mutex_unlock(&g_psk_lock);
	if (rc == -ENOKEY && e == NULL) {
		snprintf(why, why_len,
			 "the PSK identity names host %s and subsystem %s: no such host "
			 "has a psk",
			 LOG_ESC(id.hostnqn), LOG_ESC(id.subnqn));
		return rc;
	}
	if (rc != 0) {
		snprintf(why, why_len, "the psk of host %s on %s cannot be read: %s",
			 LOG_ESC(id.hostnqn), LOG_ESC(id.subnqn), strerror(-rc));
		return rc;
	}
	rc = nvme_tls_key_derive(&configured, id.hostnqn, id.subnqn, id.version,
				 NVME_TLS_KDF_RFC8446, key);
	explicit_bzero(&configured, sizeof(configured));
	if (rc == 0 && strcmp(key->identity, identity) != 0) {
		/* Another hash, or a version 1 digest of another key. */
		rc = -EKEYREJECTED;
	}
	if (rc != 0) {
		explicit_bzero(key, sizeof(*key));
		snprintf(why, why_len,
			 "the PSK identity of host %s on %s does not match its psk (hash or "
			 "digest)",
			 LOG_ESC(id.hostnqn), LOG_ESC(id.subnqn));
	}
	return rc;
}

uint16_t
nvmf_tls_connect_check(const struct nvmf_qpair *qpair, const struct nvmf_subsystem *subsys,
		       const char *hostnqn)
{
	const struct nvmf_host *host = nvmf_subsystem_find_host(subsys, hostnqn);
	struct nvme_tls_identity id;

	if (qpair->tls_identity == NULL) {
		if (host != NULL && host->psk != NULL) {
			WARNLOG("nvmf: host %s (%s) has a psk on %s: refusing its Connect over "
				"plaintext; it must use a secure channel\n",
				LOG_ESC(hostnqn), qpair->peer, subsys->nqn);
			return STATUS_DNR(NVME_SCT_COMMAND_SPECIFIC, NVME_SC_CONNECT_INVALID_HOST);
		}
		return 0;
	}
	if (nvme_tls_identity_parse(qpair->tls_identity, &id) != 0 ||
	    strcmp(id.hostnqn, hostnqn) != 0 || strcmp(id.subnqn, subsys->nqn) != 0) {
		WARNLOG("nvmf: Connect from %s as host %s to %s over a secure channel whose PSK "
			"identity is for host %s and subsystem %s; refused\n",
			qpair->peer, LOG_ESC(hostnqn), subsys->nqn, LOG_ESC(id.hostnqn),
			LOG_ESC(id.subnqn));
		return STATUS_DNR(NVME_SCT_COMMAND_SPECIFIC, NVME_SC_CONNECT_INVALID_HOST);
	}
	return 0;
}
