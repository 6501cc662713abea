// SPDX-License-Identifier: GPL-2.0
/*
 * Servers run by a process: the command core's server side.
 *
 * A server has nr_slots slots, ublk-style.  Each slot cycles
 *   IDLE --FETCH--> FETCHING --request--> HAS_REQ --REPLY[_FETCH]-->
 *   REPLYING --reply buffer back--> IDLE (REPLY) or FETCHING (REPLY_FETCH)
 * all under us->lock; a cancelled REPLYING slot whose buffer the transport
 * still holds goes IDLE at once, the buffer no longer the process's.  A request that finds no FETCHING slot waits in
 * us->pending.  The completion that hands a request to the process also
 * writes the slot's struct krpc_req_desc (a read-only mapping).
 *
 * Requests come from the core through a KRPC_METHOD_NOSLEEP handler (run
 * by krpc_conn_unlock(), softirq or process context, no lock held); the
 * reply buffer comes back through ubuf.c's keep() hook, in any context.
 * krpc_req_reply() is always called without us->lock: it may put the
 * reply buffer at once, which re-enters us->lock through the hook.
 */
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/mm.h>
#include <linux/nospec.h>
#include <linux/uaccess.h>
#include <linux/capability.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <net/net_namespace.h>

#include "krpc_priv.h"
#include "pool.h"
#include "ufile.h"

enum {
	SLOT_IDLE,
	SLOT_FETCHING,
	SLOT_HAS_REQ,
	SLOT_REPLYING,
};

/**
 * struct krpc_uslot - one slot of a server
 * @us:		server
 * @idx:	its index
 * @state:	SLOT_*
 * @refetch:	REPLYING: the command is a REPLY_FETCH
 * @cancelled:	REPLYING: the command was cancelled; do not refetch
 * @reply_buf:	REPLYING: index of the reply's buffer, or KRPC_BUF_NONE
 * @uc:		FETCHING, REPLYING: the parked command
 * @req:	HAS_REQ: the request the process holds
 * @node:	FETCHING: entry in us->fetching
 */
struct krpc_uslot {
	struct krpc_userver *us;
	u32 idx;
	u8 state;
	bool refetch;
	bool cancelled;
	u32 reply_buf;
	struct krpc_ucmd *uc;
	struct krpc_req *req;
	struct list_head node;
};

struct upending {
	struct list_head node;
	struct krpc_req *req;
};

/**
 * struct krpc_userver - a server of a process
 * @obj:	handle (first member: ufile.c casts)
 * @up:		pool of its connections (referenced until freed; counted in
 *		up->users until shut down)
 * @srv:	the krpc server, until shutdown
 * @lock:	everything below
 * @dying:	shutdown started: no FETCH, requests are refused
 * @nr_slots:	slots
 * @slots:	the slots
 * @fetching:	FETCHING slots, oldest first
 * @pending:	requests waiting for a slot (struct upending)
 * @desc:	nr_slots descriptors (krpc_umem_alloc(), mapped read-only)
 * @desc_len:	its size, page aligned
 * @seq:	requests delivered
 */
struct krpc_userver {
	struct krpc_uobj obj;
	struct krpc_upool *up;
	struct krpc_server *srv;
	spinlock_t lock;
	bool dying;
	u32 nr_slots;
	struct krpc_uslot *slots;
	struct list_head fetching;
	struct list_head pending;
	struct krpc_req_desc *desc;
	size_t desc_len;
	u64 seq;
};

/* Give @req to the process through @slot's FETCH.  us->lock held. */
static void deliver_locked(struct krpc_userver *us, struct krpc_uslot *slot,
			   struct krpc_req *req)
{
	struct krpc_req_desc *d = &us->desc[slot->idx];
	u32 idx = KRPC_BUF_NONE, off = 0, len = 0, flags = 0;
	struct krpc_buf *buf;
	struct krpc_ucmd *uc = slot->uc;

