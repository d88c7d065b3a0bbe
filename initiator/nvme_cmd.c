/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Building submission queue entries and reading Identify data: pure
 * functions, no state, so the unit tests check them byte by byte.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "nvme_internal.h"

static void
cmd_init(struct nvme_cmd *cmd, uint8_t opc)
{
	memset(cmd, 0, sizeof(*cmd));
	cmd->opc = opc;
	/* Fabrics hosts describe data with SGLs, never PRPs. */
	cmd->flags = NVME_CMD_FLAGS_SGL;
}

static void
fabrics_cmd_init(struct nvme_cmd *cmd, uint8_t fctype)
{
	struct nvme_fabrics_cmd *fc = (struct nvme_fabrics_cmd *)cmd;

	cmd_init(cmd, NVME_OPC_FABRICS);
	fc->fctype = fctype;
}

void
nvme_cmd_build_connect(struct nvme_cmd *cmd, uint16_t qid, uint16_t sqsize_0based, uint32_t kato_ms)
{
	struct nvme_connect_cmd *cc = (struct nvme_connect_cmd *)cmd;

	fabrics_cmd_init(cmd, NVME_FCTYPE_CONNECT);
	cc->recfmt = 0;
	cc->qid = qid;
	cc->sqsize = sqsize_0based;
	/* KATO belongs to the admin queue only. */
	cc->kato = qid == 0 ? kato_ms : 0;
}

void
nvme_connect_data_build(struct nvme_connect_data *data, const uint8_t hostid[16], uint16_t cntlid,
			const char *subnqn, const char *hostnqn)
{
	memset(data, 0, sizeof(*data));
	memcpy(data->hostid, hostid, sizeof(data->hostid));
	data->cntlid = cntlid;
	/* NUL padded: the fields are zeroed above and the names are at most 223 bytes. */
	memcpy(data->subnqn, subnqn, strnlen(subnqn, NVME_NQN_MAX_LEN));
	memcpy(data->hostnqn, hostnqn, strnlen(hostnqn, NVME_NQN_MAX_LEN));
}

void
nvme_cmd_build_prop_get(struct nvme_cmd *cmd, uint32_t offset, bool eight_bytes)
{
	struct nvme_prop_get_cmd *pg = (struct nvme_prop_get_cmd *)cmd;

	fabrics_cmd_init(cmd, NVME_FCTYPE_PROPERTY_GET);
	pg->attrib = eight_bytes ? NVME_PROP_SIZE_8 : NVME_PROP_SIZE_4;
	pg->ofst = offset;
}

void
nvme_cmd_build_prop_set(struct nvme_cmd *cmd, uint32_t offset, uint64_t value, bool eight_bytes)
{
	struct nvme_prop_set_cmd *ps = (struct nvme_prop_set_cmd *)cmd;

	fabrics_cmd_init(cmd, NVME_FCTYPE_PROPERTY_SET);
	ps->attrib = eight_bytes ? NVME_PROP_SIZE_8 : NVME_PROP_SIZE_4;
	ps->ofst = offset;
	ps->value = eight_bytes ? value : (uint32_t)value;
}

void
nvme_cmd_build_identify(struct nvme_cmd *cmd, uint8_t cns, uint32_t nsid)
{
	cmd_init(cmd, NVME_OPC_IDENTIFY);
	cmd->nsid = nsid;
	cmd->cdw10 = cns;
}

void
nvme_cmd_build_set_num_queues(struct nvme_cmd *cmd, uint32_t num_queues)
{
	cmd_init(cmd, NVME_OPC_SET_FEATURES);
	cmd->cdw10 = NVME_FEAT_NUMBER_OF_QUEUES;
	cmd->cdw11 = NVME_FEAT_NUM_QUEUES(num_queues - 1, num_queues - 1);
}

void
nvme_cmd_build_get_log_page(struct nvme_cmd *cmd, uint8_t lid, uint32_t nsid, uint32_t len)
{
	uint32_t numd = len / 4 - 1;

	cmd_init(cmd, NVME_OPC_GET_LOG_PAGE);
	cmd->nsid = nsid;
	/* LID 7:0, NUMDL 31:16; NUMDU in CDW11 15:0; offset 0. */
	cmd->cdw10 = lid | ((numd & 0xffffu) << 16);
	cmd->cdw11 = numd >> 16;
}

void
nvme_cmd_build_keep_alive(struct nvme_cmd *cmd)
{
	cmd_init(cmd, NVME_OPC_KEEP_ALIVE);
}

void
nvme_cmd_build_rw(struct nvme_cmd *cmd, uint8_t opc, uint32_t nsid, uint64_t lba, uint32_t nlb)
{
	cmd_init(cmd, opc);
	cmd->nsid = nsid;
	cmd->cdw10 = (uint32_t)lba;
	cmd->cdw11 = (uint32_t)(lba >> 32);
	cmd->cdw12 = (nlb - 1) & NVME_RW_NLB_MASK;
}

