/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One DH-HMAC-CHAP transaction (NVMe Base 2.0 8.13.5), as the controller and
 * as the host run it. Only the messages go in and out: the target and the
 * host library carry them in Authentication Send/Receive commands.
 *
 * Controller:  NEGOTIATE --Negotiate--> CHALLENGE --read--> REPLY --Reply-->
 *              SUCCESS1 --read--> DONE, or SUCCESS2 --Success2--> DONE
 *              (bidirectional); any fault --> FAILURE1 --read--> FAILED;
 *              a Failure2 from the host --> FAILED; a Negotiate in DONE
 *              starts a re-authentication.
 * Host:        NEGOTIATE --send--> CHALLENGE --Challenge--> REPLY --send-->
 *              SUCCESS1 --Success1--> DONE, or SUCCESS2 --send--> DONE;
 *              a Failure1 --> FAILED; a bad message or a wrong controller
 *              response --> FAILURE2 --send--> FAILED.
 * Every unknown resolves to failure: a field out of range, a transaction id
 * that is not this one's, a message out of order.
 */
#include <errno.h>
#include <string.h>

#include <openssl/crypto.h>

#include "gga/nvme_auth.h"

#define DESC_IDS_MAX 30

static bool
is_msg(const void *msg, size_t len, uint8_t type, uint8_t id)
{
	const struct nvme_auth_header *h = msg;

	return len >= sizeof(*h) && h->auth_type == type && h->auth_id == id;
}

static void
drop_dh(struct nvme_dhchap *t)
{
	nvme_dh_free(t->dh);
	t->dh = NULL;
}

void
nvme_dhchap_fini(struct nvme_dhchap *t)
{
	drop_dh(t);
	OPENSSL_cleanse(t, sizeof(*t));
}

enum nvme_dhchap_result
nvme_dhchap_result(const struct nvme_dhchap *t)
{
	switch (t->state) {
	case NVME_DHCHAP_DONE:
		return NVME_DHCHAP_RES_SUCCESS;
	case NVME_DHCHAP_FAILED:
		return NVME_DHCHAP_RES_FAILED;
	default:
		return NVME_DHCHAP_RES_PENDING;
	}
}

/* The failure this side reports next (Failure1 or Failure2). */
static int
fail(struct nvme_dhchap *t, uint8_t rce, const char *why)
{
	t->state = t->is_host ? NVME_DHCHAP_FAILURE2 : NVME_DHCHAP_FAILURE1;
	t->rce = rce;
	t->why = why;
	drop_dh(t);
	OPENSSL_cleanse(t->resp, sizeof(t->resp));
	OPENSSL_cleanse(t->expect, sizeof(t->expect));
	return 0;
}

static int
build_failure(struct nvme_dhchap *t, void *buf, size_t al, uint8_t id)
{
	struct nvme_auth_failure *f = buf;

	if (al < sizeof(*f)) {
		return -ENOBUFS;
	}
	memset(f, 0, sizeof(*f));
	f->hdr.auth_type = NVME_AUTH_TYPE_COMMON;
	f->hdr.auth_id = id;
	f->hdr.t_id = t->t_id;
	f->rc = NVME_AUTH_RC_FAILED;
	f->rce = t->rce;
	t->state = NVME_DHCHAP_FAILED;
	return (int)sizeof(*f);
}

/*
 * The augmented challenge (or the challenge itself with the null group) and
 * the response over it. z: the shared secret (NULL with the null group).
 */
static int
respond(const struct nvme_dhchap *t, const struct nvme_dhchap_secret *secret, const char *nqn,
	const uint8_t *z, const uint8_t *challenge, uint32_t seqnum, enum nvme_dhchap_role role,
	uint8_t *out)
{
	uint8_t key[NVME_AUTH_KEY_MAX], ca[NVME_AUTH_DIGEST_MAX];
	size_t key_len;
	int rc;

	rc = nvme_dhchap_transform(secret, nqn, key, &key_len);
	if (rc == 0 && z != NULL) {
		rc = nvme_dhchap_augment(t->hash, z, nvme_auth_dhgroup_len(t->dhgroup), challenge,
					 ca);
		challenge = ca;
	}
	if (rc == 0) {
		rc = nvme_dhchap_response(t->hash, key, key_len, challenge, seqnum, t->t_id, 0,
					  role, t->p.hostnqn, t->p.subnqn, out);
	}
	OPENSSL_cleanse(key, sizeof(key));
	OPENSSL_cleanse(ca, sizeof(ca));
	return rc;
}

