/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The userspace path: /dev/krpc files, their objects and the command core.
 *
 *   chardev.c	the misc device: open/release, ioctls, mmap, ->uring_cmd
 *   ufile.c	per-open-file context and its handle table
 *   ubuf.c	pools mapped into the process, buffer ownership
 *   ucmd.c	command core: decode, validate, execute, complete (clients)
 *   userver.c	command core, server side: slots, FETCH and REPLY
 *   uring.c	io_uring front end (IORING_OP_URING_CMD)
 *   ucq.c	completion queue front end (mmap()ed rings the completion
 *		handlers write into)
 *   umonitor.c	dying-task monitor for kernels without the uring_cmd
 *		cancel hook (before 6.7)
 *
 * The command core never sees io_uring: a front end hands it a kernel copy
 * of the command (struct krpc_ucmd plus the 80-byte payload) and receives
 * the result through krpc_ucmd_ops.complete.  The second front end, the
 * completion queues of ucq.c, plugs in the same way.
 *
 * Locking, outermost first (all spinlocks taken with irqsave, since buffer
 * puts and request handlers run in softirq context, possibly under
 * krpc_conn.lock):
 *   krpc_file.lock (mutex)	set-up: handle creation and removal, pools
 *   krpc_conn.lock		(core) may be held when ubuf keep() runs
 *   krpc_userver.lock		slots, pending requests
 *   krpc_upool.lock		buffer states (keep() drops it before it
 *				tells a slot, so never held around the
 *				userver lock); a pool's users against its
 *				destruction
 *   krpc_uconn.lock		calls in flight (for CANCEL)
 *   krpc_file.parked_lock	parked commands; exactly-once completion
 *   krpc_file.cq_lock		the file's completion queues
 *   krpc_ucq.lock		a queue's tail and reservations
 * krpc_ucmd_ops.complete is called under none of the locks above except
 * possibly krpc_userver.lock; it must not sleep (io_uring queues task
 * work, ucq.c writes the entry).  Objects may therefore lose their last
 * reference in atomic context: krpc_uobj_put() then defers the destructor
 * to krpc_wq.
 */
#ifndef KRPC_UFILE_H
#define KRPC_UFILE_H

#include <linux/types.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <linux/workqueue.h>
#include <linux/wait.h>
#include <linux/krpc.h>

struct cred;
struct net;
struct file;
struct task_struct;
struct vm_area_struct;
struct krpc_pool;
struct krpc_buf;
struct krpc_call;
struct krpc_client;
struct krpc_server;
struct krpc_req;
struct krpc_ucmd;
struct sockaddr_storage;

/* Kinds of objects behind a handle (KRPC_UOBJ_ANY: lookups of any kind). */
enum krpc_uobj_type {
	KRPC_UOBJ_ANY = 0,
	KRPC_UOBJ_POOL,
	KRPC_UOBJ_CONN,
	KRPC_UOBJ_SERVER,
	KRPC_UOBJ_CQ,
};

/**
 * struct krpc_uobj - what every handle-named object starts with
 * @ref:	held by the handle table and by each user (command, server)
 * @type:	enum krpc_uobj_type
 * @handle:	its handle in @kf
 * @kf:		owning file (not referenced: objects die before the file)
 * @free:	destructor at the last reference; process context
 * @free_work:	runs @free when the last reference went in atomic context
 * @rcu:	@free ends with kfree_rcu() of the object through it:
 *		krpc_uobj_get() reads an object it found under RCU alone
 */
struct krpc_uobj {
	struct kref ref;
	unsigned int type;
	u32 handle;
	struct krpc_file *kf;
	void (*free)(struct krpc_uobj *obj);
	struct work_struct free_work;
	struct rcu_head rcu;
};

