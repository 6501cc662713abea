// SPDX-License-Identifier: GPL-2.0
/*
 * Remote access to pool buffers, per call: FRWR registration of exactly the
 * bytes the peer may touch, and the RDMA READ/WRITE chains that move a
 * rendezvous payload.  Pool memory was DMA-mapped when the pool was made;
 * nothing here maps memory.  An FRWR only grants a key over pages that are
 * already mapped, and the key changes on every grant (ib_inc_rkey()).
 */
#include <rdma/mr_pool.h>

#include "rdma.h"
#include "pool.h"
#include "inject.h"

/*
 * Register bytes [off, off + len) of @buf in MR slot @i of @sctx.  The MR
 * page size is the buffer's segment size: segments are naturally aligned
 * high-order allocations, so each is one "page" of the MR.  The last
 * scatterlist entry is clipped while mapping so that the key ends exactly
 * at the payload: a peer must not read the stale rest of a recycled buffer.
 */
KRPC_FAULT_POINT int krpc_mr_map(struct krpc_rdma_conn *rc,
				  struct krpc_sctx *sctx, unsigned int i,
				  struct krpc_buf *buf, u32 off, u32 len,
				  int access, struct ib_reg_wr *reg)
{
	u32 seg = 1U << buf->seg_shift;
	unsigned int first = off >> buf->seg_shift;
	unsigned int last = (off + len - 1) >> buf->seg_shift;
	unsigned int n = last - first + 1, sg_off = off & (seg - 1);
	struct scatterlist *lsg = &buf->sgl[last];
	unsigned int saved = sg_dma_len(lsg);
	struct ib_mr *mr;
	int ret;

	lockdep_assert_held(&rc->conn->lock);
	if (WARN_ON_ONCE(!len || last >= buf->nsegs))
		return -EINVAL;
	mr = ib_mr_pool_get(rc->qp, &rc->mrs);
	if (!mr)
		return -EAGAIN;

	sg_dma_len(lsg) = ((off + len - 1) & (seg - 1)) + 1;
	ret = ib_map_mr_sg(mr, &buf->sgl[first], n, &sg_off, seg);
	sg_dma_len(lsg) = saved;
	if (ret != n) {
		ib_mr_pool_put(rc->qp, &rc->mrs, mr);
		return ret < 0 ? ret : -EINVAL;
	}
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));

	memset(reg, 0, sizeof(*reg));
	reg->wr.opcode = IB_WR_REG_MR;
	reg->wr.wr_cqe = &sctx->cqe;
	reg->wr.send_flags = IB_SEND_SIGNALED;
	reg->mr = mr;
	reg->key = mr->rkey;
	reg->access = access;
	sctx->mr[i] = mr;
	sctx->mr_state[i] = MR_VALID;
	/* The device owns the bytes from now on, read or written. */
	krpc_buf_sync(buf, off, len, true);
	krpc_conn_stat_inc(rc->conn, KRPC_STAT_MR_GRANTS);
	return 0;
}
/* Callers fail the connection when no MR can be had (inject.h). */
ALLOW_ERROR_INJECTION(krpc_mr_map, ERRNO);

/* Give the MRs of a context back; only once their keys are dead. */
void krpc_mr_put_all_locked(struct krpc_sctx *sctx)
{
	struct krpc_rdma_conn *rc = sctx->rc;
	unsigned int i;

	lockdep_assert_held(&rc->conn->lock);
	for (i = 0; i < ARRAY_SIZE(sctx->mr); i++) {
		if (!sctx->mr[i])
			continue;
		ib_mr_pool_put(rc->qp, &rc->mrs, sctx->mr[i]);
		sctx->mr[i] = NULL;
		sctx->mr_state[i] = MR_NONE;
	}
}

/*
 * SGEs for bytes [off, off + len) of @buf, local key only: the lengths are
 * ours to get right (local_dma_lkey does not bound them).
 */
unsigned int krpc_buf_sges(struct krpc_rdma_conn *rc, struct krpc_buf *buf,
			   u32 off, u32 len, struct ib_sge *sge,
			   unsigned int max)
{
	u32 seg = 1U << buf->seg_shift, lkey = rc->kdev->pd->local_dma_lkey;
	unsigned int n = 0;

	while (len) {
		unsigned int i = off >> buf->seg_shift;
		u32 in = off & (seg - 1), cnt = min(len, seg - in);

		if (WARN_ON_ONCE(n == max || i >= buf->nsegs))
			return 0;
		sge[n].addr = buf->segs[i].dma + in;
		sge[n].length = cnt;
		sge[n].lkey = lkey;
		n++;
		off += cnt;
		len -= cnt;
	}
	return n;
}

static unsigned int range_segs(const struct krpc_buf *buf, u32 off, u32 len)
{
	if (!len)
		return 0;
	return ((off + len - 1) >> buf->seg_shift) - (off >> buf->seg_shift) + 1;
}

unsigned int krpc_rw_nr_wr(struct krpc_rdma_conn *rc, struct krpc_buf *buf,
			   u32 off, u32 len, u32 per_wr)
{
	return DIV_ROUND_UP(range_segs(buf, off, len), per_wr);
}

/*
 * Build the READ or WRITE chain that moves @len bytes between the payload
 * of @buf and the peer's region (@raddr, @rkey), in rc->wr[] / rc->sge[].
 * The peer's region is contiguous (one FRWR); ours is split by segment.
 * Return: the number of work requests, linked, last one's next NULL.
 */
unsigned int krpc_rw_build(struct krpc_rdma_conn *rc, struct krpc_sctx *sctx,
			   enum ib_wr_opcode op, struct krpc_buf *buf,
			   u32 len, u64 raddr, u32 rkey, u32 per_wr)
{
	unsigned int nsge, nwr = 0, i = 0;
	u64 done = 0;

	lockdep_assert_held(&rc->conn->lock);
	nsge = krpc_buf_sges(rc, buf, buf->off, len, rc->sge, rc->nr_sge);
	if (!nsge)
		return 0;
	while (i < nsge) {
		struct ib_rdma_wr *wr = &rc->wr[nwr];
		unsigned int k, n = min(nsge - i, per_wr);

		memset(wr, 0, sizeof(*wr));
		wr->wr.opcode = op;
		wr->wr.wr_cqe = &sctx->cqe;
		wr->wr.send_flags = IB_SEND_SIGNALED;
		wr->wr.sg_list = &rc->sge[i];
		wr->wr.num_sge = n;
		wr->remote_addr = raddr + done;
		wr->rkey = rkey;
		for (k = 0; k < n; k++)
			done += rc->sge[i + k].length;
		if (nwr)
			rc->wr[nwr - 1].wr.next = &wr->wr;
		nwr++;
		i += n;
	}
	return nwr;
}
