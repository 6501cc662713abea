// SPDX-License-Identifier: GPL-2.0
/*
 * Module parameters, each with a validated range.  Sizes are read when a
 * pool or connection is created (0444: fixed at load); timeouts are read
 * per call or per timer tick and may be changed at run time (0644).
 */
#include <linux/moduleparam.h>
#include <linux/log2.h>
#include <linux/sysfs.h>

#include "krpc_priv.h"
#include "pool.h"
#include "wire.h"

/* Set once the load-time checks passed: writes then keep the rules. */
static bool params_loaded;

static int range_parse(const char *val, const struct kernel_param *kp,
		       unsigned int *v)
{
	struct krpc_param *p = kp->arg;
	int ret;

	ret = kstrtouint(val, 0, v);
	if (ret)
		return ret;
	if (*v < p->min || *v > p->max) {
		pr_err("%s=%u is outside [%u, %u]\n", kp->name, *v, p->min,
		       p->max);
		return -ERANGE;
	}
	return 0;
}

static int range_set(const char *val, const struct kernel_param *kp)
{
	struct krpc_param *p = kp->arg;
	unsigned int v;
	int ret;

	ret = range_parse(val, kp, &v);
	if (!ret)
		WRITE_ONCE(p->val, v);
	return ret;
}

static int range_get(char *buf, const struct kernel_param *kp)
{
	const struct krpc_param *p = kp->arg;

	return sysfs_emit(buf, "%u\n", READ_ONCE(p->val));
}

static const struct kernel_param_ops range_ops = {
	.set = range_set,
	.get = range_get,
};

/*
 * ka_interval_ms and ka_timeout_ms change at run time, each on its own,
 * and peers are declared dead unless the timeout leaves room for two
 * keepalives.  At load the pair is checked once (the values may come in
 * any order); a later write that would break it is refused.  Writes are
 * serialised by the module's kernel_param_lock.
 */
static int ka_set(const char *val, const struct kernel_param *kp)
{
	struct krpc_param *p = kp->arg;
	unsigned int v, ival, tmo;
	int ret;

	ret = range_parse(val, kp, &v);
	if (ret)
		return ret;
	if (READ_ONCE(params_loaded)) {
		ival = p == &krpc_param_ka_interval_ms ? v :
		       krpc_param(ka_interval_ms);
		tmo = p == &krpc_param_ka_timeout_ms ? v :
		      krpc_param(ka_timeout_ms);
		if (tmo < 2 * ival) {
			pr_err("%s=%u refused: ka_timeout_ms (%u) must stay at least twice ka_interval_ms (%u)\n",
			       kp->name, v, tmo, ival);
			return -EINVAL;
		}
	}
	WRITE_ONCE(p->val, v);
	return 0;
}

static const struct kernel_param_ops ka_ops = {
	.set = ka_set,
	.get = range_get,
};

