#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Per-connection completion mode (krpc_client_opts.cq_mode and
# krpc_server_opts.cq_mode, enum krpc_cq_mode) against the module
# parameter poll_usecs it overrides: KRPC_CQ_POLL gives a connection a
# polled CQ while poll_usecs is 0, KRPC_CQ_IRQ keeps one per event while it
# is set, KRPC_CQ_DEFAULT follows it; the two ends of one connection choose
# apart.  Each choice is checked where the completions went (cq_polled, by
# the krpc_poll threads; per event, rdma_cq.c) and in krpc_conn_info; an
# unknown mode is -EINVAL for a client and a server.  RDMA only: over TCP
# the mode has no effect.
# shellcheck source=selftests/krpc/rpc_lib.sh
. "$(dirname "$0")/rpc_lib.sh"

krpc_loaded && ktap_skip_all "krpc already loaded"
[ "$KRPC_TRANSPORT" = rdma ] || ktap_skip_all "completion modes are RDMA's"

cleanup() {
	rpc_rmmod krpc_test
	krpc_unload
}
trap cleanup EXIT

poll_usecs() { echo "$1" > /sys/module/krpc/parameters/poll_usecs; }

# run CLIENT_MODE SERVER_MODE: a connection, 200 echoes of 8 KiB; sets
# polled and evented to the completions reaped each way meanwhile
run() {
	local p0 e0
	rpc_do krpc_test cq_mode "$2" &&
		rpc_do krpc_test server_start "$RPC_PORT" "$KRPC_ADDR4" &&
		rpc_do krpc_test cq_mode "$1" &&
		rpc_do krpc_test connect "$KRPC_ADDR4" "$RPC_PORT" || return 1
	mode=$(rpc_info krpc_test cq_mode)
	conns=$(cat /sys/kernel/debug/krpc/conns)
	p0=$(krpc_stat cq_polled)
	e0=$(rpc_ev_reaped)
	rpc_do krpc_test echo 8192 200 || return 1
	polled=$(($(krpc_stat cq_polled) - p0))
	evented=$(($(rpc_ev_reaped) - e0))
	log "client mode $1, server mode $2, poll_usecs" \
		"$(cat /sys/module/krpc/parameters/poll_usecs): client's" \
		"connection reports $mode; $polled completions polled," \
		"$evented per event"
	rpc_do krpc_test disconnect && rpc_do krpc_test server_stop
}

# start_err MODE: the error of a server_start with that mode
start_err() {
	rpc_do krpc_test cq_mode "$1" > /dev/null
	(echo "server_start $RPC_PORT" > /sys/kernel/debug/krpc_test/cmd) 2>&1
}

ktap_check "insmod krpc.ko (poll_usecs=0)" rpc_krpc_load poll_usecs=0
ktap_check "insmod krpc_test.ko" rpc_insmod krpc_test

# Each echo: a send and a receive completion on each end, so 200 echoes
# make at least 400 on each side's CQ.
ktap_check "both ends KRPC_CQ_POLL, poll_usecs 0: echoes" run 2 2
ktap_check "the client's connection reports KRPC_CQ_POLL" test "$mode" = 2
ktap_check "at least 800 completions reaped by pollers" test "$polled" -ge 800
ktap_check "none per event" test "$evented" = 0
ktap_check "one poller thread started for them" test "$(krpc_pollers)" = 1

poll_usecs 50
ktap_check "both ends KRPC_CQ_IRQ, poll_usecs 50: echoes" run 1 1
ktap_check "the client's connection reports KRPC_CQ_IRQ" test "$mode" = 1
ktap_check "none reaped by pollers" test "$polled" = 0
ktap_check "at least 800 per event" test "$evented" -ge 800

ktap_check "both ends KRPC_CQ_DEFAULT, poll_usecs 50: echoes" run 0 0
ktap_check "the default follows poll_usecs: KRPC_CQ_POLL" test "$mode" = 2
ktap_check "at least 800 reaped by pollers, none per event" \
	test "$polled" -ge 800 -a "$evented" = 0

poll_usecs 0
ktap_check "both ends KRPC_CQ_DEFAULT, poll_usecs 0: echoes" run 0 0
ktap_check "the default follows poll_usecs: KRPC_CQ_IRQ" test "$mode" = 1
ktap_check "none by pollers, at least 800 per event" \
	test "$polled" = 0 -a "$evented" -ge 800

# The ends choose apart: each side's CQ is reaped its own way.
ktap_check "client KRPC_CQ_IRQ, server KRPC_CQ_POLL: echoes" run 1 2
ktap_check "client reports KRPC_CQ_IRQ" test "$mode" = 1
ktap_check "the server's end polled (>= 400), the client's per event (>= 400)" \
	test "$polled" -ge 400 -a "$evented" -ge 400
ktap_check "debugfs: the server's end cq=poll, the client's cq=irq" \
	eval 'grep -q "role=server .* cq=poll" <<< "$conns" &&
	      grep -q "role=client .* cq=irq" <<< "$conns"'

rpc_do krpc_test cq_mode 3
ktap_check "client with cq_mode 3: -EINVAL" \
	rpc_do krpc_test connect_fail "$KRPC_ADDR4" "$RPC_PORT" 22
err=$(start_err 3)
log "server_start with cq_mode 3: $err"
ktap_check "server with cq_mode 3: -EINVAL" \
	eval '[[ "$err" == *"Invalid argument"* ]]'
rpc_do krpc_test cq_mode 0

ktap_check "no connection, call or request left" rpc_assert_idle
ktap_check "rmmod krpc_test" rpc_rmmod krpc_test
ktap_check "rmmod krpc" krpc_unload
ktap_check "no poller thread left" test "$(krpc_pollers)" = 0
ktap_check "nothing left after rmmod" krpc_assert_gone
ktap_finish