void
nvme_cmd_build_flush(struct nvme_cmd *cmd, uint32_t nsid)
{
	cmd_init(cmd, NVME_OPC_FLUSH);
	cmd->nsid = nsid;
}

void
nvme_cmd_build_dsm(struct nvme_cmd *cmd, uint32_t nsid, uint32_t nr_ranges, uint32_t attributes)
{
	cmd_init(cmd, NVME_OPC_DATASET_MANAGEMENT);
	cmd->nsid = nsid;
	cmd->cdw10 = (nr_ranges - 1) & NVME_DSM_NR_MASK;
	cmd->cdw11 = attributes;
}

void
nvme_cmd_build_resv(struct nvme_cmd *cmd, uint8_t opc, uint32_t nsid, uint32_t action, bool iekey,
		    uint32_t rtype, uint32_t cptpl)
{
	cmd_init(cmd, opc);
	cmd->nsid = nsid;
	/* Action 2:0, IEKEY 3, RTYPE 15:8 (Acquire, Release), CPTPL 31:30 (Register). */
	cmd->cdw10 = (action & 0x7u) | (iekey ? 1u << 3 : 0) | ((rtype & 0xffu) << 8) |
		     ((cptpl & 0x3u) << 30);
}

void
nvme_cmd_build_resv_report(struct nvme_cmd *cmd, uint32_t nsid, uint32_t len)
{
	cmd_init(cmd, NVME_OPC_RESERVATION_REPORT);
	cmd->nsid = nsid;
	cmd->cdw10 = len / 4 - 1; /* NUMD, 0-based dwords */
	cmd->cdw11 = 1;           /* EDS: 128-bit host identifiers */
}

void
nvme_cmd_set_sgl(struct nvme_cmd *cmd, uint32_t len, bool in_capsule)
{
	/*
	 * In-capsule data is addressed by its offset in the capsule's data area
	 * (always 0: one descriptor); anything else is a transport data block
	 * that R2T/H2CData or C2HData move. A command without data still
	 * carries a zero-length transport descriptor, as Linux hosts send.
	 */
	nvme_sgl_set_unkeyed(&cmd->dptr.sgl1, 0, len,
			     in_capsule && len > 0 ? NVME_SGL_ID_INCAPSULE : NVME_SGL_ID_TRANSPORT);
}

int
nvme_ns_info_from_identify(struct nvme_ns_info *info, const struct nvme_identify_ns *id)
{
	uint32_t index = id->flbas & NVME_FLBAS_INDEX_MASK;
	uint32_t lbaf, lbads;

	if (index > id->nlbaf || index >= 16) {
		return -EINVAL;
	}
	lbaf = id->lbaf[index];
	lbads = NVME_LBAF_LBADS(lbaf);
	if (lbads < 9 || lbads > 16) {
		return -EINVAL;
	}
	info->num_blocks = id->nsze;
	info->block_size = 1u << lbads;
	info->md_size = NVME_LBAF_MS(lbaf);
	info->extended_lba = info->md_size > 0 && (id->flbas & NVME_FLBAS_EXTENDED) != 0;
	/*
	 * Metadata in a separate buffer (MPTR) cannot travel over fabrics: a
	 * fabrics namespace with metadata uses the extended format.
	 */
	if (info->md_size > 0 && !info->extended_lba) {
		return -EINVAL;
	}
	info->xfer_block_size = info->block_size + (info->extended_lba ? info->md_size : 0);
	/* Sizes in bytes (the bdev layer's, a gga member's) must fit 64 bits. */
	if (info->num_blocks > UINT64_MAX / info->xfer_block_size) {
		return -EINVAL;
	}
	memcpy(info->nguid, id->nguid, sizeof(info->nguid));
	memcpy(info->eui64, id->eui64, sizeof(info->eui64));
	return 0;
}

uint32_t
nvme_mdts_to_bytes(uint8_t mdts, uint64_t cap)
{
	uint32_t mpsmin = (uint32_t)((cap >> NVME_CAP_MPSMIN_SHIFT) & 0xf);
	uint64_t bytes;

	if (mdts == 0) {
		return UINT32_MAX;
	}
	bytes = (uint64_t)4096 << mpsmin;
	if (mdts >= 32 || (bytes << mdts) > UINT32_MAX) {
		return UINT32_MAX;
	}
	return (uint32_t)(bytes << mdts);
}

int
nvme_connect_status_errno(uint16_t status)
{
	if (NVME_STATUS_GET_SCT(status) == NVME_SCT_COMMAND_SPECIFIC) {
		switch (NVME_STATUS_GET_SC(status)) {
		case NVME_SC_CONNECT_INVALID_PARAMETERS:
			return -ENODEV;
		case NVME_SC_CONNECT_INVALID_HOST:
			return -EACCES;
		case NVME_SC_CONNECT_CONTROLLER_BUSY:
			return -EBUSY;
		default:
			break;
		}
	}
	return -EIO;
}

