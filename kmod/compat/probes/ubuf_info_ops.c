// SPDX-License-Identifier: GPL-2.0
/* A zero-copy completion is struct ubuf_info_ops (6.10), not ->callback. */
#include <linux/module.h>
#include <linux/skbuff.h>
static void krpc_probe_complete(struct sk_buff *skb, struct ubuf_info *uarg,
				bool success)
{
}

const struct ubuf_info_ops krpc_probe_ops = {
	.complete = krpc_probe_complete,
};
MODULE_LICENSE("GPL");
