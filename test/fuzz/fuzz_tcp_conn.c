/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness for the real NVMe/TCP connection code of the target
 * (target/tcp_conn.c with tcp.c, tcp_pdu.c and the core): receive state
 * machine, PDU dispatch, R2T/H2CData, C2HData and CapsuleResp transmit,
 * termination and teardown, against a malloc bdev namespace.
 *
 * Each input is one connection, or two (an admin and an I/O queue of one
 * controller), each over a socketpair(AF_UNIX, SOCK_STREAM): the target's end
 * goes to nvmf_tcp_conn_create() on the TCP transport's poll group (what an
 * accepted socket gets, without a listener), the host's end stays here. The
 * input is written into the host's end in chunks (so PDUs arrive cut
 * anywhere, and several at once), the thread is polled until idle after each
 * chunk, and what the target sends is read and checked as a PDU stream. Then
 * the host goes away and the connections must be torn down completely: no
 * qpair, no controller left, nothing leaked. Controller IDs start at 1 for
 * every input (the previous input's controllers are gone), so an I/O queue's
 * Connect in the input can name its controller.
 *
 * Input:
 *   byte 0, flags:
 *     bits 0-1: how the host leaves: 0 close; 1 shutdown(SHUT_WR), read to
 *               EOF, close; 2 read what is there, close; 3 as 0
 *     bit 2: the host reads nothing until it leaves (the target's sends
 *            fill the socket: EAGAIN, EPOLLOUT)
 *     bit 3: a 4 KiB send buffer on the target's end (sends are partial)
 *     bit 4: two connections: two bytes (LE) give the length of the first
 *            one's stream, the rest is the second's; the first stays open
 *            while the second runs
 *     bit 5: (two connections) the first leaves halfway through the
 *            second's stream
 *     bit 6: no chunk crosses the end of a PDU (by the PLEN of each common
 *            header in the stream): the target has answered each PDU before
 *            the next comes, as with a host that waits (then the R2T of a
 *            write always carries TTAG 0)
 *     bit 7: before the hosts leave, time jumps past every timer (ICReq
 *            wait, TermReq linger, keep-alive)
 *   byte 1: chunk seed; 0 writes the whole stream at once (as far as the
 *           socket takes it), others draw chunk sizes from 1 byte to 16 KiB
 *   then the bytes the host sends (test/fuzz/gen_corpus.py writes sessions)
 *
 * The checks on the target's output (any failure aborts, so libFuzzer keeps
 * the input): every PDU is one a controller sends, with the fixed header
 * length of its type and a consistent PLEN; the ICResp comes first and once;
 * nothing follows a C2HTermReq; with digests negotiated, header and data
 * digests are present and right.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gga/nvme_tcp.h"
#include "gga/thread.h"
#include "gga/util.h"

#include "target/nvmf_internal.h"
#include "target/tcp_internal.h"
#include "fuzz_common.h"

#define FLAG_LEAVE_MASK   3u
#define FLAG_LEAVE_SHUT   1u
#define FLAG_LEAVE_READ   2u
#define FLAG_STUCK_READER (1u << 2)
#define FLAG_SMALL_SNDBUF (1u << 3)
#define FLAG_TWO_CONNS    (1u << 4)
#define FLAG_FIRST_LEAVES (1u << 5)
#define FLAG_PDU_WISE     (1u << 6)
#define FLAG_TIME_JUMP    (1u << 7)

/* Rounds of fuzz_poll_all() a connection may take to go away after the host left. */
#define TEARDOWN_ROUNDS 100
/* Longer than the longest timer of a connection (pdu_timeout_ms, 10 s by default). */
#define TIME_JUMP_US    (11u * 1000 * 1000)
/* Chunks in a row the socket refused before the host gives up writing. */
#define MAX_STALLS      16
/* The largest PDU the target sends: a C2HData of TCP_C2H_MAX_DATA with padding and digests. */
#define OUT_MAX_PDU     (TCP_C2H_MAX_DATA + NVME_TCP_MAX_HLEN + 4 * (NVME_TCP_MAX_PDA + 1) + 8)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

extern const struct nvmf_transport_ops nvmf_tcp_ops;

static struct tcp_transport *g_tt;
static struct tcp_group *g_group;
static struct nvmf_subsystem *g_subsys;
static const struct nvmf_listen_addr g_addr = {
	.trtype = NVME_TRTYPE_TCP,
	.adrfam = NVME_ADRFAM_IPV4,
	.traddr = "127.0.0.1",
	.trsvcid = "4420",
};