/**
 * struct krpc_file - one open /dev/krpc
 * @cred:	the opener's credentials
 * @net:	the opener's network namespace; connections and listeners
 *		of this file live there
 * @file:	the struct file (for capability checks against f_cred)
 * @lock:	serialises set-up (handle creation and removal)
 * @objs:	handle -> struct krpc_uobj
 * @next_handle: cursor of the cyclic handle allocator (stale handles are
 *		not reused soon)
 * @nr_objs:	entries of @objs
 * @parked_lock: @parked, @nr_parked, krpc_ucmd.done
 * @parked:	commands waiting for an event (krpc_ucmd.node)
 * @nr_parked:	entries of @parked
 * @dying:	release started
 * @monitor:	dying-task monitor (umonitor.c)
 * @cq_lock:	@cqs, @nr_cqs
 * @cqs:	open completion queues (krpc_ucq.node), for poll()
 * @nr_cqs:	entries of @cqs
 * @cq_wait:	poll() waiters; woken when a queue gets an entry
 */
struct krpc_file {
	const struct cred *cred;
	struct net *net;
	struct file *file;
	struct mutex lock;
	struct xarray objs;
	u32 next_handle;
	unsigned int nr_objs;
	spinlock_t parked_lock;
	struct list_head parked;
	unsigned int nr_parked;
	bool dying;
	struct delayed_work monitor;
	spinlock_t cq_lock;
	struct list_head cqs;
	unsigned int nr_cqs;
	wait_queue_head_t cq_wait;
};

/* Handles are 1..KRPC_UHANDLE_MAX, allocated cyclically. */
#define KRPC_UHANDLE_MAX	((1U << 24) - 1)

/*
 * The mmap() offset of an object: its handle in pages.  Below 2^36 with
 * 4 KiB pages, so that a 32-bit process reaches every handle (mmap2()'s
 * page offset is 32 bits).
 */
static inline u64 krpc_uobj_mmap_offset(u32 handle)
{
	return (u64)handle << PAGE_SHIFT;
}

/* ufile.c */
struct krpc_file *krpc_ufile_create(struct file *file);
void krpc_ufile_destroy(struct krpc_file *kf);
int krpc_uobj_add(struct krpc_file *kf, struct krpc_uobj *obj,
		  unsigned int type, void (*free)(struct krpc_uobj *obj),
		  u32 *handle);
struct krpc_uobj *krpc_uobj_get(struct krpc_file *kf, u32 handle,
				unsigned int type);
void krpc_uobj_put(struct krpc_uobj *obj);
void *krpc_umem_alloc(size_t len);
void krpc_umem_free(void *mem, size_t len);
struct krpc_uobj *krpc_uobj_remove(struct krpc_file *kf, u32 handle,
				   unsigned int type);
long krpc_ufile_ioctl(struct krpc_file *kf, unsigned int cmd,
		      void __user *arg);

/* ---------------------------------------------------------------------- */
/* Pools (ubuf.c) */

/* Buffer states, krpc_upool.state[], under krpc_upool.lock. */
enum {
	UB_KERNEL = 0,	/* in the pool's free list or used by the transport */
	UB_USER,	/* the process owns it */
	UB_TX,		/* handed over by a command; back to UB_USER when put */
};

struct krpc_uslot;

/**
 * struct krpc_upool - a pool mapped into a process
 * @obj:	handle
 * @pool:	the registered pool (referenced; its owner is this upool)
 * @buf_size:	bytes per buffer (the first ones, indexes from 0)
 * @large_size:	bytes per large buffer (after those), or 0
 * @count:	buffers of both sizes
 * @nr_pages:	pages of the mapping
 * @pages:	every page, in mapping order
 * @lock:	@state, @waiter, @dead; taking a user (krpc_upool_use())
 * @state:	UB_* per buffer
 * @waiter:	UB_TX buffers of a server reply: the slot to tell
 * @users:	connections and servers using the pool, from their creation
 *		to their shutdown (destroy is -EBUSY); goes up only under
 *		@lock and while not @dead
 * @user:	charged user (locked_vm), referenced
 * @charged:	pages charged to @user
 * @dead:	KRPC_IOC_POOL_DESTROY won: the handle is going, no new user
 * @kdev_node:	entry in the pool list of the RDMA device
 */
