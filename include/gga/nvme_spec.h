/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVMe wire definitions shared by the NVMe-oF target (target/) and host
 * (initiator/): submission and completion queue entries, SGL descriptors,
 * opcodes, status codes, controller properties, Identify data, log pages,
 * features and the Fabrics commands (NVMe Base 1.4/2.0, NVMe-oF 1.1).
 *
 * These are the shared wire definitions: both sides use them as they are.
 * Add definitions additively; never change an existing layout or value.
 *
 * All multi-byte fields are little-endian on the wire. gga builds only for
 * little-endian hosts (checked below), so the structures are read and written
 * directly. No library owns the nvme_/NVME_ prefix.
 */
#ifndef GGA_NVME_SPEC_H
#define GGA_NVME_SPEC_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gga's NVMe wire structures assume a little-endian host"
#endif

/* ------------------------------------------------------------------------ */
/* Well-known names and sizes                                               */
/* ------------------------------------------------------------------------ */

#define NVME_DISCOVERY_NQN "nqn.2014-08.org.nvmexpress.discovery"
/* NQNs are at most 223 bytes; the fields that carry them are 256 bytes. */
#define NVME_NQN_MAX_LEN   223
#define NVME_NQN_FIELD_LEN 256
#define NVME_SN_LEN        20
#define NVME_MN_LEN        40
#define NVME_FR_LEN        8

#define NVME_SQE_SIZE           64
#define NVME_CQE_SIZE           16
#define NVME_IDENTIFY_DATA_SIZE 4096
#define NVME_CONNECT_DATA_SIZE  1024

/* Controller ids 0xfff0..0xffff are reserved; 0xffff in Connect = "any" (dynamic model). */
#define NVME_CNTLID_MIN     0x0001
#define NVME_CNTLID_MAX     0xffef
#define NVME_CNTLID_DYNAMIC 0xffff

#define NVME_NSID_ALL 0xffffffffu

/* ------------------------------------------------------------------------ */
/* SGL descriptors                                                          */
/* ------------------------------------------------------------------------ */

/* SGL descriptor type (high nibble of byte 15). */
enum nvme_sgl_type {
	NVME_SGL_TYPE_DATA_BLOCK = 0x0,
	NVME_SGL_TYPE_BIT_BUCKET = 0x1,
	NVME_SGL_TYPE_SEGMENT = 0x2,
	NVME_SGL_TYPE_LAST_SEGMENT = 0x3,
	NVME_SGL_TYPE_KEYED_DATA_BLOCK = 0x4,
	NVME_SGL_TYPE_TRANSPORT_DATA_BLOCK = 0x5,
	NVME_SGL_TYPE_VENDOR_SPECIFIC = 0xf,
};

/* SGL descriptor sub type (low nibble of byte 15). */
enum nvme_sgl_subtype {
	NVME_SGL_SUBTYPE_ADDRESS = 0x0,
	NVME_SGL_SUBTYPE_OFFSET = 0x1,
	NVME_SGL_SUBTYPE_TRANSPORT = 0xa,
	NVME_SGL_SUBTYPE_INVALIDATE_KEY = 0xf,
};

#define NVME_SGL_ID(type, subtype) ((uint8_t)(((type) << 4) | ((subtype)&0xf)))
#define NVME_SGL_ID_TYPE(id)       ((uint8_t)((id) >> 4))
#define NVME_SGL_ID_SUBTYPE(id)    ((uint8_t)((id)&0xf))

/*
 * The identifiers fabrics use:
 * - NVMe/TCP in-capsule data: data block, offset (address = offset into the
 *   in-capsule data, relative to the capsule's data area).
 * - NVMe/TCP data moved by R2T/H2CData/C2HData: transport data block,
 *   transport specific (address 0).
 * - NVMe/RDMA: keyed data block, address (or invalidate key).
 */
#define NVME_SGL_ID_INCAPSULE NVME_SGL_ID(NVME_SGL_TYPE_DATA_BLOCK, NVME_SGL_SUBTYPE_OFFSET)
#define NVME_SGL_ID_TRANSPORT \
	NVME_SGL_ID(NVME_SGL_TYPE_TRANSPORT_DATA_BLOCK, NVME_SGL_SUBTYPE_TRANSPORT)
#define NVME_SGL_ID_KEYED NVME_SGL_ID(NVME_SGL_TYPE_KEYED_DATA_BLOCK, NVME_SGL_SUBTYPE_ADDRESS)
#define NVME_SGL_ID_KEYED_INVALIDATE \
	NVME_SGL_ID(NVME_SGL_TYPE_KEYED_DATA_BLOCK, NVME_SGL_SUBTYPE_INVALIDATE_KEY)

/*
 * A 16-byte SGL descriptor. Unkeyed form: address(8) length(4) rsvd(3) id(1).
 * Keyed form: address(8) length(3) key(4) id(1); the keyed length and key are
 * not naturally aligned, so use the accessors below.
 */
struct nvme_sgl_desc {
	uint64_t address;
	union {
		struct {
			uint32_t length;
			uint8_t rsvd[3];
			uint8_t id;
		} unkeyed;
		struct {
			uint8_t length[3];
			uint8_t key[4];
			uint8_t id;
		} keyed;
		uint8_t raw[8];
	};
};
static_assert(sizeof(struct nvme_sgl_desc) == 16, "SGL descriptor is 16 bytes");

static inline uint8_t
nvme_sgl_id(const struct nvme_sgl_desc *sgl)
{
	return sgl->raw[7];
}

static inline uint32_t
nvme_sgl_keyed_length(const struct nvme_sgl_desc *sgl)
{
	return (uint32_t)sgl->keyed.length[0] | (uint32_t)sgl->keyed.length[1] << 8 |
	       (uint32_t)sgl->keyed.length[2] << 16;
}

static inline uint32_t
nvme_sgl_keyed_key(const struct nvme_sgl_desc *sgl)
{
	uint32_t key;

	memcpy(&key, sgl->keyed.key, sizeof(key));
	return key;
}

static inline void
nvme_sgl_set_keyed(struct nvme_sgl_desc *sgl, uint64_t addr, uint32_t length, uint32_t key,
		   uint8_t id)
{
	sgl->address = addr;
	sgl->keyed.length[0] = (uint8_t)length;
	sgl->keyed.length[1] = (uint8_t)(length >> 8);
	sgl->keyed.length[2] = (uint8_t)(length >> 16);
	memcpy(sgl->keyed.key, &key, sizeof(key));
	sgl->keyed.id = id;
}

static inline void
nvme_sgl_set_unkeyed(struct nvme_sgl_desc *sgl, uint64_t addr, uint32_t length, uint8_t id)
{
	sgl->address = addr;
	sgl->unkeyed.length = length;
	memset(sgl->unkeyed.rsvd, 0, sizeof(sgl->unkeyed.rsvd));
	sgl->unkeyed.id = id;
}

/* ------------------------------------------------------------------------ */
/* Submission and completion queue entries                                  */
/* ------------------------------------------------------------------------ */

/* Command dword 0, byte 1: FUSE in bits 1:0, PSDT in bits 7:6. */
#define NVME_CMD_FUSE_MASK  0x03
#define NVME_CMD_PSDT_SHIFT 6
#define NVME_CMD_PSDT_MASK  0xc0
enum nvme_psdt {
	NVME_PSDT_PRP = 0x0,
	NVME_PSDT_SGL_MPTR_CONTIG = 0x1, /* fabrics commands use this */
	NVME_PSDT_SGL_MPTR_SGL = 0x2,
};
#define NVME_CMD_FLAGS_SGL ((uint8_t)(NVME_PSDT_SGL_MPTR_CONTIG << NVME_CMD_PSDT_SHIFT))