/* A host's end of a connection, and its view of what the target sent. */
struct host {
	int fd;
	uint8_t buf[2 * OUT_MAX_PDU];
	size_t len;
	bool icresp;
	bool term;
	bool hdgst;
	bool ddgst;
	bool eof;
};

static struct host g_hosts[2];
/* FUZZ_VERBOSE set: log the target's messages and print every PDU it sends. */
static bool g_verbose;

static void
setup(void)
{
	struct nvmf_transport_opts opts;
	struct nvmf_transport *t;

	fuzz_env_init("fuzz_tcp_conn");
	g_verbose = getenv("FUZZ_VERBOSE") != NULL;
	nvmf_transport_opts_init(&nvmf_tcp_ops, &opts);
	/* Few requests and buffers, so a session can run out of both. */
	opts.max_queue_depth = 32;
	opts.num_shared_buffers = 64;
	t = fuzz_transport_create(&nvmf_tcp_ops, &opts);
	g_tt = container_of(t, struct tcp_transport, base);
	g_group = (struct tcp_group *)nvmf_poll_group_get_tgroup(&g_nvmf_tgt.pgs[0], t);
	if (g_group == NULL) {
		fuzz_die("TCP poll group");
	}
	g_subsys = fuzz_subsystem_create(&g_addr, false);
}

/* PDUs follow each other at any byte offset: read the header fields by copying them. */
static uint32_t
pdu_plen(const uint8_t *p)
{
	uint32_t plen;

	memcpy(&plen, p + offsetof(struct nvme_tcp_common_hdr, plen), sizeof(plen));
	return plen;
}

static void __attribute__((noreturn)) fail(const char *what, const uint8_t *pdu)
{
	fprintf(stderr, "fuzz_tcp_conn: %s", what);
	if (pdu != NULL) {
		fprintf(stderr, " (PDU type 0x%02x flags 0x%02x hlen %u pdo %u plen %u)", pdu[0],
			pdu[1], pdu[2], pdu[3], pdu_plen(pdu));
	}
	fprintf(stderr, "\n");
	abort();
}

static bool
digest_ok(const uint8_t *p, uint32_t len)
{
	uint32_t crc;

	memcpy(&crc, p + len, sizeof(crc));
	return crc32c(p, len, 0) == crc;
}

/* Check the fixed parts of one whole PDU the target sent. */
static void
check_pdu(struct host *rx, const uint8_t *p)
{
	union nvme_tcp_pdu_hdr hdr;
	const struct nvme_tcp_common_hdr *ch = &hdr.ch;
	uint32_t hd = rx->hdgst ? NVME_TCP_DIGEST_LEN : 0;
	uint32_t dd = rx->ddgst ? NVME_TCP_DIGEST_LEN : 0;
	uint32_t hlen;

	memcpy(&hdr, p, GGA_MIN((size_t)pdu_plen(p), sizeof(hdr)));
	hlen = ch->pdu_type == NVME_TCP_PDU_ICRESP ?
		       NVME_TCP_ICRESP_HLEN :
	       ch->pdu_type == NVME_TCP_PDU_CAPSULE_RESP ?
		       NVME_TCP_RSP_HLEN :
		       NVME_TCP_DATA_HLEN; /* C2HTermReq, C2HData and R2T too */
	if (g_verbose) {
		fprintf(stderr, "fuzz_tcp_conn: host %d got PDU type 0x%02x plen %u",
			(int)(rx - g_hosts), ch->pdu_type, ch->plen);
		if (ch->pdu_type == NVME_TCP_PDU_CAPSULE_RESP) {
			const struct nvme_cpl *cpl = &hdr.rsp.rccqe;

			fprintf(stderr, ": cid %u status 0x%04x", cpl->cid, cpl->status);
		}
		fprintf(stderr, "\n");
	}
	if (rx->term) {
		fail("a PDU after the C2HTermReq", p);
	}
	if (!rx->icresp && ch->pdu_type != NVME_TCP_PDU_ICRESP &&
	    ch->pdu_type != NVME_TCP_PDU_C2H_TERM_REQ) {
		fail("a PDU before the ICResp", p);
	}
	if (ch->hlen != hlen) {
		fail("wrong HLEN", p);
	}
	switch (ch->pdu_type) {
	case NVME_TCP_PDU_ICRESP: {
		const struct nvme_tcp_icresp *icr = &hdr.icresp;

		if (rx->icresp || ch->plen != NVME_TCP_ICRESP_HLEN || ch->flags != 0) {
			fail("a second or malformed ICResp", p);
		}
		rx->icresp = true;
		rx->hdgst = (icr->dgst & NVME_TCP_DGST_HDR_ENABLE) != 0;
		rx->ddgst = (icr->dgst & NVME_TCP_DGST_DATA_ENABLE) != 0;
		return;
	}
	case NVME_TCP_PDU_C2H_TERM_REQ:
		if (ch->plen < NVME_TCP_TERM_REQ_MIN_PLEN ||
		    ch->plen > NVME_TCP_TERM_REQ_MAX_PLEN || ch->flags != 0) {
			fail("malformed C2HTermReq", p);
		}
		rx->term = true;
		return;
	case NVME_TCP_PDU_CAPSULE_RESP:
	case NVME_TCP_PDU_R2T:
		if (ch->plen != hlen + hd) {
			fail("wrong PLEN", p);
		}
		break;
	case NVME_TCP_PDU_C2H_DATA: {
		const struct nvme_tcp_data_hdr *h = &hdr.data;

		if (ch->pdo < hlen + hd || h->datal == 0 || h->datal > TCP_C2H_MAX_DATA ||
		    ch->plen != ch->pdo + h->datal + dd) {
			fail("C2HData with inconsistent PDO/DATAL/PLEN", p);
		}
		if (rx->ddgst != ((ch->flags & NVME_TCP_F_DDGST) != 0) ||
		    (rx->ddgst && !digest_ok(p + ch->pdo, h->datal))) {
			fail("C2HData with a missing or wrong data digest", p);
		}
		break;
	}
	default:
		fail("a PDU type a controller does not send", p);
	}
	if (rx->hdgst != ((ch->flags & NVME_TCP_F_HDGST) != 0) ||
	    (rx->hdgst && !digest_ok(p, hlen))) {
		fail("a missing or wrong header digest", p);
	}
}