	lockdep_assert_held(&us->lock);
	buf = krpc_req_take_payload(req);
	if (buf) {
		off = buf->off;
		len = buf->len;
		idx = krpc_ubuf_give_user(us->up, buf);
	}
	if (krpc_req_is_oneway(req))
		flags |= KRPC_RES2_F_ONEWAY;
	slot->req = req;
	slot->uc = NULL;
	slot->state = SLOT_HAS_REQ;
	WRITE_ONCE(d->method, krpc_req_method(req));
	WRITE_ONCE(d->len, len);
	WRITE_ONCE(d->buf, idx);
	WRITE_ONCE(d->offset, off);
	WRITE_ONCE(d->flags, flags & KRPC_RES2_F_ONEWAY ? KRPC_REQ_F_ONEWAY : 0);
	WRITE_ONCE(d->seq, ++us->seq);
	/* The CQE is posted after these stores (task work, ring barriers). */
	krpc_ucmd_finish(uc, len, krpc_res2(idx, flags, off));
}

/* @slot waits for a request from now on.  us->lock held. */
static void fetch_locked(struct krpc_userver *us, struct krpc_uslot *slot)
{
	struct upending *p;

	lockdep_assert_held(&us->lock);
	slot->state = SLOT_FETCHING;
	p = list_first_entry_or_null(&us->pending, struct upending, node);
	if (p) {
		list_del(&p->node);
		deliver_locked(us, slot, p->req);
		kfree(p);
	} else {
		list_add_tail(&slot->node, &us->fetching);
	}
}

/* Method handler for every method of a process's server. */
static int uhandler(struct krpc_req *req, void *priv)
{
	struct krpc_userver *us = priv;
	struct krpc_uslot *slot;
	struct upending *p;
	unsigned long flags;

	spin_lock_irqsave(&us->lock, flags);
	if (us->dying) {
		spin_unlock_irqrestore(&us->lock, flags);
		return -ESHUTDOWN;
	}
	slot = list_first_entry_or_null(&us->fetching, struct krpc_uslot, node);
	if (slot) {
		list_del_init(&slot->node);
		deliver_locked(us, slot, req);
		spin_unlock_irqrestore(&us->lock, flags);
		return 0;
	}
	/*
	 * Bounded by the clients' depths: each holds a slot on the wire.
	 * Not charged to a memory cgroup: this runs in whatever context
	 * reaps the receive (softirq, a poller thread, or any process busy
	 * polling, KRPC_IOC_CQ_POLL), whose cgroup need not be the server's.
	 */
	p = kmalloc(sizeof(*p), GFP_ATOMIC);
	if (!p) {
		spin_unlock_irqrestore(&us->lock, flags);
		return -ENOMEM;
	}
	p->req = req;
	list_add_tail(&p->node, &us->pending);
	spin_unlock_irqrestore(&us->lock, flags);
	return 0;
}

/* The reply is sent (or dropped).  us->lock held. */
static void reply_done_locked(struct krpc_userver *us, struct krpc_uslot *slot)
{
	struct krpc_ucmd *uc = slot->uc;

	lockdep_assert_held(&us->lock);
	if (slot->refetch && !slot->cancelled && !us->dying) {
		fetch_locked(us, slot);
		return;
	}
	slot->state = SLOT_IDLE;
	slot->uc = NULL;
	krpc_ucmd_finish(uc, slot->refetch ? (us->dying ? -ESHUTDOWN :
					      -ECANCELED) : 0,
			 krpc_res2(KRPC_BUF_NONE, 0, 0));
}

/* ubuf.c: a reply buffer of @slot came back.  Any context. */
void krpc_userver_tx_done(struct krpc_uslot *slot)
{
	struct krpc_userver *us = slot->us;
	unsigned long flags;

	spin_lock_irqsave(&us->lock, flags);
	if (!WARN_ON_ONCE(slot->state != SLOT_REPLYING))
		reply_done_locked(us, slot);
	spin_unlock_irqrestore(&us->lock, flags);
}

/*
 * Cancel hook / monitor (the issuer is exiting or in execve(), or the ring
 * goes): a waiting FETCH ends.  So does a REPLY whose buffer the transport
 * still holds, with -ECONNABORTED: the peer may hold it back for ever
 * (credits withheld, a TCP window shut) while the exit waits for the
 * command.  Its buffer goes back to the pool when the transport lets go
 * (the file's release, which the command no longer blocks, resets the
 * connection).  A REPLY_FETCH whose reply is done just does not refetch
 * (-ECANCELED, the buffer the process's).
 */
