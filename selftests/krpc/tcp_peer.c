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
 *   kalow ADDR PORT		a hello announcing a ka_timeout_ms of 100:
 *				reject reason 3, value 200 (krpc's minimum)
 *   kahigh ADDR PORT		one of 700000: reason 3, value 600000
 *   kareserved ADDR PORT	its reserved field set: reason 3, value 0
 *   ka ADDR PORT T KA		a hello announcing a ka_timeout_ms of T; the
 *				answer announces the server's, KA; then idle
 *				for KA_WATCH times T (our keepalives every
 *				third of KA): the server must send something
 *				at least every T ms (the gaps measured and
 *				printed, keep_idle())
 *   oversize ADDR PORT		a request longer than the negotiated maximum:
 *				closed at once
 *   badtype ADDR PORT		a message of an unknown type: closed
 *   garbage ADDR PORT		a header of random bytes: closed
 *   busyslot ADDR PORT		two requests on one slot: closed
 *   stall_hello ADDR PORT MS	half a hello, then nothing: closed within MS
 *   stall_hdr ADDR PORT MS	half a header, then nothing: closed within MS
 *   stall_payload ADDR PORT MS	a header and part of its payload: closed
 *				within MS
 *   flood ADDR PORT COUNT	COUNT one-way messages to the gate method (10)
 *				written as fast as the server takes them,
 *				nothing read; then an echo call whose reply
 *				(after any keepalives) proves every one was
 *				read; closed
 *   fin ADDR PORT COUNT	COUNT one-way messages to the gate method,
 *				then our side closed (shutdown SHUT_WR: a
 *				FIN) while the server holds them back; the
 *				server's keepalives read until it closes
 *				too (EOF), within 60 s
 *   reset ADDR PORT COUNT	COUNT one-way messages to the gate method
 *				(prints "flooded"), then, on SIGUSR1, our
 *				side reset (SO_LINGER 0, close: a RST)
 *				while the server holds them back
 *   noreader ADDR PORT MS	requests whose replies are 64 KiB, never
 *				read: a round of depth calls, the next once
 *				the server has queued every reply (its
 *				"replies" counter in debugfs krpc/conns, so
 *				no slot is reused early), until the server
 *				stops reading (rx_pauses) and its replies
 *				stop for 500 ms, within MS; then waits for
 *				SIGUSR1 and closes with the replies unread
 *
 *   early_reply ADDR PORT LEN	a server (listening on ADDR:PORT; prints
 *				"listening"; the client's hello must
 *				announce a ka_timeout_ms in krpc's range, and
 *				the answer announces none): for the
 *				first request, of LEN bytes, it reads the
 *				header only and replies at once, then waits
 *				2 s (sending keepalives) before it reads
 *				the payload (its last EARLY_TAIL bytes a
 *				page every 10 ms), which
 *				must still be the caller's (krpc_test's
 *				pattern, seed 1: the pages may not have been
 *				refilled meanwhile); a second request
 *				(seed 2) is read and answered; closed
 *   serve_ka ADDR PORT T KA	a server as early_reply's, whose client must
 *				announce KA and whose answer announces T;
 *				then idle for KA_WATCH times T (our
 *				keepalives every third of KA): the client
 *				must send something at least every T ms (the
 *				gaps measured and printed); then idle until
 *				the client closes, within 60 s
 *   serve_kabad ADDR PORT KA	as serve_ka, with a T of 100, below krpc's
 *				range: the client must close at once
 *   serve_stuck ADDR PORT MS [answer]
 *				a server as early_reply's (a 4 KiB receive
 *				buffer) that reads nothing after the hello
 *				(with "answer": after the first request's
 *				header, which it answers with an empty
 *				reply) but sends a keepalive every 100 ms:
 *				the client's requests stay in its socket;
 *				the client must close within MS, and must
 *				have sent something (the most bytes seen
 *				unread and the time are printed)
 *
 * The hello asks depth 16, or $TCP_PEER_DEPTH when that is set.
 *
 * flood, fin, reset and noreader print "port N", their local port, first: the server's
 * connection is the line of debugfs krpc/conns with that peer port.
 *
 * Exit status 0 when the server behaved exactly so, 1 otherwise (with a
 * line on stderr saying what happened instead).
 *
 * The wire layouts are peer_wire.h's, which mirror kmod/wire.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <endian.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "peer_wire.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define M_ECHO		1