/* Check the whole PDUs received so far; keep a partial one for later. */
static void
parse_rx(struct host *rx)
{
	size_t off = 0;
	uint32_t plen;

	while (rx->len - off >= sizeof(struct nvme_tcp_common_hdr)) {
		plen = pdu_plen(rx->buf + off);
		if (plen < sizeof(struct nvme_tcp_common_hdr) || plen > OUT_MAX_PDU) {
			fail("PLEN out of range", rx->buf + off);
		}
		if (rx->len - off < plen) {
			break;
		}
		check_pdu(rx, rx->buf + off);
		off += plen;
	}
	memmove(rx->buf, rx->buf + off, rx->len - off);
	rx->len -= off;
}

/* Read and check what the target sent. Returns false once the target closed. */
static bool
host_read(struct host *h)
{
	ssize_t n;

	while (!h->eof) {
		n = recv(h->fd, h->buf + h->len, sizeof(h->buf) - h->len, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR) {
				continue;
			}
			/* EAGAIN: all read for now; ECONNRESET: the target is gone. */
			h->eof = errno != EAGAIN && errno != EWOULDBLOCK;
			break;
		}
		if (n == 0) {
			h->eof = true;
			break;
		}
		h->len += (size_t)n;
		parse_rx(h);
	}
	return !h->eof;
}

/* A new connection: the target's end to the transport, the host's end to h. */
static void
host_connect(struct host *h, uint8_t flags)
{
	int fds[2], sndbuf = 4096;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) {
		fuzz_die("socketpair");
	}
	if (flags & FLAG_SMALL_SNDBUF) {
		setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	}
	/* Admission token 0: the harness has no listener to count connections on. */
	if (nvmf_tcp_conn_create(g_tt, g_group, &g_nvmf_tgt.pgs[0], fds[0], &g_addr, "fuzz", 0) !=
	    0) {
		fuzz_die("connection");
	}
	h->fd = fds[1];
	h->len = 0;
	h->icresp = h->term = h->hdgst = h->ddgst = h->eof = false;
}

static size_t
chunk_size(uint32_t *rng, size_t left)
{
	static const uint32_t max[] = { 8, 72, 1024, 16384 };
	uint32_t r;

	if (*rng == 0) {
		return left;
	}
	r = fuzz_rand(rng);
	return GGA_MIN(left, (size_t)(r >> 2) % max[r & 3] + 1);
}

