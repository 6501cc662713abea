/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Zero-copy send differences, for tcp_tx.c only (keyed on compile probes,
 * see compat.h).
 */
#ifndef KRPC_COMPAT_SOCK_H
#define KRPC_COMPAT_SOCK_H

#include <linux/skbuff.h>

void krpc_tcp_zc_complete(struct sk_buff *skb, struct ubuf_info *uarg,
			  bool success);

#ifdef KRPC_HAVE_UBUF_INFO_OPS
static const struct ubuf_info_ops krpc_zc_ubuf_ops = {
	.complete = krpc_tcp_zc_complete,
};
#endif

/**
 * krpc_compat_ubuf_init() - set up the completion of a zero-copy send
 * @uarg:	the completion, passed as msghdr.msg_ubuf with MSG_ZEROCOPY
 *
 * Each skb that references the pages holds a reference on @uarg;
 * krpc_tcp_zc_complete() is called for each one dropped (the callback puts
 * it).  The caller holds the first one.  6.10 moved the callback into
 * struct ubuf_info_ops.
 *
 * Context: any context.
 */
static inline void krpc_compat_ubuf_init(struct ubuf_info *uarg)
{
#ifdef KRPC_HAVE_UBUF_INFO_OPS
	uarg->ops = &krpc_zc_ubuf_ops;
#else
	uarg->callback = krpc_tcp_zc_complete;
#endif
	refcount_set(&uarg->refcnt, 1);
	uarg->flags = SKBFL_ZEROCOPY_FRAG;
}

#endif /* KRPC_COMPAT_SOCK_H */