#define M_BIG		9
#define M_GATE		10
#define FLOOD_LEN	512
#define BIG_REPLY	65536
#define EARLY_TAIL	262144	/* early_reply: read slowly */
#define KA_WATCH	8	/* keep_idle(): bounds watched */

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
	h->depth = htole16(getenv("TCP_PEER_DEPTH") ?
			   atoi(getenv("TCP_PEER_DEPTH")) : 16);
	h->max_msg = htole32(1 << 20);
	h->inline_max = htole32(4032);
}

/* @h announces a ka_timeout_ms within krpc's range; reserved fields zero. */
static int ka_valid(const struct hello *h)
{
	uint32_t tmo = le32toh(h->ka_timeout_ms);

	return !h->reserved0 && !h->reserved && tmo >= KA_TIMEOUT_MIN &&
	       tmo <= KA_TIMEOUT_MAX;
}

/*
 * Hello both ways, ours announcing a ka_timeout_ms of @ka_ms (0: none); the
 * server's answer must accept, and announce its own.
 */
static int handshake(int fd, uint32_t ka_ms, struct hello *ans)
{
	struct hello h;

	hello_init(&h, VERSION);
	h.ka_timeout_ms = htole32(ka_ms);
	if (send_all(fd, &h, sizeof(h)) || recv_all(fd, ans, sizeof(*ans)))
		return fail("%s", "no hello answer");
	if (be32toh(ans->magic) != MAGIC || ans->reject || !ans->depth)
		return fail("%s", "hello not accepted");
	if (!ka_valid(ans))
		return fail("%s", "hello answer without a valid ka_timeout_ms");
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

/*
 * The reply to echo call @h (payload @msg of @len bytes), after any
 * keepalives of the server, checked byte by byte.
 */
static int expect_echo(int fd, const struct hdr *h, const char *msg,
		       size_t len)
{
	char buf[256];
	struct hdr r;

	do {
		if (recv_all(fd, &r, sizeof(r)))
			return fail("%s", "no reply header");
	} while (r.type == T_KEEPALIVE && !r.len);
	if (r.type != T_REPLY || le64toh(r.call_id) != le64toh(h->call_id) ||
	    r.status || le32toh(r.len) != len || len > sizeof(buf))
		return fail("%s", "wrong reply header");
	if (recv_all(fd, buf, len) || memcmp(buf, msg, len))
		return fail("%s", "wrong reply payload");
	return 0;
}

static int do_good(int fd)
{
	static const char msg[] = "krpc over a byte-at-a-time stream";
	struct hello ans;
	struct hdr h;
	char all[HDR_SIZE + sizeof(msg)];
	size_t i;

	if (handshake(fd, 0, &ans))
		return 1;
	req_init(&h, 0, 1, sizeof(msg));
	memcpy(all, &h, HDR_SIZE);
	memcpy(all + HDR_SIZE, msg, sizeof(msg));
	for (i = 0; i < sizeof(all); i++) {
		if (send_all(fd, all + i, 1))
			return fail("%s", "send");
		usleep(1000);
	}
	return expect_echo(fd, &h, msg, sizeof(msg));
}

static const char *const reject_modes[] = {
	"magic", "version", "kalow", "kahigh", "kareserved",
};

static int is_reject_mode(const char *mode)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(reject_modes); i++)
		if (!strcmp(mode, reject_modes[i]))
			return 1;
	return 0;
}

/* A hello that fails a check: the exact reject (announcing no timeout). */
static int do_reject(int fd, const char *mode)
{
	struct hello h, ans;
	uint16_t reason = 3;
	uint32_t value = 0;

	hello_init(&h, VERSION);
	if (!strcmp(mode, "magic")) {
		h.magic = htobe32(0x12345678);
		reason = 1;
	} else if (!strcmp(mode, "version")) {
		h.version = htole16(99);
		reason = 2;
		value = VERSION;
	} else if (!strcmp(mode, "kalow")) {
		h.ka_timeout_ms = htole32(100);
		value = KA_TIMEOUT_MIN;
	} else if (!strcmp(mode, "kahigh")) {
		h.ka_timeout_ms = htole32(700000);
		value = KA_TIMEOUT_MAX;
	} else {
		h.ka_timeout_ms = htole32(KA_TIMEOUT_MIN);
		h.reserved = htole32(1);
	}
	if (send_all(fd, &h, sizeof(h)) || recv_all(fd, &ans, sizeof(ans)))
		return fail("%s", "no answer to the hello");
	if (be32toh(ans.magic) != MAGIC || le16toh(ans.reject) != reason ||
	    le32toh(ans.value) != value || ans.ka_timeout_ms || ans.reserved)
		return fail("%s", "not the expected reject");
	return expect_closed(fd, 5000, 0);
}

