/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The gga bdev's I/O state machine.
 *
 * A request is processed in chunks of up to cap_blocks logical blocks, with
 * one member I/O per member per chunk into one pool element that holds a
 * region of chunk member blocks (data + metadata, extended LBA) per member.
 *
 * Read:   read the k data members (or, every recovery_read_every_n-th read,
 *         k-1 of them and a parity member), their halves straight into the
 *         caller's buffer where a raw block keeps them (metadata and parity
 *         into the pool element) → decode every block in place: a raw block
 *         is only checked, an lz4 one decompressed over its payload (copied
 *         aside first). If a block does not decode, or a member read
 *         failed, read the remaining live members too (and those read into
 *         the caller's buffer again, into the pool) and decode from
 *         everything (a forced recovery read). Fragments that were found
 *         corrupt, stale or torn are then repaired: take the range lock,
 *         re-read every live member, rebuild the bad fragments, write them.
 *         The read completes after its repair (rare, and it keeps the
 *         request's context for it). A block that cannot be decoded from k
 *         consistent fragments fails the request: wrong data is never
 *         returned.
 * Write:  take the range lock, make sure the chunk's regions are marked in
 *         the write-intent bitmap, reserve generations, encode every block,
 *         write every online and recovering member, complete when at least
 *         k online ones have written and no member the superblocks call in
 *         sync missed it (else after the superblocks say it is not).
 * write_zeroes, unmap: as write, with the zero encoding.
 * flush, reset: passed to every live member that supports them.
 *
 * A member I/O that fails marks the member FAILED (except an abort, which
 * only fails the request); the request goes on with the others.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "gga/bdev_module.h"
#include "gga/log.h"
#include "gga/nvme_spec.h"
#include "gga/util.h"

#include "bdev_gga_bitmap.h"
#include "bdev_gga_channel.h"
#include "bdev_gga_fanout.h"
#include "bdev_gga_io.h"
#include "bdev_gga_member.h"
#include "bdev_gga_sb.h"

static void chunk_next(struct bdev_io *io);
static void read_chunk_start(struct bdev_io *io);
static void write_chunk_go(struct bdev_io *io);
static void heal_start(struct bdev_io *io);

static inline struct gga_io *
gga_io_ctx(struct bdev_io *io)
{
	return (struct gga_io *)io->driver_ctx;
}

static inline struct gga_disk *
io_disk(struct bdev_io *io)
{
	return io->bdev->ctxt;
}

/* Member `m`'s buffer for block `b` of the chunk. */
static inline uint8_t *
member_block(const struct gga_io *gio, const struct gga_disk *disk, uint32_t m, uint32_t b)
{
	return gio->buf + (size_t)m * gio->stride + (size_t)b * disk->mbs;
}

/* Data member `m`'s iovecs for a read into the caller's buffer: after the regions. */
static inline struct iovec *
direct_iovs(const struct gga_io *gio, const struct gga_disk *disk, uint32_t m)
{
	return (struct iovec *)(gio->buf + (size_t)disk->n * gio->stride) +
	       (size_t)m * GGA_DIRECT_MAX_IOVS;
}

/* ---------------------------------------------------------------------- */
/* Range lock                                                              */
/* ---------------------------------------------------------------------- */

/*
 * Take the bits of blocks lba .. lba+count-1 (count <= GGA_LOCK_BITS), word
 * by word. Contention releases what was taken and reports failure: no one
 * ever waits while holding bits, so there is no deadlock.
 */
bool
gga_lock_try(struct gga_disk *disk, uint64_t lba, uint32_t count)
{
	uint32_t bit = (uint32_t)(lba % GGA_LOCK_BITS), left = count, nb, w, sh;
	uint64_t mask, old, taken_mask[GGA_LOCK_WORDS + 1];
	uint32_t taken_word[GGA_LOCK_WORDS + 1], ntaken = 0, i;

	while (left > 0) {
		w = bit / 64;
		sh = bit % 64;
		nb = GGA_MIN(64 - sh, left);
		mask = (nb == 64 ? ~0ull : ((1ull << nb) - 1)) << sh;
		old = __atomic_load_n(&disk->lock_words[w], __ATOMIC_RELAXED);
		do {
			if (old & mask) {
				for (i = 0; i < ntaken; i++) {
					__atomic_fetch_and(&disk->lock_words[taken_word[i]],
							   ~taken_mask[i], __ATOMIC_RELEASE);
				}
				return false;
			}
		} while (!__atomic_compare_exchange_n(&disk->lock_words[w], &old, old | mask, true,
						      __ATOMIC_ACQUIRE, __ATOMIC_RELAXED));
		taken_word[ntaken] = w;
		taken_mask[ntaken++] = mask;
		left -= nb;
		bit = (bit + nb) % GGA_LOCK_BITS;
	}
	return true;
}

void
gga_lock_release(struct gga_disk *disk, uint64_t lba, uint32_t count)
{
	uint32_t bit = (uint32_t)(lba % GGA_LOCK_BITS), left = count, nb, sh;
	uint64_t mask;

	while (left > 0) {
		sh = bit % 64;
		nb = GGA_MIN(64 - sh, left);
		mask = (nb == 64 ? ~0ull : ((1ull << nb) - 1)) << sh;
		__atomic_fetch_and(&disk->lock_words[bit / 64], ~mask, __ATOMIC_RELEASE);
		left -= nb;
		bit = (bit + nb) % GGA_LOCK_BITS;
	}
}

static void
chunk_unlock(struct bdev_io *io)
{
	struct gga_io *gio = gga_io_ctx(io);

	if (gio->bm_held) {
		gga_bitmap_release(io_disk(io), gio->chunk_lba, gio->chunk_blocks);
		gio->bm_held = false;
	}
	if (gio->locked) {
		gga_lock_release(io_disk(io), gio->chunk_lba, gio->chunk_blocks);
		gio->locked = false;
	}
}

/* ---------------------------------------------------------------------- */
/* Waiting for the lock or a generation window                             */
/* ---------------------------------------------------------------------- */

static void
retry_enqueue(struct bdev_io *io)
{
	struct gga_io *gio = gga_io_ctx(io);
	struct gga_channel *ch = gio->ch;

	TAILQ_INSERT_TAIL(&ch->retry, gio, link);
	if (ch->retry_poller == NULL) {
		ch->retry_poller = poller_register(gga_retry_poll, ch, 0, "gga_retry");
		if (ch->retry_poller == NULL) {
			ERRLOG("gga bdev '%s': cannot register the retry poller\n", io->bdev->name);
		}
	}
}

static void write_phase_done(struct bdev_io *io);
static void passthru_done(struct bdev_io *io);
static void request_fail(struct bdev_io *io);
static void request_fail_gated(struct bdev_io *io);

static void
retry_resume(struct bdev_io *io)
{
	if (unlikely(gga_disk_gated(io_disk(io)))) {
		request_fail_gated(io);
		return;
	}
	switch (gga_io_ctx(io)->phase) {
	case GGA_PHASE_WRITE_LOCK:
		write_chunk_go(io);
		break;
	case GGA_PHASE_WRITE_DURABLE:
		write_phase_done(io);
		break;
	case GGA_PHASE_FLUSH_DURABLE:
		passthru_done(io);
		break;
	case GGA_PHASE_HEAL_LOCK:
		heal_start(io);
		break;
	default:
		ERRLOG("gga bdev '%s': request in phase %u on the retry list\n", io->bdev->name,
		       gga_io_ctx(io)->phase);
		request_fail(io);
		break;
	}
}

/*
 * Runs on every iteration of the thread while requests wait. The holder of
 * the bits they want may be another thread, whose release sends no message,
 * so the poller reports busy while the list is not empty.
 */
int
gga_retry_poll(void *ctx)
{
	struct gga_channel *ch = ctx;
	TAILQ_HEAD(, gga_io) waiting = TAILQ_HEAD_INITIALIZER(waiting);
	struct gga_io *gio;

	TAILQ_CONCAT(&waiting, &ch->retry, link);
	while ((gio = TAILQ_FIRST(&waiting)) != NULL) {
		TAILQ_REMOVE(&waiting, gio, link);
		retry_resume(bdev_io_from_ctx(gio));
	}
	if (TAILQ_EMPTY(&ch->retry)) {
		poller_unregister(&ch->retry_poller);
	}
	return POLLER_BUSY;
}

/* ---------------------------------------------------------------------- */
/* Caller's buffer                                                         */
/* ---------------------------------------------------------------------- */

struct iov_cursor {
	int idx;
	uint32_t off;
};

/* The block at the cursor if it lies in one iovec segment, else NULL. */
static inline uint8_t *
iov_block(const struct bdev_io *io, const struct iov_cursor *c, uint32_t len)
{
	const struct iovec *iov = &io->u.iovs[c->idx];

	if (likely(iov->iov_len - c->off >= len)) {
		return (uint8_t *)iov->iov_base + c->off;
	}
	return NULL;
}

static inline void
iov_skip(const struct bdev_io *io, struct iov_cursor *c, size_t len)
{
	size_t n;

	while (len > 0 && c->idx < io->u.iovcnt) {
		n = GGA_MIN(io->u.iovs[c->idx].iov_len - c->off, len);
		c->off += (uint32_t)n;
		len -= n;
		if (c->off == io->u.iovs[c->idx].iov_len) {
			c->idx++;
			c->off = 0;
		}
	}
	/* Skip empty segments so that the cursor sits on real bytes. */
	while (c->idx < io->u.iovcnt && io->u.iovs[c->idx].iov_len == 0) {
		c->idx++;
	}
}

static void
iov_copy_out(const struct bdev_io *io, struct iov_cursor c, const uint8_t *src, size_t len)
{
	size_t n;

	while (len > 0 && c.idx < io->u.iovcnt) {
		n = GGA_MIN(io->u.iovs[c.idx].iov_len - c.off, len);
		memcpy((uint8_t *)io->u.iovs[c.idx].iov_base + c.off, src, n);
		src += n;
		len -= n;
		c.idx++;
		c.off = 0;
	}
}

static void
iov_copy_in(const struct bdev_io *io, struct iov_cursor c, uint8_t *dst, size_t len)
{
	size_t n;

	while (len > 0 && c.idx < io->u.iovcnt) {
		n = GGA_MIN(io->u.iovs[c.idx].iov_len - c.off, len);
		memcpy(dst, (const uint8_t *)io->u.iovs[c.idx].iov_base + c.off, n);
		dst += n;
		len -= n;
		c.idx++;
		c.off = 0;
	}
}

/* ---------------------------------------------------------------------- */
/* Request completion                                                      */
/* ---------------------------------------------------------------------- */

static void
request_done(struct bdev_io *io, enum bdev_io_status status)
{
	struct gga_io *gio = gga_io_ctx(io);
	struct bdev_gga_counters *st = &gio->ch->stats;

	chunk_unlock(io);
	if (gio->buf != NULL) {
		mempool_put(gio->pool, gio->buf);
		gio->buf = NULL;
	}
	switch (io->type) {
	case BDEV_IO_TYPE_READ:
		st->reads++;
		if (gio->forced) {
			st->recovery_reads_forced++;
		} else if (gio->periodic) {
			st->recovery_reads_periodic++;
		} else {
			st->regular_reads++;
		}
		break;
	case BDEV_IO_TYPE_WRITE:
	case BDEV_IO_TYPE_WRITE_ZEROES:
	case BDEV_IO_TYPE_UNMAP:
		st->writes++;
		break;
	default:
		break;
	}
	if (status != BDEV_IO_STATUS_SUCCESS) {
		st->failed_ios++;
	}
	__atomic_fetch_add(&io_disk(io)->front_done, 1, __ATOMIC_RELAXED);
	if (unlikely(gio->path_error)) {
		/* Not served from this front: a multipath host retries on the other. */
		bdev_io_complete_nvme_status(io, NVME_SCT_PATH, NVME_SC_ANA_INACCESSIBLE);
		return;
	}
	bdev_io_complete(io, status);
}

/* This front may not serve it (standby, or stepped down): nothing is acknowledged. */
static void
request_fail_gated(struct bdev_io *io)
{
	gga_io_ctx(io)->path_error = true;
	request_done(io, BDEV_IO_STATUS_FAILED);
}

/* The request cannot be served: an abort of a member I/O reports as one. */
static void
request_fail(struct bdev_io *io)
{
	request_done(io, gga_io_ctx(io)->aborted ? BDEV_IO_STATUS_ABORTED : BDEV_IO_STATUS_FAILED);
}

/* ---------------------------------------------------------------------- */
/* Member I/O                                                              */
/* ---------------------------------------------------------------------- */

static void phase_done(struct bdev_io *io);
static const struct gga_fanout_ops member_fanout;

static inline struct gga_io *
fanout_gio(struct gga_fanout *fo)
{
	return container_of(fo, struct gga_io, fo);
}

static void
member_io_done(struct bdev_io *mio, bool success, void *cb_arg)
{
	uint32_t i;
	struct gga_fanout *fo = gga_fanout_of(cb_arg, &i);
	struct gga_io *gio = fanout_gio(fo);
	struct gga_disk *disk = fo->disk;
	struct gga_channel *ch = gio->ch;
	bool fenced = false;
	int err = 0;

	assert(i < disk->n && disk == io_disk(bdev_io_from_ctx(gio)));
	assert(mio->bdev == disk->members[i].bdev && ch->member_outstanding[i] > 0);
	if (unlikely(!success)) {
		err = bdev_io_get_errno(mio);
		fenced = gga_member_io_fenced(disk, mio);
	}
	/* Free first so the next submission can reuse it at once. */
	bdev_free_io(mio);

	ch->member_outstanding[i]--;
	ch->member_done[i]++;
	if (likely(success)) {
		gga_fanout_ok(fo, i);
	} else if (err == -ECANCELED && (gga_live_mask(disk) & (1u << i))) {
		/* Aborted by a reset: the member is fine, this request is not. */
		gio->aborted = true;
	} else if (err == -ECANCELED) {
		/* Cancelled by the reset of a member failed meanwhile (it stalled): go on without it. */
		ch->stats.member_io_errors++;
	} else if (fenced) {
		/*
		 * Reservation Conflict: the other front took the member. Not a
		 * member failure: gga_member_io_fenced stopped this front serving,
		 * it steps down, and the request is not acknowledged.
		 */
	} else {
		ch->stats.member_io_errors++;
		gga_fanout_fail(fo, i,
				gio->member_op == BDEV_IO_TYPE_READ  ? "a read failed" :
				gio->member_op == BDEV_IO_TYPE_WRITE ? "a write failed" :
								       "an I/O failed");
	}
	if (unlikely(ch->member_release[i] != NULL) && ch->member_outstanding[i] == 0) {
		gga_channel_member_drained(ch, i);
	}
	gga_fanout_put_ops(fo, &member_fanout);
}

/*
 * Submit the member I/O of the current phase to member i. A member with no
 * channel (being removed) counts as an error of the request, not of the
 * member; the fan-out fails a member that refuses the I/O. Inlined into the
 * fan-out's loop (its ops are a constant here), as it was into the loop of
 * its own the I/O path had: the hot path calls no more than before.
 */
static inline __attribute__((always_inline)) int
member_submit_one(struct gga_fanout *fo, uint32_t i, void *mcb)
{
	struct gga_io *gio = fanout_gio(fo);
	struct bdev_io *io = bdev_io_from_ctx(gio);
	struct gga_disk *disk = fo->disk;
	struct gga_member *member = &disk->members[i];
	struct gga_channel *ch = gio->ch;
	struct io_channel *mch = ch->member_ch[i];
	uint64_t offset = disk->data_offset + gio->chunk_lba;
	int rc;

	if (unlikely(mch == NULL)) {
		ch->stats.member_io_errors++;
		return -ENODEV;
	}
	switch (gio->member_op) {
	case BDEV_IO_TYPE_READ:
		if (gio->direct_mask & (1u << i)) {
			rc = bdev_readv_blocks(member->desc, mch, direct_iovs(gio, disk, i),
					       (int)gio->direct_iovcnt, offset, gio->chunk_blocks,
					       member_io_done, mcb);
		} else {
			rc = bdev_read_blocks(member->desc, mch, member_block(gio, disk, i, 0),
					      offset, gio->chunk_blocks, member_io_done, mcb);
		}
		break;
	case BDEV_IO_TYPE_WRITE:
		rc = bdev_write_blocks(member->desc, mch, member_block(gio, disk, i, 0), offset,
				       gio->chunk_blocks, member_io_done, mcb);
		break;
	case BDEV_IO_TYPE_FLUSH:
		rc = bdev_flush_blocks(member->desc, mch, disk->data_offset + io->u.offset_blocks,
				       io->u.num_blocks, member_io_done, mcb);
		break;
	case BDEV_IO_TYPE_RESET:
		rc = bdev_reset(member->desc, mch, member_io_done, mcb);
		break;
	default:
		rc = -EINVAL;
		break;
	}
	if (likely(rc == 0)) {
		ch->member_outstanding[i]++;
	} else if (rc != -ENOMEM) {
		ch->stats.member_io_errors++;
	}
	return rc;
}

static struct io_channel *
member_channel(struct gga_fanout *fo, uint32_t i)
{
	return fanout_gio(fo)->ch->member_ch[i];
}

static void
member_phase_done(struct gga_fanout *fo)
{
	phase_done(bdev_io_from_ctx(fanout_gio(fo)));
}

/*
 * A phase's member I/O: a member without a bdev_io to spare makes the
 * request wait for one (the others already submitted carry on); a member
 * that refuses the I/O counts as failed for it. The phase ends when nothing
 * is in flight and nothing is left to submit.
 */
static const struct gga_fanout_ops member_fanout = {
	.submit = member_submit_one,
	.done = member_phase_done,
	.channel = member_channel,
	.nomem = GGA_FANOUT_WAIT,
	.refused = "submission refused",
};

static void
member_phase_start(struct bdev_io *io, uint8_t phase, enum bdev_io_type op, uint32_t mask)
{
	struct gga_io *gio = gga_io_ctx(io);

	gio->phase = phase;
	gio->member_op = (uint8_t)op;
	gga_fanout_start(&gio->fo, &member_fanout, io_disk(io), mask);
}

/* ---------------------------------------------------------------------- */
/* Chunks                                                                  */
/* ---------------------------------------------------------------------- */

static void
chunk_done(struct bdev_io *io)
{
	struct gga_io *gio = gga_io_ctx(io);
	struct iov_cursor c = { gio->iov_idx, gio->iov_off };

	chunk_unlock(io);
	/* The cursor only matters if another chunk follows. */
	if (io->u.iovs != NULL && gio->next_lba != io->u.offset_blocks + io->u.num_blocks) {
		iov_skip(io, &c, (size_t)gio->chunk_blocks * io_disk(io)->block_size);
		gio->iov_idx = c.idx;
		gio->iov_off = c.off;
	}
	chunk_next(io);
}

static void
chunk_next(struct bdev_io *io)
{
	struct gga_io *gio = gga_io_ctx(io);
	uint64_t end = io->u.offset_blocks + io->u.num_blocks;

	if (gio->next_lba == end) {
		request_done(io, BDEV_IO_STATUS_SUCCESS);
		return;
	}
	gio->chunk_lba = gio->next_lba;
	gio->chunk_blocks = (uint32_t)GGA_MIN((uint64_t)gio->cap_blocks, end - gio->next_lba);
	gio->next_lba += gio->chunk_blocks;
	if (io->type == BDEV_IO_TYPE_READ) {
		read_chunk_start(io);
	} else {
		gio->phase = GGA_PHASE_WRITE_LOCK;
		write_chunk_go(io);
	}
}

/* ---------------------------------------------------------------------- */
/* Read                                                                    */
/* ---------------------------------------------------------------------- */

/* The first parity members in `live`, enough to make `want` k members. */
static uint32_t
add_parity(const struct gga_disk *disk, uint32_t want, uint32_t live)
{
	uint32_t i;

	for (i = disk->k; i < disk->n && popcount32(want) < disk->k; i++) {
		if (live & (1u << i)) {
			want |= 1u << i;
		}
	}
	return want;
}

/*
 * Append [base, base + len) to an iovec list; with `merge`, extend the last
 * entry instead if it ends at base (consecutive member blocks in the pool).
 */
static inline void
iov_append(struct iovec *iov, uint32_t *cnt, uint8_t *base, size_t len, bool merge)
{
	if (merge && *cnt > 0 &&
	    (uint8_t *)iov[*cnt - 1].iov_base + iov[*cnt - 1].iov_len == base) {
		iov[*cnt - 1].iov_len += len;
		return;
	}
	iov[*cnt].iov_base = base;
	iov[*cnt].iov_len = len;
	(*cnt)++;
}

/*
 * Plan the chunk's reads of the data members in `want` straight into the
 * caller's buffer: per block that lies in one iovec segment, member i's half
 * goes to its place in the block (where a raw block keeps it, so decode
 * checks it there and copies nothing) and its metadata to the pool element;
 * other blocks go wholly to the pool element, as the other members' do. This
 * saves decode a copy of every raw block. Sets direct_mask (0 when no block
 * qualifies or the chunk is too long for the iovec lists).
 */
static void
direct_plan(struct bdev_io *io, uint32_t want)
{
	struct gga_io *gio = gga_io_ctx(io);
	struct gga_disk *disk = io_disk(io);
	struct iov_cursor c = { gio->iov_idx, gio->iov_off };
	uint32_t mask = want & disk->data_mask, cnt = 0, n = 0, F = disk->frag_size, b, i, m;
	struct iovec *lists = direct_iovs(gio, disk, 0), *iov;
	bool any = false;
	uint8_t *dst, *mb;

	gio->direct_mask = 0;
	if (unlikely(!disk->direct_reads || gio->chunk_blocks > GGA_DIRECT_MAX_IOVS / 2 ||
		     mask == 0)) {
		return;
	}
	for (b = 0;; b++) {
		dst = iov_block(io, &c, disk->block_size);
		any |= dst != NULL;
		for (m = mask; m != 0; m &= m - 1) {
			i = (uint32_t)__builtin_ctz(m);
			iov = lists + (size_t)i * GGA_DIRECT_MAX_IOVS;
			mb = member_block(gio, disk, i, b);
			n = cnt;
			if (likely(dst != NULL)) {
				iov_append(iov, &n, dst + (size_t)i * F, F, false);
				iov_append(iov, &n, mb + F, disk->md_size, false);
			} else {
				iov_append(iov, &n, mb, disk->mbs, true);
			}
		}
		/* Every member's list has the same shape (pool regions merge alike). */
		cnt = n;
		if (b + 1 == gio->chunk_blocks) {
			break;
		}
		iov_skip(io, &c, disk->block_size);
	}
	if (likely(any)) {
		gio->direct_mask = mask;
		gio->direct_iovcnt = cnt;
	}
}

static void
read_chunk_start(struct bdev_io *io)
{
	struct gga_io *gio = gga_io_ctx(io);
	struct gga_disk *disk = io_disk(io);
	uint32_t live = gga_live_mask(disk);
	uint32_t data = disk->data_mask, want, i;

	if (unlikely(gio->periodic)) {
		data &= ~(1u << gio->skip_index);
	}
	want = data & live;
	if (unlikely(want != data)) {
		/* A data member is down: every read of it is a recovery read. */
		gio->forced = true;
	}
	if (want != disk->data_mask) {
		want = add_parity(disk, want, live);
		/* Parity alone may not make up for a member down and one skipped on purpose. */
		for (i = 0; i < disk->n && popcount32(want) < disk->k; i++) {
			want |= live & (1u << i);
		}
	}
	if (unlikely(popcount32(want) < disk->k)) {
		request_fail(io);
		return;
	}
	gio->read_mask = want;
	gio->present_mask = 0;
	direct_plan(io, want);
	member_phase_start(io, GGA_PHASE_READ, BDEV_IO_TYPE_READ, want);
}

/*
 * What a decode of every live member, under the block's lock, found wrong
 * in block lba (any thread). Fragments of different writes are a torn
 * write. Corrupt fragments are their members' fault and count toward the
 * error policy, but those gga poisoned itself; so are fragments of an older
 * write where no write can have been torn (a region not marked in the
 * write-intent bitmap): that member lost a write. Only a decode under the
 * lock counts: read without it, a block a write is changing shows fragments
 * of two versions, which are nobody's fault.
 */
static void
count_bad(struct gga_disk *disk, struct gga_channel *ch, const struct gga_decode_info *info,
	  uint32_t present, int rc, uint64_t lba)
{
	uint32_t corrupt = info->corrupt_mask & ~info->poison_mask & present;
	uint32_t stale = info->stale_mask & present;

	ch->stats.checksum_failures += popcount32(corrupt);
	ch->stats.stale_fragments += popcount32(stale);
	if ((info->stale_mask | info->orphan_mask) != 0 || (rc != 0 && info->corrupt_mask == 0)) {
		ch->stats.torn_writes_detected++;
	}
	if (stale != 0 && gga_bitmap_marked(disk, lba)) {
		stale = 0;
	}
	if ((corrupt | stale) != 0) {
		gga_member_charge(disk, lba, corrupt | stale);
	}
}

/* decode_chunk() flags: count what was found; log the blocks that do not decode. */
#define DECODE_COUNT    0x1u
#define DECODE_LOG_FAIL 0x2u

/*
 * Decode every block of the chunk from the members in present_mask. Returns
 * 0 when every block decoded and every present fragment was valid; 1 when
 * every block decoded but some fragment was not (a repair is due); -EIO when
 * some block did not decode, whatever the other blocks did: one block that
 * cannot be decoded fails the whole request.
 */
static int
decode_chunk(struct bdev_io *io, uint32_t flags)
{
	struct gga_io *gio = gga_io_ctx(io);
	struct gga_disk *disk = io_disk(io);
	struct gga_channel *ch = gio->ch;
	/*
	 * Not zero-initialised: the codec reads only the present entries, and
	 * clearing 2 x 16 pointers per call showed in profiles of 4 KiB reads.
	 */
	const void *fd[GGA_CODEC_MAX_FRAGS], *fm[GGA_CODEC_MAX_FRAGS];
	struct iov_cursor c = { gio->iov_idx, gio->iov_off };
	uint32_t present = gio->present_mask, b, i, m;
	struct gga_decode_info info;
	uint8_t *dst, *frag;
	int rc, result = 0;

	for (b = 0; b < gio->chunk_blocks; b++) {
		for (i = 0; i < disk->n; i++) {
			frag = member_block(gio, disk, i, b);
			fd[i] = frag;
			fm[i] = frag + disk->frag_size;
		}
		dst = iov_block(io, &c, disk->block_size);
		if (dst != NULL) {
			/* direct_plan() put these halves where the raw block has them. */
			for (m = gio->direct_mask; m != 0; m &= m - 1) {
				i = (uint32_t)__builtin_ctz(m);
				fd[i] = dst + (size_t)i * disk->frag_size;
			}
		}
		rc = gga_codec_decode(disk->codec, ch->scratch, fd, fm, present, gio->chunk_lba + b,
				      dst != NULL ? dst : ch->bounce, &info);
		if (likely(rc == 0)) {
			if (unlikely(dst == NULL)) {
				iov_copy_out(io, c, ch->bounce, disk->block_size);
			}
			if (unlikely((info.valid_mask & present) != present) && result == 0) {
				/* Repairable; an earlier block that failed keeps the chunk failed. */
				result = 1;
			}
		} else {
			result = -EIO;
		}
		if ((flags & DECODE_COUNT) &&
		    unlikely(rc != 0 || (info.valid_mask & present) != present)) {
			count_bad(disk, ch, &info, present, rc, gio->chunk_lba + b);
		}
		if ((flags & DECODE_LOG_FAIL) && unlikely(rc != 0) &&
		    gga_lost_block_read(disk, gio->chunk_lba + b)) {
			ERRLOG("gga bdev '%s': lba %" PRIu64 " cannot be decoded from "
			       "members 0x%x (corrupt 0x%x); the read fails\n",
			       io->bdev->name, gio->chunk_lba + b, present, info.corrupt_mask);
		}
		iov_skip(io, &c, disk->block_size);
	}
	return result;
}

static void
read_phase_done(struct bdev_io *io)
{
	struct gga_io *gio = gga_io_ctx(io);
	struct gga_disk *disk = io_disk(io);
	uint32_t more;
	bool final;
	int rc;

	gio->present_mask |= gio->fo.ok_mask;
	more = gga_live_mask(disk) & ~gio->read_mask;
	final = more == 0;
	if (popcount32(gio->present_mask) >= disk->k) {
		rc = decode_chunk(io, 0);
		if (likely(rc == 0)) {
			chunk_done(io);
			return;
		}
	} else {
		rc = -EIO;
	}
	if (!final) {
		/* Forced recovery: bring in every live member not read yet. */
		gio->forced = true;
		if (gio->direct_mask != 0) {
			/*
			 * Halves read into the caller's buffer may have been decoded
			 * over: read those members again, into the pool this time.
			 */
			more |= gio->direct_mask & gga_live_mask(disk);
			gio->present_mask &= ~gio->direct_mask;
			gio->direct_mask = 0;
		}
		gio->read_mask |= more;
		member_phase_start(io, GGA_PHASE_READ, BDEV_IO_TYPE_READ, more);
		return;
	}
	if (rc < 0) {
		/*
		 * Read without the range lock, a block that a write is changing
		 * can show fragments of two versions: look once more under the
		 * lock before calling it lost (heal_read_done decides).
		 */
		gio->reread = true;
		heal_start(io);
		return;
	}
	/*
	 * Every block decoded, some fragment did not: look again under the
	 * lock, which confirms what is wrong (counted then) and, with repair
	 * on, mends it.
	 */
	heal_start(io);
}

/* ---------------------------------------------------------------------- */
/* Repair                                                                  */
/* ---------------------------------------------------------------------- */

static void
heal_start(struct bdev_io *io)
{
	struct gga_io *gio = gga_io_ctx(io);
	struct gga_disk *disk = io_disk(io);

	gio->phase = GGA_PHASE_HEAL_LOCK;
	if (!gga_lock_try(disk, gio->chunk_lba, gio->chunk_blocks)) {
		retry_enqueue(io);
		return;
	}
	gio->locked = true;
	/* What was read may have been a write in progress: look again under the lock. */
	gio->read_mask = gga_live_mask(disk);
	gio->present_mask = 0;
	gio->direct_mask = 0;
	member_phase_start(io, GGA_PHASE_HEAL_READ, BDEV_IO_TYPE_READ, gio->read_mask);
}

static void
heal_read_done(struct bdev_io *io)
{
	struct gga_io *gio = gga_io_ctx(io);
	struct gga_disk *disk = io_disk(io);
	struct gga_channel *ch = gio->ch;
	const void *fd[GGA_CODEC_MAX_FRAGS] = { NULL }, *fm[GGA_CODEC_MAX_FRAGS] = { NULL };
	void *od[GGA_CODEC_MAX_FRAGS] = { NULL }, *om[GGA_CODEC_MAX_FRAGS] = { NULL };
	uint32_t present = gio->fo.ok_mask, target, b, i;
	struct gga_decode_info info;
	bool counted = false;
	uint8_t *frag;
	int rc;

	gio->present_mask = present;
	gio->dirty_mask = 0;
	gio->repairs = 0;
	gio->repairs_stale = 0;
	gio->repairs_torn = 0;
	if (popcount32(present) < disk->k) {
		if (gio->reread) {
			request_fail(io);
			return;
		}
		/* The data returned was verified; only the repair is given up. */
		chunk_done(io);
		return;
	}
	/*
	 * Under the lock, what is found wrong is confirmed: counted here, once
	 * (the first decode of the chunk read unlocked counted nothing).
	 */
	if (gio->reread) {
		/* The chunk did not decode unlocked: this decode decides what is returned. */
		gio->reread = false;
		if (decode_chunk(io, DECODE_COUNT | DECODE_LOG_FAIL) < 0) {
			request_fail(io);
			return;
		}
		counted = true;
	}
	if (!disk->repair) {
		if (!counted) {
			decode_chunk(io, DECODE_COUNT);
		}
		chunk_done(io);
		return;
	}
	for (i = 0; i < disk->n; i++) {
		od[i] = ch->heal + (size_t)i * disk->mbs;
		om[i] = (uint8_t *)od[i] + disk->frag_size;
	}
	for (b = 0; b < gio->chunk_blocks; b++) {
		for (i = 0; i < disk->n; i++) {
			if (present & (1u << i)) {
				frag = member_block(gio, disk, i, b);
				fd[i] = frag;
				fm[i] = frag + disk->frag_size;
			}
		}
		rc = gga_codec_decode(disk->codec, ch->scratch, fd, fm, present, gio->chunk_lba + b,
				      ch->bounce, &info);
		target = present & ~info.valid_mask;
		if (!counted && (rc != 0 || target != 0)) {
			count_bad(disk, ch, &info, present, rc, gio->chunk_lba + b);
		}
		if (rc != 0 || target == 0) {
			continue;
		}
		rc = gga_codec_rebuild(disk->codec, ch->scratch, fd, fm, present,
				       gio->chunk_lba + b, target, od, om, NULL);
		if (rc != 0) {
			continue;
		}
		for (i = 0; i < disk->n; i++) {
			if (target & (1u << i)) {
				memcpy(member_block(gio, disk, i, b), od[i], disk->mbs);
			}
		}
		gio->dirty_mask |= target;
		gio->repairs += popcount32(target);
		gio->repairs_stale += popcount32(target & info.stale_mask);
		gio->repairs_torn += popcount32(target & info.orphan_mask);
	}
	if (gio->dirty_mask == 0) {
		chunk_done(io);
		return;
	}
	/* Blocks that were fine are rewritten unchanged: nobody else writes under the lock. */
	member_phase_start(io, GGA_PHASE_HEAL_WRITE, BDEV_IO_TYPE_WRITE, gio->dirty_mask);
}

static void
heal_write_done(struct bdev_io *io)
{
	struct gga_io *gio = gga_io_ctx(io);

	if ((gio->fo.ok_mask & gio->dirty_mask) == gio->dirty_mask) {
		gio->ch->stats.repairs_written += gio->repairs;
		gio->ch->stats.repairs_stale += gio->repairs_stale;
		gio->ch->stats.repairs_torn += gio->repairs_torn;
		gio->ch->stats.repairs_corrupt += gio->repairs - gio->repairs_stale -
						  gio->repairs_torn;
	}
	chunk_done(io);
}

/* ---------------------------------------------------------------------- */
/* Write                                                                   */
/* ---------------------------------------------------------------------- */

/*
 * Encode one written block. A region whose writes keep coming back
 * incompressible (GGA_INCOMP_SKIP in a row) stops trying LZ4 but for every
 * GGA_INCOMP_RETRY-th block of the channel, which tries again; any block
 * that compresses starts the count over. Only what is tried counts.
 */
static int
encode_block(struct gga_disk *disk, struct gga_channel *ch, const void *src, uint64_t lba,
	     uint64_t gen, void *const fd[], void *const fm[], struct gga_encode_info *info)
{
	uint8_t *incomp = gga_region_incomp(disk, lba);
	uint8_t seen = incomp != NULL ? __atomic_load_n(incomp, __ATOMIC_RELAXED) : 0;
	uint32_t flags = 0;
	int rc;

	if (seen >= GGA_INCOMP_SKIP && ++ch->incomp_seq % GGA_INCOMP_RETRY != 0) {
		flags = GGA_ENCODE_NO_LZ4;
		ch->stats.lz4_skipped_blocks++;
	}
	rc = gga_codec_encode_ex(disk->codec, ch->scratch, src, lba, gen, flags, fd, fm, info);
	if (rc == 0 && incomp != NULL && flags == 0 && info->encoding != GGA_ENC_ZERO) {
		__atomic_store_n(incomp,
				 info->encoding == GGA_ENC_RAW ?
					 (uint8_t)GGA_MIN(seen + 1u, UINT8_MAX) :
					 0,
				 __ATOMIC_RELAXED);
	}
	return rc;
}

/* Encode the chunk into the member regions. Returns 0 or -EIO. */
static int
encode_chunk(struct bdev_io *io)
{
	struct gga_io *gio = gga_io_ctx(io);
	struct gga_disk *disk = io_disk(io);
	struct gga_channel *ch = gio->ch;
	struct bdev_gga_counters *st = &ch->stats;
	void *fd[GGA_CODEC_MAX_FRAGS], *fm[GGA_CODEC_MAX_FRAGS];
	struct iov_cursor c = { gio->iov_idx, gio->iov_off };
	struct gga_encode_info info;
	const uint8_t *src;
	uint32_t b, i;
	int rc;

	for (b = 0; b < gio->chunk_blocks; b++) {
		for (i = 0; i < disk->n; i++) {
			fd[i] = member_block(gio, disk, i, b);
			fm[i] = (uint8_t *)fd[i] + disk->frag_size;
		}
		if (io->type == BDEV_IO_TYPE_WRITE) {
			src = iov_block(io, &c, disk->block_size);
			if (unlikely(src == NULL)) {
				iov_copy_in(io, c, ch->bounce, disk->block_size);
				src = ch->bounce;
			}
			rc = encode_block(disk, ch, src, gio->chunk_lba + b, gio->gen + b, fd, fm,
					  &info);
			iov_skip(io, &c, disk->block_size);
		} else {
			rc = gga_codec_encode_zero(disk->codec, gio->chunk_lba + b, gio->gen + b,
						   fd, fm, &info);
		}
		if (unlikely(rc != 0)) {
			ERRLOG("gga bdev '%s': encoding lba %" PRIu64 " failed: %s\n",
			       io->bdev->name, gio->chunk_lba + b, strerror(-rc));
			return -EIO;
		}
		switch (info.encoding) {
		case GGA_ENC_RAW:
			st->raw_blocks++;
			break;
		case GGA_ENC_LZ4:
			st->lz4_blocks++;
			break;
		default:
			st->zero_blocks++;
			break;
		}
		st->logical_bytes_written += disk->block_size;
		st->compressed_bytes_written += info.payload_len;
	}
	return 0;
}
/* The members of the persisted checkpoint as a write or flush goes out. */
static uint32_t
rec_now(const struct gga_disk *disk)
{
	struct gga_lc_durable durable;

	gga_lc_durable_unpack(__atomic_load_n(&disk->persisted, __ATOMIC_ACQUIRE), &durable);
	return durable.rec;
}

/*
 * Take the range lock and the generations, then encode and write. Either
 * missing makes the request wait on the channel's retry list. Generations
 * are taken under the lock, so of two overlapping writes the later one to
 * lock also has the larger generation.
 */
static void
write_chunk_go(struct bdev_io *io)
{
	struct gga_io *gio = gga_io_ctx(io);
	struct gga_disk *disk = io_disk(io);
	uint32_t live;

	if (!gio->locked) {
		if (unlikely(!gga_lock_try(disk, gio->chunk_lba, gio->chunk_blocks))) {
			retry_enqueue(io);
			return;
		}
		gio->locked = true;
	}
	live = gga_live_mask(disk);
	if (unlikely(popcount32(live) < disk->k)) {
		request_fail(io);
		return;
	}
	/* Its regions are marked on the members before anything is written to them. */
	if (unlikely(!gga_bitmap_hold(disk, gio->chunk_lba, gio->chunk_blocks, gio->bm_held))) {
		gio->bm_held = true;
		retry_enqueue(io);
		return;
	}
	gio->bm_held = true;
	if (unlikely(gga_gen_reserve(disk, gio->chunk_blocks, &gio->gen) != 0)) {
		/* The next window is being persisted: let others at these blocks meanwhile. */
		chunk_unlock(io);
		retry_enqueue(io);
		return;
	}
	if (unlikely(encode_chunk(io) != 0)) {
		request_fail(io);
		return;
	}
	/*
	 * Members being recovered take every write too (read_mask: whom it went
	 * to). Whose checkpoint bit holds it back (rule 7): the members of the
	 * persisted checkpoint, and the running pass's targets, which may be past
	 * these blocks before the update that puts them in the checkpoint has
	 * landed. Not a member online now that misses it and then joins a pass:
	 * that pass waits for the range lock this write holds, so its checkpoint
	 * stays at or below these blocks (held back by its bit, the write would
	 * wait for the pass and the pass for the write, for ever). The online
	 * members first: a target that goes online in between still counts.
	 */
	live = gga_live_mask(disk);
	gio->read_mask = gga_write_mask(disk);
	gio->held = (gio->read_mask & ~live) | rec_now(disk);
	member_phase_start(io, GGA_PHASE_WRITE, BDEV_IO_TYPE_WRITE, gio->read_mask);
}

/*
 * The acknowledgement of a write or flush that the members in `received`
 * took (rule 7), as the lifecycle module decides it on the latest persisted
 * superblock update.
 */
static enum gga_lc_ack
ack_decide(const struct gga_disk *disk, const struct gga_io *gio, uint32_t received)
{
	struct gga_lc_durable durable;

	gga_lc_durable_unpack(__atomic_load_n(&disk->persisted, __ATOMIC_ACQUIRE), &durable);
	return gga_lc_ack_decide(&durable, disk->n, disk->k, gio->held, received,
				 gga_live_mask(disk));
}

/*
 * k in-sync fragments of the same generation define the block: the write is
 * durable. It is acknowledged once no member that the superblocks call in
 * sync (or of the recovery checkpoint) lacks it: a member that missed it must
 * first be recorded as not in sync there, by an update that reached every
 * online member that has it, so that no restart can take it for one that
 * holds the block (gga_lc_ack_decide). Members that joined a pass after the
 * write went out get the block from the pass, which waits for the range lock
 * this write holds.
 */
static void
write_phase_done(struct bdev_io *io)
{
	struct gga_io *gio = gga_io_ctx(io);
	struct gga_disk *disk = io_disk(io);
	enum gga_lc_ack ack = ack_decide(disk, gio, gio->fo.ok_mask);

	if (unlikely(ack == GGA_LC_ACK_NEVER || gio->aborted)) {
		/*
		 * Aborted by a reset: the member that did not take it is not
		 * failed, so no update will ever say it missed it; the write is
		 * not acknowledged (a torn write, resolved as any other).
		 */
		request_fail(io);
		return;
	}
	if (unlikely(ack == GGA_LC_ACK_WAIT)) {
		gio->phase = GGA_PHASE_WRITE_DURABLE;
		gga_sb_kick(disk);
		retry_enqueue(io);
		return;
	}
	chunk_done(io);
}

/* ---------------------------------------------------------------------- */
/* Flush and reset                                                         */
/* ---------------------------------------------------------------------- */

static void
passthru_start(struct bdev_io *io, enum bdev_io_type op)
{
	struct gga_disk *disk = io_disk(io);
	uint32_t live = gga_write_mask(disk), mask = 0, i;

	if (popcount32(gga_live_mask(disk)) < disk->k) {
		request_fail(io);
		return;
	}
	for (i = 0; i < disk->n; i++) {
		if ((live & (1u << i)) &&
		    (op == BDEV_IO_TYPE_FLUSH ? disk->members[i].flush_supported :
						disk->members[i].reset_supported)) {
			mask |= 1u << i;
		}
	}
	/* Which members were asked (passthru_done): read_mask is free in this phase. */
	gga_io_ctx(io)->read_mask = mask;
	/* A flush holds no range: every member asked counts, as do the checkpoint's. */
	gga_io_ctx(io)->held = mask | rec_now(disk);
	member_phase_start(io, GGA_PHASE_PASSTHRU, op, mask);
}

static void
passthru_done(struct bdev_io *io)
{
	struct gga_io *gio = gga_io_ctx(io);
	struct gga_disk *disk = io_disk(io);
	enum gga_lc_ack ack;

	if (popcount32(gga_live_mask(disk)) < disk->k || gio->aborted) {
		request_fail(io);
		return;
	}
	if (io->type == BDEV_IO_TYPE_FLUSH) {
		/*
		 * A member whose flush failed may have lost acknowledged writes
		 * from its cache: the superblocks must call it out of sync before
		 * the flush is acknowledged, as for a write it missed (members not
		 * asked, without a volatile cache, count as having it).
		 */
		ack = ack_decide(disk, gio, disk->all_mask & ~(gio->read_mask & ~gio->fo.ok_mask));
		if (unlikely(ack == GGA_LC_ACK_NEVER)) {
			request_fail(io);
			return;
		}
		if (unlikely(ack == GGA_LC_ACK_WAIT)) {
			gio->phase = GGA_PHASE_FLUSH_DURABLE;
			gga_sb_kick(disk);
			retry_enqueue(io);
			return;
		}
	}
	request_done(io, BDEV_IO_STATUS_SUCCESS);
}

/* ---------------------------------------------------------------------- */
/* Dispatch                                                                */
/* ---------------------------------------------------------------------- */

static void
phase_done(struct bdev_io *io)
{
	if (unlikely(gga_disk_gated(io_disk(io)))) {
		/* Stepped down while it was at the members: whatever they did, not acknowledged. */
		request_fail_gated(io);
		return;
	}
	switch (gga_io_ctx(io)->phase) {
	case GGA_PHASE_READ:
		read_phase_done(io);
		break;
	case GGA_PHASE_HEAL_READ:
		heal_read_done(io);
		break;
	case GGA_PHASE_HEAL_WRITE:
		heal_write_done(io);
		break;
	case GGA_PHASE_WRITE:
		write_phase_done(io);
		break;
	case GGA_PHASE_PASSTHRU:
		passthru_done(io);
		break;
	default:
		request_fail(io);
		break;
	}
}

void
gga_submit_request(struct io_channel *_ch, struct bdev_io *io)
{
	struct gga_channel *ch = io_channel_get_ctx(_ch);
	struct gga_disk *disk = io_disk(io);
	struct gga_io *gio = gga_io_ctx(io);
	uint64_t seq;

	__atomic_fetch_add(&disk->front_ios, 1, __ATOMIC_RELAXED);
	gio->ch = ch;
	gio->buf = NULL;
	gio->iov_idx = 0;
	gio->iov_off = 0;
	gio->periodic = false;
	gio->forced = false;
	gio->aborted = false;
	gio->locked = false;
	gio->reread = false;
	gio->bm_held = false;
	gio->path_error = false;
	gio->fo.pending = 0;
	gio->fo.submit_mask = 0;
	gio->direct_mask = 0;
	gio->next_lba = io->u.offset_blocks;
	if (unlikely(gga_disk_gated(disk)) && io->type != BDEV_IO_TYPE_RESET) {
		request_fail_gated(io);
		return;
	}

	switch (io->type) {
	case BDEV_IO_TYPE_READ:
	case BDEV_IO_TYPE_WRITE:
	case BDEV_IO_TYPE_WRITE_ZEROES:
	case BDEV_IO_TYPE_UNMAP:
		break;
	case BDEV_IO_TYPE_FLUSH:
	case BDEV_IO_TYPE_RESET:
		passthru_start(io, io->type);
		return;
	default:
		request_done(io, BDEV_IO_STATUS_FAILED);
		return;
	}

	gio->buf = NULL;
	if (unlikely(io->u.num_blocks > disk->small_blocks)) {
		gio->pool = disk->large_pool;
		gio->cap_blocks = disk->large_blocks;
		gio->stride = disk->large_stride;
		gio->buf = mempool_get(gio->pool);
	}
	if (likely(gio->buf == NULL)) {
		/*
		 * Small requests, and large ones when the few large buffers are
		 * all in use (another thread's deep queue must not starve this
		 * one): smaller chunks, more of them.
		 */
		gio->pool = disk->small_pool;
		gio->cap_blocks = disk->small_blocks;
		gio->stride = disk->small_stride;
		gio->buf = mempool_get(gio->pool);
	}
	if (unlikely(gio->buf == NULL)) {
		/* The bdev layer queues it and resubmits when an I/O of ours completes. */
		__atomic_fetch_add(&disk->front_done, 1, __ATOMIC_RELAXED);
		bdev_io_complete(io, BDEV_IO_STATUS_NOMEM);
		return;
	}

	if (io->type == BDEV_IO_TYPE_READ && disk->recovery_read_every_n != 0) {
		seq = ++ch->read_seq;
		if (seq % disk->recovery_read_every_n == 0) {
			/* Alternate which data member the recovery path rebuilds. */
			gio->periodic = true;
			gio->skip_index = (uint16_t)((seq / disk->recovery_read_every_n) % disk->k);
		}
	}
	chunk_next(io);
}