/*
 * Controller.
 */

void
nvme_dhchap_ctrlr_init(struct nvme_dhchap *t, const struct nvme_dhchap_params *p, uint32_t seqnum)
{
	memset(t, 0, sizeof(*t));
	t->p = *p;
	t->state = NVME_DHCHAP_NEGOTIATE;
	t->seq = seqnum != 0 ? seqnum : 1;
}

/* The strongest id in the host's list that is also allowed here, or -1. */
static int
pick(const uint8_t *ids, uint8_t n, uint8_t allowed, int max, int min)
{
	for (int id = max; id >= min; id--) {
		if (!(allowed & (1u << id))) {
			continue;
		}
		for (uint8_t i = 0; i < n; i++) {
			if (ids[i] == id) {
				return id;
			}
		}
	}
	return -1;
}

static int
ctrlr_negotiate(struct nvme_dhchap *t, const void *msg, size_t len)
{
	const struct nvme_auth_negotiate *n = msg;
	const struct nvme_auth_descriptor *d = NULL;
	int hash, group;

	drop_dh(t);
	t->bidir = false;
	if (len < sizeof(*n)) {
		return fail(t, NVME_AUTH_RCE_INCORRECT_PAYLOAD, "short Negotiate");
	}
	t->t_id = n->hdr.t_id;
	if (n->napd == 0 || len < sizeof(*n) + (size_t)n->napd * sizeof(*d)) {
		return fail(t, NVME_AUTH_RCE_INCORRECT_PAYLOAD, "bad descriptor count");
	}
	if (n->sc_c != 0) {
		return fail(t, NVME_AUTH_RCE_SCC_MISMATCH, "secure channel concatenation asked");
	}
	for (uint8_t i = 0; i < n->napd; i++) {
		if (n->descs[i].auth_id == NVME_AUTH_TYPE_DHCHAP) {
			d = &n->descs[i];
			break;
		}
	}
	if (d == NULL) {
		return fail(t, NVME_AUTH_RCE_PROTOCOL_UNUSABLE, "no DH-HMAC-CHAP descriptor");
	}
	if (d->halen > DESC_IDS_MAX || d->dhlen > DESC_IDS_MAX) {
		return fail(t, NVME_AUTH_RCE_INCORRECT_PAYLOAD, "bad descriptor lengths");
	}
	hash = pick(d->hash_ids, d->halen, t->p.digests, NVME_AUTH_HASH_MAX, NVME_AUTH_HASH_SHA256);
	if (hash < 0) {
		return fail(t, NVME_AUTH_RCE_HASH_UNUSABLE, "no digest in common");
	}
	group = pick(d->dhg_ids, d->dhlen, t->p.dhgroups, NVME_AUTH_DHGROUP_MAX,
		     NVME_AUTH_DHGROUP_NULL);
	if (group < 0) {
		return fail(t, NVME_AUTH_RCE_DHGROUP_UNUSABLE, "no DH group in common");
	}
	t->hash = (uint8_t)hash;
	t->dhgroup = (uint8_t)group;
	t->state = NVME_DHCHAP_CHALLENGE;
	return 0;
}

