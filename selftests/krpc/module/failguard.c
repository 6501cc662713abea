// SPDX-License-Identifier: GPL-2.0
/*
 * krpc_failguard.ko: keeps fault injection (failslab, fail_page_alloc) out
 * of the kernel's own module notifiers while fault_load.sh loads krpc.ko
 * with allocations failing at random.
 *
 * When a module uses a static key or static call that vmlinux defines, the
 * MODULE_STATE_COMING notifiers allocate memory for it, and by design they
 * WARN when that fails ("jump_label may not work properly").  That warning
 * is the kernel's, not krpc's, and would fail every run.  The stack-trace
 * filter that could exclude these callers (reject-start/reject-end) does
 * not exist on x86_64 before 6.3, so instead a kretprobe clears the task's
 * make-it-fail flag and pauses its fail-nth countdown for the duration of
 * each notifier, and restores both on return.  Everything else in
 * init_module(2), the loader's allocations and all of krpc's init, stays
 * exposed.
 *
 * Loading it fails with -EOPNOTSUPP on kernels without fault injection,
 * and with -ENOENT when none of the notifiers can be probed.
 */
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/sched.h>

#ifdef CONFIG_FAULT_INJECTION

/*
 * The task's fault-injection state, saved for one notifier call: the
 * make-it-fail flag (failslab's task-filter) and the fail-nth countdown,
 * which stops while the notifier runs.
 */
struct guard_data {
	int make_it_fail;
	unsigned int fail_nth;
};

static int guard_enter(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct guard_data *d = (struct guard_data *)ri->data;

	d->make_it_fail = current->make_it_fail;
	d->fail_nth = current->fail_nth;
	current->make_it_fail = 0;
	current->fail_nth = 0;
	return 0;
}

static int guard_leave(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct guard_data *d = (struct guard_data *)ri->data;

	current->make_it_fail = d->make_it_fail;
	current->fail_nth = d->fail_nth;
	return 0;
}

/* MODULE_STATE_COMING notifiers that allocate and WARN on failure. */
static struct kretprobe guards[] = {
	{ .kp.symbol_name = "jump_label_module_notify" },
	{ .kp.symbol_name = "static_call_module_notify" },
};
static bool armed[ARRAY_SIZE(guards)];

static int __init failguard_init(void)
{
	unsigned int i, nr = 0;
	int ret;

	for (i = 0; i < ARRAY_SIZE(guards); i++) {
		guards[i].entry_handler = guard_enter;
		guards[i].handler = guard_leave;
		guards[i].data_size = sizeof(struct guard_data);
		/* Module loads are serialised; a few cover any nesting. */
		guards[i].maxactive = 4;
		ret = register_kretprobe(&guards[i]);
		if (ret) {
			/* Not built into this kernel (static calls, say). */
			pr_info("krpc_failguard: %s: not guarded (%d)\n",
				guards[i].kp.symbol_name, ret);
			continue;
		}
		armed[i] = true;
		nr++;
	}
	if (!nr)
		return -ENOENT;
	return 0;
}

static void __exit failguard_exit(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(guards); i++)
		if (armed[i])
			unregister_kretprobe(&guards[i]);
}

#else /* !CONFIG_FAULT_INJECTION */

static int __init failguard_init(void)
{
	return -EOPNOTSUPP;
}

static void __exit failguard_exit(void)
{
}

#endif /* CONFIG_FAULT_INJECTION */

module_init(failguard_init);
module_exit(failguard_exit);
MODULE_DESCRIPTION("krpc selftests: no fault injection inside the kernel's module notifiers");
MODULE_LICENSE("GPL");