static void slot_cancel(struct krpc_ucmd *uc)
{
	struct krpc_userver *us = uc->slot.us;
	struct krpc_uslot *slot = &us->slots[uc->slot.slot];
	unsigned long flags;

	spin_lock_irqsave(&us->lock, flags);
	if (slot->uc == uc) {
		if (slot->state == SLOT_FETCHING) {
			list_del_init(&slot->node);
			slot->state = SLOT_IDLE;
			slot->uc = NULL;
			krpc_ucmd_finish(uc, -ECANCELED,
					 krpc_res2(KRPC_BUF_NONE, 0, 0));
		} else if (slot->state == SLOT_REPLYING) {
			slot->cancelled = true;
			/* Not -ECANCELED: that hands the buffer back. */
			if (krpc_ubuf_orphan(us->up, slot->reply_buf, slot)) {
				slot->state = SLOT_IDLE;
				slot->uc = NULL;
				krpc_ucmd_finish(uc, -ECONNABORTED,
						 krpc_res2(KRPC_BUF_NONE, 0, 0));
			}
		}
	}
	spin_unlock_irqrestore(&us->lock, flags);
}

static struct krpc_userver *userver_get(struct krpc_file *kf, u32 handle)
{
	return (struct krpc_userver *)krpc_uobj_get(kf, handle,
						    KRPC_UOBJ_SERVER);
}

/* FETCH, REPLY, REPLY_FETCH.  Context: process context, does not sleep. */
int krpc_userver_slot_cmd(struct krpc_ucmd *uc, const struct krpc_cmd_slot *c)
{
	struct krpc_buf *buf = NULL;
	struct krpc_userver *us;
	struct krpc_uslot *slot;
	struct krpc_req *req;
	unsigned long flags;
	int ret;

	if (c->flags || c->reserved)
		return -EINVAL;
	if (uc->op == KRPC_CMD_FETCH) {
		if (c->buf != KRPC_BUF_NONE || c->offset || c->len || c->status)
			return -EINVAL;
	} else {
		if (c->status > 0 || c->status < -4095)
			return -EINVAL;
		if (c->buf == KRPC_BUF_NONE && (c->offset || c->len))
			return -EINVAL;
	}
	us = userver_get(uc->kf, c->server);
	if (!us)
		return -EBADF;
	uc->slot.us = us;		/* reference dropped with uc */
	if (c->slot >= us->nr_slots)
		return -EINVAL;
	uc->slot.slot = array_index_nospec(c->slot, us->nr_slots);
	slot = &us->slots[uc->slot.slot];

	spin_lock_irqsave(&us->lock, flags);
	if (us->dying) {
		ret = -ESHUTDOWN;
		goto out_unlock;
	}
	if (uc->op == KRPC_CMD_FETCH) {
		if (slot->state != SLOT_IDLE) {
			ret = -EBUSY;
			goto out_unlock;
		}
		krpc_ucmd_park(uc, slot_cancel);
		slot->uc = uc;
		fetch_locked(us, slot);
		spin_unlock_irqrestore(&us->lock, flags);
		return -EIOCBQUEUED;
	}

	if (slot->state != SLOT_HAS_REQ) {
		ret = -ENOENT;
		goto out_unlock;
	}
	if (c->buf != KRPC_BUF_NONE) {
		buf = krpc_ubuf_hand_over(us->up, c->buf, c->offset, c->len,
					  slot, &ret);
		if (!buf)
			goto out_unlock;
	}
	req = slot->req;
	slot->req = NULL;
	slot->state = SLOT_REPLYING;
	slot->refetch = uc->op == KRPC_CMD_REPLY_FETCH;
	slot->cancelled = false;
	slot->reply_buf = buf ? buf->idx : KRPC_BUF_NONE;
	slot->uc = uc;
	krpc_ucmd_park(uc, slot_cancel);
	spin_unlock_irqrestore(&us->lock, flags);

	/* Puts @buf when sent or dropped: tx_done() then ends REPLYING. */
	krpc_req_reply(req, c->status, buf);
	if (!buf) {
		spin_lock_irqsave(&us->lock, flags);
		reply_done_locked(us, slot);
		spin_unlock_irqrestore(&us->lock, flags);
	}
	return -EIOCBQUEUED;

out_unlock:
	spin_unlock_irqrestore(&us->lock, flags);
	return ret;
}