static int
ctrlr_reply(struct nvme_dhchap *t, const void *msg, size_t len)
{
	const struct nvme_dhchap_reply *r = msg;
	size_t hl = nvme_auth_hash_len(t->hash), dl = nvme_auth_dhgroup_len(t->dhgroup);
	uint8_t z[NVME_AUTH_DH_MAX], want[NVME_AUTH_DIGEST_MAX];
	const uint8_t *zp = NULL;
	bool ok;
	int rc;

	if (!is_msg(msg, len, NVME_AUTH_TYPE_DHCHAP, NVME_AUTH_ID_REPLY)) {
		return fail(t, NVME_AUTH_RCE_INCORRECT_MESSAGE, "expected a Reply");
	}
	if (len < sizeof(*r) || r->hdr.t_id != t->t_id || r->hl != hl || r->dhvlen != dl ||
	    len < sizeof(*r) + 2 * hl + dl || r->cvalid > 1 || (r->cvalid && r->seqnum == 0)) {
		return fail(t, NVME_AUTH_RCE_INCORRECT_PAYLOAD, "bad Reply");
	}
	if (t->dh != NULL) {
		if (nvme_dh_derive(t->dh, r->rval + 2 * hl, dl, z, dl) != 0) {
			return fail(t, NVME_AUTH_RCE_INCORRECT_PAYLOAD, "bad DH value");
		}
		zp = z;
	}
	rc = respond(t, &t->p.host_key, t->p.hostnqn, zp, t->chal, t->seq, NVME_DHCHAP_HOST, want);
	ok = rc == 0 && nvme_auth_equal(want, r->rval, hl);
	OPENSSL_cleanse(want, sizeof(want));
	if (ok && r->cvalid) {
		if (t->p.ctrlr_key.len == 0) {
			rc = -ENOKEY;
			ok = false;
		} else {
			rc = respond(t, &t->p.ctrlr_key, t->p.subnqn, zp, r->rval + hl, r->seqnum,
				     NVME_DHCHAP_CTRLR, t->resp);
			ok = rc == 0;
			t->bidir = true;
		}
	}
	OPENSSL_cleanse(z, sizeof(z));
	drop_dh(t);
	if (!ok) {
		return fail(t, NVME_AUTH_RCE_FAILED,
			    rc == -ENOKEY ?
				    "host asked for the controller's response; no controller key" :
			    rc != 0 ? "cannot compute the response" :
				      "wrong response");
	}
	t->state = NVME_DHCHAP_SUCCESS1;
	return 0;
}

int
nvme_dhchap_ctrlr_send(struct nvme_dhchap *t, const void *msg, size_t len)
{
	const struct nvme_auth_header *h = msg;

	if (t->state == NVME_DHCHAP_FAILED) {
		return -EPROTO;
	}
	/* The host gives up: nothing more to say. */
	if (is_msg(msg, len, NVME_AUTH_TYPE_COMMON, NVME_AUTH_ID_FAILURE2)) {
		t->state = NVME_DHCHAP_FAILED;
		t->rce = len >= sizeof(struct nvme_auth_failure) ?
				 ((const struct nvme_auth_failure *)msg)->rce :
				 0;
		t->why = "the host sent Failure2";
		drop_dh(t);
		return 0;
	}
	switch (t->state) {
	case NVME_DHCHAP_NEGOTIATE:
	case NVME_DHCHAP_DONE: /* re-authentication */
		if (!is_msg(msg, len, NVME_AUTH_TYPE_COMMON, NVME_AUTH_ID_NEGOTIATE)) {
			return fail(t, NVME_AUTH_RCE_INCORRECT_MESSAGE, "expected a Negotiate");
		}
		return ctrlr_negotiate(t, msg, len);
	case NVME_DHCHAP_REPLY:
		return ctrlr_reply(t, msg, len);
	case NVME_DHCHAP_SUCCESS2:
		if (!is_msg(msg, len, NVME_AUTH_TYPE_DHCHAP, NVME_AUTH_ID_SUCCESS2)) {
			return fail(t, NVME_AUTH_RCE_INCORRECT_MESSAGE, "expected a Success2");
		}
		if (h->t_id != t->t_id || len < sizeof(struct nvme_dhchap_success2)) {
			return fail(t, NVME_AUTH_RCE_INCORRECT_PAYLOAD, "bad Success2");
		}
		t->state = NVME_DHCHAP_DONE;
		return 0;
	default:
		/* A message is due to the host: it sent out of turn. */
		return fail(t, NVME_AUTH_RCE_INCORRECT_MESSAGE, "message out of order");
	}
}

