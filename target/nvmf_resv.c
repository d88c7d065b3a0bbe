/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe reservations of one namespace: see nvmf_resv.h. Pure: no I/O.
 */
#include <string.h>

#include "gga/nvme_spec.h"

#include "nvmf_resv.h"

/* Sizes of the extended Reservation Status data structure. */
#define RESV_REPORT_HDR 64u
#define RESV_REPORT_REG 64u

void
nvmf_resv_init(struct nvmf_resv *r)
{
	memset(r, 0, sizeof(*r));
}

static int
reg_find(const struct nvmf_resv *r, const uint8_t *hostid)
{
	uint32_t i;

	for (i = 0; i < r->nregs; i++) {
		if (memcmp(r->regs[i].hostid, hostid, NVMF_RESV_HOSTID_LEN) == 0) {
			return (int)i;
		}
	}
	return -1;
}

/* Every registrant holds a reservation of the all-registrants types. */
static bool
all_regs(uint8_t type)
{
	return type == NVMF_RESV_WRITE_EXCLUSIVE_ALL_REGS ||
	       type == NVMF_RESV_EXCLUSIVE_ACCESS_ALL_REGS;
}

bool
nvmf_resv_is_registered(const struct nvmf_resv *r, const uint8_t *hostid)
{
	return reg_find(r, hostid) >= 0;
}

bool
nvmf_resv_is_holder(const struct nvmf_resv *r, const uint8_t *hostid)
{
	if (r->type == NVMF_RESV_NONE || reg_find(r, hostid) < 0) {
		return false;
	}
	return all_regs(r->type) || memcmp(r->holder, hostid, NVMF_RESV_HOSTID_LEN) == 0;
}

static void
release(struct nvmf_resv *r)
{
	r->type = NVMF_RESV_NONE;
	memset(r->holder, 0, sizeof(r->holder));
}

/*
 * Remove registrant i. The reservation goes with its holder, or with the
 * last registrant of an all-registrants type.
 */
static void
reg_remove(struct nvmf_resv *r, uint32_t i)
{
	bool holder = r->type != NVMF_RESV_NONE && !all_regs(r->type) &&
		      memcmp(r->holder, r->regs[i].hostid, NVMF_RESV_HOSTID_LEN) == 0;

	r->regs[i] = r->regs[r->nregs - 1];
	r->nregs--;
	if (holder || (all_regs(r->type) && r->nregs == 0)) {
		release(r);
	}
}

static void
result_preempted(struct nvmf_resv_result *res, const uint8_t *hostid)
{
	if (res != NULL && res->npreempted < NVMF_RESV_MAX_REGS) {
		memcpy(res->preempted[res->npreempted++], hostid, NVMF_RESV_HOSTID_LEN);
	}
}

static void
result_changed(struct nvmf_resv_result *res)
{
	if (res != NULL) {
		res->changed = true;
	}
}

int
nvmf_resv_register(struct nvmf_resv *r, const uint8_t *hostid, uint16_t cntlid, uint32_t rrega,
		   bool iekey, uint32_t cptpl, uint64_t crkey, uint64_t nrkey,
		   struct nvmf_resv_result *res)
{
	int i = reg_find(r, hostid);

	if (res != NULL) {
		memset(res, 0, sizeof(*res));
	}
	if (rrega > NVMF_RESV_REPLACE || cptpl == 1) {
		return NVME_SC_INVALID_FIELD;
	}
	switch (rrega) {
	case NVMF_RESV_REGISTER:
		if (i >= 0) {
			/* Registered already: the same key again is a success, another a conflict. */
			if (r->regs[i].key != nrkey) {
				return NVME_SC_RESERVATION_CONFLICT;
			}
			break;
		}
		if (r->nregs == NVMF_RESV_MAX_REGS) {
			return NVME_SC_CAPACITY_EXCEEDED;
		}
		memcpy(r->regs[r->nregs].hostid, hostid, NVMF_RESV_HOSTID_LEN);
		r->regs[r->nregs].key = nrkey;
		r->regs[r->nregs].cntlid = cntlid;
		r->nregs++;
		r->generation++;
		result_changed(res);
		break;
	case NVMF_RESV_UNREGISTER:
		if (i < 0 || (!iekey && r->regs[i].key != crkey)) {
			return NVME_SC_RESERVATION_CONFLICT;
		}
		reg_remove(r, (uint32_t)i);
		r->generation++;
		result_changed(res);
		break;
	default: /* NVMF_RESV_REPLACE */
		if (i < 0) {
			if (!iekey) {
				return NVME_SC_RESERVATION_CONFLICT;
			}
			/* Ignoring the existing key, a replace registers (SPDK does the same). */
			return nvmf_resv_register(r, hostid, cntlid, NVMF_RESV_REGISTER, false,
						  cptpl, 0, nrkey, res);
		}
		if (!iekey && r->regs[i].key != crkey) {
			return NVME_SC_RESERVATION_CONFLICT;
		}
		r->regs[i].key = nrkey;
		r->generation++;
		result_changed(res);
		break;
	}
	if (cptpl == NVMF_RESV_PTPL_SET || cptpl == NVMF_RESV_PTPL_CLEAR) {
		if (r->ptpl != (cptpl == NVMF_RESV_PTPL_SET)) {
			r->ptpl = cptpl == NVMF_RESV_PTPL_SET;
			result_changed(res);
		}
	}
	return NVME_SC_SUCCESS;
}