#define KRPC_PARAM_OPS(name, ops, def, lo, hi, perm, desc)		\
	struct krpc_param krpc_param_##name = { def, lo, hi };		\
	module_param_cb(name, &ops, &krpc_param_##name, perm);		\
	MODULE_PARM_DESC(name, desc " [" #lo ".." #hi ", default " #def "]")
#define KRPC_PARAM(name, def, lo, hi, perm, desc)			\
	KRPC_PARAM_OPS(name, range_ops, def, lo, hi, perm, desc)

KRPC_PARAM(depth, 128, 1, 1024, 0444,
	   "outstanding calls per connection (slots)");
KRPC_PARAM(buf_size, 4096, 1024, 65536, 0444,
	   "bytes per receive buffer (power of two): header plus inline payload");
KRPC_PARAM(eager_max, 0, 0, 65472, 0444,
	   "largest payload sent inline; 0 = buf_size - 64");
KRPC_PARAM(max_msg, 1048576, 65536, 67108864, 0444,
	   "largest message payload (multiple of 64 KiB)");
KRPC_PARAM(pool_small, 2048, 64, 1048576, 0444,
	   "buf_size buffers per device pool");
KRPC_PARAM(pool_medium, 128, 0, 65536, 0444,
	   "64 KiB buffers per device pool");
KRPC_PARAM(pool_large, 16, 1, 4096, 0444,
	   "max_msg buffers per device pool");
KRPC_PARAM(call_timeout_ms, 30000, 10, 3600000, 0644,
	   "default call timeout");
KRPC_PARAM(connect_timeout_ms, 5000, 100, 600000, 0644,
	   "address resolution and connection setup timeout");
KRPC_PARAM_OPS(ka_interval_ms, ka_ops, 1000, 50, 60000, 0644,
	       "send a keepalive after this long without sending, or half the peer's announced ka_timeout_ms if shorter (at most half ka_timeout_ms)");
KRPC_PARAM_OPS(ka_timeout_ms, ka_ops, 5000, 200, 600000, 0644,
	       "declare the peer dead after this long without receiving (announced to the peer at connect)");
KRPC_PARAM(upool_max_mb, 1024, 1, 1048576, 0644,
	   "pool memory (MiB) one user may have mapped through /dev/krpc, also with CAP_IPC_LOCK");
KRPC_PARAM(transport, 1, 1, 3, 0644,
	   "transport of clients and servers that do not choose: 1 rdma, 2 tcp, 3 auto (client: rdma, else tcp; server: both)");
KRPC_PARAM(poll_usecs, 0, 0, 1000000, 0644,
	   "busy-poll completions for this long after the last one (us); non-zero: connections made from then on that do not choose get a CQ served by a poller thread; 0 = interrupts for those, and pollers spin 50 us for connections that ask");
KRPC_PARAM(cq_shared, 0, 0, 1, 0644,
	   "1: connections on software devices (rxe, siw) take their CQs from ib_core's shared pool, as on hardware; 0 = a CQ of their own, reaped in softirq or on a work queue as each event asks (connections made from then on)");
KRPC_PARAM(poll_threads, 1, 1, 64, 0444,
	   "poller threads (krpc_poll/N), started on first use");
KRPC_PARAM(unsignaled, 1, 0, 1, 0644,
	   "1: clients send eager requests in unsignaled SENDs, reclaimed by a later signaled work request; 0 = every work request signaled (connections made from then on)");
KRPC_PARAM(max_conns, 1024, 1, 65536, 0644,
	   "connections a server keeps at a time; one more is refused (reason resources, value max_conns)");
KRPC_PARAM(rnr_retry, 0, 0, 7, 0444,
	   "RNR retry count of QPs; 0 makes any RNR NAK fatal and counted");

/* Cross-parameter rules; checked once at module load. */
int krpc_params_check(void)
{
	u32 buf = krpc_param(buf_size), eager = krpc_param(eager_max);
	u32 max = krpc_param(max_msg);

	if (!is_power_of_2(buf)) {
		pr_err("buf_size=%u is not a power of two\n", buf);
		return -EINVAL;
	}
	if (eager > buf - KRPC_HDR_SIZE) {
		pr_err("eager_max=%u exceeds buf_size - %u\n", eager,
		       KRPC_HDR_SIZE);
		return -EINVAL;
	}
	if (max % KRPC_SEG_SIZE) {
		pr_err("max_msg=%u is not a multiple of %u\n", max,
		       KRPC_SEG_SIZE);
		return -EINVAL;
	}
	/*
	 * The device pool's largest buffers are max_msg ones only above
	 * 64 KiB; at 64 KiB they are the medium class.  Without any, the
	 * handshake would offer buf_size, which every peer refuses.
	 */
	if (max == KRPC_SEG_SIZE && buf < KRPC_SEG_SIZE &&
	    !krpc_param(pool_medium)) {
		pr_err("max_msg=%u needs pool_medium > 0 (or buf_size=%u): the pool would have no buffer for a largest message\n",
		       max, KRPC_SEG_SIZE);
		return -EINVAL;
	}
	/*
	 * The parameter files exist before init runs: under the lock a
	 * write sees either the check to come or params_loaded set.
	 */
	kernel_param_lock(THIS_MODULE);
	if (krpc_param(ka_timeout_ms) < 2 * krpc_param(ka_interval_ms)) {
		kernel_param_unlock(THIS_MODULE);
		pr_err("ka_timeout_ms must be at least twice ka_interval_ms\n");
		return -EINVAL;
	}
	WRITE_ONCE(params_loaded, true);
	kernel_param_unlock(THIS_MODULE);
	return 0;
}

/* Every field: the caller's @cfg may be uninitialised stack. */
void krpc_params_pool_cfg(struct krpc_pool_cfg *cfg)
{
	*cfg = (struct krpc_pool_cfg) {
		.small_size = krpc_param(buf_size),
		.nr_small = krpc_param(pool_small),
		.nr_medium = krpc_param(pool_medium),
		.large_size = krpc_param(max_msg),
		.nr_large = krpc_param(pool_large),
		.gfp = 0,	/* a kernel pool: not charged, any zone */
	};
}

/* Largest payload this side sends inline, before the peer's limit. */
u32 krpc_params_inline_max(void)
{
	u32 eager = krpc_param(eager_max);

	return eager ? eager : krpc_param(buf_size) - KRPC_HDR_SIZE;
}