/* Where the PDU starting at off of the stream ends (by its PLEN; the stream's end if cut). */
static size_t
pdu_end(const uint8_t *p, size_t off, size_t len)
{
	uint32_t plen;

	if (len - off < sizeof(struct nvme_tcp_common_hdr)) {
		return len;
	}
	memcpy(&plen, p + off + offsetof(struct nvme_tcp_common_hdr, plen), sizeof(plen));
	if (plen < sizeof(struct nvme_tcp_common_hdr) || plen > len - off) {
		return len;
	}
	return off + plen;
}

/* Write the stream into the host's end, polling the target after each chunk. */
static void
host_send(struct host *h, const uint8_t *p, size_t len, uint8_t flags, uint32_t seed)
{
	uint32_t rng = seed != 0 ? seed * 2654435761u : 0;
	size_t off = 0, end = 0;
	int stalls = 0;
	ssize_t n;

	while (off < len && stalls < MAX_STALLS) {
		if (off == end) {
			end = (flags & FLAG_PDU_WISE) ? pdu_end(p, off, len) : len;
		}
		n = send(h->fd, p + off, chunk_size(&rng, end - off), MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0) {
			off += (size_t)n;
			stalls = 0;
		} else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			/* EPIPE: the target closed the connection. */
			break;
		} else {
			stalls++;
		}
		fuzz_poll_all();
		if (!(flags & FLAG_STUCK_READER)) {
			host_read(h);
		}
	}
	fuzz_poll_all();
}

static void
host_leave(struct host *h, uint8_t flags)
{
	int i;

	switch (flags & FLAG_LEAVE_MASK) {
	case FLAG_LEAVE_SHUT:
		shutdown(h->fd, SHUT_WR);
		for (i = 0; i < TEARDOWN_ROUNDS && host_read(h); i++) {
			fuzz_poll_all();
		}
		break;
	case FLAG_LEAVE_READ:
		fuzz_poll_all();
		host_read(h);
		break;
	default:
		break;
	}
	close(h->fd);
	h->fd = -1;
}

/* After the hosts left: the connections, their controller and requests must all go. */
static void
check_teardown(void)
{
	int i;

	for (i = 0; i < TEARDOWN_ROUNDS; i++) {
		fuzz_poll_all();
		if (TAILQ_EMPTY(&g_group->qpairs) && TAILQ_EMPTY(&g_subsys->ctrlrs) &&
		    g_nvmf_tgt.num_qpairs == 0) {
			return;
		}
	}
	fail(!TAILQ_EMPTY(&g_group->qpairs)  ? "a connection outlived its socket" :
	     !TAILQ_EMPTY(&g_subsys->ctrlrs) ? "a controller outlived its connections" :
					       "the core still counts a qpair",
	     NULL);
}

/*
 * The I/O queue's connection, while the admin queue's is open: its stream
 * (the rest of the input), or half of it, then the admin queue leaves, then
 * the other half.
 */
static void
run_second(const uint8_t *p, size_t len, uint8_t flags, uint32_t seed)
{
	size_t cut = (flags & FLAG_FIRST_LEAVES) ? len / 2 : len;

	host_connect(&g_hosts[1], flags);
	host_send(&g_hosts[1], p, cut, flags, seed);
	if (flags & FLAG_FIRST_LEAVES) {
		host_leave(&g_hosts[0], flags);
		host_send(&g_hosts[1], p + cut, len - cut, flags, seed);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool initialized;
	size_t off = 2, len;
	uint8_t flags;
	int i;

	if (!initialized) {
		setup();
		initialized = true;
	}
	if (size < 2) {
		return 0;
	}
	flags = data[0];
	len = size - off;
	if (flags & FLAG_TWO_CONNS) {
		if (size < 4) {
			return 0;
		}
		off = 4;
		len = GGA_MIN(size - off, (size_t)data[2] | (size_t)data[3] << 8);
	}
	g_subsys->next_cntlid = NVME_CNTLID_MIN;
	g_hosts[1].fd = -1;
	host_connect(&g_hosts[0], flags);
	host_send(&g_hosts[0], data + off, len, flags, data[1]);
	if (flags & FLAG_TWO_CONNS) {
		run_second(data + off + len, size - off - len, flags, data[1]);
	}
	if (flags & FLAG_TIME_JUMP) {
		fuzz_time_jump(TIME_JUMP_US);
	}
	/* The I/O queue's host first, unless the admin queue's has left already. */
	for (i = 1; i >= 0; i--) {
		if (g_hosts[i].fd >= 0) {
			host_leave(&g_hosts[i], flags);
		}
	}
	check_teardown();
	return 0;
}