/* The 64-byte submission queue entry (common command format). */
struct nvme_cmd {
	uint8_t opc;
	uint8_t flags; /* FUSE 1:0, PSDT 7:6 */
	uint16_t cid;
	uint32_t nsid;
	uint32_t cdw2;
	uint32_t cdw3;
	uint64_t mptr;
	union {
		struct {
			uint64_t prp1;
			uint64_t prp2;
		} prp;
		struct nvme_sgl_desc sgl1;
	} dptr;
	uint32_t cdw10;
	uint32_t cdw11;
	uint32_t cdw12;
	uint32_t cdw13;
	uint32_t cdw14;
	uint32_t cdw15;
};
static_assert(sizeof(struct nvme_cmd) == NVME_SQE_SIZE, "SQE is 64 bytes");
static_assert(offsetof(struct nvme_cmd, nsid) == 4, "nsid offset");
static_assert(offsetof(struct nvme_cmd, mptr) == 16, "mptr offset");
static_assert(offsetof(struct nvme_cmd, dptr) == 24, "dptr offset");
static_assert(offsetof(struct nvme_cmd, cdw10) == 40, "cdw10 offset");

/*
 * Completion status field (CQE bytes 14-15): P bit 0, SC bits 8:1, SCT bits
 * 11:9, CRD bits 13:12, M bit 14, DNR bit 15. A "status" in gga code is this
 * 16-bit field with the phase bit clear.
 */
#define NVME_STATUS_P         0x0001
#define NVME_STATUS_SC_SHIFT  1
#define NVME_STATUS_SC_MASK   0xff
#define NVME_STATUS_SCT_SHIFT 9
#define NVME_STATUS_SCT_MASK  0x7
#define NVME_STATUS_CRD_SHIFT 12
#define NVME_STATUS_CRD_MASK  0x3
#define NVME_STATUS_M         0x4000
#define NVME_STATUS_DNR       0x8000

#define NVME_STATUS(sct, sc)                                     \
	((uint16_t)(((uint16_t)(sct) << NVME_STATUS_SCT_SHIFT) | \
		    ((uint16_t)(sc) << NVME_STATUS_SC_SHIFT)))
#define NVME_STATUS_GET_SC(st)     ((uint8_t)(((st) >> NVME_STATUS_SC_SHIFT) & NVME_STATUS_SC_MASK))
#define NVME_STATUS_GET_SCT(st)    ((uint8_t)(((st) >> NVME_STATUS_SCT_SHIFT) & NVME_STATUS_SCT_MASK))
/* True when status (phase bit ignored) says success. */
#define NVME_STATUS_IS_SUCCESS(st) (((st)&0x0ffe) == 0)

/* The 16-byte completion queue entry. */
struct nvme_cpl {
	uint32_t cdw0; /* command specific */
	uint32_t cdw1; /* command specific (Property Get: high 32 bits) */
	uint16_t sqhd;
	uint16_t sqid;
	uint16_t cid;
	uint16_t status;
};
static_assert(sizeof(struct nvme_cpl) == NVME_CQE_SIZE, "CQE is 16 bytes");
static_assert(offsetof(struct nvme_cpl, cid) == 12, "cid offset");
static_assert(offsetof(struct nvme_cpl, status) == 14, "status offset");

/* ------------------------------------------------------------------------ */
/* Opcodes                                                                  */
/* ------------------------------------------------------------------------ */

enum nvme_admin_opcode {
	NVME_OPC_DELETE_IO_SQ = 0x00,
	NVME_OPC_CREATE_IO_SQ = 0x01,
	NVME_OPC_GET_LOG_PAGE = 0x02,
	NVME_OPC_DELETE_IO_CQ = 0x04,
	NVME_OPC_CREATE_IO_CQ = 0x05,
	NVME_OPC_IDENTIFY = 0x06,
	NVME_OPC_ABORT = 0x08,
	NVME_OPC_SET_FEATURES = 0x09,
	NVME_OPC_GET_FEATURES = 0x0a,
	NVME_OPC_ASYNC_EVENT_REQUEST = 0x0c,
	NVME_OPC_NS_MANAGEMENT = 0x0d,
	NVME_OPC_FIRMWARE_COMMIT = 0x10,
	NVME_OPC_FIRMWARE_DOWNLOAD = 0x11,
	NVME_OPC_NS_ATTACHMENT = 0x15,
	NVME_OPC_KEEP_ALIVE = 0x18,
	NVME_OPC_DIRECTIVE_SEND = 0x19,
	NVME_OPC_DIRECTIVE_RECEIVE = 0x1a,
	NVME_OPC_DOORBELL_BUFFER_CONFIG = 0x7c,
	NVME_OPC_FABRICS = 0x7f, /* admin and I/O queues */
	NVME_OPC_FORMAT_NVM = 0x80,
	NVME_OPC_SECURITY_SEND = 0x81,
	NVME_OPC_SECURITY_RECEIVE = 0x82,
	NVME_OPC_SANITIZE = 0x84,
};

enum nvme_nvm_opcode {
	NVME_OPC_FLUSH = 0x00,
	NVME_OPC_WRITE = 0x01,
	NVME_OPC_READ = 0x02,
	NVME_OPC_WRITE_UNCORRECTABLE = 0x04,
	NVME_OPC_COMPARE = 0x05,
	NVME_OPC_WRITE_ZEROES = 0x08,
	NVME_OPC_DATASET_MANAGEMENT = 0x09,
	NVME_OPC_VERIFY = 0x0c,
	NVME_OPC_RESERVATION_REGISTER = 0x0d,
	NVME_OPC_RESERVATION_REPORT = 0x0e,
	NVME_OPC_RESERVATION_ACQUIRE = 0x11,
	NVME_OPC_RESERVATION_RELEASE = 0x15,
};

/* Data transfer direction: bits 1:0 of the opcode. */
enum nvme_data_xfer {
	NVME_XFER_NONE = 0x0,
	NVME_XFER_HOST_TO_CTRLR = 0x1,
	NVME_XFER_CTRLR_TO_HOST = 0x2,
	NVME_XFER_BIDIRECTIONAL = 0x3,
};

static inline enum nvme_data_xfer
nvme_opc_data_xfer(uint8_t opc)
{
	return (enum nvme_data_xfer)(opc & 0x3);
}

/* Fabrics command type (byte 4 of a Fabrics command). */
enum nvme_fabrics_fctype {
	NVME_FCTYPE_PROPERTY_SET = 0x00,
	NVME_FCTYPE_CONNECT = 0x01,
	NVME_FCTYPE_PROPERTY_GET = 0x04,
	NVME_FCTYPE_AUTH_SEND = 0x05,
	NVME_FCTYPE_AUTH_RECV = 0x06,
	NVME_FCTYPE_DISCONNECT = 0x08,
};

/* ------------------------------------------------------------------------ */
/* Status codes                                                             */
/* ------------------------------------------------------------------------ */

enum nvme_status_code_type {
	NVME_SCT_GENERIC = 0x0,
	NVME_SCT_COMMAND_SPECIFIC = 0x1,
	NVME_SCT_MEDIA_ERROR = 0x2,
	NVME_SCT_PATH = 0x3,
	NVME_SCT_VENDOR_SPECIFIC = 0x7,
};