static int do_bad_hdr(int fd, const char *how)
{
	struct hello ans;
	struct hdr h;
	char junk[16] = "0123456789abcdef";
	char all[2 * sizeof(h) + sizeof(junk)];
	size_t n = 0;

	if (handshake(fd, 0, &ans))
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
		 * the second request comes (in the same segment), and the
		 * first is answered (and freed) soon after the connection
		 * died.
		 */
		h.method = htole32(4);
		memcpy(all, &h, sizeof(h));
		n = sizeof(h);
		h.call_id = htole64(2ULL << 16);
	}
	memcpy(all + n, &h, sizeof(h));
	memcpy(all + n + sizeof(h), junk, sizeof(junk));
	if (send_all(fd, all, n + sizeof(h) + sizeof(junk)))
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
	if (handshake(fd, 0, &ans))
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

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Print our local port: the driver finds the server's connection by it. */
static int show_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int port;

	if (getsockname(fd, (void *)&ss, &len))
		return -1;
	port = ss.ss_family == AF_INET ?
		ntohs(((struct sockaddr_in *)&ss)->sin_port) :
		ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	printf("port %d\n", port);
	fflush(stdout);
	return port;
}

/*
 * A counter of our connection at the server, from debugfs krpc/conns
 * (" peer=ADDR:PORT ... KEY=N"); -1 if the line is not there.
 */
static long long conn_field(int port, const char *key)
{
	char line[2048], pat[32], kpat[64], *p;
	long long v = -1;
	FILE *f;

	f = fopen("/sys/kernel/debug/krpc/conns", "r");
	if (!f)
		return -1;
	snprintf(pat, sizeof(pat), ":%d ", port);
	snprintf(kpat, sizeof(kpat), " %s=", key);
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, "role=server") || !strstr(line, pat))
			continue;
		p = strstr(line, kpat);
		if (p)
			v = atoll(p + strlen(kpat));
	}
	fclose(f);
	return v;
}

/* A call on slot 0, then read (skipping keepalives) until its reply. */
static int sync_call(int fd, uint64_t seq)
{
	static const char msg[] = "after the flood";
	struct hdr h;

	req_init(&h, 0, seq, sizeof(msg));
	if (send_all(fd, &h, sizeof(h)) || send_all(fd, msg, sizeof(msg)))
		return fail("%s", "send of the final call");
	return expect_echo(fd, &h, msg, sizeof(msg));
}

/* Our connection's port, the hello, then @count one-way gate messages. */
static int gate_flood(int fd, long count)
{
	char msg[HDR_SIZE + FLOOD_LEN];
	struct hello ans;
	struct hdr h;
	long i;

	if (show_port(fd) < 0 || handshake(fd, 0, &ans))
		return 1;
	memset(&h, 0, sizeof(h));
	h.type = T_ONEWAY;
	h.method = htole32(M_GATE);
	h.len = htole32(FLOOD_LEN);
	memcpy(msg, &h, HDR_SIZE);
	memset(msg + HDR_SIZE, 0x5a, FLOOD_LEN);
	for (i = 0; i < count; i++)
		if (send_all(fd, msg, sizeof(msg)))
			return fail("send: %s", strerror(errno));
	return 0;
}

static int do_flood(int fd, long count)
{
	long t0 = now_ms();

	if (gate_flood(fd, count))
		return 1;
	printf("flood: hello and %ld one-way messages written in %ld ms\n", count,
	       now_ms() - t0);
	return sync_call(fd, 1);
}

/*
 * COUNT one-way messages, then a FIN: all of them are in the server's
 * socket (or ours, unsent) when it sees the end of our stream, and every
 * one must reach its handler before the server closes its side.
 */
