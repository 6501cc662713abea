// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring front end of the command core: IORING_OP_URING_CMD on
 * /dev/krpc.  Only SQE128/CQE32 rings: the command is the SQE's 80-byte
 * area, the second result goes to big_cqe[0].
 *
 * Issue (->uring_cmd): runs in the submitter, the SQPOLL thread or an
 * io-wq worker.  The flags are checked before the SQE is touched; then the
 * command area is copied once into kernel memory and only the copy is
 * decoded (the SQE may be shared memory the process keeps writing).  With
 * IO_URING_F_NONBLOCK the core does not sleep; CONNECT, which does, is
 * sent to io-wq with -EAGAIN.
 *
 * Completion: the core calls uring_complete() from any context; the CQE is
 * posted from task work with the issue flags io_uring hands the callback
 * (never invented ones).  The pdu holds the only pointer to the command
 * object, which lives until that task work ran; the issue path holds a
 * reference of its own until the core returns.
 *
 * Cancellation: on kernels with the cancel hook every parked command is
 * marked cancelable and IO_URING_F_CANCEL reaches krpc_ucmd_cancel();
 * elsewhere the submitter (not an io-wq worker that issued the command for
 * it) is recorded for umonitor.c.
 *
 * A command that names a completion queue (krpc_ucmd_cq()) is handed to
 * ucq.c: its io_uring completion is only the queue's answer, posted at
 * once, and nothing of it stays parked here.
 */
#include <linux/sched/task.h>
#include <linux/fs.h>

#include "compat/uring_cmd.h"
#include "krpc_priv.h"
#include "ufile.h"

struct uring_pdu {
	struct krpc_ucmd *uc;
};

static struct uring_pdu *to_pdu(struct io_uring_cmd *ioucmd)
{
	BUILD_BUG_ON(sizeof(struct uring_pdu) > sizeof(ioucmd->pdu));
	return (struct uring_pdu *)ioucmd->pdu;
}

static void uring_tw(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	struct krpc_ucmd *uc = to_pdu(ioucmd)->uc;

	io_uring_cmd_done(ioucmd, uc->res, uc->res2, issue_flags);
	krpc_ucmd_put(uc);
}

/* Any context; exactly once per parked command (krpc_ucmd_finish()). */
static void uring_complete(struct krpc_ucmd *uc, s32 res, u64 res2)
{
	uc->res = res;
	uc->res2 = res2;
	io_uring_cmd_complete_in_task(uc->fe, uring_tw);
}

static const struct krpc_ucmd_ops uring_ops = {
	.complete = uring_complete,
};

int krpc_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	struct krpc_file *kf = ioucmd->file->private_data;
	bool nonblock = issue_flags & IO_URING_F_NONBLOCK;
	u8 payload[KRPC_UCMD_PAYLOAD];
	struct krpc_ucmd *uc;
	u32 op = ioucmd->cmd_op;
	u64 res2, tag;
	u32 cq;
	int ret;

#ifdef KRPC_URING_CANCEL_HOOK
	if (issue_flags & IO_URING_F_CANCEL) {
		krpc_ucmd_cancel(to_pdu(ioucmd)->uc);
		return 0;
	}
#endif
	/* Before the payload: a 64-byte SQE has no 80-byte command area. */
	if (!(issue_flags & IO_URING_F_SQE128) ||
	    !(issue_flags & IO_URING_F_CQE32))
		return -EOPNOTSUPP;
	if (issue_flags & IO_URING_F_IOPOLL)
		return -EOPNOTSUPP;
	if (op == KRPC_CMD_CONNECT && nonblock)
		return -EAGAIN;

	memcpy(payload, krpc_uring_cmd_payload(ioucmd), sizeof(payload));
	cq = krpc_ucmd_cq(op, payload, &tag);
	if (cq)
		return krpc_ucq_submit(kf, op, payload, cq, tag, nonblock);

	uc = krpc_ucmd_alloc(nonblock ? GFP_NOWAIT : GFP_KERNEL);
	if (!uc)
		return nonblock ? -EAGAIN : -ENOMEM;
	krpc_ucmd_init(uc, &uring_ops, kf, op);
	uc->fe = ioucmd;
	to_pdu(ioucmd)->uc = uc;
#ifdef KRPC_URING_CANCEL_HOOK
	/* Before anything can complete it; io_uring_cmd_done() unmarks. */
	if (op != KRPC_CMD_CONNECT)
		io_uring_cmd_mark_cancelable(ioucmd, issue_flags);
#else
	uc->task = get_task_struct(krpc_uring_cmd_task(ioucmd));
#endif

	/*
	 * Ours while the core runs: a parked command may complete before
	 * krpc_ucmd_exec() returns, and when an io-wq worker issues it the
	 * submitter may run uring_tw() and drop the completion's reference
	 * meanwhile.
	 */
	kref_get(&uc->ref);
	ret = krpc_ucmd_exec(uc, payload, nonblock, &res2);
	if (ret != -EIOCBQUEUED) {
		io_uring_cmd_done(ioucmd, ret, res2, issue_flags);
		krpc_ucmd_put(uc);	/* the completion's */
	}
	krpc_ucmd_put(uc);
	return -EIOCBQUEUED;
}