enum nvme_generic_status {
	NVME_SC_SUCCESS = 0x00,
	NVME_SC_INVALID_OPCODE = 0x01,
	NVME_SC_INVALID_FIELD = 0x02,
	NVME_SC_COMMAND_ID_CONFLICT = 0x03,
	NVME_SC_DATA_TRANSFER_ERROR = 0x04,
	NVME_SC_ABORTED_POWER_LOSS = 0x05,
	NVME_SC_INTERNAL_DEVICE_ERROR = 0x06,
	NVME_SC_ABORTED_BY_REQUEST = 0x07,
	NVME_SC_ABORTED_SQ_DELETION = 0x08,
	NVME_SC_ABORTED_FAILED_FUSED = 0x09,
	NVME_SC_ABORTED_MISSING_FUSED = 0x0a,
	NVME_SC_INVALID_NAMESPACE_OR_FORMAT = 0x0b,
	NVME_SC_COMMAND_SEQUENCE_ERROR = 0x0c,
	NVME_SC_INVALID_SGL_SEG_DESCRIPTOR = 0x0d,
	NVME_SC_INVALID_NUM_SGL_DESCRIPTORS = 0x0e,
	NVME_SC_DATA_SGL_LENGTH_INVALID = 0x0f,
	NVME_SC_METADATA_SGL_LENGTH_INVALID = 0x10,
	NVME_SC_SGL_DESCRIPTOR_TYPE_INVALID = 0x11,
	NVME_SC_INVALID_CONTROLLER_MEM_BUF = 0x12,
	NVME_SC_INVALID_PRP_OFFSET = 0x13,
	NVME_SC_ATOMIC_WRITE_UNIT_EXCEEDED = 0x14,
	NVME_SC_OPERATION_DENIED = 0x15,
	NVME_SC_INVALID_SGL_OFFSET = 0x16,
	NVME_SC_HOSTID_INCONSISTENT_FORMAT = 0x18,
	NVME_SC_KEEP_ALIVE_EXPIRED = 0x19,
	NVME_SC_KEEP_ALIVE_INVALID = 0x1a,
	NVME_SC_ABORTED_PREEMPT = 0x1b,
	NVME_SC_SANITIZE_FAILED = 0x1c,
	NVME_SC_SANITIZE_IN_PROGRESS = 0x1d,
	NVME_SC_SGL_DATA_BLOCK_GRANULARITY_INVALID = 0x1e,
	NVME_SC_COMMAND_INVALID_IN_CMB = 0x1f,
	NVME_SC_NAMESPACE_IS_WRITE_PROTECTED = 0x20,
	NVME_SC_COMMAND_INTERRUPTED = 0x21,
	NVME_SC_TRANSIENT_TRANSPORT_ERROR = 0x22,

	/* NVM command set generic status values. */
	NVME_SC_LBA_OUT_OF_RANGE = 0x80,
	NVME_SC_CAPACITY_EXCEEDED = 0x81,
	NVME_SC_NAMESPACE_NOT_READY = 0x82,
	NVME_SC_RESERVATION_CONFLICT = 0x83,
	NVME_SC_FORMAT_IN_PROGRESS = 0x84,
};

enum nvme_command_specific_status {
	NVME_SC_COMPLETION_QUEUE_INVALID = 0x00,
	NVME_SC_INVALID_QUEUE_IDENTIFIER = 0x01,
	NVME_SC_INVALID_QUEUE_SIZE = 0x02,
	NVME_SC_ABORT_COMMAND_LIMIT_EXCEEDED = 0x03,
	NVME_SC_ASYNC_EVENT_REQUEST_LIMIT_EXCEEDED = 0x05,
	NVME_SC_INVALID_FIRMWARE_SLOT = 0x06,
	NVME_SC_INVALID_FIRMWARE_IMAGE = 0x07,
	NVME_SC_INVALID_INTERRUPT_VECTOR = 0x08,
	NVME_SC_INVALID_LOG_PAGE = 0x09,
	NVME_SC_INVALID_FORMAT = 0x0a,
	NVME_SC_INVALID_QUEUE_DELETION = 0x0c,
	NVME_SC_FEATURE_ID_NOT_SAVEABLE = 0x0d,
	NVME_SC_FEATURE_NOT_CHANGEABLE = 0x0e,
	NVME_SC_FEATURE_NOT_NAMESPACE_SPECIFIC = 0x0f,
	NVME_SC_NAMESPACE_ID_UNAVAILABLE = 0x16,
	NVME_SC_NAMESPACE_NOT_ATTACHED = 0x1a,

	/* Fabrics command specific values. */
	NVME_SC_CONNECT_INCOMPATIBLE_FORMAT = 0x80,
	NVME_SC_CONNECT_CONTROLLER_BUSY = 0x81,
	NVME_SC_CONNECT_INVALID_PARAMETERS = 0x82,
	NVME_SC_CONNECT_RESTART_DISCOVERY = 0x83,
	NVME_SC_CONNECT_INVALID_HOST = 0x84,
	NVME_SC_DISCOVERY_RESTART = 0x90,
	NVME_SC_AUTH_REQUIRED = 0x91,

	/* NVM command set command specific values. */
	NVME_SC_CONFLICTING_ATTRIBUTES = 0x80,
	NVME_SC_INVALID_PROTECTION_INFO = 0x81,
	NVME_SC_ATTEMPTED_WRITE_TO_RO_RANGE = 0x82,
};

enum nvme_media_error_status {
	NVME_SC_WRITE_FAULTS = 0x80,
	NVME_SC_UNRECOVERED_READ_ERROR = 0x81,
	NVME_SC_GUARD_CHECK_ERROR = 0x82,
	NVME_SC_APPLICATION_TAG_CHECK_ERROR = 0x83,
	NVME_SC_REFERENCE_TAG_CHECK_ERROR = 0x84,
	NVME_SC_COMPARE_FAILURE = 0x85,
	NVME_SC_ACCESS_DENIED = 0x86,
	NVME_SC_DEALLOCATED_OR_UNWRITTEN_BLOCK = 0x87,
};

enum nvme_path_status {
	NVME_SC_INTERNAL_PATH_ERROR = 0x00,
	NVME_SC_ANA_PERSISTENT_LOSS = 0x01,
	NVME_SC_ANA_INACCESSIBLE = 0x02,
	NVME_SC_ANA_TRANSITION = 0x03,
	NVME_SC_CONTROLLER_PATH_ERROR = 0x60,
	NVME_SC_HOST_PATH_ERROR = 0x70,
	NVME_SC_ABORTED_BY_HOST = 0x71,
};

/*
 * Connect completion dword 0: on success CNTLID (15:0) and AUTHREQ (31:16);
 * on Connect Invalid Parameters, IATTR (byte 0, bit 0: 0 = the bad parameter
 * is in the command, 1 = in the Connect data) and IPO (bytes 3:2, its byte
 * offset).
 */
#define NVME_CONNECT_IATTR_CMD                 0
#define NVME_CONNECT_IATTR_DATA                1
#define NVME_CONNECT_INVALID_PARAM(iattr, ipo) ((uint32_t)(iattr) | ((uint32_t)(ipo) << 16))

/* ------------------------------------------------------------------------ */
/* Controller registers (properties over fabrics)                           */
/* ------------------------------------------------------------------------ */

enum nvme_property_offset {
	NVME_REG_CAP = 0x00, /* 8 bytes */
	NVME_REG_VS = 0x08,  /* 4 bytes */
	NVME_REG_INTMS = 0x0c,
	NVME_REG_INTMC = 0x10,
	NVME_REG_CC = 0x14,   /* 4 bytes */
	NVME_REG_CSTS = 0x1c, /* 4 bytes */
	NVME_REG_NSSR = 0x20,
	NVME_REG_AQA = 0x24,
	NVME_REG_ASQ = 0x28,
	NVME_REG_ACQ = 0x30,
	NVME_REG_CMBLOC = 0x38,
	NVME_REG_CMBSZ = 0x3c,
};

/* CAP */
#define NVME_CAP_MQES_MASK    0xffffull /* 0-based max queue entries */
#define NVME_CAP_CQR          (1ull << 16)
#define NVME_CAP_AMS_SHIFT    17
#define NVME_CAP_TO_SHIFT     24 /* units of 500 ms */
#define NVME_CAP_TO_MASK      0xffull
#define NVME_CAP_DSTRD_SHIFT  32
#define NVME_CAP_NSSRS        (1ull << 36)
#define NVME_CAP_CSS_SHIFT    37
#define NVME_CAP_CSS_NVM      (1ull << NVME_CAP_CSS_SHIFT)
#define NVME_CAP_CSS_NOIO     (1ull << (NVME_CAP_CSS_SHIFT + 7))
#define NVME_CAP_MPSMIN_SHIFT 48
#define NVME_CAP_MPSMAX_SHIFT 52
#define NVME_CAP_MQES(cap)    ((uint32_t)((cap)&NVME_CAP_MQES_MASK))
#define NVME_CAP_TO(cap)      ((uint32_t)(((cap) >> NVME_CAP_TO_SHIFT) & NVME_CAP_TO_MASK))

