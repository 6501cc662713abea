// SPDX-License-Identifier: GPL-2.0
/*
 * krpc-echo: the smallest complete krpc client and server in userspace.
 *
 *   krpc-echo server PORT            answer method 1 with the request
 *   krpc-echo client ADDR PORT TEXT  send TEXT, print the reply
 *
 * The payload never gets copied: the client writes TEXT into a buffer of
 * its mapped pool, the server replies with the very buffer the request
 * landed in, and the client reads the reply where the kernel put it.
 */
#include <arpa/inet.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libkrpc.h"

#define ECHO		1
#define SLOTS		4

static int server(struct krpc *k, struct krpc_pool *pool, struct sockaddr_in *sa)
{
	uint32_t method = ECHO, slot, last[SLOTS];
	struct io_uring_cqe *cqe;
	struct krpc_srv srv;
	int ret = krpc_listen(k->fd, pool, (struct sockaddr *)sa, sizeof(*sa),
			      SLOTS, &method, 1, &srv);

	for (slot = 0; !ret && slot < SLOTS; slot++) {
		last[slot] = KRPC_BUF_NONE;
		krpc_prep_fetch(k, io_uring_get_sqe(k->ring), srv.handle, slot, slot);
	}
	while (!ret && io_uring_submit_and_wait(k->ring, 1) >= 0) {
		uint64_t res2;

		if (io_uring_peek_cqe(k->ring, &cqe))
			continue;
		slot = cqe->user_data;
		ret = cqe->res < 0 ? cqe->res : 0;
		res2 = krpc_cqe_res2(cqe);
		if (last[slot] != KRPC_BUF_NONE)	/* previous reply is back */
			krpc_buf_free(k->fd, pool, &last[slot], 1);
		last[slot] = KRPC_RES2_BUF(res2);
		/* Reply with the request's own buffer and wait for the next. */
		if (!ret)
			krpc_prep_reply(k, io_uring_get_sqe(k->ring), srv.handle, slot,
					last[slot], KRPC_RES2_OFFSET(res2), cqe->res, 0, 1, slot);
		io_uring_cqe_seen(k->ring, cqe);
	}
	fprintf(stderr, "krpc-echo: server: %s\n", strerror(-ret));
	return 1;
}

static int client(struct krpc *k, struct krpc_pool *pool, struct sockaddr_in *sa,
		  const char *text)
{
	uint32_t len = strlen(text), tx;
	struct krpc_reply reply;
	int conn, ret;

	conn = krpc_connect(k, pool, (struct sockaddr *)sa, sizeof(*sa), 16);
	if (conn < 0 || krpc_buf_alloc(k->fd, pool, &tx, 1) != 1) {
		fprintf(stderr, "krpc-echo: connect: %s\n", strerror(conn < 0 ? -conn : ENOBUFS));
		return 1;
	}
	memcpy(krpc_pool_buf(pool, tx), text, len);
	ret = krpc_call_sync(k, conn, ECHO, tx, len, len, 0, &reply);
	if (ret < 0) {
		fprintf(stderr, "krpc-echo: call: %s\n", strerror(-ret));
		return 1;
	}
	if (reply.buf == KRPC_BUF_NONE) {	/* an empty reply */
		printf("\n");
	} else {
		printf("%.*s\n", ret,
		       (char *)krpc_pool_buf(pool, reply.buf) + reply.offset);
		krpc_buf_free(k->fd, pool, &reply.buf, 1);
	}
	krpc_buf_free(k->fd, pool, &tx, 1);
	krpc_close_handle(k->fd, conn);
	return 0;
}

int main(int argc, char **argv)
{
	int is_server = argc == 3 && !strcmp(argv[1], "server");
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct krpc_pool pool;
	struct krpc k;
	int ret;

	if (!is_server && !(argc == 5 && !strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: krpc-echo server PORT | client ADDR PORT TEXT\n");
		return 2;
	}
	sa.sin_port = htons(atoi(argv[is_server ? 2 : 3]));
	if (!is_server && inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1)
		return 2;
	ret = krpc_open(&k, 64, 0);
	if (!ret)
		ret = krpc_pool_create(k.fd, NULL, KRPC_POOL_BUF_MIN, 256, &pool);
	if (ret) {
		fprintf(stderr, "krpc-echo: /dev/krpc: %s\n", strerror(-ret));
		return 1;
	}
	ret = is_server ? server(&k, &pool, &sa) : client(&k, &pool, &sa, argv[4]);
	krpc_pool_destroy(k.fd, &pool);
	krpc_close(&k);
	return ret;
}