/*
 * Close: fail waiting FETCHes, answer every request held or pending with
 * -ESHUTDOWN, then destroy the server (which waits for the replies in
 * flight); the pool is no longer used, although commands whose completion
 * has not been posted yet still hold the object.  Runs once per server:
 * from uobj_close() (KRPC_IOC_CLOSE or the file's release) once it has a
 * handle, on the error paths of KRPC_IOC_LISTEN before (also when no
 * krpc server was made).  Context: process context, sleeps.
 */
void krpc_userver_shutdown(struct krpc_userver *us)
{
	unsigned long flags;
	u32 i;

	spin_lock_irqsave(&us->lock, flags);
	us->dying = true;
	for (i = 0; i < us->nr_slots; i++) {
		struct krpc_uslot *slot = &us->slots[i];

		if (slot->state != SLOT_FETCHING)
			continue;
		list_del_init(&slot->node);
		slot->state = SLOT_IDLE;
		krpc_ucmd_finish(slot->uc, -ESHUTDOWN,
				 krpc_res2(KRPC_BUF_NONE, 0, 0));
		slot->uc = NULL;
	}
	spin_unlock_irqrestore(&us->lock, flags);

	for (i = 0; i < us->nr_slots; i++) {
		struct krpc_uslot *slot = &us->slots[i];
		struct krpc_req *req = NULL;

		spin_lock_irqsave(&us->lock, flags);
		if (slot->state == SLOT_HAS_REQ) {
			req = slot->req;
			slot->req = NULL;
			slot->state = SLOT_IDLE;
		}
		spin_unlock_irqrestore(&us->lock, flags);
		if (req)
			krpc_req_reply(req, -ESHUTDOWN, NULL);
	}
	for (;;) {
		struct upending *p;

		spin_lock_irqsave(&us->lock, flags);
		p = list_first_entry_or_null(&us->pending, struct upending,
					     node);
		if (p)
			list_del(&p->node);
		spin_unlock_irqrestore(&us->lock, flags);
		if (!p)
			break;
		krpc_req_reply(p->req, -ESHUTDOWN, NULL);
		kfree(p);
	}
	if (us->srv)
		krpc_server_destroy(us->srv);
	us->srv = NULL;
	krpc_upool_unuse(us->up);
}

/* The pool's use ended at shutdown; its reference goes with the object. */
static void userver_free(struct krpc_uobj *obj)
{
	struct krpc_userver *us = (struct krpc_userver *)obj;

	WARN_ON_ONCE(us->srv || !list_empty(&us->pending));
	krpc_umem_free(us->desc, us->desc_len);
	kvfree(us->slots);
	krpc_upool_put(us->up);
	kfree_rcu(us, obj.rcu);
}

static struct krpc_userver *userver_alloc(struct krpc_upool *up, u32 nr_slots)
{
	struct krpc_userver *us;
	u32 i;

	us = kzalloc(sizeof(*us), GFP_KERNEL_ACCOUNT);
	if (!us)
		return NULL;
	us->up = up;
	spin_lock_init(&us->lock);
	INIT_LIST_HEAD(&us->fetching);
	INIT_LIST_HEAD(&us->pending);
	us->nr_slots = nr_slots;
	us->slots = kvcalloc(nr_slots, sizeof(*us->slots), GFP_KERNEL_ACCOUNT);
	us->desc_len = PAGE_ALIGN(nr_slots * sizeof(*us->desc));
	us->desc = krpc_umem_alloc(us->desc_len);
	if (!us->slots || !us->desc) {
		krpc_umem_free(us->desc, us->desc_len);
		kvfree(us->slots);
		kfree(us);
		return NULL;
	}
	for (i = 0; i < nr_slots; i++) {
		us->slots[i].us = us;
		us->slots[i].idx = i;
		INIT_LIST_HEAD(&us->slots[i].node);
		us->desc[i].buf = KRPC_BUF_NONE;
	}
	return us;
}

static int listen_check(struct krpc_file *kf, const struct krpc_listen *l,
			struct sockaddr_storage *ss, unsigned int *cq_mode)
{
	int ret;