static int do_fin(int fd, long count)
{
	if (gate_flood(fd, count))
		return 1;
	if (shutdown(fd, SHUT_WR))
		return fail("shutdown: %s", strerror(errno));
	printf("fin after %ld one-way messages\n", count);
	fflush(stdout);
	return expect_closed(fd, 60000, 1);
}

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

/*
 * COUNT one-way messages, then, when told, a reset: the server tears the
 * connection down at once, with whatever it had not read yet.
 */
static int do_reset(int fd, long count)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	sigaction(SIGUSR1, &sa, NULL);
	if (gate_flood(fd, count))
		return 1;
	printf("flooded: %ld one-way messages\n", count);
	fflush(stdout);
	while (!go)
		usleep(10000);
	/* Unread keepalives in our socket would make close() reset anyway. */
	if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)))
		return fail("SO_LINGER: %s", strerror(errno));
	if (close(fd))
		return fail("close: %s", strerror(errno));
	printf("reset after %ld one-way messages\n", count);
	return 0;
}

/* Send @n bytes or stop at @deadline; 0, or -1 (EAGAIN past it, error). */
static int send_until(int fd, const void *p, size_t n, long deadline)
{
	struct pollfd pf = { .fd = fd, .events = POLLOUT };
	size_t done = 0;
	ssize_t r;

	while (done < n) {
		r = send(fd, (const char *)p + done, n - done,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (r > 0) {
			done += r;
			continue;
		}
		if (r < 0 && errno != EAGAIN)
			return -1;
		if (now_ms() >= deadline)
			return -1;
		poll(&pf, 1, 10);
	}
	return 0;
}

static int do_noreader(int fd, int ms)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	long deadline, stuck = 0;
	long long sent = 0, replies, last = -1;
	unsigned int slot, depth;
	struct hello ans;
	uint32_t want = BIG_REPLY;
	char msg[HDR_SIZE + sizeof(want)];
	struct hdr h;
	uint64_t seq;
	int port;

	sigaction(SIGUSR1, &sa, NULL);
	port = show_port(fd);
	if (port < 0 || handshake(fd, 0, &ans))
		return 1;
	depth = le16toh(ans.depth);
	deadline = now_ms() + ms;
	for (seq = 1;; seq++) {
		/* Every reply queued: every slot is free again. */
		while ((replies = conn_field(port, "replies")) != sent) {
			if (replies < 0)
				return fail("%s", "our connection is not in debugfs");
			if (replies != last) {
				last = replies;
				stuck = now_ms();
			}
			if (conn_field(port, "rx_pauses") > 0 &&
			    now_ms() - stuck >= 500)
				goto held;
			if (now_ms() >= deadline)
				return fail("%s", "the server never stopped reading");
			usleep(5000);
		}
		for (slot = 0; slot < depth; slot++) {
			req_init(&h, slot, seq, sizeof(want));
			h.method = htole32(M_BIG);
			h.flags = F_RDV_REPLY;
			h.rep.len = htole32(BIG_REPLY);
			memcpy(msg, &h, HDR_SIZE);
			memcpy(msg + HDR_SIZE, &want, sizeof(want));
			if (send_until(fd, msg, sizeof(msg), deadline))
				return fail("%s", "send");
			sent++;
		}
	}
held:
	printf("noreader: server held back after %lld requests, %lld replies queued\n",
	       sent, replies);
	fflush(stdout);
	while (!go)
		usleep(10000);
	return 0;
}

/* krpc_test.c's payload pattern. */
static uint8_t kpattern(uint32_t seed, size_t i)
{
	return (seed * 31 + i * 131 + (i >> 9)) & 0xff;
}

/* Read a request of @len bytes and check it against pattern @seed. */
/* What a live server sends when it has nothing else to say. */
static int send_keepalive(int fd)
{
	struct hdr k;

	memset(&k, 0, sizeof(k));
	k.type = T_KEEPALIVE;
	return send_all(fd, &k, sizeof(k)) ? fail("%s", "send keepalive") : 0;
}

/* Read nothing for @ms, with a keepalive every 250 ms. */
static int idle_alive(int fd, unsigned int ms)
{
	for (; ms >= 250; ms -= 250) {
		usleep(250000);
		if (send_keepalive(fd))
			return 1;
	}
	usleep(ms * 1000);
	return 0;
}