/* Unregister every registrant but `self` with key `key`; how many went. */
static uint32_t
preempt_key(struct nvmf_resv *r, const uint8_t *self, uint64_t key, bool any_key,
	    struct nvmf_resv_result *res)
{
	uint32_t i = 0, n = 0;

	while (i < r->nregs) {
		if (memcmp(r->regs[i].hostid, self, NVMF_RESV_HOSTID_LEN) != 0 &&
		    (any_key || r->regs[i].key == key)) {
			result_preempted(res, r->regs[i].hostid);
			reg_remove(r, i);
			n++;
			continue;
		}
		i++;
	}
	return n;
}

static void
take(struct nvmf_resv *r, const uint8_t *hostid, uint32_t rtype)
{
	r->type = (uint8_t)rtype;
	memset(r->holder, 0, sizeof(r->holder));
	if (!all_regs(r->type)) {
		memcpy(r->holder, hostid, NVMF_RESV_HOSTID_LEN);
	}
}

int
nvmf_resv_acquire(struct nvmf_resv *r, const uint8_t *hostid, uint32_t racqa, bool iekey,
		  uint32_t rtype, uint64_t crkey, uint64_t prkey, struct nvmf_resv_result *res)
{
	int i = reg_find(r, hostid), h;
	uint64_t holder_key;

	if (res != NULL) {
		memset(res, 0, sizeof(*res));
	}
	/* IEKEY is for Register only (SPDK and the Linux target refuse it here too). */
	if (racqa > NVMF_RESV_PREEMPT_ABORT || iekey || rtype < NVMF_RESV_WRITE_EXCLUSIVE ||
	    rtype > NVMF_RESV_EXCLUSIVE_ACCESS_ALL_REGS) {
		return NVME_SC_INVALID_FIELD;
	}
	if (i < 0 || r->regs[i].key != crkey) {
		return NVME_SC_RESERVATION_CONFLICT;
	}
	if (racqa == NVMF_RESV_ACQUIRE) {
		if (r->type == NVMF_RESV_NONE) {
			take(r, hostid, rtype);
			result_changed(res);
			return NVME_SC_SUCCESS;
		}
		/* Held already by this host with this type: nothing to do; else a conflict. */
		return nvmf_resv_is_holder(r, hostid) && r->type == rtype ?
			       NVME_SC_SUCCESS :
			       NVME_SC_RESERVATION_CONFLICT;
	}
	/* Preempt (and abort). */
	if (r->type == NVMF_RESV_NONE) {
		/* No reservation: the registrations with that key go, nothing is acquired. */
		if (preempt_key(r, hostid, prkey, false, res) == 0) {
			return NVME_SC_RESERVATION_CONFLICT;
		}
	} else if (all_regs(r->type)) {
		if (prkey == 0) {
			/* Every other registrant goes; this host holds the new reservation. */
			preempt_key(r, hostid, 0, true, res);
			take(r, hostid, rtype);
		} else if (preempt_key(r, hostid, prkey, false, res) == 0) {
			return NVME_SC_RESERVATION_CONFLICT;
		}
	} else {
		h = reg_find(r, r->holder);
		holder_key = h >= 0 ? r->regs[h].key : 0;
		if (h >= 0 && prkey == holder_key) {
			/* The holder is preempted (with every registrant of its key but this host). */
			preempt_key(r, hostid, prkey, false, res);
			take(r, hostid, rtype);
		} else if (prkey == 0 || preempt_key(r, hostid, prkey, false, res) == 0) {
			return prkey == 0 ? NVME_SC_INVALID_FIELD : NVME_SC_RESERVATION_CONFLICT;
		}
	}
	r->generation++;
	result_changed(res);
	return NVME_SC_SUCCESS;
}

