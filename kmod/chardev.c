// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/krpc: the misc device through which userspace reaches krpc.
 *
 * Each open file is a context of its own (ufile.c).  The opener's
 * credentials and network namespace are captured at open: everything the
 * file does later (possibly from an io_uring SQPOLL thread or io-wq worker,
 * where "current" is not the opener) is checked against and scoped to
 * those.  Set-up goes through ioctls, everything that waits through
 * io_uring commands (uring.c), pools, request descriptors and completion
 * queues are mmap()ed; poll() waits for completion queue entries (ucq.c).
 */
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/cred.h>
#include <linux/nsproxy.h>
#include <net/net_namespace.h>
#include <linux/krpc.h>

#include "krpc_priv.h"
#include "ufile.h"

/*
 * Mode of the device node.  Root only by default; a site that wants a group
 * to use krpc sets e.g. dev_mode=0660 and a udev rule that sets the group
 * (Documentation/userspace-api.rst).  Only read/write bits for user and
 * group are accepted: krpc is never world-accessible.
 */
static unsigned short dev_mode = 0600;

static int dev_mode_set(const char *val, const struct kernel_param *kp)
{
	unsigned short mode;
	int ret;

	ret = kstrtou16(val, 8, &mode);
	if (ret) {
		pr_err("dev_mode: '%s' is not an octal mode\n", val);
		return ret;
	}
	if (mode & ~0660) {
		pr_err("dev_mode: %#o has bits outside 0660\n", mode);
		return -EINVAL;
	}
	*(unsigned short *)kp->arg = mode;
	return 0;
}

static int dev_mode_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%#o\n", *(unsigned short *)kp->arg);
}

static const struct kernel_param_ops dev_mode_ops = {
	.set = dev_mode_set,
	.get = dev_mode_get,
};
module_param_cb(dev_mode, &dev_mode_ops, &dev_mode, 0444);
MODULE_PARM_DESC(dev_mode, "mode of /dev/krpc, within 0660 (default 0600)");

static int krpc_open(struct inode *inode, struct file *file)
{
	struct krpc_file *kf;

	kf = krpc_ufile_create(file);
	if (!kf)
		return -ENOMEM;
	file->private_data = kf;
	atomic64_inc(&krpc_stats.files_opened);
	atomic64_inc(&krpc_stats.files_open);
	return nonseekable_open(inode, file);
}

/*
 * Runs after the last reference: every io_uring command on the file has
 * completed (each held one), so only objects are left to tear down.
 */
static int krpc_release(struct inode *inode, struct file *file)
{
	krpc_ufile_destroy(file->private_data);
	atomic64_dec(&krpc_stats.files_open);
	return 0;
}

/**
 * krpc_ioc_copy_in() - read a size-extensible ioctl argument
 * @dst:	kernel copy, @ksize bytes
 * @ksize:	size of the structure this module knows
 * @arg:	user pointer; its first __u32 is the size the caller knows
 * @min:	the first published size of the structure
 * @usize:	out: the caller's size, for writing back at most that much
 *
 * The size is read once; copy_struct_from_user() zero-fills a shorter
 * structure and rejects a longer one whose unknown tail is not zero.  A
 * size above a page is refused, as clone3() and openat2() do: the tail
 * check would read up to 4 GiB without rescheduling.
 *
 * Context: process context (ioctl).
 * Return: 0, -EFAULT, -EINVAL (smaller than @min) or -E2BIG.
 */
int krpc_ioc_copy_in(void *dst, size_t ksize, const void __user *arg, u32 min,
		     u32 *usize)
{
	if (get_user(*usize, (const u32 __user *)arg))
		return -EFAULT;
	if (*usize < min)
		return -EINVAL;
	if (*usize > PAGE_SIZE)
		return -E2BIG;
	return copy_struct_from_user(dst, ksize, arg, *usize);
}

static long ioc_get_info(struct krpc_info __user *uinfo)
{
	struct krpc_info info;
	u32 usize;
	int ret;

	ret = krpc_ioc_copy_in(&info, sizeof(info), uinfo, KRPC_INFO_SIZE_VER0,
			       &usize);
	if (ret)
		return ret;
	if (info.reserved || info.abi_version || info.features ||
	    info.nr_devices || memchr_inv(info.version, 0, sizeof(info.version)))
		return -EINVAL;

	info.size = min_t(u32, usize, sizeof(info));
	info.abi_version = KRPC_ABI_VERSION;
	info.features = KRPC_FEAT_ALL;
	info.nr_devices = krpc_device_count();
	strscpy(info.version, KRPC_VERSION_STR, sizeof(info.version));
	if (copy_to_user(uinfo, &info, info.size))
		return -EFAULT;
	return 0;
}

static long krpc_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	if (cmd == KRPC_IOC_GET_INFO)
		return ioc_get_info(uarg);
	return krpc_ufile_ioctl(file->private_data, cmd, uarg);
}

/*
 * The offset names the object (krpc_uobj_mmap_offset()): a pool
 * (read-write), a server's request descriptors (read-only) or a completion
 * queue (read-write); the length must be exact.
 */
static int krpc_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct krpc_file *kf = file->private_data;
	struct krpc_uobj *obj;
	u32 handle;
	int ret;

	if (vma->vm_pgoff > KRPC_UHANDLE_MAX)
		return -EINVAL;
	handle = vma->vm_pgoff;
	obj = krpc_uobj_get(kf, handle, KRPC_UOBJ_ANY);
	if (!obj)
		return -EINVAL;
	switch (obj->type) {
	case KRPC_UOBJ_POOL:
		ret = krpc_upool_mmap(container_of(obj, struct krpc_upool, obj),
				      vma);
		break;
	case KRPC_UOBJ_SERVER:
		ret = krpc_userver_mmap((struct krpc_userver *)obj, vma);
		break;
	case KRPC_UOBJ_CQ:
		ret = krpc_ucq_mmap(obj, vma);
		break;
	default:
		ret = -EINVAL;	/* a connection has nothing to map */
		break;
	}
	krpc_uobj_put(obj);
	return ret;
}

/* Readable while a completion queue of the file holds entries. */
static __poll_t krpc_poll(struct file *file, poll_table *wait)
{
	struct krpc_file *kf = file->private_data;

	poll_wait(file, &kf->cq_wait, wait);
	return krpc_ucq_poll(kf);
}

static const struct file_operations krpc_fops = {
	.owner		= THIS_MODULE,
	.open		= krpc_open,
	.release	= krpc_release,
	.unlocked_ioctl	= krpc_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.mmap		= krpc_mmap,
	.poll		= krpc_poll,
	.uring_cmd	= krpc_uring_cmd,
	.llseek		= noop_llseek,
};

static struct miscdevice krpc_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= KRPC_DEVICE_NAME,
	.fops	= &krpc_fops,
};

int krpc_chardev_init(void)
{
	int ret;

	ret = krpc_ucmd_init_cache();
	if (ret)
		return ret;
	krpc_misc.mode = dev_mode;
	ret = misc_register(&krpc_misc);
	if (ret)
		goto out_cache;
	return 0;

out_cache:
	krpc_ucmd_exit_cache();
	return ret;
}

void krpc_chardev_exit(void)
{
	misc_deregister(&krpc_misc);
	/* Destructors deferred from atomic context (ufile.c). */
	flush_workqueue(krpc_wq);
	krpc_ucmd_exit_cache();
}
