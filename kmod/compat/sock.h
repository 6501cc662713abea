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
 * SKBFL_DONT_ORPHAN, as MSG_ZEROCOPY's and io_uring's completions have: the
 * pages stay in the skbs until they are freed (only delivery to a local
 * socket copies them, skb_orphan_frags_rx()).  Without it every
 * skb_clone() of a write queue skb, i.e. its first transmission, copies
 * the pages (skb_copy_ubufs()) and clears the skb's zero-copy flags, a
 * pure zero-copy skb's too: TCP, which charged such an skb only its head,
 * then uncharges all its truesize when it frees it, and sk_forward_alloc
 * ends off ("inet_sock_destruct" warns at the close).
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
	uarg->flags = SKBFL_ZEROCOPY_FRAG | SKBFL_DONT_ORPHAN;
}

#endif /* KRPC_COMPAT_SOCK_H */