/* VS */
#define NVME_VS(mjr, mnr, ter) ((uint32_t)(((mjr) << 16) | ((mnr) << 8) | (ter)))
#define NVME_VS_1_3            NVME_VS(1, 3, 0)
#define NVME_VS_1_4            NVME_VS(1, 4, 0)

/* CC */
#define NVME_CC_EN           (1u << 0)
#define NVME_CC_CSS_SHIFT    4
#define NVME_CC_CSS_MASK     (0x7u << NVME_CC_CSS_SHIFT)
#define NVME_CC_MPS_SHIFT    7
#define NVME_CC_MPS_MASK     (0xfu << NVME_CC_MPS_SHIFT)
#define NVME_CC_AMS_SHIFT    11
#define NVME_CC_AMS_MASK     (0x7u << NVME_CC_AMS_SHIFT)
#define NVME_CC_SHN_SHIFT    14
#define NVME_CC_SHN_MASK     (0x3u << NVME_CC_SHN_SHIFT)
#define NVME_CC_SHN_NONE     (0x0u << NVME_CC_SHN_SHIFT)
#define NVME_CC_SHN_NORMAL   (0x1u << NVME_CC_SHN_SHIFT)
#define NVME_CC_SHN_ABRUPT   (0x2u << NVME_CC_SHN_SHIFT)
#define NVME_CC_IOSQES_SHIFT 16
#define NVME_CC_IOSQES_MASK  (0xfu << NVME_CC_IOSQES_SHIFT)
#define NVME_CC_IOCQES_SHIFT 20
#define NVME_CC_IOCQES_MASK  (0xfu << NVME_CC_IOCQES_SHIFT)
/* The I/O queue entry sizes as log2: 64-byte SQEs, 16-byte CQEs. */
#define NVME_CC_IOSQES_64    (6u << NVME_CC_IOSQES_SHIFT)
#define NVME_CC_IOCQES_16    (4u << NVME_CC_IOCQES_SHIFT)

/* CSTS */
#define NVME_CSTS_RDY            (1u << 0)
#define NVME_CSTS_CFS            (1u << 1)
#define NVME_CSTS_SHST_SHIFT     2
#define NVME_CSTS_SHST_MASK      (0x3u << NVME_CSTS_SHST_SHIFT)
#define NVME_CSTS_SHST_NORMAL    (0x0u << NVME_CSTS_SHST_SHIFT)
#define NVME_CSTS_SHST_OCCURRING (0x1u << NVME_CSTS_SHST_SHIFT)
#define NVME_CSTS_SHST_COMPLETE  (0x2u << NVME_CSTS_SHST_SHIFT)
#define NVME_CSTS_NSSRO          (1u << 4)
#define NVME_CSTS_PP             (1u << 5)

/* ------------------------------------------------------------------------ */
/* Fabrics commands                                                         */
/* ------------------------------------------------------------------------ */

/* Common layout of every Fabrics command (opcode 0x7f). */
struct nvme_fabrics_cmd {
	uint8_t opc;
	uint8_t flags;
	uint16_t cid;
	uint8_t fctype;
	uint8_t rsvd1[35];
	uint8_t ts[24]; /* fabrics command type specific */
};
static_assert(sizeof(struct nvme_fabrics_cmd) == NVME_SQE_SIZE, "fabrics cmd size");

struct nvme_connect_cmd {
	uint8_t opc;
	uint8_t flags;
	uint16_t cid;
	uint8_t fctype;
	uint8_t rsvd1[19];
	struct nvme_sgl_desc sgl1;
	uint16_t recfmt; /* record format, 0 */
	uint16_t qid;    /* 0 = admin queue */
	uint16_t sqsize; /* 0-based */
	uint8_t cattr;   /* bit 0: priority class; bit 2: I/O queue type... */
	uint8_t rsvd2;
	uint32_t kato; /* ms, admin queue only; 0 disables keep alive */
	uint8_t rsvd3[12];
};
static_assert(sizeof(struct nvme_connect_cmd) == NVME_SQE_SIZE, "connect cmd size");
static_assert(offsetof(struct nvme_connect_cmd, sgl1) == 24, "connect sgl1");
static_assert(offsetof(struct nvme_connect_cmd, recfmt) == 40, "connect recfmt");
static_assert(offsetof(struct nvme_connect_cmd, qid) == 42, "connect qid");
static_assert(offsetof(struct nvme_connect_cmd, sqsize) == 44, "connect sqsize");
static_assert(offsetof(struct nvme_connect_cmd, cattr) == 46, "connect cattr");
static_assert(offsetof(struct nvme_connect_cmd, kato) == 48, "connect kato");

/* Authentication Send (TL) and Receive (AL): the same layout. */
struct nvme_auth_cmd {
	uint8_t opc;
	uint8_t flags;
	uint16_t cid;
	uint8_t fctype;
	uint8_t rsvd1[19];
	struct nvme_sgl_desc sgl1;
	uint8_t rsvd2;
	uint8_t spsp0;
	uint8_t spsp1;
	uint8_t secp;
	uint32_t len; /* TL (send) or AL (receive) */
	uint8_t rsvd3[16];
};
static_assert(sizeof(struct nvme_auth_cmd) == NVME_SQE_SIZE, "auth cmd size");
static_assert(offsetof(struct nvme_auth_cmd, secp) == 43, "auth secp");

/* The 1024-byte data of a Connect command. */
struct nvme_connect_data {
	uint8_t hostid[16];
	uint16_t cntlid;
	uint8_t rsvd1[238];
	char subnqn[NVME_NQN_FIELD_LEN];
	char hostnqn[NVME_NQN_FIELD_LEN];
	uint8_t rsvd2[256];
};
static_assert(sizeof(struct nvme_connect_data) == NVME_CONNECT_DATA_SIZE, "connect data size");
static_assert(offsetof(struct nvme_connect_data, cntlid) == 16, "connect data cntlid");
static_assert(offsetof(struct nvme_connect_data, subnqn) == 256, "connect data subnqn");
static_assert(offsetof(struct nvme_connect_data, hostnqn) == 512, "connect data hostnqn");

/* Property Get/Set attribute byte: bits 2:0 size (0 = 4 bytes, 1 = 8 bytes). */
#define NVME_PROP_SIZE_4 0
#define NVME_PROP_SIZE_8 1

struct nvme_prop_get_cmd {
	uint8_t opc;
	uint8_t flags;
	uint16_t cid;
	uint8_t fctype;
	uint8_t rsvd1[35];
	uint8_t attrib;
	uint8_t rsvd2[3];
	uint32_t ofst;
	uint8_t rsvd3[16];
};
static_assert(sizeof(struct nvme_prop_get_cmd) == NVME_SQE_SIZE, "prop get size");
static_assert(offsetof(struct nvme_prop_get_cmd, attrib) == 40, "prop get attrib");
static_assert(offsetof(struct nvme_prop_get_cmd, ofst) == 44, "prop get ofst");

struct nvme_prop_set_cmd {
	uint8_t opc;
	uint8_t flags;
	uint16_t cid;
	uint8_t fctype;
	uint8_t rsvd1[35];
	uint8_t attrib;
	uint8_t rsvd2[3];
	uint32_t ofst;
	uint64_t value;
	uint8_t rsvd3[8];
};
static_assert(sizeof(struct nvme_prop_set_cmd) == NVME_SQE_SIZE, "prop set size");
static_assert(offsetof(struct nvme_prop_set_cmd, ofst) == 44, "prop set ofst");
static_assert(offsetof(struct nvme_prop_set_cmd, value) == 48, "prop set value");

/* ------------------------------------------------------------------------ */
/* Admin command fields                                                     */
/* ------------------------------------------------------------------------ */

/* Identify: CDW10 CNS 7:0, CNTID 31:16; CDW11 CSI 31:24. */
enum nvme_identify_cns {
	NVME_CNS_NS = 0x00,
	NVME_CNS_CTRLR = 0x01,
	NVME_CNS_ACTIVE_NS_LIST = 0x02,
	NVME_CNS_NS_ID_DESCRIPTORS = 0x03,
	NVME_CNS_NVM_SET_LIST = 0x04,
	NVME_CNS_ALLOCATED_NS_LIST = 0x10,
};

