// SPDX-License-Identifier: GPL-2.0
/*
 * tcp_peer: a raw-socket krpc peer that misbehaves on purpose, for
 * rpc_tcp_peer.sh.  It connects to a krpc TCP server and does one thing:
 *
 *   good ADDR PORT		a correct hello and an echo call written one
 *				byte at a time; the reply checked byte by byte
 *   magic ADDR PORT		a hello with a wrong magic: answered with a
 *				reject (reason 1), then closed
 *   version ADDR PORT		a hello of version 99: reject reason 2, value 1
 *   oversize ADDR PORT		a request longer than the negotiated maximum:
 *				closed at once
 *   badtype ADDR PORT		a message of an unknown type: closed
 *   garbage ADDR PORT		a header of random bytes: closed
 *   busyslot ADDR PORT		two requests on one slot: closed
 *   stall_hello ADDR PORT MS	half a hello, then nothing: closed within MS
 *   stall_hdr ADDR PORT MS	half a header, then nothing: closed within MS
 *   stall_payload ADDR PORT MS	a header and part of its payload: closed
 *				within MS
 *
 * Exit status 0 when the server behaved exactly so, 1 otherwise (with a
 * line on stderr saying what happened instead).
 *
 * The layouts below mirror kmod/wire.h (the one definition of the wire
 * format), pinned by the same static_asserts; a change there breaks this
 * build.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <endian.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#define MAGIC		0x4b525043
#define VERSION		1
#define HDR_SIZE	64
#define M_ECHO		1

struct hello {
	uint32_t magic;		/* big endian */
	uint16_t version;
	uint16_t depth;
	uint32_t max_msg;
	uint32_t inline_max;
	uint16_t reject;
	uint16_t reserved0;
	uint32_t value;
	uint32_t reserved[2];
};

struct rdv {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

struct hdr {
	uint8_t type;
	uint8_t flags;
	uint16_t credits;
	uint32_t method;
	uint64_t call_id;
	uint32_t status;
	uint32_t len;
	struct rdv req;
	struct rdv rep;
	uint64_t reserved;
};

_Static_assert(sizeof(struct hello) == 32, "hello");
_Static_assert(sizeof(struct hdr) == HDR_SIZE, "hdr");

enum { T_REQUEST = 1, T_REPLY = 2 };

static int fail(const char *fmt, const char *what)
{
	fprintf(stderr, "tcp_peer: ");
	fprintf(stderr, fmt, what);
	fprintf(stderr, "\n");
	return 1;
}

static int dial(const char *addr, const char *port)
{
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in s4 = { .sin_family = AF_INET };
	int fd, one = 1;

	s4.sin_port = s6.sin6_port = htons(atoi(port));
	if (inet_pton(AF_INET, addr, &s4.sin_addr) == 1) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, (void *)&s4, sizeof(s4)))
			return -1;
	} else if (inet_pton(AF_INET6, addr, &s6.sin6_addr) == 1) {
		fd = socket(AF_INET6, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, (void *)&s6, sizeof(s6)))
			return -1;
	} else {
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int send_all(int fd, const void *p, size_t n)
{
	return send(fd, p, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}

/* Read exactly @n bytes; 0, or -1 on EOF/error before that. */
static int recv_all(int fd, void *p, size_t n)
{
	size_t got = 0;
	ssize_t r;

	while (got < n) {
		r = recv(fd, (char *)p + got, n - got, 0);
		if (r <= 0)
			return -1;
		got += r;
	}
	return 0;
}

/*
 * The server must close the connection: EOF or reset within @ms.  With
 * @idle_ok, what comes before (the server's keepalives, whole 64-byte
 * KEEPALIVE headers) is read and checked; otherwise any byte is an error.
 */
static int expect_closed(int fd, int ms, int idle_ok)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct timespec t0, t;
	struct hdr h;
	int left = ms;
	ssize_t r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (left <= 0 || poll(&p, 1, left) != 1)
			return fail("%s", "connection still open");
		r = recv(fd, &h, idle_ok ? sizeof(h) : 1, MSG_WAITALL);
		if (r == 0 || (r < 0 && errno == ECONNRESET))
			return 0;
		if (r < 0)
			return fail("recv: %s", strerror(errno));
		if (!idle_ok)
			return fail("%s", "data instead of the close");
		if (r != sizeof(h) || h.type != 6 || h.len || h.call_id)
			return fail("%s", "something other than a keepalive");
		clock_gettime(CLOCK_MONOTONIC, &t);
		left = ms - ((t.tv_sec - t0.tv_sec) * 1000 +
			     (t.tv_nsec - t0.tv_nsec) / 1000000);
	}
}

static void hello_init(struct hello *h, uint16_t version)
{
	memset(h, 0, sizeof(*h));
	h->magic = htobe32(MAGIC);
	h->version = htole16(version);
	h->depth = htole16(16);
	h->max_msg = htole32(1 << 20);
	h->inline_max = htole32(4032);
}

/* Hello both ways; the server's answer must accept. */
static int handshake(int fd, struct hello *ans)
{
	struct hello h;

	hello_init(&h, VERSION);
	if (send_all(fd, &h, sizeof(h)) || recv_all(fd, ans, sizeof(*ans)))
		return fail("%s", "no hello answer");
	if (be32toh(ans->magic) != MAGIC || ans->reject || !ans->depth)
		return fail("%s", "hello not accepted");
	return 0;
}

