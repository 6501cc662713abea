// SPDX-License-Identifier: GPL-2.0
/*
 * Per-open-file contexts of /dev/krpc and the handles that name their
 * objects.  A handle is an index in the file's own xarray: a handle from
 * another file, a closed one or one of the wrong kind is -EBADF.
 *
 * Lifetime: the table holds one reference on each object; every command or
 * object that uses another object holds one more.  Release of the file runs
 * only after every io_uring command on it completed (each holds a file
 * reference), so it closes servers and connections first (their teardown
 * completes nothing any more: no command is left), then pools.
 */
#include <linux/slab.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/uaccess.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <net/net_namespace.h>

#include "krpc_priv.h"
#include "ufile.h"

/* Objects (pools, connections, servers) one file may have at once. */
#define KRPC_UOBJS_MAX		1024

struct krpc_file *krpc_ufile_create(struct file *file)
{
	struct krpc_file *kf;

	kf = kzalloc(sizeof(*kf), GFP_KERNEL_ACCOUNT);
	if (!kf)
		return NULL;
	kf->cred = get_cred(file->f_cred);
	kf->net = get_net(current->nsproxy->net_ns);
	kf->file = file;
	mutex_init(&kf->lock);
	xa_init_flags(&kf->objs, XA_FLAGS_ALLOC1);
	spin_lock_init(&kf->parked_lock);
	INIT_LIST_HEAD(&kf->parked);
	spin_lock_init(&kf->cq_lock);
	INIT_LIST_HEAD(&kf->cqs);
	init_waitqueue_head(&kf->cq_wait);
	krpc_umonitor_init(kf);
	return kf;
}

static void uobj_free_work(struct work_struct *work)
{
	struct krpc_uobj *obj = container_of(work, struct krpc_uobj, free_work);

	obj->free(obj);
}

/*
 * Destructors sleep (vfree(), pool release); a completion queue entry or a
 * buffer put in softirq context, with bottom halves off (a poller, under
 * krpc_conn.lock) or under one of the irqsave locks of ufile.h may drop
 * the last reference.  Those are the atomic contexts krpc puts objects
 * in; each shows in in_interrupt() or irqs_disabled().
 */
static void uobj_release(struct kref *ref)
{
	struct krpc_uobj *obj = container_of(ref, struct krpc_uobj, ref);

	if (!in_interrupt() && !irqs_disabled()) {
		obj->free(obj);
		return;
	}
	INIT_WORK(&obj->free_work, uobj_free_work);
	queue_work(krpc_wq, &obj->free_work);
}

void krpc_uobj_put(struct krpc_uobj *obj)
{
	kref_put(&obj->ref, uobj_release);
}

/* Close a connection or server (process context, sleeps), drop the ref. */
static void uobj_close(struct krpc_uobj *obj)
{
	switch (obj->type) {
	case KRPC_UOBJ_CONN:
		krpc_uconn_shutdown(container_of(obj, struct krpc_uconn, obj));
		break;
	case KRPC_UOBJ_SERVER:
		krpc_userver_shutdown((struct krpc_userver *)obj);
		break;
	case KRPC_UOBJ_CQ:
		krpc_ucq_close(obj);
		break;
	}
	krpc_uobj_put(obj);
}

void krpc_ufile_destroy(struct krpc_file *kf)
{
	struct krpc_uobj *obj;
	unsigned long id;
	int pass;

	krpc_umonitor_stop(kf);
	mutex_lock(&kf->lock);
	kf->dying = true;
	/* Users of pools first, then the pools. */
	for (pass = 0; pass < 2; pass++) {
		xa_for_each(&kf->objs, id, obj) {
			if ((obj->type == KRPC_UOBJ_POOL) != (pass == 1))
				continue;
			xa_erase(&kf->objs, id);
			kf->nr_objs--;
			uobj_close(obj);
		}
	}
	mutex_unlock(&kf->lock);
	WARN_ON_ONCE(!list_empty(&kf->parked));
	xa_destroy(&kf->objs);
	put_net(kf->net);
	put_cred(kf->cred);
	kfree(kf);
}

/**
 * krpc_uobj_add() - give an object a handle in a file
 * @kf:		the file
 * @obj:	the object; its reference becomes the table's
 * @type:	KRPC_UOBJ_*
 * @free:	destructor run at the last reference
 * @handle:	receives the handle
 *
 * Once added, another thread of the process may close the handle and free
 * @obj at any time: the caller reads nothing of @obj after this returns 0
 * (*@handle is the handle to report).
 *
 * Context: process context; takes kf->lock.
 * Return: 0, -EMFILE (too many objects), -ESHUTDOWN (file being released)
 * or -ENOMEM.
 */
int krpc_uobj_add(struct krpc_file *kf, struct krpc_uobj *obj,
		  unsigned int type, void (*free)(struct krpc_uobj *obj),
		  u32 *handle)
{
	u32 id;
	int ret;

	kref_init(&obj->ref);
	obj->type = type;
	obj->kf = kf;
	obj->free = free;
	mutex_lock(&kf->lock);
	if (kf->dying) {
		ret = -ESHUTDOWN;
	} else if (kf->nr_objs >= KRPC_UOBJS_MAX) {
		ret = -EMFILE;
	} else {
		ret = xa_alloc_cyclic(&kf->objs, &id, obj,
				      XA_LIMIT(1, KRPC_UHANDLE_MAX),
				      &kf->next_handle, GFP_KERNEL_ACCOUNT);
		if (ret >= 0) {
			obj->handle = id;
			*handle = id;
			kf->nr_objs++;
			ret = 0;
		}
	}
	mutex_unlock(&kf->lock);
	return ret;
}