/*
 * Idle for @ms, a keepalive of ours every @ka_ms: nothing may come but the
 * other side's keepalives.  With @bound, each must come less than @bound
 * ms after the one before (the first after the start; the silence at the
 * end counts too), and what came is printed; without (0), the other side
 * must close within @ms instead.  Return 0, or 1 with a line on stderr.
 */
static int keep_idle(int fd, long ms, long bound, long ka_ms)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	long start = now_ms(), last = start, sent = start, max = 0, t;
	unsigned int n = 0;
	struct hdr h;

	for (;;) {
		t = now_ms();
		if (t - last > max)
			max = t - last;
		if (t - start >= ms || (bound && max >= bound))
			break;
		if (t - sent >= ka_ms) {
			if (send_keepalive(fd))
				return 1;
			sent = t;
		}
		if (poll(&pf, 1, 10) != 1)
			continue;
		if (recv_all(fd, &h, sizeof(h)))
			return bound ? fail("%s", "closed while idle") : 0;
		if (h.type != T_KEEPALIVE || h.flags || h.method ||
		    h.call_id || h.status || h.len)
			return fail("%s", "something other than a keepalive while idle");
		t = now_ms();
		if (t - last > max)
			max = t - last;
		last = t;
		n++;
	}
	if (!bound)
		return fail("%s", "connection still open");
	printf("idle: %u keepalives in %ld ms, max gap %ld ms, bound %ld ms\n",
	       n, t - start, max, bound);
	fflush(stdout);
	if (max >= bound)
		return fail("%s", "nothing received for as long as the bound");
	return 0;
}

/*
 * A hello announcing a ka_timeout_ms of @t: the answer announces the
 * server's, @ka; the server then sends at least every @t ms while the
 * connection is idle.
 */
static int do_ka(int fd, uint32_t t, uint32_t ka)
{
	struct hello ans;

	if (handshake(fd, t, &ans))
		return 1;
	if (le32toh(ans.ka_timeout_ms) != ka) {
		fprintf(stderr, "tcp_peer: the answer announces ka_timeout_ms %u, want %u\n",
			le32toh(ans.ka_timeout_ms), ka);
		return 1;
	}
	return keep_idle(fd, KA_WATCH * t, t, ka / 3);
}

/*
 * @len bytes of pattern @seed; the last @tail bytes a page every 10 ms
 * (with a keepalive every 16 pages), so that the caller's socket holds
 * the end of the message for a while.
 */
static int read_payload(int fd, size_t len, uint32_t seed, size_t tail)
{
	static uint8_t buf[65536];
	size_t off = 0, n, i, pages = 0;

	while (off < len) {
		n = len - off < sizeof(buf) ? len - off : sizeof(buf);
		if (len - off <= tail) {
			n = n < 4096 ? n : 4096;
			usleep(10000);
			if (!(pages++ % 16) && send_keepalive(fd))
				return 1;
		} else if (len - off - n < tail) {
			n = len - off - tail;
		}
		if (recv_all(fd, buf, n))
			return fail("%s", "payload cut short");
		for (i = 0; i < n; i++)
			if (buf[i] != kpattern(seed, off + i)) {
				fprintf(stderr, "tcp_peer: byte %zu of %zu: %#x, want %#x\n",
					off + i, len, buf[i],
					kpattern(seed, off + i));
				return fail("%s", "payload changed after the reply");
			}
		off += n;
	}
	return 0;
}

/* A request header (after any keepalives) of @len bytes (0: any). */
static int read_request(int fd, struct hdr *h, size_t len)
{
	do {
		if (recv_all(fd, h, sizeof(*h)))
			return fail("%s", "no request header");
	} while (h->type == T_KEEPALIVE && !h->len);
	if (h->type != T_REQUEST || (len && le32toh(h->len) != len))
		return fail("%s", "not the request expected");
	return 0;
}

static int reply_empty(int fd, const struct hdr *req)
{
	struct hdr r;

	memset(&r, 0, sizeof(r));
	r.type = T_REPLY;
	r.call_id = req->call_id;
	return send_all(fd, &r, sizeof(r)) ? fail("%s", "send reply") : 0;
}