	if (l->handle || l->desc_offset || l->desc_length || l->reserved ||
	    l->transport > KRPC_TRANSPORT_AUTO ||
	    l->max_conns > krpc_param_max_conns.max)
		return -EINVAL;
	if (krpc_uconn_flags_cq_mode(l->flags, cq_mode))
		return -EINVAL;
	if (!l->nr_slots || l->nr_slots > KRPC_SLOTS_MAX ||
	    !l->nr_methods || l->nr_methods > KRPC_METHODS_MAX ||
	    l->depth > krpc_param_depth.max)
		return -EINVAL;
	ret = krpc_uaddr_parse(&l->addr, ss);
	if (ret)
		return ret;
	/* Checked against the opener, not whoever issues the ioctl. */
	if (be16_to_cpu((__force __be16)l->addr.port) < 1024 &&
	    !file_ns_capable(kf->file, kf->net->user_ns,
			     CAP_NET_BIND_SERVICE))
		return -EACCES;
	return 0;
}

/* KRPC_IOC_LISTEN.  Context: process context. */
long krpc_userver_listen_ioctl(struct krpc_file *kf, void __user *arg)
{
	struct krpc_server_opts opts = {};
	u32 methods[KRPC_METHODS_MAX];
	struct krpc_userver *us;
	struct krpc_upool *up;
	struct krpc_listen l;
	u32 usize, i;
	int ret;

	ret = krpc_ioc_copy_in(&l, sizeof(l), arg, KRPC_LISTEN_SIZE_VER0, &usize);
	if (ret)
		return ret;
	ret = listen_check(kf, &l, &opts.addr, &opts.cq_mode);
	if (ret)
		return ret;
	if (copy_from_user(methods, u64_to_user_ptr(l.methods),
			   l.nr_methods * sizeof(u32)))
		return -EFAULT;
	for (i = 0; i < l.nr_methods; i++)
		if (methods[i] >= KRPC_METHOD_RESERVED)
			return -EINVAL;

	up = krpc_upool_use(kf, l.pool);
	if (!up)
		return -EBADF;
	us = userver_alloc(up, l.nr_slots);
	if (!us) {
		krpc_upool_unuse(up);
		krpc_upool_put(up);
		return -ENOMEM;
	}
	opts.net = kf->net;
	opts.depth = l.depth;
	opts.pool = up->pool;
	opts.transport = l.transport;
	opts.max_conns = l.max_conns;
	us->srv = krpc_server_create(&opts);
	if (IS_ERR(us->srv)) {
		ret = PTR_ERR(us->srv);
		us->srv = NULL;
		goto out_shutdown;	/* only the pool's use to end */
	}
	for (i = 0; i < l.nr_methods; i++) {
		ret = krpc_server_register(us->srv, methods[i], uhandler, us,
					   KRPC_METHOD_NOSLEEP);
		if (ret)
			goto out_shutdown;
	}
	/* @us may be closed and freed as soon as it has a handle. */
	l.desc_length = us->desc_len;
	ret = krpc_uobj_add(kf, &us->obj, KRPC_UOBJ_SERVER, userver_free,
			    &l.handle);
	if (ret)
		goto out_shutdown;

	l.size = min_t(u32, usize, sizeof(l));
	l.desc_offset = krpc_uobj_mmap_offset(l.handle);
	if (copy_to_user(arg, &l, l.size)) {
		struct krpc_uobj *obj = krpc_uobj_remove(kf, l.handle,
							 KRPC_UOBJ_SERVER);

		if (obj) {
			krpc_userver_shutdown(us);
			krpc_uobj_put(obj);
		}
		return -EFAULT;
	}
	return 0;

out_shutdown:
	krpc_userver_shutdown(us);
	userver_free(&us->obj);
	return ret;
}

/* Read-only map of the descriptors.  Context: mmap(). */
int krpc_userver_mmap(struct krpc_userver *us, struct vm_area_struct *vma)
{
	if (vma->vm_end - vma->vm_start != us->desc_len)
		return -EINVAL;
	if (vma->vm_flags & (VM_WRITE | VM_EXEC))
		return -EPERM;
	vm_flags_clear(vma, VM_MAYWRITE | VM_MAYEXEC);
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTCOPY);
	return remap_vmalloc_range(vma, us->desc, 0);
}