static int
ctrlr_challenge(struct nvme_dhchap *t, void *buf, size_t al)
{
	struct nvme_dhchap_challenge *c = buf;
	size_t hl = nvme_auth_hash_len(t->hash), dl = nvme_auth_dhgroup_len(t->dhgroup);
	size_t len = sizeof(*c) + hl + dl;

	if (al < len) {
		return -ENOBUFS;
	}
	if (nvme_auth_random(t->chal, hl) != 0) {
		fail(t, NVME_AUTH_RCE_FAILED, "no random numbers");
		return build_failure(t, buf, al, NVME_AUTH_ID_FAILURE1);
	}
	memset(c, 0, sizeof(*c));
	c->hdr.auth_type = NVME_AUTH_TYPE_DHCHAP;
	c->hdr.auth_id = NVME_AUTH_ID_CHALLENGE;
	c->hdr.t_id = t->t_id;
	c->hl = (uint8_t)hl;
	c->hash_id = t->hash;
	c->dhg_id = t->dhgroup;
	c->dhvlen = (uint16_t)dl;
	c->seqnum = t->seq;
	memcpy(c->cval, t->chal, hl);
	if (dl > 0) {
		t->dh = nvme_dh_new(t->dhgroup, NULL, 0);
		if (t->dh == NULL || nvme_dh_public(t->dh, c->cval + hl, dl) != 0) {
			fail(t, NVME_AUTH_RCE_FAILED, "cannot make a DH key");
			return build_failure(t, buf, al, NVME_AUTH_ID_FAILURE1);
		}
	}
	t->state = NVME_DHCHAP_REPLY;
	return (int)len;
}

int
nvme_dhchap_ctrlr_recv(struct nvme_dhchap *t, void *buf, size_t al)
{
	struct nvme_dhchap_success1 *s = buf;
	size_t hl = nvme_auth_hash_len(t->hash);

	switch (t->state) {
	case NVME_DHCHAP_CHALLENGE:
		return ctrlr_challenge(t, buf, al);
	case NVME_DHCHAP_SUCCESS1:
		if (al < sizeof(*s) + hl) {
			return -ENOBUFS;
		}
		memset(s, 0, sizeof(*s) + hl);
		s->hdr.auth_type = NVME_AUTH_TYPE_DHCHAP;
		s->hdr.auth_id = NVME_AUTH_ID_SUCCESS1;
		s->hdr.t_id = t->t_id;
		s->hl = (uint8_t)hl;
		if (t->bidir) {
			s->rvalid = 1;
			memcpy(s->rval, t->resp, hl);
		}
		OPENSSL_cleanse(t->resp, sizeof(t->resp));
		t->state = t->bidir ? NVME_DHCHAP_SUCCESS2 : NVME_DHCHAP_DONE;
		return (int)(sizeof(*s) + hl);
	case NVME_DHCHAP_FAILURE1:
		return build_failure(t, buf, al, NVME_AUTH_ID_FAILURE1);
	case NVME_DHCHAP_NEGOTIATE:
	case NVME_DHCHAP_REPLY:
	case NVME_DHCHAP_SUCCESS2:
		/* The host reads out of turn: it learns so, and the transaction is over. */
		if (al < sizeof(struct nvme_auth_failure)) {
			return -ENOBUFS;
		}
		fail(t, NVME_AUTH_RCE_INCORRECT_MESSAGE, "Receive out of order");
		return build_failure(t, buf, al, NVME_AUTH_ID_FAILURE1);
	default:
		return -EPROTO;
	}
}

bool
nvme_dhchap_ctrlr_costly(const struct nvme_dhchap *t, bool send)
{
	return send ? t->state == NVME_DHCHAP_REPLY : t->state == NVME_DHCHAP_CHALLENGE;
}

void
nvme_dhchap_ctrlr_abort(struct nvme_dhchap *t, const char *why)
{
	if (t->state != NVME_DHCHAP_FAILED) {
		fail(t, NVME_AUTH_RCE_FAILED, why);
	}
}

/*
 * Host.
 */

void
nvme_dhchap_host_init(struct nvme_dhchap *t, const struct nvme_dhchap_params *p, uint16_t t_id,
		      uint32_t seqnum)
{
	memset(t, 0, sizeof(*t));
	t->p = *p;
	t->is_host = true;
	t->state = NVME_DHCHAP_NEGOTIATE;
	t->t_id = t_id;
	t->seq = seqnum != 0 ? seqnum : 1;
	t->bidir = p->ctrlr_key.len > 0;
}