int
nvmf_resv_release(struct nvmf_resv *r, const uint8_t *hostid, uint32_t rrela, bool iekey,
		  uint32_t rtype, uint64_t crkey, struct nvmf_resv_result *res)
{
	int i = reg_find(r, hostid);

	if (res != NULL) {
		memset(res, 0, sizeof(*res));
	}
	if (rrela > NVMF_RESV_CLEAR || iekey) {
		return NVME_SC_INVALID_FIELD;
	}
	if (i < 0 || r->regs[i].key != crkey) {
		return NVME_SC_RESERVATION_CONFLICT;
	}
	if (rrela == NVMF_RESV_CLEAR) {
		r->nregs = 0;
		release(r);
		r->generation++;
		result_changed(res);
		return NVME_SC_SUCCESS;
	}
	if (r->type == NVMF_RESV_NONE || !nvmf_resv_is_holder(r, hostid)) {
		/* Nothing this host holds: a success that changes nothing. */
		return NVME_SC_SUCCESS;
	}
	if (rtype != r->type) {
		return NVME_SC_INVALID_FIELD;
	}
	release(r);
	result_changed(res);
	return NVME_SC_SUCCESS;
}

size_t
nvmf_resv_report_len(const struct nvmf_resv *r)
{
	return RESV_REPORT_HDR + (size_t)r->nregs * RESV_REPORT_REG;
}

static void
put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void
put_le32(uint8_t *p, uint32_t v)
{
	put_le16(p, (uint16_t)v);
	put_le16(p + 2, (uint16_t)(v >> 16));
}

static void
put_le64(uint8_t *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32(p + 4, (uint32_t)(v >> 32));
}

int
nvmf_resv_report(const struct nvmf_resv *r, bool eds, uint8_t *buf, size_t len)
{
	uint8_t full[RESV_REPORT_HDR + NVMF_RESV_MAX_REGS * RESV_REPORT_REG];
	const struct nvmf_resv_reg *reg;
	uint8_t *e;
	uint32_t i;

	if (!eds) {
		return NVME_SC_HOSTID_INCONSISTENT_FORMAT;
	}
	memset(full, 0, sizeof(full));
	/* Header: GEN (0..3), RTYPE (4), REGCTL (5..6), PTPLS (9). */
	put_le32(full, r->generation);
	full[4] = r->type;
	put_le16(full + 5, (uint16_t)r->nregs);
	full[9] = r->ptpl ? 1 : 0;
	for (i = 0; i < r->nregs; i++) {
		reg = &r->regs[i];
		e = full + RESV_REPORT_HDR + (size_t)i * RESV_REPORT_REG;
		/* CNTLID (0..1), RCSTS (2: bit 0 holds the reservation), RKEY (8..15), HOSTID (16..31). */
		put_le16(e, reg->cntlid);
		e[2] = nvmf_resv_is_holder(r, reg->hostid) ? 1 : 0;
		put_le64(e + 8, reg->key);
		memcpy(e + 16, reg->hostid, NVMF_RESV_HOSTID_LEN);
	}
	memcpy(buf, full, len < nvmf_resv_report_len(r) ? len : nvmf_resv_report_len(r));
	if (len > nvmf_resv_report_len(r)) {
		memset(buf + nvmf_resv_report_len(r), 0, len - nvmf_resv_report_len(r));
	}
	return NVME_SC_SUCCESS;
}

int
nvmf_resv_check(const struct nvmf_resv *r, const uint8_t *hostid, bool write)
{
	bool registered;

	if (r->type == NVMF_RESV_NONE || nvmf_resv_is_holder(r, hostid)) {
		return NVME_SC_SUCCESS;
	}
	registered = nvmf_resv_is_registered(r, hostid);
	switch (r->type) {
	case NVMF_RESV_WRITE_EXCLUSIVE:
		return write ? NVME_SC_RESERVATION_CONFLICT : NVME_SC_SUCCESS;
	case NVMF_RESV_EXCLUSIVE_ACCESS:
		return NVME_SC_RESERVATION_CONFLICT;
	case NVMF_RESV_WRITE_EXCLUSIVE_REG_ONLY:
	case NVMF_RESV_WRITE_EXCLUSIVE_ALL_REGS:
		return registered || !write ? NVME_SC_SUCCESS : NVME_SC_RESERVATION_CONFLICT;
	default: /* the exclusive access types of registrants */
		return registered ? NVME_SC_SUCCESS : NVME_SC_RESERVATION_CONFLICT;
	}
}