/*
 * Listen on @addr:@port (prints "listening"), take one connection: its
 * socket, or -1 with a line on stderr.  @rcvbuf: its SO_RCVBUF, or 0.
 */
static int listen_one(const char *addr, const char *port, int rcvbuf)
{
	struct sockaddr_in s4 = { .sin_family = AF_INET };
	int lfd, fd, one = 1;

	s4.sin_port = htons(atoi(port));
	if (inet_pton(AF_INET, addr, &s4.sin_addr) != 1) {
		fail("%s", "bad address");
		return -1;
	}
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (rcvbuf && setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
				  sizeof(rcvbuf))) ||
	    bind(lfd, (void *)&s4, sizeof(s4)) || listen(lfd, 1)) {
		fail("listen: %s", strerror(errno));
		return -1;
	}
	printf("listening\n");
	fflush(stdout);
	fd = accept(lfd, NULL, NULL);
	close(lfd);
	if (fd < 0)
		fail("accept: %s", strerror(errno));
	return fd;
}

/*
 * The client's hello, into @h: krpc's, announcing a ka_timeout_ms within
 * its range (@ka: that one; 0: any).
 */
static int client_hello(int fd, uint32_t ka, struct hello *h)
{
	if (recv_all(fd, h, sizeof(*h)) || be32toh(h->magic) != MAGIC)
		return fail("%s", "no hello");
	if (!ka_valid(h) || (ka && le32toh(h->ka_timeout_ms) != ka)) {
		fprintf(stderr, "tcp_peer: the client's hello announces ka_timeout_ms %u (want %u), reserved %u %u\n",
			le32toh(h->ka_timeout_ms), ka, le16toh(h->reserved0),
			le32toh(h->reserved));
		return 1;
	}
	return 0;
}

/*
 * Take one client on @addr:@port with a 4 KiB receive buffer (small
 * windows: what it sends and we do not read stays in its socket), its
 * hello krpc's, our answer announcing no keepalive timeout: the socket, or
 * -1 with a line on stderr.
 */
