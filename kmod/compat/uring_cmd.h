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

#endif /* KRPC_COMPAT_URING_CMD_H */