/**
 * krpc_uobj_get() - look a handle up
 * @kf:		the file
 * @handle:	from userspace, unchecked
 * @type:	KRPC_UOBJ_* wanted, or KRPC_UOBJ_ANY
 *
 * Context: any context.
 * Return: the object with a new reference, or NULL.
 */
struct krpc_uobj *krpc_uobj_get(struct krpc_file *kf, u32 handle,
				unsigned int type)
{
	struct krpc_uobj *obj;

	if (!handle || handle > KRPC_UHANDLE_MAX)
		return NULL;
	rcu_read_lock();
	obj = xa_load(&kf->objs, handle);
	if (obj && ((type && obj->type != type) ||
		    !kref_get_unless_zero(&obj->ref)))
		obj = NULL;
	rcu_read_unlock();
	return obj;
}

/*
 * Take an object out of the table; the table's reference passes to the
 * caller.  Context: process context; takes kf->lock.
 */
struct krpc_uobj *krpc_uobj_remove(struct krpc_file *kf, u32 handle,
				   unsigned int type)
{
	struct krpc_uobj *obj;

	if (!handle || handle > KRPC_UHANDLE_MAX)
		return NULL;
	mutex_lock(&kf->lock);
	obj = xa_load(&kf->objs, handle);
	if (obj && obj->type == type) {
		xa_erase(&kf->objs, handle);
		kf->nr_objs--;
	} else {
		obj = NULL;
	}
	mutex_unlock(&kf->lock);
	return obj;
}

static long ioc_close(struct krpc_file *kf, void __user *arg)
{
	struct krpc_handle_arg ha;
	struct krpc_uobj *obj;
	u32 usize;
	int ret;

	ret = krpc_ioc_copy_in(&ha, sizeof(ha), arg, KRPC_HANDLE_ARG_SIZE_VER0,
			       &usize);
	if (ret)
		return ret;
	if (ha.flags || ha.reserved)
		return -EINVAL;
	obj = krpc_uobj_remove(kf, ha.handle, KRPC_UOBJ_CONN);
	if (!obj)
		obj = krpc_uobj_remove(kf, ha.handle, KRPC_UOBJ_SERVER);
	if (!obj)
		obj = krpc_uobj_remove(kf, ha.handle, KRPC_UOBJ_CQ);
	if (!obj)
		return -EBADF;
	uobj_close(obj);
	return 0;
}

/* Context: process context (the ioctl caller). */
long krpc_ufile_ioctl(struct krpc_file *kf, unsigned int cmd,
		      void __user *arg)
{
	switch (cmd) {
	case KRPC_IOC_POOL_CREATE:
		return krpc_upool_create_ioctl(kf, arg);
	case KRPC_IOC_POOL_DESTROY:
		return krpc_upool_destroy_ioctl(kf, arg);
	case KRPC_IOC_BUF_ALLOC:
		return krpc_ubuf_alloc_ioctl(kf, arg, false);
	case KRPC_IOC_BUF_FREE:
		return krpc_ubuf_alloc_ioctl(kf, arg, true);
	case KRPC_IOC_LISTEN:
		return krpc_userver_listen_ioctl(kf, arg);
	case KRPC_IOC_CLOSE:
		return ioc_close(kf, arg);
	case KRPC_IOC_CQ_CREATE:
		return krpc_ucq_create_ioctl(kf, arg);
	case KRPC_IOC_CQ_POLL:
		return krpc_ucq_poll_ioctl(kf, arg);
	default:
		return -ENOTTY;
	}
}

/**
 * krpc_umem_alloc - memory the kernel writes and a process maps
 * @len: bytes (rounded up to pages)
 *
 * Zeroed pages charged to the caller's memory cgroup, as io_uring's rings
 * are, in a vmap() area that remap_vmalloc_range() maps (VM_USERMAP):
 * vmalloc_user() without the charge, since the vmalloc variants that
 * take gfp flags are not exported.  A completion queue or a server's
 * request descriptors are a process's kernel memory, bounded by its
 * cgroup like the rest of it.
 *
 * Context: process context; sleeps.
 * Return: the kernel address, or NULL.
 */
void *krpc_umem_alloc(size_t len)
{
	unsigned int i, n = PAGE_ALIGN(len) >> PAGE_SHIFT;
	struct page **pages;
	void *mem;

	pages = kvmalloc_array(n, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return NULL;
	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!pages[i])
			goto out_free_pages;
	}
	mem = vmap(pages, n, VM_MAP | VM_USERMAP, PAGE_KERNEL);
	if (!mem)
		goto out_free_pages;
	kvfree(pages);
	return mem;

out_free_pages:
	while (i--)
		__free_page(pages[i]);
	kvfree(pages);
	return NULL;
}

/**
 * krpc_umem_free - free what krpc_umem_alloc() gave
 * @mem: its address, or NULL
 * @len: the length it was asked for
 *
 * A process that still maps the memory keeps its pages (the mapping holds
 * a reference on each) until it unmaps them.
 *
 * Context: process context; sleeps (vunmap()).
 */
void krpc_umem_free(void *mem, size_t len)
{
	unsigned int i, n = PAGE_ALIGN(len) >> PAGE_SHIFT;
	struct page *page, *tmp;
	LIST_HEAD(pages);

	if (!mem)
		return;
	/* Only the mapping knows the pages: collect them, unmap, free. */
	for (i = 0; i < n; i++) {
		page = vmalloc_to_page(mem + ((size_t)i << PAGE_SHIFT));
		list_add(&page->lru, &pages);
	}
	vunmap(mem);
	list_for_each_entry_safe(page, tmp, &pages, lru) {
		list_del(&page->lru);
		__free_page(page);
	}
}