static int serve_one(const char *addr, const char *port)
{
	struct hello h, ans;
	int fd;

	fd = listen_one(addr, port, 4096);
	if (fd < 0 || client_hello(fd, 0, &h))
		goto fail;
	hello_init(&ans, VERSION);
	if (send_all(fd, &ans, sizeof(ans))) {
		fail("%s", "send hello");
		goto fail;
	}
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

static int do_early_reply(const char *addr, const char *port, size_t len)
{
	struct hdr a, b;
	int fd;

	/* Small windows: most of the request stays in the caller's socket. */
	fd = serve_one(addr, port);
	if (fd < 0)
		return 1;
	if (read_request(fd, &a, len) || reply_empty(fd, &a) ||
	    idle_alive(fd, 2000))
		return 1;
	if (read_payload(fd, len, 1, EARLY_TAIL) ||
	    read_request(fd, &b, len) || read_payload(fd, len, 2, 0) ||
	    reply_empty(fd, &b))
		return 1;
	close(fd);
	return 0;
}

/*
 * Serve krpc's client: its hello must announce @ka, our answer announces
 * @t.  Then idle for KA_WATCH times @t, our keepalives every third of
 * @ka, while it must send at least every @t ms, and on until it closes.
 * With @t below krpc's range, it must close at once instead.
 */
static int do_serve_ka(const char *addr, const char *port, uint32_t t,
		       uint32_t ka)
{
	struct hello h, ans;
	long ka_ms;
	int fd;

	fd = listen_one(addr, port, 0);
	if (fd < 0 || client_hello(fd, ka, &h))
		return 1;
	hello_init(&ans, VERSION);
	ans.ka_timeout_ms = htole32(t);
	if (send_all(fd, &ans, sizeof(ans)))
		return fail("%s", "send hello");
	if (t < KA_TIMEOUT_MIN)
		return expect_closed(fd, 5000, 0);
	ka_ms = le32toh(h.ka_timeout_ms) / 3;
	if (keep_idle(fd, KA_WATCH * t, t, ka_ms) ||
	    keep_idle(fd, 60000, 0, ka_ms))
		return 1;
	close(fd);
	return 0;
}

/*
 * Serve krpc's client, then read nothing more while staying alive: a
 * keepalive of ours every STUCK_KA_MS, a receive buffer of 4 KiB, so the
 * window shuts on the client's first large request.  With @answer, the
 * first request's header is read and answered (an empty reply) first.
 * Until the client closes (its reset, or FIN), within @ms; prints how long
 * that took and the most bytes seen unread.
 */
#define STUCK_KA_MS	100
static int do_serve_stuck(const char *addr, const char *port, long ms,
			  int answer)
{
	struct pollfd pf = { .events = POLLRDHUP };
	long start, t, sent = 0;
	int fd, unread, most = 0;
	struct hdr a;

	fd = serve_one(addr, port);
	if (fd < 0)
		return 1;
	if (answer && (read_request(fd, &a, 0) || reply_empty(fd, &a)))
		return 1;
	pf.fd = fd;
	start = now_ms();
	for (;;) {
		if (ioctl(fd, FIONREAD, &unread) == 0 && unread > most)
			most = unread;
		t = now_ms();
		if (t - start >= ms)
			return fail("%s", "connection still open");
		if (t - sent >= STUCK_KA_MS) {
			sent = t;
			if (send_all(fd, &(struct hdr){ .type = T_KEEPALIVE },
				     sizeof(struct hdr)))
				break;	/* reset by the client */
		}
		if (poll(&pf, 1, STUCK_KA_MS) == 1 &&
		    (pf.revents & (POLLERR | POLLHUP | POLLRDHUP)))
			break;
	}
	printf("stuck: the client closed after %ld ms, %d bytes unread at most\n",
	       now_ms() - start, most);
	fflush(stdout);
	close(fd);
	return most > 0 ? 0 : fail("%s", "the client sent nothing");
}

/* A mode that connects to the server, on @fd. */
static int client(int fd, const char *mode, int argc, char **argv)
{
	if (!strcmp(mode, "good"))
		return do_good(fd);
	if (is_reject_mode(mode))
		return do_reject(fd, mode);
	if (!strcmp(mode, "ka") && argc > 5)
		return do_ka(fd, strtoul(argv[4], NULL, 0),
			     strtoul(argv[5], NULL, 0));
	if (!strncmp(mode, "stall_", 6) && argc > 4)
		return do_stall(fd, mode, atoi(argv[4]));
	if (!strcmp(mode, "flood") && argc > 4)
		return do_flood(fd, atol(argv[4]));
	if (!strcmp(mode, "fin") && argc > 4)
		return do_fin(fd, atol(argv[4]));
	if (!strcmp(mode, "reset") && argc > 4)
		return do_reset(fd, atol(argv[4]));
	if (!strcmp(mode, "noreader") && argc > 4)
		return do_noreader(fd, atoi(argv[4]));
	return do_bad_hdr(fd, mode);
}

int main(int argc, char **argv)
{
	const char *mode;
	int fd, ret;

	if (argc < 4) {
		fprintf(stderr, "usage: tcp_peer MODE ADDR PORT [MS|COUNT|LEN|T [KA]]\n");
		return 2;
	}
	mode = argv[1];
	if (!strcmp(mode, "early_reply") && argc > 4) {
		ret = do_early_reply(argv[2], argv[3], atol(argv[4]));
	} else if (!strcmp(mode, "serve_ka") && argc > 5) {
		ret = do_serve_ka(argv[2], argv[3], strtoul(argv[4], NULL, 0),
				  strtoul(argv[5], NULL, 0));
	} else if (!strcmp(mode, "serve_stuck") && argc > 4) {
		ret = do_serve_stuck(argv[2], argv[3], atol(argv[4]),
				     argc > 5 && !strcmp(argv[5], "answer"));
	} else if (!strcmp(mode, "serve_kabad") && argc > 4) {
		ret = do_serve_ka(argv[2], argv[3], 100,
				  strtoul(argv[4], NULL, 0));
	} else {
		fd = dial(argv[2], argv[3]);
		if (fd < 0)
			return fail("connect: %s", strerror(errno));
		ret = client(fd, mode, argc, argv);
		if (strcmp(mode, "reset"))	/* its own close */
			close(fd);
	}
	if (!ret)
		printf("tcp_peer %s: as expected\n", mode);
	return ret;
}
