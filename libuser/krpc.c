// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libkrpc: device access, pools and servers (ioctl + mmap).  Nothing here
 * needs liburing, so programs that only use these link without it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <poll.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "libkrpc.h"

/* The ABI is pinned by offsets, not only by size. */
_Static_assert(sizeof(struct krpc_info) == KRPC_INFO_SIZE_VER0, "krpc_info size");
_Static_assert(offsetof(struct krpc_info, features) == 8, "krpc_info.features");
_Static_assert(offsetof(struct krpc_info, nr_devices) == 16, "krpc_info.nr_devices");
_Static_assert(offsetof(struct krpc_info, version) == 24, "krpc_info.version");
_Static_assert(sizeof(struct krpc_pool_create) == KRPC_POOL_CREATE_SIZE_VER1, "pool_create");
_Static_assert(offsetof(struct krpc_pool_create, large_size) == KRPC_POOL_CREATE_SIZE_VER0, "pool_create.large_size");
_Static_assert(offsetof(struct krpc_pool_create, handle) == 48, "pool_create.handle");
_Static_assert(offsetof(struct krpc_pool_create, mmap_offset) == 56, "pool_create.mmap_offset");
_Static_assert(sizeof(struct krpc_handle_arg) == KRPC_HANDLE_ARG_SIZE_VER0, "handle_arg");
_Static_assert(sizeof(struct krpc_buf_arg) == KRPC_BUF_ARG_SIZE_VER0, "buf_arg");
_Static_assert(offsetof(struct krpc_buf_arg, bufs) == 16, "buf_arg.bufs");
_Static_assert(sizeof(struct krpc_addr) == 24, "krpc_addr");
_Static_assert(sizeof(struct krpc_listen) == KRPC_LISTEN_SIZE_VER1, "listen");
_Static_assert(offsetof(struct krpc_listen, max_conns) == KRPC_LISTEN_SIZE_VER0, "listen.max_conns");
_Static_assert(offsetof(struct krpc_listen, addr) == 24, "listen.addr");
_Static_assert(offsetof(struct krpc_listen, methods) == 48, "listen.methods");
_Static_assert(offsetof(struct krpc_listen, desc_offset) == 64, "listen.desc_offset");
_Static_assert(sizeof(struct krpc_req_desc) == 32, "req_desc");
_Static_assert(sizeof(struct krpc_cmd_connect) == 64, "cmd_connect");
_Static_assert(offsetof(struct krpc_cmd_connect, addr) == 24, "cmd_connect.addr");
_Static_assert(sizeof(struct krpc_cmd_call) == 56, "cmd_call");
_Static_assert(offsetof(struct krpc_cmd_call, tag) == 32, "cmd_call.tag");
_Static_assert(offsetof(struct krpc_cmd_call, cq) == 40, "cmd_call.cq");
_Static_assert(sizeof(struct krpc_cmd_cancel) == 32, "cmd_cancel");
_Static_assert(sizeof(struct krpc_cmd_slot) == 48, "cmd_slot");
_Static_assert(offsetof(struct krpc_cmd_slot, status) == 20, "cmd_slot.status");
_Static_assert(offsetof(struct krpc_cmd_slot, cq) == 28, "cmd_slot.cq");
_Static_assert(offsetof(struct krpc_cmd_slot, tag) == 32, "cmd_slot.tag");
_Static_assert(sizeof(struct krpc_cq_create) == KRPC_CQ_CREATE_SIZE_VER0, "cq_create");
_Static_assert(offsetof(struct krpc_cq_create, mmap_offset) == 16, "cq_create.mmap_offset");
_Static_assert(sizeof(struct krpc_cqe) == 32, "cqe");
_Static_assert(offsetof(struct krpc_cqe, res) == 16, "cqe.res");
_Static_assert(sizeof(struct krpc_cmd_bufs) == 80, "cmd_bufs");
/* The numbers are ABI: they stay when a structure grows. */
_Static_assert(KRPC_IOC_GET_INFO == 0xc038b700U &&
	       KRPC_IOC_POOL_CREATE == 0xc048b701U &&
	       KRPC_IOC_POOL_DESTROY == 0x4010b702U &&
	       KRPC_IOC_BUF_ALLOC == 0xc018b703U &&
	       KRPC_IOC_BUF_FREE == 0x4018b704U &&
	       KRPC_IOC_LISTEN == 0xc050b705U &&
	       KRPC_IOC_CLOSE == 0x4010b706U &&
	       KRPC_IOC_CQ_CREATE == 0xc020b707U &&
	       KRPC_IOC_CQ_POLL == 0x4010b708U, "ioctl numbers");