bool
nvme_dhchap_host_receiving(const struct nvme_dhchap *t)
{
	return t->state == NVME_DHCHAP_CHALLENGE || t->state == NVME_DHCHAP_SUCCESS1;
}

static int
host_negotiate(struct nvme_dhchap *t, void *buf, size_t len)
{
	struct nvme_auth_negotiate *n = buf;
	struct nvme_auth_descriptor *d = &n->descs[0];
	size_t size = sizeof(*n) + sizeof(*d);

	if (len < size) {
		return -ENOBUFS;
	}
	memset(n, 0, size);
	n->hdr.auth_type = NVME_AUTH_TYPE_COMMON;
	n->hdr.auth_id = NVME_AUTH_ID_NEGOTIATE;
	n->hdr.t_id = t->t_id;
	n->napd = 1;
	d->auth_id = NVME_AUTH_TYPE_DHCHAP;
	for (int id = NVME_AUTH_HASH_MAX; id >= NVME_AUTH_HASH_SHA256; id--) {
		if (t->p.digests & (1u << id)) {
			d->hash_ids[d->halen++] = (uint8_t)id;
		}
	}
	for (int id = NVME_AUTH_DHGROUP_MAX; id >= NVME_AUTH_DHGROUP_NULL; id--) {
		if (t->p.dhgroups & (1u << id)) {
			d->dhg_ids[d->dhlen++] = (uint8_t)id;
		}
	}
	t->state = NVME_DHCHAP_CHALLENGE;
	return (int)size;
}

static int
host_reply(struct nvme_dhchap *t, void *buf, size_t len)
{
	struct nvme_dhchap_reply *r = buf;
	size_t hl = nvme_auth_hash_len(t->hash), dl = nvme_auth_dhgroup_len(t->dhgroup);
	size_t size = sizeof(*r) + 2 * hl + dl;

	if (len < size) {
		return -ENOBUFS;
	}
	memset(r, 0, size);
	r->hdr.auth_type = NVME_AUTH_TYPE_DHCHAP;
	r->hdr.auth_id = NVME_AUTH_ID_REPLY;
	r->hdr.t_id = t->t_id;
	r->hl = (uint8_t)hl;
	r->dhvlen = (uint16_t)dl;
	memcpy(r->rval, t->resp, hl);
	if (t->bidir) {
		r->cvalid = 1;
		r->seqnum = t->seq;
		memcpy(r->rval + hl, t->chal, hl);
	}
	if (dl > 0 && nvme_dh_public(t->dh, r->rval + 2 * hl, dl) != 0) {
		return -EIO;
	}
	drop_dh(t);
	OPENSSL_cleanse(t->resp, sizeof(t->resp));
	t->state = NVME_DHCHAP_SUCCESS1;
	return (int)size;
}

int
nvme_dhchap_host_next(struct nvme_dhchap *t, void *buf, size_t len)
{
	struct nvme_dhchap_success2 *s = buf;

	switch (t->state) {
	case NVME_DHCHAP_NEGOTIATE:
		return host_negotiate(t, buf, len);
	case NVME_DHCHAP_REPLY:
		return host_reply(t, buf, len);
	case NVME_DHCHAP_SUCCESS2:
		if (len < sizeof(*s)) {
			return -ENOBUFS;
		}
		memset(s, 0, sizeof(*s));
		s->hdr.auth_type = NVME_AUTH_TYPE_DHCHAP;
		s->hdr.auth_id = NVME_AUTH_ID_SUCCESS2;
		s->hdr.t_id = t->t_id;
		t->state = NVME_DHCHAP_DONE;
		return (int)sizeof(*s);
	case NVME_DHCHAP_FAILURE2:
		return build_failure(t, buf, len, NVME_AUTH_ID_FAILURE2);
	default:
		return -EPROTO;
	}
}