/* Get Log Page: CDW10 LID 7:0, LSP 14:8, RAE 15, NUMDL 31:16; CDW11 NUMDU 15:0; CDW12/13 LPO. */
enum nvme_log_page {
	NVME_LOG_ERROR = 0x01,
	NVME_LOG_SMART = 0x02,
	NVME_LOG_FIRMWARE_SLOT = 0x03,
	NVME_LOG_CHANGED_NS_LIST = 0x04,
	NVME_LOG_COMMAND_EFFECTS = 0x05,
	NVME_LOG_ANA = 0x0c,
	NVME_LOG_DISCOVERY = 0x70,
	NVME_LOG_RESERVATION_NOTIFICATION = 0x80,
};

/* Reservation Notification log page (80h): one 64-byte entry per read. */
enum nvme_resv_notif_type {
	NVME_RESV_NOTIF_EMPTY = 0,
	NVME_RESV_NOTIF_REGISTRATION_PREEMPTED = 1,
	NVME_RESV_NOTIF_RESERVATION_RELEASED = 2,
	NVME_RESV_NOTIF_RESERVATION_PREEMPTED = 3,
};
struct nvme_resv_notif_log {
	uint64_t log_page_count; /* 0 */
	uint8_t type;            /* 8 */
	uint8_t navail;          /* 9: entries left after this one (255: 255 or more) */
	uint8_t rsvd10[2];
	uint32_t nsid; /* 12 */
	uint8_t rsvd16[48];
};
static_assert(sizeof(struct nvme_resv_notif_log) == 64, "reservation notification log");
/* Reservation Notification Mask (feature 82h): a set bit masks that type (bits 1..3). */
#define NVME_RESV_NOTIF_MASK_ALL 0xeu
#define NVME_LOG_RAE             (1u << 15)

/* Set/Get Features: CDW10 FID 7:0, SV 31 (set) / SEL 10:8 (get). */
enum nvme_feature {
	NVME_FEAT_ARBITRATION = 0x01,
	NVME_FEAT_POWER_MANAGEMENT = 0x02,
	NVME_FEAT_LBA_RANGE_TYPE = 0x03,
	NVME_FEAT_TEMPERATURE_THRESHOLD = 0x04,
	NVME_FEAT_ERROR_RECOVERY = 0x05,
	NVME_FEAT_VOLATILE_WRITE_CACHE = 0x06,
	NVME_FEAT_NUMBER_OF_QUEUES = 0x07,
	NVME_FEAT_INTERRUPT_COALESCING = 0x08,
	NVME_FEAT_INTERRUPT_VECTOR_CONFIG = 0x09,
	NVME_FEAT_WRITE_ATOMICITY = 0x0a,
	NVME_FEAT_ASYNC_EVENT_CONFIG = 0x0b,
	NVME_FEAT_AUTONOMOUS_POWER_STATE = 0x0c,
	NVME_FEAT_HOST_MEM_BUFFER = 0x0d,
	NVME_FEAT_TIMESTAMP = 0x0e,
	NVME_FEAT_KEEP_ALIVE_TIMER = 0x0f,
	NVME_FEAT_HOST_IDENTIFIER = 0x81,
	NVME_FEAT_RESERVATION_NOTIF_MASK = 0x82,
	NVME_FEAT_RESERVATION_PERSIST = 0x83,
};
#define NVME_FEAT_SAVE      (1u << 31)
#define NVME_FEAT_SEL_SHIFT 8
#define NVME_FEAT_SEL_MASK  (0x7u << NVME_FEAT_SEL_SHIFT)
enum nvme_feat_sel {
	NVME_FEAT_SEL_CURRENT = 0,
	NVME_FEAT_SEL_DEFAULT = 1,
	NVME_FEAT_SEL_SAVED = 2,
	NVME_FEAT_SEL_SUPPORTED = 3,
};

/* Number of Queues: CDW11 and result dword 0 hold NSQ 15:0 and NCQ 31:16, both 0-based. */
#define NVME_FEAT_NUM_QUEUES(nsq, ncq) (((uint32_t)(ncq) << 16) | ((uint32_t)(nsq)&0xffff))

/* Asynchronous Event Configuration (feature 0x0b) bits. */
#define NVME_AEC_SMART_MASK           0xffu
#define NVME_AEC_NS_ATTR_NOTICE       (1u << 8)
#define NVME_AEC_FW_ACTIVATION_NOTICE (1u << 9)
#define NVME_AEC_TELEMETRY_NOTICE     (1u << 10)
#define NVME_AEC_ANA_CHANGE_NOTICE    (1u << 11)
#define NVME_AEC_DISCOVERY_LOG_NOTICE (1u << 31)

/* Asynchronous event completion dword 0: type 2:0, info 15:8, log page 23:16. */
enum nvme_async_event_type {
	NVME_AER_TYPE_ERROR = 0x0,
	NVME_AER_TYPE_SMART = 0x1,
	NVME_AER_TYPE_NOTICE = 0x2,
	NVME_AER_TYPE_IO_CMD_SET = 0x6,
	NVME_AER_TYPE_VENDOR = 0x7,
};
/* Info of an I/O command set specific event (type 6). */
#define NVME_AER_IO_RESV_LOG_AVAILABLE 0x00
/* Asynchronous event information for type SMART / Health status. */
#define NVME_AER_SMART_RELIABILITY     0x00
#define NVME_AER_SMART_TEMPERATURE     0x01
#define NVME_AER_SMART_SPARE           0x02
/* SMART / Health Critical Warning bits. */
#define NVME_SMART_WARN_SPARE          (1u << 0)
#define NVME_SMART_WARN_TEMPERATURE    (1u << 1)
#define NVME_SMART_WARN_RELIABILITY    (1u << 2)
#define NVME_SMART_WARN_READ_ONLY      (1u << 3)
#define NVME_SMART_WARN_VOLATILE       (1u << 4)
enum nvme_async_event_notice {
	NVME_AER_NOTICE_NS_ATTR_CHANGED = 0x00,
	NVME_AER_NOTICE_FW_ACTIVATION = 0x01,
	NVME_AER_NOTICE_TELEMETRY = 0x02,
	NVME_AER_NOTICE_ANA_CHANGE = 0x03,
	NVME_AER_NOTICE_DISCOVERY_LOG = 0xf0,
};
#define NVME_AER_CDW0(type, info, lid) \
	((uint32_t)(type) | ((uint32_t)(info) << 8) | ((uint32_t)(lid) << 16))

/* Abort: CDW10 SQID 15:0, CID 31:16. Result dword 0 bit 0 set = command not aborted. */
#define NVME_ABORT_NOT_ABORTED 1u

/* Read/Write/Write Zeroes: CDW10/11 SLBA, CDW12 NLB 15:0 (0-based) and flags. */
#define NVME_RW_NLB_MASK     0xffffu
#define NVME_RW_DEAC         (1u << 25) /* Write Zeroes: deallocate */
#define NVME_RW_PRINFO_SHIFT 26
#define NVME_RW_FUA          (1u << 30)
#define NVME_RW_LR           (1u << 31)

/* Dataset Management: CDW10 NR 7:0 (0-based), CDW11 attributes. */
#define NVME_DSM_NR_MASK         0xffu
#define NVME_DSM_ATTR_IDR        (1u << 0)
#define NVME_DSM_ATTR_IDW        (1u << 1)
#define NVME_DSM_ATTR_DEALLOCATE (1u << 2)
#define NVME_DSM_MAX_RANGES      256

struct nvme_dsm_range {
	uint32_t attributes;
	uint32_t length; /* logical blocks, 1-based */
	uint64_t starting_lba;
};
static_assert(sizeof(struct nvme_dsm_range) == 16, "DSM range size");

/* ------------------------------------------------------------------------ */
/* Identify data                                                            */
/* ------------------------------------------------------------------------ */

struct nvme_power_state {
	uint8_t raw[32];
};