_Static_assert(KRPC_CMD_CONNECT == 0xc040b740U &&
	       KRPC_CMD_CALL == 0xc038b741U &&
	       KRPC_CMD_CANCEL == 0xc020b742U &&
	       KRPC_CMD_FETCH == 0xc030b743U &&
	       KRPC_CMD_REPLY == 0xc030b744U &&
	       KRPC_CMD_REPLY_FETCH == 0xc030b745U &&
	       KRPC_CMD_BUF_ALLOC == 0xc050b746U &&
	       KRPC_CMD_BUF_FREE == 0xc050b747U, "command numbers");

int krpc_dev_open(unsigned int flags)
{
	int fd;

	if (flags & ~KRPC_OPEN_F_ALL)
		return -EINVAL;
	fd = open("/dev/" KRPC_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int krpc_dev_info(int fd, struct krpc_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	if (ioctl(fd, KRPC_IOC_GET_INFO, info) < 0)
		return -errno;
	return 0;
}

/* The first version of struct krpc_pool (KRPC_0.1). */
struct krpc_pool_v01 {
	uint32_t handle;
	uint32_t buf_size;
	uint32_t count;
	void *base;
	size_t length;
};

_Static_assert(offsetof(struct krpc_pool, large_size) ==
	       sizeof(struct krpc_pool_v01), "krpc_pool grows at its end");

static int pool_create(int fd, const char *device, uint32_t buf_size,
		       uint32_t count, uint32_t large_size,
		       uint32_t large_count, struct krpc_pool *pool)
{
	struct krpc_pool_create pc;
	struct krpc_handle_arg ha;
	void *base;
	int err;

	memset(&pc, 0, sizeof(pc));
	pc.size = sizeof(pc);
	pc.buf_size = buf_size;
	pc.count = count;
	pc.large_size = large_size;
	pc.large_count = large_count;
	if (device) {
		if (strlen(device) >= sizeof(pc.device))
			return -EINVAL;
		strcpy(pc.device, device);
	}
	if (ioctl(fd, KRPC_IOC_POOL_CREATE, &pc) < 0)
		return -errno;
	base = mmap(NULL, pc.mmap_length, PROT_READ | PROT_WRITE, MAP_SHARED,
		    fd, pc.mmap_offset);
	if (base == MAP_FAILED) {
		err = -errno;
		memset(&ha, 0, sizeof(ha));
		ha.size = sizeof(ha);
		ha.handle = pc.handle;
		ioctl(fd, KRPC_IOC_POOL_DESTROY, &ha);
		return err;
	}
	pool->handle = pc.handle;
	pool->buf_size = buf_size;
	pool->count = count;
	pool->base = base;
	pool->length = pc.mmap_length;
	pool->large_size = large_size;
	pool->large_count = large_count;
	return 0;
}

int krpc_pool_create_large(int fd, const char *device, uint32_t buf_size,
			   uint32_t count, uint32_t large_size,
			   uint32_t large_count, struct krpc_pool *pool)
{
	if (!large_size || !large_count)
		return -EINVAL;
	return pool_create(fd, device, buf_size, count, large_size,
			   large_count, pool);
}

/* KRPC_0.6 and later: the whole struct krpc_pool. */
int krpc_pool_create_v06(int fd, const char *device, uint32_t buf_size,
			 uint32_t count, struct krpc_pool *pool);
int krpc_pool_create_v06(int fd, const char *device, uint32_t buf_size,
			 uint32_t count, struct krpc_pool *pool)
{
	return pool_create(fd, device, buf_size, count, 0, 0, pool);
}
__asm__(".symver krpc_pool_create_v06,krpc_pool_create@@KRPC_0.6");

/* KRPC_0.1: programs that know the shorter struct krpc_pool_v01. */
int krpc_pool_create_v01(int fd, const char *device, uint32_t buf_size,
			 uint32_t count, struct krpc_pool_v01 *pool);
int krpc_pool_create_v01(int fd, const char *device, uint32_t buf_size,
			 uint32_t count, struct krpc_pool_v01 *pool)
{
	struct krpc_pool p;
	int ret;

	ret = pool_create(fd, device, buf_size, count, 0, 0, &p);
	if (ret)
		return ret;
	memcpy(pool, &p, sizeof(*pool));
	return 0;
}
__asm__(".symver krpc_pool_create_v01,krpc_pool_create@KRPC_0.1");

int krpc_pool_destroy(int fd, struct krpc_pool *pool)
{
	struct krpc_handle_arg ha;

	memset(&ha, 0, sizeof(ha));
	ha.size = sizeof(ha);
	ha.handle = pool->handle;
	if (ioctl(fd, KRPC_IOC_POOL_DESTROY, &ha) < 0)
		return -errno;
	munmap(pool->base, pool->length);
	pool->base = NULL;
	pool->handle = KRPC_HANDLE_NONE;
	return 0;
}

static int buf_ioctl(int fd, unsigned long req, const struct krpc_pool *pool,
		     const uint32_t *bufs, unsigned int n, uint32_t flags)
{
	struct krpc_buf_arg ba;
	int ret;

	memset(&ba, 0, sizeof(ba));
	ba.size = sizeof(ba);
	ba.pool = pool->handle;
	ba.count = n;
	ba.flags = flags;
	ba.bufs = (uintptr_t)bufs;
	ret = ioctl(fd, req, &ba);
	return ret < 0 ? -errno : ret;
}

int krpc_buf_alloc(int fd, const struct krpc_pool *pool, uint32_t *bufs,
		   unsigned int n)
{
	return buf_ioctl(fd, KRPC_IOC_BUF_ALLOC, pool, bufs, n, 0);
}

int krpc_buf_alloc_large(int fd, const struct krpc_pool *pool,
			 uint32_t *bufs, unsigned int n)
{
	return buf_ioctl(fd, KRPC_IOC_BUF_ALLOC, pool, bufs, n,
			 KRPC_BUF_F_LARGE);
}

int krpc_buf_free(int fd, const struct krpc_pool *pool, const uint32_t *bufs,
		  unsigned int n)
{
	return buf_ioctl(fd, KRPC_IOC_BUF_FREE, pool, bufs, n, 0);
}

int krpc_addr_set(struct krpc_addr *addr, const struct sockaddr *sa,
		  socklen_t len)
{
	memset(addr, 0, sizeof(*addr));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)sa;

		if (len < sizeof(*sin))
			return -EINVAL;
		addr->family = AF_INET;
		addr->port = sin->sin_port;
		memcpy(addr->addr, &sin->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)sa;

		if (len < sizeof(*sin6))
			return -EINVAL;
		addr->family = AF_INET6;
		addr->port = sin6->sin6_port;
		addr->scope_id = sin6->sin6_scope_id;
		memcpy(addr->addr, &sin6->sin6_addr, 16);
		return 0;
	}
	return -EAFNOSUPPORT;
}