static void req_init(struct hdr *h, uint16_t slot, uint64_t seq, uint32_t len)
{
	memset(h, 0, sizeof(*h));
	h->type = T_REQUEST;
	h->method = htole32(M_ECHO);
	h->call_id = htole64(seq << 16 | slot);
	h->len = htole32(len);
}

static int do_good(int fd)
{
	static const char msg[] = "krpc over a byte-at-a-time stream";
	struct hello ans;
	struct hdr h, r;
	char buf[sizeof(msg)], all[HDR_SIZE + sizeof(msg)];
	size_t i;

	if (handshake(fd, &ans))
		return 1;
	req_init(&h, 0, 1, sizeof(msg));
	memcpy(all, &h, HDR_SIZE);
	memcpy(all + HDR_SIZE, msg, sizeof(msg));
	for (i = 0; i < sizeof(all); i++) {
		if (send_all(fd, all + i, 1))
			return fail("%s", "send");
		usleep(1000);
	}
	if (recv_all(fd, &r, sizeof(r)))
		return fail("%s", "no reply header");
	if (r.type != T_REPLY || le64toh(r.call_id) != le64toh(h.call_id) ||
	    r.status || le32toh(r.len) != sizeof(msg))
		return fail("%s", "wrong reply header");
	if (recv_all(fd, buf, sizeof(buf)) || memcmp(buf, msg, sizeof(msg)))
		return fail("%s", "wrong reply payload");
	return 0;
}

static int do_reject(int fd, uint32_t magic, uint16_t version,
		     uint16_t reason, uint32_t value)
{
	struct hello h, ans;

	hello_init(&h, version);
	h.magic = htobe32(magic);
	if (send_all(fd, &h, sizeof(h)) || recv_all(fd, &ans, sizeof(ans)))
		return fail("%s", "no answer to the hello");
	if (be32toh(ans.magic) != MAGIC || le16toh(ans.reject) != reason ||
	    le32toh(ans.value) != value)
		return fail("%s", "not the expected reject");
	return expect_closed(fd, 5000, 0);
}

static int do_bad_hdr(int fd, const char *how)
{
	struct hello ans;
	struct hdr h;
	char junk[16] = "0123456789abcdef";

	if (handshake(fd, &ans))
		return 1;
	req_init(&h, 0, 1, 0);
	if (!strcmp(how, "oversize")) {
		h.len = htole32(le32toh(ans.max_msg) + 1);
	} else if (!strcmp(how, "badtype")) {
		h.type = 99;
	} else if (!strcmp(how, "garbage")) {
		unsigned int i;

		srand(time(NULL));
		for (i = 0; i < sizeof(h); i++)
			((unsigned char *)&h)[i] = rand();
		h.type = 1 + rand() % 7;	/* past the type check */
		h.reserved = htole64(1);	/* and never valid */
	} else if (!strcmp(how, "busyslot")) {
		/*
		 * Method 4 answers after 300 ms: the slot is still busy when
		 * the second request comes, and the first is answered (and
		 * freed) soon after the connection died.
		 */
		h.method = htole32(4);
		if (send_all(fd, &h, sizeof(h)))
			return fail("%s", "send");
		h.call_id = htole64(2ULL << 16);
	}
	if (send_all(fd, &h, sizeof(h)) || send_all(fd, junk, sizeof(junk)))
		return fail("%s", "send");
	return expect_closed(fd, 5000, 0);
}

static int do_stall(int fd, const char *how, int ms)
{
	struct hello h, ans;
	struct hdr r;
	char payload[100] = { 0 };

	if (!strcmp(how, "stall_hello")) {
		hello_init(&h, VERSION);
		if (send_all(fd, &h, sizeof(h) / 2))
			return fail("%s", "send");
		return expect_closed(fd, ms, 0);
	}
	if (handshake(fd, &ans))
		return 1;
	req_init(&r, 0, 1, 1000);
	if (!strcmp(how, "stall_hdr")) {
		if (send_all(fd, &r, 20))
			return fail("%s", "send");
	} else {
		if (send_all(fd, &r, sizeof(r)) ||
		    send_all(fd, payload, sizeof(payload)))
			return fail("%s", "send");
	}
	return expect_closed(fd, ms, 1);
}

int main(int argc, char **argv)
{
	const char *mode;
	int fd, ret;

	if (argc < 4) {
		fprintf(stderr, "usage: tcp_peer MODE ADDR PORT [MS]\n");
		return 2;
	}
	mode = argv[1];
	fd = dial(argv[2], argv[3]);
	if (fd < 0)
		return fail("connect: %s", strerror(errno));
	if (!strcmp(mode, "good"))
		ret = do_good(fd);
	else if (!strcmp(mode, "magic"))
		ret = do_reject(fd, 0x12345678, VERSION, 1, 0);
	else if (!strcmp(mode, "version"))
		ret = do_reject(fd, MAGIC, 99, 2, VERSION);
	else if (!strncmp(mode, "stall_", 6) && argc > 4)
		ret = do_stall(fd, mode, atoi(argv[4]));
	else
		ret = do_bad_hdr(fd, mode);
	close(fd);
	if (!ret)
		printf("tcp_peer %s: as expected\n", mode);
	return ret;
}