/* OACS bits. */
#define NVME_OACS_SECURITY                (1u << 0)
#define NVME_OACS_FORMAT                  (1u << 1)
#define NVME_OACS_FIRMWARE                (1u << 2)
#define NVME_OACS_NS_MANAGE               (1u << 3)
/* LPA bits. */
#define NVME_LPA_SMART_PER_NS             (1u << 0)
#define NVME_LPA_COMMAND_EFFECTS          (1u << 1)
#define NVME_LPA_EXTENDED_DATA            (1u << 2)
/* ONCS bits. */
#define NVME_ONCS_COMPARE                 (1u << 0)
#define NVME_ONCS_WRITE_UNCORRECTABLE     (1u << 1)
#define NVME_ONCS_DSM                     (1u << 2)
#define NVME_ONCS_WRITE_ZEROES            (1u << 3)
#define NVME_ONCS_SAVE_FEATURES           (1u << 4)
#define NVME_ONCS_RESERVATIONS            (1u << 5)
/* VWC bits. */
#define NVME_VWC_PRESENT                  (1u << 0)
/* OAES bits. */
#define NVME_OAES_NS_ATTR_NOTICE          (1u << 8)
#define NVME_OAES_ANA_CHANGE_NOTICE       (1u << 11)
#define NVME_OAES_DISCOVERY_LOG_NOTICE    (1u << 31)
/* SGLS bits. */
#define NVME_SGLS_SUPPORTED               (1u << 0) /* no alignment requirement */
#define NVME_SGLS_SUPPORTED_DWORD_ALIGNED (2u << 0)
#define NVME_SGLS_KEYED                   (1u << 2)
#define NVME_SGLS_BIT_BUCKET              (1u << 16)
#define NVME_SGLS_OFFSET                  (1u << 20)
#define NVME_SGLS_TRANSPORT_DATA_BLOCK    (1u << 21)
/* CMIC bits. */
#define NVME_CMIC_MULTI_PORT              (1u << 0)
#define NVME_CMIC_MULTI_CTRLR             (1u << 1)
#define NVME_CMIC_ANA_REPORTING           (1u << 3)
/* Asymmetric Namespace Access states (ANA log page, descriptor byte 32). */
enum nvme_ana_state {
	NVME_ANA_OPTIMIZED = 0x1,
	NVME_ANA_NON_OPTIMIZED = 0x2,
	NVME_ANA_INACCESSIBLE = 0x3,
	NVME_ANA_PERSISTENT_LOSS = 0x4,
	NVME_ANA_CHANGE = 0xf,
};

/* The name of an ANA state as RPCs spell it (SPDK's), or NULL for a value the spec does not define. */
static inline const char *
nvme_ana_state_name(uint8_t state)
{
	switch (state) {
	case NVME_ANA_OPTIMIZED:
		return "optimized";
	case NVME_ANA_NON_OPTIMIZED:
		return "non_optimized";
	case NVME_ANA_INACCESSIBLE:
		return "inaccessible";
	case NVME_ANA_PERSISTENT_LOSS:
		return "persistent_loss";
	case NVME_ANA_CHANGE:
		return "change";
	default:
		return NULL;
	}
}
/* Get Log Page ANA, LSP bit 0: Return Groups Only (no NSID lists). */
#define NVME_LOG_ANA_LSP_RGO     (1u << 8)
/* CNTRLTYPE values. */
#define NVME_CNTRLTYPE_IO        1
#define NVME_CNTRLTYPE_DISCOVERY 2
#define NVME_CNTRLTYPE_ADMIN     3
/* Fabrics FCATT (CTRATTR) bit 0: 0 = dynamic controller model. */
#define NVME_FCATT_STATIC        (1u << 0)

/* Identify Controller data structure (CNS 0x01). */
struct nvme_identify_ctrlr {
	uint16_t vid;                    /* 0 */
	uint16_t ssvid;                  /* 2 */
	char sn[NVME_SN_LEN];            /* 4, ASCII, space padded */
	char mn[NVME_MN_LEN];            /* 24 */
	char fr[NVME_FR_LEN];            /* 64 */
	uint8_t rab;                     /* 72 */
	uint8_t ieee[3];                 /* 73 */
	uint8_t cmic;                    /* 76 */
	uint8_t mdts;                    /* 77, log2 of max transfer in min pages, 0 = none */
	uint16_t cntlid;                 /* 78 */
	uint32_t ver;                    /* 80 */
	uint32_t rtd3r;                  /* 84 */
	uint32_t rtd3e;                  /* 88 */
	uint32_t oaes;                   /* 92 */
	uint32_t ctratt;                 /* 96 */
	uint16_t rrls;                   /* 100 */
	uint8_t rsvd102[9];              /* 102 */
	uint8_t cntrltype;               /* 111 */
	uint8_t fguid[16];               /* 112 */
	uint16_t crdt[3];                /* 128 */
	uint8_t rsvd134[122];            /* 134 */
	uint16_t oacs;                   /* 256 */
	uint8_t acl;                     /* 258, 0-based */
	uint8_t aerl;                    /* 259, 0-based */
	uint8_t frmw;                    /* 260 */
	uint8_t lpa;                     /* 261 */
	uint8_t elpe;                    /* 262, 0-based */
	uint8_t npss;                    /* 263 */
	uint8_t avscc;                   /* 264 */
	uint8_t apsta;                   /* 265 */
	uint16_t wctemp;                 /* 266 */
	uint16_t cctemp;                 /* 268 */
	uint16_t mtfa;                   /* 270 */
	uint32_t hmpre;                  /* 272 */
	uint32_t hmmin;                  /* 276 */
	uint8_t tnvmcap[16];             /* 280 */
	uint8_t unvmcap[16];             /* 296 */
	uint32_t rpmbs;                  /* 312 */
	uint16_t edstt;                  /* 316 */
	uint8_t dsto;                    /* 318 */
	uint8_t fwug;                    /* 319 */
	uint16_t kas;                    /* 320, keep alive granularity, 100 ms units */
	uint16_t hctma;                  /* 322 */
	uint16_t mntmt;                  /* 324 */
	uint16_t mxtmt;                  /* 326 */
	uint32_t sanicap;                /* 328 */
	uint32_t hmminds;                /* 332 */
	uint16_t hmmaxd;                 /* 336 */
	uint16_t nsetidmax;              /* 338 */
	uint16_t endgidmax;              /* 340 */
	uint8_t anatt;                   /* 342 */
	uint8_t anacap;                  /* 343 */
	uint32_t anagrpmax;              /* 344 */
	uint32_t nanagrpid;              /* 348 */
	uint32_t pels;                   /* 352 */
	uint8_t rsvd356[156];            /* 356 */
	uint8_t sqes;                    /* 512: max 7:4, required 3:0 (log2) */
	uint8_t cqes;                    /* 513 */
	uint16_t maxcmd;                 /* 514 */
	uint32_t nn;                     /* 516 */
	uint16_t oncs;                   /* 520 */
	uint16_t fuses;                  /* 522 */
	uint8_t fna;                     /* 524 */
	uint8_t vwc;                     /* 525 */
	uint16_t awun;                   /* 526 */
	uint16_t awupf;                  /* 528 */
	uint8_t icsvscc;                 /* 530 */
	uint8_t nwpc;                    /* 531 */
	uint16_t acwu;                   /* 532 */
	uint16_t rsvd534;                /* 534 */
	uint32_t sgls;                   /* 536 */
	uint32_t mnan;                   /* 540 */
	uint8_t rsvd544[224];            /* 544 */
	char subnqn[NVME_NQN_FIELD_LEN]; /* 768 */
	uint8_t rsvd1024[768];           /* 1024 */
	/* NVMe over Fabrics attributes. */
	uint32_t ioccsz;                 /* 1792, I/O command capsule size, 16-byte units */
	uint32_t iorcsz;                 /* 1796, I/O response capsule size, 16-byte units */
	uint16_t icdoff;                 /* 1800, in-capsule data offset, 16-byte units */
	uint8_t fcatt;                   /* 1802, controller attributes (CTRATTR) */
	uint8_t msdbd;                   /* 1803, max SGL data block descriptors */
	uint16_t ofcs;                   /* 1804 */
	uint8_t rsvd1806[242];           /* 1806 */
	struct nvme_power_state psd[32]; /* 2048 */
	uint8_t vs[1024];                /* 3072 */
};
static_assert(sizeof(struct nvme_identify_ctrlr) == NVME_IDENTIFY_DATA_SIZE, "id ctrlr size");
static_assert(offsetof(struct nvme_identify_ctrlr, sn) == 4, "id ctrlr sn");
static_assert(offsetof(struct nvme_identify_ctrlr, mn) == 24, "id ctrlr mn");
static_assert(offsetof(struct nvme_identify_ctrlr, fr) == 64, "id ctrlr fr");
static_assert(offsetof(struct nvme_identify_ctrlr, mdts) == 77, "id ctrlr mdts");
static_assert(offsetof(struct nvme_identify_ctrlr, cntlid) == 78, "id ctrlr cntlid");
static_assert(offsetof(struct nvme_identify_ctrlr, ver) == 80, "id ctrlr ver");
static_assert(offsetof(struct nvme_identify_ctrlr, oaes) == 92, "id ctrlr oaes");
static_assert(offsetof(struct nvme_identify_ctrlr, cntrltype) == 111, "id ctrlr cntrltype");
static_assert(offsetof(struct nvme_identify_ctrlr, oacs) == 256, "id ctrlr oacs");
static_assert(offsetof(struct nvme_identify_ctrlr, aerl) == 259, "id ctrlr aerl");
static_assert(offsetof(struct nvme_identify_ctrlr, lpa) == 261, "id ctrlr lpa");
static_assert(offsetof(struct nvme_identify_ctrlr, elpe) == 262, "id ctrlr elpe");
static_assert(offsetof(struct nvme_identify_ctrlr, kas) == 320, "id ctrlr kas");
static_assert(offsetof(struct nvme_identify_ctrlr, pels) == 352, "id ctrlr pels");
static_assert(offsetof(struct nvme_identify_ctrlr, sqes) == 512, "id ctrlr sqes");
static_assert(offsetof(struct nvme_identify_ctrlr, maxcmd) == 514, "id ctrlr maxcmd");
static_assert(offsetof(struct nvme_identify_ctrlr, nn) == 516, "id ctrlr nn");
static_assert(offsetof(struct nvme_identify_ctrlr, oncs) == 520, "id ctrlr oncs");
static_assert(offsetof(struct nvme_identify_ctrlr, vwc) == 525, "id ctrlr vwc");
static_assert(offsetof(struct nvme_identify_ctrlr, sgls) == 536, "id ctrlr sgls");
static_assert(offsetof(struct nvme_identify_ctrlr, subnqn) == 768, "id ctrlr subnqn");
static_assert(offsetof(struct nvme_identify_ctrlr, ioccsz) == 1792, "id ctrlr ioccsz");
static_assert(offsetof(struct nvme_identify_ctrlr, iorcsz) == 1796, "id ctrlr iorcsz");
static_assert(offsetof(struct nvme_identify_ctrlr, icdoff) == 1800, "id ctrlr icdoff");
static_assert(offsetof(struct nvme_identify_ctrlr, fcatt) == 1802, "id ctrlr fcatt");
static_assert(offsetof(struct nvme_identify_ctrlr, msdbd) == 1803, "id ctrlr msdbd");
static_assert(offsetof(struct nvme_identify_ctrlr, psd) == 2048, "id ctrlr psd");