struct krpc_upool {
	struct krpc_uobj obj;
	struct krpc_pool *pool;
	u32 buf_size;
	u32 large_size;
	u32 count;
	unsigned long nr_pages;
	struct page **pages;
	spinlock_t lock;
	u8 *state;
	struct krpc_uslot **waiter;
	atomic_t users;
	struct user_struct *user;
	unsigned long charged;
	bool dead;
	struct list_head kdev_node;
};

struct ib_device;
int krpc_ubuf_device_add(struct ib_device *ibdev);
void krpc_ubuf_device_remove(struct ib_device *ibdev);
long krpc_upool_create_ioctl(struct krpc_file *kf, void __user *arg);
long krpc_upool_destroy_ioctl(struct krpc_file *kf, void __user *arg);
long krpc_ubuf_alloc_ioctl(struct krpc_file *kf, void __user *arg,
			   bool free);
int krpc_upool_mmap(struct krpc_upool *up, struct vm_area_struct *vma);
struct krpc_upool *krpc_upool_get(struct krpc_file *kf, u32 handle);
void krpc_upool_put(struct krpc_upool *up);
struct krpc_upool *krpc_upool_use(struct krpc_file *kf, u32 handle);
void krpc_upool_unuse(struct krpc_upool *up);
struct krpc_buf *krpc_ubuf_hand_over(struct krpc_upool *up, u32 idx,
				     u32 off, u32 len,
				     struct krpc_uslot *waiter, int *err);
void krpc_ubuf_take_back(struct krpc_upool *up, struct krpc_buf *buf);
bool krpc_ubuf_orphan(struct krpc_upool *up, u32 idx,
		      const struct krpc_uslot *waiter);
u32 krpc_ubuf_give_user(struct krpc_upool *up, struct krpc_buf *buf);
int krpc_ubuf_alloc(struct krpc_upool *up, bool large);
int krpc_ubuf_free(struct krpc_upool *up, const u32 *idx, unsigned int n);
int krpc_ubuf_check(struct krpc_upool *up, u32 idx, u32 off, u32 len);

/* ---------------------------------------------------------------------- */
/* Commands (ucmd.c, userver.c) */

/**
 * struct krpc_ucmd_ops - what a front end provides
 * @complete:	post the result; called exactly once per command that
 *		krpc_ucmd_exec() parked.  Any context; must not sleep.
 */
struct krpc_ucmd_ops {
	void (*complete)(struct krpc_ucmd *uc, s32 res, u64 res2);
};

/**
 * struct krpc_ucmd - one command, as the core sees it
 * @ref:	front end's reference, plus one per canceller at work
 * @ops:	front end
 * @kf:		file
 * @op:		KRPC_CMD_*
 * @node:	entry in kf->parked while parked
 * @parked:	on kf->parked (done not yet decided)
 * @done:	result decided (under kf->parked_lock)
 * @task:	issuer (monitor; referenced) or NULL
 * @cancel:	how to make a parked command finish early; called without
 *		locks, with a reference held
 * @call:	CALL: connection, call handle, tag, request buffer
 * @slot:	FETCH / REPLY*: the slot
 * @fe:		front end private pointer
 * @res:	front end scratch: result being posted
 * @res2:	front end scratch: second result being posted
 * @tag:	front end scratch: tag of the completion queue entry
 */
struct krpc_ucmd {
	struct kref ref;
	const struct krpc_ucmd_ops *ops;
	struct krpc_file *kf;
	u32 op;
	struct list_head node;
	bool parked;
	bool done;
	struct task_struct *task;
	void (*cancel)(struct krpc_ucmd *uc);
	union {
		struct {
			struct krpc_uconn *uconn;
			struct krpc_call *call;
			struct list_head node;
			u64 tag;
			bool listed;
		} call;
		struct {
			struct krpc_userver *us;
			u32 slot;
		} slot;
	};
	void *fe;
	s32 res;
	u64 res2;
	u64 tag;
};