int krpc_close_handle(int fd, uint32_t handle)
{
	struct krpc_handle_arg ha;

	memset(&ha, 0, sizeof(ha));
	ha.size = sizeof(ha);
	ha.handle = handle;
	return ioctl(fd, KRPC_IOC_CLOSE, &ha) < 0 ? -errno : 0;
}

int krpc_listen(int fd, const struct krpc_pool *pool,
		const struct sockaddr *sa, socklen_t salen, uint32_t nr_slots,
		const uint32_t *methods, uint32_t nr_methods,
		struct krpc_srv *srv)
{
	return krpc_listen_xprt(fd, pool, sa, salen, nr_slots, methods,
				nr_methods, KRPC_TRANSPORT_DEFAULT, srv);
}

int krpc_listen_xprt(int fd, const struct krpc_pool *pool,
		     const struct sockaddr *sa, socklen_t salen,
		     uint32_t nr_slots, const uint32_t *methods,
		     uint32_t nr_methods, uint32_t transport,
		     struct krpc_srv *srv)
{
	return krpc_listen_flags(fd, pool, sa, salen, nr_slots, methods,
				 nr_methods, transport, 0, srv);
}

int krpc_listen_flags(int fd, const struct krpc_pool *pool,
		      const struct sockaddr *sa, socklen_t salen,
		      uint32_t nr_slots, const uint32_t *methods,
		      uint32_t nr_methods, uint32_t transport, uint32_t flags,
		      struct krpc_srv *srv)
{
	struct krpc_srv_opts o = { .transport = transport, .flags = flags };