/* LBA format: MS 15:0 (metadata bytes), LBADS 23:16 (log2 data size), RP 25:24. */
#define NVME_LBAF(ms, lbads, rp) \
	((uint32_t)(ms) | ((uint32_t)(lbads) << 16) | ((uint32_t)(rp) << 24))
#define NVME_LBAF_MS(lbaf)    ((uint16_t)((lbaf)&0xffff))
#define NVME_LBAF_LBADS(lbaf) ((uint8_t)(((lbaf) >> 16) & 0xff))

/* FLBAS: format index 3:0, bit 4 = metadata at the end of the data (extended LBA). */
#define NVME_FLBAS_INDEX_MASK   0x0fu
#define NVME_FLBAS_EXTENDED     (1u << 4)
/* MC bits. */
#define NVME_MC_EXTENDED        (1u << 0)
#define NVME_MC_SEPARATE        (1u << 1)
/* NSFEAT bits. */
#define NVME_NSFEAT_THIN_PROV   (1u << 0)
#define NVME_NSFEAT_NS_ATOMICS  (1u << 1)
#define NVME_NSFEAT_DEALLOC_ERR (1u << 2)
/* DLFEAT: bits 2:0 read value of deallocated blocks (1 = zeroes); bit 3 Write Zeroes DEAC. */
#define NVME_DLFEAT_READ_ZEROES 0x1u
#define NVME_DLFEAT_WZ_DEALLOC  (1u << 3)

/* Identify Namespace data structure (CNS 0x00, NVM command set). */
struct nvme_identify_ns {
	uint64_t nsze;        /* 0 */
	uint64_t ncap;        /* 8 */
	uint64_t nuse;        /* 16 */
	uint8_t nsfeat;       /* 24 */
	uint8_t nlbaf;        /* 25, 0-based */
	uint8_t flbas;        /* 26 */
	uint8_t mc;           /* 27 */
	uint8_t dpc;          /* 28 */
	uint8_t dps;          /* 29 */
	uint8_t nmic;         /* 30 */
	uint8_t rescap;       /* 31 */
	uint8_t fpi;          /* 32 */
	uint8_t dlfeat;       /* 33 */
	uint16_t nawun;       /* 34 */
	uint16_t nawupf;      /* 36 */
	uint16_t nacwu;       /* 38 */
	uint16_t nabsn;       /* 40 */
	uint16_t nabo;        /* 42 */
	uint16_t nabspf;      /* 44 */
	uint16_t noiob;       /* 46 */
	uint8_t nvmcap[16];   /* 48 */
	uint16_t npwg;        /* 64 */
	uint16_t npwa;        /* 66 */
	uint16_t npdg;        /* 68 */
	uint16_t npda;        /* 70 */
	uint16_t nows;        /* 72 */
	uint8_t rsvd74[18];   /* 74 */
	uint32_t anagrpid;    /* 92 */
	uint8_t rsvd96[3];    /* 96 */
	uint8_t nsattr;       /* 99 */
	uint16_t nvmsetid;    /* 100 */
	uint16_t endgid;      /* 102 */
	uint8_t nguid[16];    /* 104 */
	uint8_t eui64[8];     /* 120 */
	uint32_t lbaf[16];    /* 128 */
	uint8_t rsvd192[192]; /* 192 */
	uint8_t vs[3712];     /* 384 */
};
static_assert(sizeof(struct nvme_identify_ns) == NVME_IDENTIFY_DATA_SIZE, "id ns size");
static_assert(offsetof(struct nvme_identify_ns, nsfeat) == 24, "id ns nsfeat");
static_assert(offsetof(struct nvme_identify_ns, nlbaf) == 25, "id ns nlbaf");
static_assert(offsetof(struct nvme_identify_ns, flbas) == 26, "id ns flbas");
static_assert(offsetof(struct nvme_identify_ns, mc) == 27, "id ns mc");
static_assert(offsetof(struct nvme_identify_ns, dps) == 29, "id ns dps");
static_assert(offsetof(struct nvme_identify_ns, dlfeat) == 33, "id ns dlfeat");
static_assert(offsetof(struct nvme_identify_ns, nvmcap) == 48, "id ns nvmcap");
static_assert(offsetof(struct nvme_identify_ns, anagrpid) == 92, "id ns anagrpid");
static_assert(offsetof(struct nvme_identify_ns, nguid) == 104, "id ns nguid");
static_assert(offsetof(struct nvme_identify_ns, eui64) == 120, "id ns eui64");
static_assert(offsetof(struct nvme_identify_ns, lbaf) == 128, "id ns lbaf");