const char *
nvme_status_string(uint16_t status)
{
	uint8_t sct = NVME_STATUS_GET_SCT(status), sc = NVME_STATUS_GET_SC(status);

	switch (sct) {
	case NVME_SCT_GENERIC:
		switch (sc) {
		case NVME_SC_SUCCESS:
			return "Successful Completion";
		case NVME_SC_INVALID_OPCODE:
			return "Invalid Command Opcode";
		case NVME_SC_INVALID_FIELD:
			return "Invalid Field in Command";
		case NVME_SC_COMMAND_ID_CONFLICT:
			return "Command ID Conflict";
		case NVME_SC_DATA_TRANSFER_ERROR:
			return "Data Transfer Error";
		case NVME_SC_INTERNAL_DEVICE_ERROR:
			return "Internal Error";
		case NVME_SC_ABORTED_BY_REQUEST:
			return "Command Abort Requested";
		case NVME_SC_ABORTED_SQ_DELETION:
			return "Command Aborted due to SQ Deletion";
		case NVME_SC_INVALID_NAMESPACE_OR_FORMAT:
			return "Invalid Namespace or Format";
		case NVME_SC_COMMAND_SEQUENCE_ERROR:
			return "Command Sequence Error";
		case NVME_SC_DATA_SGL_LENGTH_INVALID:
			return "Data SGL Length Invalid";
		case NVME_SC_SGL_DESCRIPTOR_TYPE_INVALID:
			return "SGL Descriptor Type Invalid";
		case NVME_SC_KEEP_ALIVE_EXPIRED:
			return "Keep Alive Timer Expired";
		case NVME_SC_TRANSIENT_TRANSPORT_ERROR:
			return "Transient Transport Error";
		case NVME_SC_LBA_OUT_OF_RANGE:
			return "LBA Out of Range";
		case NVME_SC_CAPACITY_EXCEEDED:
			return "Capacity Exceeded";
		case NVME_SC_NAMESPACE_NOT_READY:
			return "Namespace Not Ready";
		default:
			return "Generic Command Status";
		}
	case NVME_SCT_COMMAND_SPECIFIC:
		switch (sc) {
		case NVME_SC_INVALID_QUEUE_IDENTIFIER:
			return "Invalid Queue Identifier";
		case NVME_SC_INVALID_QUEUE_SIZE:
			return "Invalid Queue Size";
		case NVME_SC_CONNECT_INCOMPATIBLE_FORMAT:
			return "Connect Incompatible Format";
		case NVME_SC_CONNECT_CONTROLLER_BUSY:
			return "Connect Controller Busy";
		case NVME_SC_CONNECT_INVALID_PARAMETERS:
			return "Connect Invalid Parameters";
		case NVME_SC_CONNECT_RESTART_DISCOVERY:
			return "Connect Restart Discovery";
		case NVME_SC_CONNECT_INVALID_HOST:
			return "Connect Invalid Host";
		default:
			return "Command Specific Status";
		}
	case NVME_SCT_MEDIA_ERROR:
		switch (sc) {
		case NVME_SC_WRITE_FAULTS:
			return "Write Fault";
		case NVME_SC_UNRECOVERED_READ_ERROR:
			return "Unrecovered Read Error";
		default:
			return "Media and Data Integrity Error";
		}
	case NVME_SCT_PATH:
		switch (sc) {
		case NVME_SC_HOST_PATH_ERROR:
			return "Host Pathing Error";
		case NVME_SC_ABORTED_BY_HOST:
			return "Command Aborted By Host";
		default:
			return "Path Related Status";
		}
	default:
		return "Vendor Specific Status";
	}
}

int
nvme_transport_type_parse(const char *str, enum nvme_transport_type *type)
{
	if (str == NULL) {
		return -EINVAL;
	}
	if (strcasecmp(str, "tcp") == 0) {
		*type = NVME_TRANSPORT_TCP;
	} else if (strcasecmp(str, "rdma") == 0) {
		*type = NVME_TRANSPORT_RDMA;
	} else {
		return -EINVAL;
	}
	return 0;
}

const char *
nvme_transport_type_name(enum nvme_transport_type type)
{
	switch (type) {
	case NVME_TRANSPORT_TCP:
		return "TCP";
	case NVME_TRANSPORT_RDMA:
		return "RDMA";
	default:
		return "unknown";
	}
}

int
nvme_adrfam_parse(const char *str, enum nvme_adrfam *adrfam)
{
	if (str == NULL) {
		return -EINVAL;
	}
	if (strcasecmp(str, "ipv4") == 0) {
		*adrfam = NVME_ADRFAM_IPV4;
	} else if (strcasecmp(str, "ipv6") == 0) {
		*adrfam = NVME_ADRFAM_IPV6;
	} else {
		return -EINVAL;
	}
	return 0;
}

const char *
nvme_adrfam_name(enum nvme_adrfam adrfam)
{
	switch (adrfam) {
	case NVME_ADRFAM_IPV4:
		return "IPv4";
	case NVME_ADRFAM_IPV6:
		return "IPv6";
	default:
		return "unknown";
	}
}
