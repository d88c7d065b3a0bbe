/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef GGA_NVMF_FEAT_H
#define GGA_NVMF_FEAT_H

/*
 * The controller's features that are values and nothing else (NVMe Base
 * 2.0 section 5.27.1): Arbitration (01h), Power Management (02h),
 * Temperature Threshold (04h), Error Recovery (05h) and Write Atomicity
 * Normal (0Ah). Pure: the admin command code (nvmf_ctrlr_admin.c) hands
 * Get/Set Features of these here and the features with side effects
 * (queues, keep alive, events, reservations) stay there.
 *
 * What gga answers, feature by feature:
 *  - Arbitration: round robin only (CAP.AMS 0); AB, LPW, MPW and HPW are
 *    kept as set and change nothing. Default AB 111b (no limit), weights 0.
 *  - Power Management: one power state (NPSS 0), so PS must be 0 (Invalid
 *    Field otherwise); the Workload Hint is kept as set (0..2, others
 *    reserved: Invalid Field). Default 0.
 *  - Temperature Threshold: the Composite Temperature only (TMPSEL 0; 1111b,
 *    all implemented sensors, sets it too; a sensor 1..8 is not implemented:
 *    Invalid Field), over (THSEL 00b) and under (01b) thresholds. Defaults:
 *    over NVMF_TEMP_OVER_DEFAULT_K, under 0.
 *  - Error Recovery: TLER kept as set; DULBE is not supported (NSFEAT bit 2
 *    clear): Invalid Field. Namespace specific as the specification makes it
 *    (the supported capabilities say so); gga keeps one value, since TLER
 *    changes nothing here.
 *  - Write Atomicity Normal: DN kept as set; with AWUN and AWUPF 0 it changes
 *    nothing.
 * None is saveable; "saved" returns the default. Supported capabilities:
 * changeable (bit 2), and namespace specific (bit 1) for Error Recovery.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gga/bdev.h"
#include "gga/nvme_spec.h"

/*
 * The composite temperature gga reports (293 K, 20 C), the warning and
 * critical thresholds of Identify Controller (WCTEMP, CCTEMP) and the
 * default over-threshold, which is WCTEMP as the specification wants it.
 */
#define NVMF_TEMP_K              293
#define NVMF_WCTEMP_K            343
#define NVMF_CCTEMP_K            358
#define NVMF_TEMP_OVER_DEFAULT_K NVMF_WCTEMP_K

struct nvmf_feat {
	uint32_t arbitration;
	uint32_t power_mgmt;
	uint16_t temp_over;
	uint16_t temp_under;
	uint32_t error_recovery;
	uint32_t write_atomicity;
};

/* Returned by nvmf_feat_get/set for a feature this module does not hold. */
#define NVMF_FEAT_NOT_MINE 0xffff

void nvmf_feat_init(struct nvmf_feat *f);

/*
 * Get Features of fid with select sel (0 current, 1 default, 2 saved, 3
 * supported capabilities) and the command's dword 11: 0 with *cdw0 set, a
 * status (NVME_STATUS with DNR), or NVMF_FEAT_NOT_MINE.
 */
uint16_t nvmf_feat_get(const struct nvmf_feat *f, uint8_t fid, uint32_t sel, uint32_t cdw11,
		       uint32_t *cdw0);

/* Set Features of fid with dword 11: 0, a status, or NVMF_FEAT_NOT_MINE. */
uint16_t nvmf_feat_set(struct nvmf_feat *f, uint8_t fid, uint32_t cdw11);

/* Is the composite temperature at or over its over-threshold, or at or under its under-threshold? */
bool nvmf_feat_temp_out_of_range(const struct nvmf_feat *f, uint16_t temp_k);

/*
 * The SMART / Health log (02h) and its asynchronous events, from what the
 * bdevs of the namespaces report (bdev_get_health, bdev_get_iostat). n is
 * the namespaces counted: all of the subsystem's for the controller-wide
 * log (NSID 0 or FFFFFFFFh), one for a namespace's own (LPA bit 0).
 *
 * Critical Warning: bit 0 when a namespace's spare is below its threshold
 * (a gga array that lost more members than it survives), bit 1 when the
 * composite temperature is past a threshold of feature 04h, bit 2 while a
 * bdev is degraded (a gga array with a member lost, stale or rebuilding,
 * or with blocks known lost; a file bdev whose I/O failed), bit 3 while a
 * bdev refuses writes. Available Spare and its threshold are those of the
 * namespace nearest its threshold (100 and 0 with none). Media and Data
 * Integrity Errors sum the bdevs' media errors (blocks a gga bdev could not
 * decode, requests a file bdev's file failed). The command and data unit
 * counters sum the bdevs' own statistics: reads and writes (not Write
 * Zeroes or Dataset Management), data units of 1000 512-byte units
 * rounded up, as the specification counts them.
 */
uint8_t nvmf_smart_warning(const struct nvmf_feat *f, const struct bdev_health *health, size_t n);

/* stats may be NULL (counters 0); power_on_s: the target's uptime; err_count: Error Information entries made. */
void nvmf_smart_fill(struct nvme_smart_log *log, const struct nvmf_feat *f,
		     const struct bdev_health *health, const struct bdev_io_stat *stats, size_t n,
		     uint64_t power_on_s, uint64_t err_count);

/*
 * Whether to send a SMART / Health asynchronous event now, and which: the
 * critical warning bits set in `warning` that AEC enables (its bits 7:0)
 * and that *reported does not hold. While the event type is masked
 * (sent, its log page not read yet) nothing is sent and nothing is marked,
 * so the bits go out once it is unmasked. *reported forgets bits that
 * cleared, so that a warning that comes back is reported again. Returns
 * the event's information (NVME_AER_SMART_*: reliability before spare
 * before temperature) and marks every new bit reported, or -1.
 */
int nvmf_smart_event(uint8_t warning, uint32_t aec, bool masked, uint8_t *reported);

#endif /* GGA_NVMF_FEAT_H */

/*
 * The Commands Supported and Effects log page (05h) of an I/O controller:
 * acs[256] for the admin opcodes, iocs[256] for the NVM command set's, each
 * CSUPP (bit 0) for a command gga executes and LBCC (bit 1) for one that
 * may change logical block content. No command restricts what else may run
 * (CSE 0), none changes capabilities or the namespace inventory. Fabrics
 * commands (7Fh) are not in it (they are not admin or I/O commands).
 */
void nvmf_cmd_effects_fill(uint32_t *acs, uint32_t *iocs);
