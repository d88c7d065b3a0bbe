/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe reservations of one namespace as a pure module: the registrants
 * (host identifier, key), the reservation (type, holder) and the
 * generation, and every decision the Reservation Register, Acquire, Release
 * and Report commands and the access check of I/O commands make. No I/O,
 * no thread, no allocation: the target feeds it commands and carries out
 * what it returns (abort the commands of preempted hosts, persist the state
 * when persist through power loss is on), the way gga_lifecycle.c serves
 * the gga bdev. Facts (actions, types, the access table, the report's
 * layout) are from the NVM Express Base Specification, "Reservations".
 */
#ifndef GGA_NVMF_RESV_H
#define GGA_NVMF_RESV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Registrants one namespace keeps (SPDK keeps as many as hosts connect). A
 * model checker that uses this module as its members may build it smaller.
 */
#ifndef NVMF_RESV_MAX_REGS
#define NVMF_RESV_MAX_REGS 32
#endif
#define NVMF_RESV_HOSTID_LEN 16

enum nvmf_resv_type {
	NVMF_RESV_NONE = 0,
	NVMF_RESV_WRITE_EXCLUSIVE = 1,
	NVMF_RESV_EXCLUSIVE_ACCESS = 2,
	NVMF_RESV_WRITE_EXCLUSIVE_REG_ONLY = 3,
	NVMF_RESV_EXCLUSIVE_ACCESS_REG_ONLY = 4,
	NVMF_RESV_WRITE_EXCLUSIVE_ALL_REGS = 5,
	NVMF_RESV_EXCLUSIVE_ACCESS_ALL_REGS = 6,
};

/* Reservation Register Action (RREGA, CDW10 bits 2:0). */
enum nvmf_resv_register_action {
	NVMF_RESV_REGISTER = 0,
	NVMF_RESV_UNREGISTER = 1,
	NVMF_RESV_REPLACE = 2,
};

/* Reservation Acquire Action (RACQA, CDW10 bits 2:0). */
enum nvmf_resv_acquire_action {
	NVMF_RESV_ACQUIRE = 0,
	NVMF_RESV_PREEMPT = 1,
	NVMF_RESV_PREEMPT_ABORT = 2,
};

/* Reservation Release Action (RRELA, CDW10 bits 2:0). */
enum nvmf_resv_release_action {
	NVMF_RESV_RELEASE = 0,
	NVMF_RESV_CLEAR = 1,
};

/* Change Persist Through Power Loss State (CPTPL, Register CDW10 bits 31:30). */
enum nvmf_resv_cptpl {
	NVMF_RESV_PTPL_NO_CHANGE = 0,
	NVMF_RESV_PTPL_CLEAR = 2,
	NVMF_RESV_PTPL_SET = 3,
};

struct nvmf_resv_reg {
	uint8_t hostid[NVMF_RESV_HOSTID_LEN];
	uint64_t key;
	uint16_t cntlid; /* the controller it registered through (report only) */
};

struct nvmf_resv {
	uint32_t generation; /* PRGEN */
	uint8_t type;        /* enum nvmf_resv_type; NONE: no reservation */
	/* The holder, for the types with one (not the all-registrants types). */
	uint8_t holder[NVMF_RESV_HOSTID_LEN];
	bool ptpl; /* persist through power loss */
	uint32_t nregs;
	struct nvmf_resv_reg regs[NVMF_RESV_MAX_REGS];
};

/*
 * What a command changed, for the caller to carry out: `changed` when the
 * state differs (persist it if ptpl), `preempted` the hosts whose
 * registration a preempt removed (abort their commands on preempt-and-abort).
 */
struct nvmf_resv_result {
	bool changed;
	uint32_t npreempted;
	uint8_t preempted[NVMF_RESV_MAX_REGS][NVMF_RESV_HOSTID_LEN];
};

void nvmf_resv_init(struct nvmf_resv *r);

/*
 * The commands. Each returns an NVMe generic status code (SCT 0):
 * NVME_SC_SUCCESS, NVME_SC_RESERVATION_CONFLICT, NVME_SC_INVALID_FIELD, or
 * NVME_SC_CAPACITY_EXCEEDED when no registrant can be added. `res` may be NULL.
 */
int nvmf_resv_register(struct nvmf_resv *r, const uint8_t *hostid, uint16_t cntlid, uint32_t rrega,
		       bool iekey, uint32_t cptpl, uint64_t crkey, uint64_t nrkey,
		       struct nvmf_resv_result *res);
int nvmf_resv_acquire(struct nvmf_resv *r, const uint8_t *hostid, uint32_t racqa, bool iekey,
		      uint32_t rtype, uint64_t crkey, uint64_t prkey, struct nvmf_resv_result *res);
int nvmf_resv_release(struct nvmf_resv *r, const uint8_t *hostid, uint32_t rrela, bool iekey,
		      uint32_t rtype, uint64_t crkey, struct nvmf_resv_result *res);

/*
 * Reservation Report into buf (len bytes, the rest of what would not fit
 * left out): the extended data structure (64-byte header, 64 bytes per
 * registrant, 128-bit host identifiers). `eds` false: the host asked for the
 * 64-bit identifiers, which an NVMe-oF host cannot have:
 * NVME_SC_HOSTID_INCONSISTENT_FORMAT. `hostid` marks the holder's entry.
 */
int nvmf_resv_report(const struct nvmf_resv *r, bool eds, uint8_t *buf, size_t len);

/* Bytes of the extended report of `r`. */
size_t nvmf_resv_report_len(const struct nvmf_resv *r);

/*
 * May `hostid` run a command that reads (write false) or writes the
 * namespace? NVME_SC_SUCCESS or NVME_SC_RESERVATION_CONFLICT, per the
 * type's access table.
 */
int nvmf_resv_check(const struct nvmf_resv *r, const uint8_t *hostid, bool write);

/* Is `hostid` registered; does it hold the reservation? */
bool nvmf_resv_is_registered(const struct nvmf_resv *r, const uint8_t *hostid);
bool nvmf_resv_is_holder(const struct nvmf_resv *r, const uint8_t *hostid);

#endif /* GGA_NVMF_RESV_H */