/* Namespace identification descriptor (CNS 0x03): a list of these, ended by nidt 0. */
enum nvme_nidt {
	NVME_NIDT_EUI64 = 0x1, /* nidl 8 */
	NVME_NIDT_NGUID = 0x2, /* nidl 16 */
	NVME_NIDT_UUID = 0x3,  /* nidl 16 */
	NVME_NIDT_CSI = 0x4,   /* nidl 1 */
};
struct nvme_ns_id_desc {
	uint8_t nidt;
	uint8_t nidl;
	uint8_t rsvd[2];
	uint8_t nid[];
};
static_assert(sizeof(struct nvme_ns_id_desc) == 4, "ns id desc header");

/* ------------------------------------------------------------------------ */
/* Log pages                                                                */
/* ------------------------------------------------------------------------ */

/* Error Information log entry (log 0x01): 64 bytes each. */
struct nvme_error_log_entry {
	uint64_t error_count;     /* 0 */
	uint16_t sqid;            /* 8 */
	uint16_t cid;             /* 10 */
	uint16_t status;          /* 12, status field incl. phase bit position */
	uint16_t error_location;  /* 14 */
	uint64_t lba;             /* 16 */
	uint32_t nsid;            /* 24 */
	uint8_t vs;               /* 28 */
	uint8_t trtype;           /* 29 */
	uint8_t rsvd30[2];        /* 30 */
	uint64_t cs;              /* 32 */
	uint16_t trtype_specific; /* 40 */
	uint8_t rsvd42[22];       /* 42 */
};
static_assert(sizeof(struct nvme_error_log_entry) == 64, "error log entry size");

/* SMART / Health Information log (log 0x02): 512 bytes. */
struct nvme_smart_log {
	uint8_t critical_warning;        /* 0 */
	uint8_t temperature[2];          /* 1, Kelvin */
	uint8_t avail_spare;             /* 3 */
	uint8_t avail_spare_threshold;   /* 4 */
	uint8_t percent_used;            /* 5 */
	uint8_t endu_grp_crit_warn;      /* 6 */
	uint8_t rsvd7[25];               /* 7 */
	uint64_t data_units_read[2];     /* 32, thousands of 512-byte units */
	uint64_t data_units_written[2];  /* 48 */
	uint64_t host_reads[2];          /* 64 */
	uint64_t host_writes[2];         /* 80 */
	uint64_t ctrl_busy_time[2];      /* 96 */
	uint64_t power_cycles[2];        /* 112 */
	uint64_t power_on_hours[2];      /* 128 */
	uint64_t unsafe_shutdowns[2];    /* 144 */
	uint64_t media_errors[2];        /* 160 */
	uint64_t num_err_log_entries[2]; /* 176 */
	uint32_t warning_temp_time;      /* 192 */
	uint32_t critical_comp_time;     /* 196 */
	uint16_t temp_sensor[8];         /* 200 */
	uint8_t rsvd216[296];            /* 216 */
};
static_assert(sizeof(struct nvme_smart_log) == 512, "SMART log size");
static_assert(offsetof(struct nvme_smart_log, data_units_read) == 32, "SMART dur");
static_assert(offsetof(struct nvme_smart_log, host_reads) == 64, "SMART host reads");
static_assert(offsetof(struct nvme_smart_log, num_err_log_entries) == 176, "SMART errs");

/* Changed Namespace List log (log 0x04): up to 1024 nsids; 0xffffffff first = overflow. */
#define NVME_CHANGED_NS_LIST_MAX 1024
struct nvme_changed_ns_list {
	uint32_t ns_list[NVME_CHANGED_NS_LIST_MAX];
};
static_assert(sizeof(struct nvme_changed_ns_list) == 4096, "changed ns list size");

/* Discovery log page (log 0x70). */
enum nvme_trtype {
	NVME_TRTYPE_RDMA = 1,
	NVME_TRTYPE_FC = 2,
	NVME_TRTYPE_TCP = 3,
	NVME_TRTYPE_LOOP = 254,
};
enum nvme_adrfam {
	NVME_ADRFAM_IPV4 = 1,
	NVME_ADRFAM_IPV6 = 2,
	NVME_ADRFAM_IB = 3,
	NVME_ADRFAM_FC = 4,
	NVME_ADRFAM_LOOP = 254,
};
enum nvme_subsys_type {
	NVME_SUBTYPE_DISCOVERY_REFERRAL = 1,
	NVME_SUBTYPE_NVME = 2,
	NVME_SUBTYPE_DISCOVERY_CURRENT = 3,
};
/* TREQ: secure channel 1:0, bit 2 = SQ flow control disable supported. */
#define NVME_TREQ_SECURE_NOT_SPECIFIED 0x0
#define NVME_TREQ_SECURE_REQUIRED      0x1
#define NVME_TREQ_SECURE_NOT_REQUIRED  0x2
#define NVME_TREQ_DISABLE_SQFLOW       (1u << 2)
/* TSAS for TCP: byte 0 SECTYPE. */
#define NVME_TCP_SECTYPE_NONE          0
#define NVME_TCP_SECTYPE_TLS12         1
#define NVME_TCP_SECTYPE_TLS13         2

#define NVME_TRSVCID_LEN     32
#define NVME_TRADDR_LEN      256
#define NVME_DISC_HDR_SIZE   1024
#define NVME_DISC_ENTRY_SIZE 1024

struct nvme_discovery_log_entry {
	uint8_t trtype;                  /* 0 */
	uint8_t adrfam;                  /* 1 */
	uint8_t subtype;                 /* 2 */
	uint8_t treq;                    /* 3 */
	uint16_t portid;                 /* 4 */
	uint16_t cntlid;                 /* 6 */
	uint16_t asqsz;                  /* 8 */
	uint16_t eflags;                 /* 10 */
	uint8_t rsvd12[20];              /* 12 */
	char trsvcid[NVME_TRSVCID_LEN];  /* 32, ASCII; pad with NUL (hosts also accept spaces) */
	uint8_t rsvd64[192];             /* 64 */
	char subnqn[NVME_NQN_FIELD_LEN]; /* 256, NUL padded */
	char traddr[NVME_TRADDR_LEN];    /* 512, ASCII; padded like trsvcid */
	uint8_t tsas[256];               /* 768 */
};
static_assert(sizeof(struct nvme_discovery_log_entry) == NVME_DISC_ENTRY_SIZE, "disc entry");
static_assert(offsetof(struct nvme_discovery_log_entry, trsvcid) == 32, "disc trsvcid");
static_assert(offsetof(struct nvme_discovery_log_entry, subnqn) == 256, "disc subnqn");
static_assert(offsetof(struct nvme_discovery_log_entry, traddr) == 512, "disc traddr");
static_assert(offsetof(struct nvme_discovery_log_entry, tsas) == 768, "disc tsas");

struct nvme_discovery_log_hdr {
	uint64_t genctr;                           /* 0 */
	uint64_t numrec;                           /* 8 */
	uint16_t recfmt;                           /* 16 */
	uint8_t rsvd18[1006];                      /* 18 */
	struct nvme_discovery_log_entry entries[]; /* 1024 */
};
static_assert(sizeof(struct nvme_discovery_log_hdr) == NVME_DISC_HDR_SIZE, "disc hdr");
static_assert(offsetof(struct nvme_discovery_log_hdr, entries) == 1024, "disc entries");

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */

/* Copy an ASCII string into a fixed-width Identify field, space padded, not terminated. */
static inline void
nvme_str_pad(char *dst, size_t width, const char *src)
{
	size_t n = strnlen(src, width);

	memcpy(dst, src, n);
	memset(dst + n, ' ', width - n);
}

/* The 64-bit SLBA of a Read/Write/Write Zeroes command. */
static inline uint64_t
nvme_cmd_slba(const struct nvme_cmd *cmd)
{
	return (uint64_t)cmd->cdw10 | (uint64_t)cmd->cdw11 << 32;
}

/* The 1-based block count of a Read/Write/Write Zeroes command. */
static inline uint32_t
nvme_cmd_nlb(const struct nvme_cmd *cmd)
{
	return (cmd->cdw12 & NVME_RW_NLB_MASK) + 1;
}

#endif /* GGA_NVME_SPEC_H */