	return krpc_listen_opts(fd, pool, sa, salen, nr_slots, methods,
				nr_methods, &o, srv);
}

int krpc_listen_opts(int fd, const struct krpc_pool *pool,
		     const struct sockaddr *sa, socklen_t salen,
		     uint32_t nr_slots, const uint32_t *methods,
		     uint32_t nr_methods, const struct krpc_srv_opts *opts,
		     struct krpc_srv *srv)
{
	static const struct krpc_srv_opts none;
	struct krpc_listen l;
	void *desc;
	int ret;

	if (!opts)
		opts = &none;
	memset(&l, 0, sizeof(l));
	/* A module that predates max_conns takes the first size. */
	l.size = opts->max_conns ? KRPC_LISTEN_SIZE_VER1 : KRPC_LISTEN_SIZE_VER0;
	l.flags = opts->flags;
	l.transport = opts->transport;
	l.depth = opts->depth;
	l.max_conns = opts->max_conns;
	l.pool = pool->handle;
	l.nr_slots = nr_slots;
	l.nr_methods = nr_methods;
	l.methods = (uintptr_t)methods;
	ret = krpc_addr_set(&l.addr, sa, salen);
	if (ret)
		return ret;
	if (ioctl(fd, KRPC_IOC_LISTEN, &l) < 0)
		return -errno;
	desc = mmap(NULL, l.desc_length, PROT_READ, MAP_SHARED, fd,
		    l.desc_offset);
	if (desc == MAP_FAILED) {
		ret = -errno;
		krpc_close_handle(fd, l.handle);
		return ret;
	}
	srv->handle = l.handle;
	srv->nr_slots = nr_slots;
	srv->desc = desc;
	srv->desc_len = l.desc_length;
	return 0;
}

int krpc_srv_close(int fd, struct krpc_srv *srv)
{
	int ret = krpc_close_handle(fd, srv->handle);

	if (srv->desc)
		munmap((void *)srv->desc, srv->desc_len);
	srv->desc = NULL;
	return ret;
}

int krpc_cq_create(int fd, uint32_t entries, struct krpc_cq *cq)
{
	struct krpc_cq_create cc;
	void *base;
	int err;

	memset(&cc, 0, sizeof(cc));
	cc.size = sizeof(cc);
	cc.entries = entries;
	if (ioctl(fd, KRPC_IOC_CQ_CREATE, &cc) < 0)
		return -errno;
	base = mmap(NULL, cc.mmap_length, PROT_READ | PROT_WRITE, MAP_SHARED,
		    fd, cc.mmap_offset);
	if (base == MAP_FAILED) {
		err = -errno;
		krpc_close_handle(fd, cc.handle);
		return err;
	}
	memset(cq, 0, sizeof(*cq));
	cq->handle = cc.handle;
	cq->mask = entries - 1;
	cq->khead = (uint32_t *)((char *)base + KRPC_CQ_HEAD_OFFSET);
	cq->ktail = (const uint32_t *)((char *)base + KRPC_CQ_TAIL_OFFSET);
	cq->cqes = (const struct krpc_cqe *)((char *)base + KRPC_CQ_CQES_OFFSET);
	cq->head = *cq->khead;
	cq->base = base;
	cq->length = cc.mmap_length;
	return 0;
}