/* Payload of every command: the 80-byte SQE command area. */
#define KRPC_UCMD_PAYLOAD	80

void krpc_ucmd_init(struct krpc_ucmd *uc, const struct krpc_ucmd_ops *ops,
		    struct krpc_file *kf, u32 op);
int krpc_ucmd_exec(struct krpc_ucmd *uc, const void *payload, bool nonblock,
		   u64 *res2);
void krpc_ucmd_park(struct krpc_ucmd *uc, void (*cancel)(struct krpc_ucmd *));
bool krpc_ucmd_finish(struct krpc_ucmd *uc, s32 res, u64 res2);
void krpc_ucmd_cancel(struct krpc_ucmd *uc);
void krpc_ucmd_put(struct krpc_ucmd *uc);
u32 krpc_ucmd_cq(u32 op, const void *payload, u64 *tag);
int krpc_ucmd_init_cache(void);
void krpc_ucmd_exit_cache(void);
struct krpc_ucmd *krpc_ucmd_alloc(gfp_t gfp);

static inline u64 krpc_res2(u32 buf, u32 flags, u32 off)
{
	return (u64)off << 32 | (flags & 0xff) << 24 | (buf & 0xffffff);
}

/**
 * struct krpc_uconn - a client connection made by a process
 * @obj:	handle
 * @up:		its pool (referenced until freed; counted in up->users
 *		until shut down)
 * @clnt:	the krpc client
 * @lock:	@calls, @nr_calls, krpc_ucmd.call.node and .listed of its
 *		calls (also while a CANCEL holds them on a list of its own)
 * @calls:	CALL commands in flight (krpc_ucmd.call.node)
 * @nr_calls:	entries of @calls (and of a CANCEL's list): at most
 *		KRPC_CONN_CALLS_MAX, so that a process cannot queue calls
 *		(and their atomic allocations, and the backlog the
 *		connection's timer scans) without end
 * @active:	1 + submitters using @clnt; shutdown drops the 1 and waits
 *		for 0 before it destroys @clnt
 * @wq:		shutdown waits here
 */
struct krpc_uconn {
	struct krpc_uobj obj;
	struct krpc_upool *up;
	struct krpc_client *clnt;
	spinlock_t lock;
	struct list_head calls;
	unsigned int nr_calls;
	atomic_t active;
	wait_queue_head_t wq;
};

int krpc_uaddr_parse(const struct krpc_addr *a, struct sockaddr_storage *ss);
int krpc_uconn_flags_cq_mode(u32 flags, unsigned int *mode);

/* userver.c */
struct krpc_userver;
long krpc_userver_listen_ioctl(struct krpc_file *kf, void __user *arg);
int krpc_userver_mmap(struct krpc_userver *us, struct vm_area_struct *vma);
int krpc_userver_slot_cmd(struct krpc_ucmd *uc, const struct krpc_cmd_slot *c);
void krpc_userver_tx_done(struct krpc_uslot *slot);
void krpc_userver_shutdown(struct krpc_userver *us);
void krpc_uconn_shutdown(struct krpc_uconn *uconn);

/* uring.c */
struct io_uring_cmd;
int krpc_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags);

/* ucq.c */
int krpc_ucq_submit(struct krpc_file *kf, u32 op, const void *payload,
		    u32 handle, u64 tag, bool nonblock);
long krpc_ucq_create_ioctl(struct krpc_file *kf, void __user *arg);
long krpc_ucq_poll_ioctl(struct krpc_file *kf, void __user *arg);
void krpc_ucq_close(struct krpc_uobj *obj);
int krpc_ucq_mmap(struct krpc_uobj *obj, struct vm_area_struct *vma);
__poll_t krpc_ucq_poll(struct krpc_file *kf);

/* umonitor.c */
void krpc_umonitor_init(struct krpc_file *kf);
void krpc_umonitor_arm(struct krpc_file *kf);
void krpc_umonitor_stop(struct krpc_file *kf);
bool krpc_umonitor_needed(void);

#endif /* KRPC_UFILE_H */
