// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/krpc: the misc device through which userspace reaches krpc.
 *
 * Each open file is a context of its own.  The opener's credentials and
 * network namespace are captured at open: everything the file does later
 * (possibly from an io_uring SQPOLL thread or io-wq worker, where "current"
 * is not the opener) is checked against and scoped to those.
 */
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/cred.h>
#include <linux/nsproxy.h>
#include <net/net_namespace.h>
#include <linux/krpc.h>

#include "krpc_priv.h"

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

/**
 * struct krpc_file - one open /dev/krpc
 * @cred:	the opener's credentials
 * @net:	the opener's network namespace; connections and listeners
 *		of this file live there
 */
struct krpc_file {
	const struct cred *cred;
	struct net *net;
};

static int krpc_open(struct inode *inode, struct file *file)
{
	struct krpc_file *kf;

	kf = kzalloc(sizeof(*kf), GFP_KERNEL_ACCOUNT);
	if (!kf)
		return -ENOMEM;
	kf->cred = get_cred(file->f_cred);
	kf->net = get_net(current->nsproxy->net_ns);
	file->private_data = kf;
	atomic64_inc(&krpc_stats.files_opened);
	atomic64_inc(&krpc_stats.files_open);
	return nonseekable_open(inode, file);
}

static int krpc_release(struct inode *inode, struct file *file)
{
	struct krpc_file *kf = file->private_data;

	put_net(kf->net);
	put_cred(kf->cred);
	kfree(kf);
	atomic64_dec(&krpc_stats.files_open);
	return 0;
}

static long ioc_get_info(struct krpc_info __user *uinfo)
{
	struct krpc_info info;
	u32 usize;
	int ret;

	if (get_user(usize, &uinfo->size))
		return -EFAULT;
	if (usize < KRPC_INFO_SIZE_VER0)
		return -EINVAL;
	ret = copy_struct_from_user(&info, sizeof(info), uinfo, usize);
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

	switch (cmd) {
	case KRPC_IOC_GET_INFO:
		return ioc_get_info(uarg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations krpc_fops = {
	.owner		= THIS_MODULE,
	.open		= krpc_open,
	.release	= krpc_release,
	.unlocked_ioctl	= krpc_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice krpc_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= KRPC_DEVICE_NAME,
	.fops	= &krpc_fops,
};

int krpc_chardev_init(void)
{
	krpc_misc.mode = dev_mode;
	return misc_register(&krpc_misc);
}

void krpc_chardev_exit(void)
{
	misc_deregister(&krpc_misc);
}
