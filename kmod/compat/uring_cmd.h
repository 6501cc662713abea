/* SPDX-License-Identifier: GPL-2.0 */
/*
 * uring_cmd differences, for uring.c only (keyed on compile probes, see
 * compat.h).
 */
#ifndef KRPC_COMPAT_URING_CMD_H
#define KRPC_COMPAT_URING_CMD_H

#ifdef KRPC_HAVE_IO_URING_CMD_H
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif

/* The command area: ->cmd up to 6.3, io_uring_sqe_cmd(->sqe) from 6.4. */
#ifdef KRPC_HAVE_IOU_CMD_SQE
#define krpc_uring_cmd_payload(ioucmd)	io_uring_sqe_cmd((ioucmd)->sqe)
#else
#define krpc_uring_cmd_payload(ioucmd)	((ioucmd)->cmd)
#endif

/* io_uring_cmd_done(cmd, ret, res2, issue_flags): 6.3, Debian 6.1.y. */
#ifndef KRPC_HAVE_IOU_CMD_DONE_4ARG
#error "krpc needs the 4-argument io_uring_cmd_done() (6.3 or a backport)"
#endif

/* Cancel hook (6.7): without it, umonitor.c watches the issuers. */
#ifdef KRPC_HAVE_IOU_CMD_MARK_CANCELABLE
#define KRPC_URING_CANCEL_HOOK	1
#endif

/*
 * The task a command belongs to: its submitter, also when the SQPOLL
 * thread or an io-wq worker issues it (a worker may exit while the
 * command is parked).  io_uring_cmd_get_task() (6.12) reads the request's
 * task, which 6.1's <linux/io_uring_types.h> shows as well.
 */
#if defined(KRPC_HAVE_IOU_CMD_GET_TASK)
#define krpc_uring_cmd_task(ioucmd)	io_uring_cmd_get_task(ioucmd)
#elif defined(KRPC_HAVE_IOU_REQ_TASK)
#include <linux/io_uring_types.h>
#define krpc_uring_cmd_task(ioucmd)	(cmd_to_io_kiocb(ioucmd)->task)
#elif !defined(KRPC_URING_CANCEL_HOOK)
#error "krpc needs the cancel hook (6.7) or the task of a uring_cmd"
#endif

#endif /* KRPC_COMPAT_URING_CMD_H */