static int
host_challenge(struct nvme_dhchap *t, const void *msg, size_t len)
{
	const struct nvme_dhchap_challenge *c = msg;
	uint8_t z[NVME_AUTH_DH_MAX];
	const uint8_t *zp = NULL;
	size_t hl, dl;
	int rc;

	if (!is_msg(msg, len, NVME_AUTH_TYPE_DHCHAP, NVME_AUTH_ID_CHALLENGE)) {
		return fail(t, NVME_AUTH_RCE_INCORRECT_MESSAGE, "expected a Challenge");
	}
	if (len < sizeof(*c) || c->hdr.t_id != t->t_id) {
		return fail(t, NVME_AUTH_RCE_INCORRECT_PAYLOAD, "bad Challenge");
	}
	hl = nvme_auth_hash_len(c->hash_id);
	if (hl == 0 || !(t->p.digests & (1u << c->hash_id))) {
		return fail(t, NVME_AUTH_RCE_HASH_UNUSABLE, "a digest not offered");
	}
	if (c->dhg_id > NVME_AUTH_DHGROUP_MAX || !(t->p.dhgroups & (1u << c->dhg_id))) {
		return fail(t, NVME_AUTH_RCE_DHGROUP_UNUSABLE, "a DH group not offered");
	}
	dl = nvme_auth_dhgroup_len(c->dhg_id);
	if (c->hl != hl || c->dhvlen != dl || len < sizeof(*c) + hl + dl) {
		return fail(t, NVME_AUTH_RCE_INCORRECT_PAYLOAD, "bad Challenge lengths");
	}
	t->hash = c->hash_id;
	t->dhgroup = c->dhg_id;
	if (dl > 0) {
		t->dh = nvme_dh_new(t->dhgroup, NULL, 0);
		if (t->dh == NULL) {
			return fail(t, NVME_AUTH_RCE_FAILED, "cannot make a DH key");
		}
		if (nvme_dh_derive(t->dh, c->cval + hl, dl, z, dl) != 0) {
			return fail(t, NVME_AUTH_RCE_INCORRECT_PAYLOAD, "bad DH value");
		}
		zp = z;
	}
	rc = respond(t, &t->p.host_key, t->p.hostnqn, zp, c->cval, c->seqnum, NVME_DHCHAP_HOST,
		     t->resp);
	if (rc == 0 && t->bidir) {
		rc = nvme_auth_random(t->chal, hl);
		if (rc == 0) {
			rc = respond(t, &t->p.ctrlr_key, t->p.subnqn, zp, t->chal, t->seq,
				     NVME_DHCHAP_CTRLR, t->expect);
		}
	}
	OPENSSL_cleanse(z, sizeof(z));
	if (rc != 0) {
		return fail(t, NVME_AUTH_RCE_FAILED, "cannot compute the response");
	}
	t->state = NVME_DHCHAP_REPLY;
	return 0;
}

int
nvme_dhchap_host_recv(struct nvme_dhchap *t, const void *msg, size_t len)
{
	const struct nvme_dhchap_success1 *s = msg;
	size_t hl = nvme_auth_hash_len(t->hash);

	if (!nvme_dhchap_host_receiving(t)) {
		return -EPROTO;
	}
	if (is_msg(msg, len, NVME_AUTH_TYPE_COMMON, NVME_AUTH_ID_FAILURE1)) {
		t->state = NVME_DHCHAP_FAILED;
		t->rce = len >= sizeof(struct nvme_auth_failure) ?
				 ((const struct nvme_auth_failure *)msg)->rce :
				 0;
		t->why = "the controller sent Failure1";
		drop_dh(t);
		return 0;
	}
	if (t->state == NVME_DHCHAP_CHALLENGE) {
		return host_challenge(t, msg, len);
	}
	if (!is_msg(msg, len, NVME_AUTH_TYPE_DHCHAP, NVME_AUTH_ID_SUCCESS1)) {
		return fail(t, NVME_AUTH_RCE_INCORRECT_MESSAGE, "expected a Success1");
	}
	if (len < sizeof(*s) || s->hdr.t_id != t->t_id || s->hl != hl) {
		return fail(t, NVME_AUTH_RCE_INCORRECT_PAYLOAD, "bad Success1");
	}
	if (!t->bidir) {
		t->state = NVME_DHCHAP_DONE;
		return 0;
	}
	if (!s->rvalid || len < sizeof(*s) + hl || !nvme_auth_equal(s->rval, t->expect, hl)) {
		return fail(t, NVME_AUTH_RCE_FAILED, "wrong controller response");
	}
	OPENSSL_cleanse(t->expect, sizeof(t->expect));
	t->state = NVME_DHCHAP_SUCCESS2;
	return 0;
}
