/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness for the NVMe-oF target core's command handling
 * (target/nvmf*.c): Fabrics (Connect, Property Get/Set), admin and I/O
 * commands from arbitrary SQEs, executed for real against a small malloc
 * bdev namespace through a fake transport on one hand-polled thread (app
 * thread and poll group at once).
 *
 * The fake transport does what target/tcp_conn.c does with a capsule: it
 * parses the SGL with nvmf_tcp_sgl_parse(), fails the command with that
 * status, or gives the core a buffer of exactly the transfer length (filled
 * from the in-capsule data, or from the input for R2T'd data). So a command
 * that touches more data than it was given is an ASan report.
 *
 * Input:
 *   byte 0, set-up before the commands:
 *     bit 0: Connect an admin queue and set CC.EN
 *     bit 1: ... to the discovery subsystem instead of the NVM subsystem
 *     bit 2: also Connect I/O queue 1 (NVM subsystem only)
 *   then records until the input runs out:
 *     1 byte: bit 0 = send on the I/O queue (else the admin queue)
 *     64 bytes: the SQE
 *     2 bytes (LE): in-capsule data length, then that many bytes
 *   Host-to-controller data fetched with an R2T is read from the bytes after
 *   the record (without consuming them; past the input it reads as zeros).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "gga/thread.h"
#include "gga/util.h"

#include "target/nvmf_internal.h"
#include "target/tcp_internal.h"
#include "test/common/nvmf_fake_transport.h"
#include "fuzz_common.h"

/* In-capsule data the TCP transport accepts on an admin queue and on an I/O queue. */
#define ADMIN_ICD TCP_ADMIN_ICD_SIZE

#define CFG_ADMIN     (1u << 0)
#define CFG_DISCOVERY (1u << 1)
#define CFG_IO        (1u << 2)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A request of the fake transport (test/common/nvmf_fake_transport.c). */
struct fuzz_req {
	struct fake_req f;
	uint8_t *buf; /* exactly f.req.length bytes */
	TAILQ_ENTRY(fuzz_req) link;
};

static TAILQ_HEAD(, fuzz_req) g_reqs = TAILQ_HEAD_INITIALIZER(g_reqs);
static const struct nvmf_listen_addr g_addr = {
	.trtype = NVME_TRTYPE_LOOP,
	.adrfam = NVME_ADRFAM_IPV4,
	.traddr = "127.0.0.1",
	.trsvcid = "4420",
};

static void
setup(void)
{
	fuzz_env_init("fuzz_nvmf_cmd");
	fake_transport_add(0);
	fuzz_subsystem_create(&g_addr, false);
}

static struct fake_qpair *
qpair_new(void)
{
	struct fake_qpair *fq = fake_qpair_new(&g_addr, "fuzz");

	if (fq == NULL) {
		fuzz_die("qpair");
	}
	return fq;
}

static void
qpair_close(struct fake_qpair *fq)
{
	if (fq == NULL) {
		return;
	}
	fake_qpair_disconnect(&fq->qpair);
	fuzz_poll_all();
	if (!fq->fini_done) {
		fprintf(stderr, "fuzz_nvmf_cmd: qpair fini never finished\n");
		abort();
	}
	free(fq);
}

/*
 * Submit a command as the TCP transport would: parse the SGL against the
 * in-capsule data that came with it, then execute with a buffer of exactly
 * the transfer length. r2t_data (may be NULL) supplies host-to-controller
 * data that is not in the capsule. Returns the request (done or still held
 * by the core, as an Asynchronous Event Request is).
 */
static struct fuzz_req *
submit(struct fake_qpair *fq, const struct nvme_cmd *cmd, const uint8_t *icd, uint32_t icd_len,
       const uint8_t *r2t_data, size_t r2t_len)
{
	struct fuzz_req *r = calloc(1, sizeof(*r));
	uint32_t max_icd, len, icd_off;
	uint16_t status;
	bool is_icd;

	if (r == NULL) {
		fuzz_die("request");
	}
	TAILQ_INSERT_TAIL(&g_reqs, r, link);
	r->f.req.qpair = &fq->qpair;
	r->f.req.cmd = *cmd;
	r->f.req.xfer = nvmf_cmd_xfer(cmd);
	max_icd = fq->qpair.qid == 0 ? ADMIN_ICD : g_fake_transport.opts.in_capsule_data_size;
	if (icd_len > max_icd) {
		/* The common header check ends the connection before the SGL is parsed. */
		r->f.done = true;
		return r;
	}
	status = nvmf_tcp_sgl_parse(cmd, icd_len, max_icd, g_fake_transport.opts.max_io_size, &len,
				    &is_icd, &icd_off);
	if (status != 0) {
		nvmf_request_fail(&r->f.req, status);
		return r;
	}
	if (len > 0) {
		r->buf = malloc(len);
		if (r->buf == NULL) {
			fuzz_die("data buffer");
		}
		memset(r->buf, 0, len);
		if (is_icd) {
			memcpy(r->buf, icd + icd_off, len);
		} else if (r->f.req.xfer == NVME_XFER_HOST_TO_CTRLR && r2t_data != NULL) {
			memcpy(r->buf, r2t_data, GGA_MIN((size_t)len, r2t_len));
		}
		r->f.iov.iov_base = r->buf;
		r->f.iov.iov_len = len;
		r->f.req.iov = &r->f.iov;
		r->f.req.iovcnt = 1;
	}
	r->f.req.length = len;
	nvmf_request_exec(&r->f.req);
	fuzz_poll_all();
	return r;
}

static bool
setup_connect(struct fake_qpair *fq, const char *subnqn, uint16_t qid, uint16_t cntlid)
{
	struct nvme_connect_cmd cmd = { .opc = NVME_OPC_FABRICS,
					.flags = NVME_CMD_FLAGS_SGL,
					.fctype = NVME_FCTYPE_CONNECT,
					.qid = qid,
					.sqsize = 31 };
	struct nvme_connect_data data = { .cntlid = cntlid };
	struct fuzz_req *r;

	nvme_sgl_set_unkeyed(&cmd.sgl1, 0, sizeof(data), NVME_SGL_ID_INCAPSULE);
	memset(data.hostid, 0xab, sizeof(data.hostid));
	snprintf(data.subnqn, sizeof(data.subnqn), "%s", subnqn);
	snprintf(data.hostnqn, sizeof(data.hostnqn), "%s", FUZZ_HOSTNQN);
	r = submit(fq, (const struct nvme_cmd *)&cmd, (const uint8_t *)&data, sizeof(data), NULL,
		   0);
	return r->f.done && NVME_STATUS_IS_SUCCESS(r->f.req.rsp.status) && fq->qpair.ctrlr != NULL;
}

static void
setup_enable(struct fake_qpair *fq)
{
	struct nvme_prop_set_cmd cmd = { .opc = NVME_OPC_FABRICS,
					 .fctype = NVME_FCTYPE_PROPERTY_SET,
					 .attrib = NVME_PROP_SIZE_4,
					 .ofst = NVME_REG_CC };

	cmd.value = NVME_CC_EN | NVME_CC_IOSQES_64 | NVME_CC_IOCQES_16;

	submit(fq, (const struct nvme_cmd *)&cmd, NULL, 0, NULL, 0);
}

static void
reqs_free(void)
{
	struct fuzz_req *r;

	while ((r = TAILQ_FIRST(&g_reqs)) != NULL) {
		if (!r->f.done) {
			/* The transport would free the request under the core's feet. */
			fprintf(stderr, "fuzz_nvmf_cmd: opc 0x%x never completed\n",
				r->f.req.cmd.opc);
			abort();
		}
		TAILQ_REMOVE(&g_reqs, r, link);
		free(r->buf);
		free(r);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool initialized;
	struct fake_qpair *admin = NULL, *io = NULL, *fq;
	struct nvme_cmd cmd;
	size_t off = 1;
	uint32_t icd_len;
	uint8_t cfg, ctl;

	if (!initialized) {
		setup();
		initialized = true;
	}
	if (size < 1) {
		return 0;
	}
	cfg = data[0];
	admin = qpair_new();
	if (cfg & CFG_ADMIN) {
		const char *nqn = (cfg & CFG_DISCOVERY) ? NVME_DISCOVERY_NQN : FUZZ_SUBNQN;

		if (setup_connect(admin, nqn, 0, 0xffff)) {
			setup_enable(admin);
			if ((cfg & CFG_IO) && !(cfg & CFG_DISCOVERY)) {
				io = qpair_new();
				setup_connect(io, FUZZ_SUBNQN, 1, admin->qpair.ctrlr->cntlid);
			}
		}
	}
	if (io == NULL) {
		/* Commands meant for the I/O queue go to an unconnected one. */
		io = qpair_new();
	}

	while (off + 1 + sizeof(cmd) + 2 <= size) {
		ctl = data[off++];
		memcpy(&cmd, data + off, sizeof(cmd));
		off += sizeof(cmd);
		icd_len = (uint32_t)data[off] | (uint32_t)data[off + 1] << 8;
		off += 2;
		if (icd_len > size - off) {
			icd_len = (uint32_t)(size - off);
		}
		fq = (ctl & 1) ? io : admin;
		if (fq->disconnected) {
			/* The transport stops receiving on a disconnected queue. */
			off += icd_len;
			continue;
		}
		submit(fq, &cmd, data + off, icd_len, data + off + icd_len, size - off - icd_len);
		off += icd_len;
	}

	qpair_close(io);
	qpair_close(admin);
	reqs_free();
	return 0;
}