int krpc_cq_destroy(int fd, struct krpc_cq *cq)
{
	int ret = krpc_close_handle(fd, cq->handle);

	if (cq->base)
		munmap(cq->base, cq->length);
	memset(cq, 0, sizeof(*cq));
	return ret;
}

/* KRPC_IOC_CQ_POLL on @cq: its entries, 0 when @usecs passed, -errno. */
static int cq_poll(int fd, const struct krpc_cq *cq, uint32_t flags,
		   uint32_t usecs)
{
	struct krpc_cq_poll cp;
	int ret;

	memset(&cp, 0, sizeof(cp));
	cp.size = sizeof(cp);
	cp.flags = flags;
	cp.handle = cq->handle;
	cp.usecs = usecs;
	ret = ioctl(fd, KRPC_IOC_CQ_POLL, &cp);
	return ret < 0 ? -errno : ret;
}

int krpc_cq_busy_poll(int fd, const struct krpc_cq *cq, unsigned int usecs)
{
	uint32_t n = krpc_cq_ready(cq);

	return n ? (int)n : cq_poll(fd, cq, 0, usecs);
}

/* Longest KRPC_CQ_POLL_SLEEP wait of one call, in ms (fits its usecs). */
#define CQ_SLEEP_MS_MAX		4000000

/*
 * Sleep in the kernel until @cq has entries (KRPC_CQ_POLL_SLEEP), for
 * @timeout_ms > 0 or without limit (< 0).  -EINVAL or -ENOTTY: a module
 * without KRPC_FEAT_CQ_WAIT.
 */
static int cq_sleep(int fd, const struct krpc_cq *cq, int timeout_ms)
{
	long long left = timeout_ms;
	uint32_t ms;
	int ret;

	if (left < 0)
		return cq_poll(fd, cq, KRPC_CQ_POLL_SLEEP, 0);	/* no limit */
	do {
		ms = left > CQ_SLEEP_MS_MAX ? CQ_SLEEP_MS_MAX : (uint32_t)left;
		ret = cq_poll(fd, cq, KRPC_CQ_POLL_SLEEP, ms * 1000);
		if (ret)
			return ret;
		left -= ms;
	} while (left > 0);
	return 0;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int krpc_cq_wait(int fd, const struct krpc_cq *cq, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int ret, left = timeout_ms;
	long long end;

	if (cq) {
		if (krpc_cq_ready(cq))
			return 1;
		if (!timeout_ms)
			return 0;
		ret = cq_sleep(fd, cq, timeout_ms);
		if (ret != -EINVAL && ret != -ENOTTY)
			return ret > 0 ? 1 : ret;
	}
	/*
	 * Any queue (no @cq), or an older module: poll() wakes for every
	 * queue of the file, so it is called again, with what is left of
	 * the time, until @cq is the one with entries; while another queue
	 * holds entries it returns at once, and a 1 ms pause between tries
	 * keeps that from spinning.
	 */
	end = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	for (;;) {
		if (cq && krpc_cq_ready(cq))
			return 1;
		ret = poll(&p, 1, left);
		if (ret < 0)
			return -errno;
		if (!ret)
			return 0;
		if (!cq)
			return 1;
		if (!krpc_cq_ready(cq)) {
			/* Another queue's entries: poll() would not sleep. */
			struct timespec d = { .tv_nsec = 1000000 };

			nanosleep(&d, NULL);
		}
		if (timeout_ms > 0) {
			long long rem = end - now_ms();

			if (rem <= 0)
				return krpc_cq_ready(cq) ? 1 : 0;
			left = (int)rem;
		}
	}
}
