#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Connections dying with calls in flight: the server's module removed
# mid-call, the RDMA device removed mid-call ("rdma link del"), a peer that
# goes silent (found by keepalive within the configured bound).  Every call
# completes exactly once, nothing leaks, and krpc.ko cannot be removed while
# a client module uses it.  rpc_teardown_tcp.sh runs it over TCP, where the
# device removal must leave the connection alone.
# shellcheck source=selftests/krpc/rpc_lib.sh
. "$(dirname "$0")/rpc_lib.sh"

krpc_loaded && ktap_skip_all "krpc already loaded"

cleanup() {
	[ -e /sys/kernel/debug/krpc ] && echo 0 > /sys/kernel/debug/krpc/fault_mute
	rpc_rmmod krpc_test
	rpc_rmmod krpc_peer
	rdma link show "$KRPC_RXE/1" > /dev/null 2>&1 ||
		rdma link add "$KRPC_RXE" type rxe netdev "$KRPC_NETDEV"
	krpc_unload
}
trap cleanup EXIT

# server_conn_id: the id of the (one) live server-side connection
server_conn_id() {
	sed -n 's/^conn=\([0-9]*\) role=server .*state=up.*/\1/p' \
		/sys/kernel/debug/krpc/conns | head -n1
}

# wait_window_held SERVER_CONN: every slot of the server connection holds
# a request (none answered), so the server has no reply left to send
wait_window_held() {
	local d n
	d=$(conn_field "$1" depth)
	for _ in $(seq $((100 * RPC_SLOW))); do
		n=$(conn_field "$1" inflight)
		[ -n "$d" ] && [ "$n" = "$d" ] && return 0
		sleep 0.1
	done
	log "server conn $1: inflight ${n:-(gone)} of depth ${d:-?}; client state $(rpc_info krpc_test state) reason $(rpc_info krpc_test reason)"
	return 1
}

ka=$((1000 * RPC_SLOW))
ktap_check "insmod krpc.ko (peer dead after $ka ms of silence)" \
	rpc_krpc_load ka_interval_ms=$((ka / 5)) ka_timeout_ms=$ka
ktap_check "insmod krpc_peer.ko" rpc_insmod krpc_peer
ktap_check "insmod krpc_test.ko" rpc_insmod krpc_test
ktap_check "rmmod krpc refused while clients use it" sh -c '! rmmod krpc 2>/dev/null'

# 1. The server's module goes away mid-call.
rpc_check "peer listens" krpc_peer server_start "$RPC_PORT"
rpc_check "client connects" krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
rpc_check "storm of inline calls" krpc_test storm_start 100
sleep 2
ktap_check "rmmod krpc_peer mid-call" rpc_rmmod krpc_peer
rpc_check "every call completed once" krpc_test storm_stop
ktap_check "client saw the disconnect" \
	wait_for $((5 * RPC_SLOW)) rpc_disc_is krpc_test 1
ktap_check "client connection is dead" test "$(rpc_info krpc_test state)" = 2
rpc_check "client destroyed" krpc_test disconnect
ktap_check "no connection, call or request left" rpc_assert_idle

# 2. The RDMA device goes away mid-call (ib_client remove).  Over TCP: the
# device is not in the connection's path, nothing happens to it.
if [ "$KRPC_TRANSPORT" = rdma ]; then
ktap_check "insmod krpc_peer.ko again" rpc_insmod krpc_peer
rpc_check "peer listens" krpc_peer server_start "$RPC_PORT"
rpc_check "client connects" krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
rpc_check "storm of rendezvous calls" krpc_test storm_start 20000
sleep 2
ktap_check "rdma link del $KRPC_RXE mid-call" pp rdma link del "$KRPC_RXE"
rpc_check "every call completed once" krpc_test storm_stop
ktap_check "client connection is dead" test "$(rpc_info krpc_test state)" = 2
ktap_check "reason is -ENODEV" test "$(rpc_info krpc_test reason)" = -19
rpc_check "client destroyed" krpc_test disconnect
ktap_check "no connection, call or request left" rpc_assert_idle
ktap_check "no device left" test -z "$(krpc_devices)"
ktap_check "rdma link add $KRPC_RXE" \
	pp rdma link add "$KRPC_RXE" type rxe netdev "$KRPC_NETDEV"
rpc_check "client connects over the new device" \
	krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
rpc_check "echo 1 MiB" krpc_test echo 1048576 2
else
ktap_check "insmod krpc_peer.ko again" rpc_insmod krpc_peer
rpc_check "peer listens" krpc_peer server_start "$RPC_PORT"
rpc_check "client connects" krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
rpc_check "storm of large calls" krpc_test storm_start 20000
sleep 2
ktap_check "rdma link del $KRPC_RXE mid-call" pp rdma link del "$KRPC_RXE"
rpc_check "every call completed once" krpc_test storm_stop
ktap_check "TCP connection still up" test "$(rpc_info krpc_test state)" = 1
rpc_check "echo 1 MiB without the RDMA device" krpc_test echo 1048576 2
ktap_check "rdma link add $KRPC_RXE" \
	pp rdma link add "$KRPC_RXE" type rxe netdev "$KRPC_NETDEV"
fi

# 3. The peer goes silent: keepalive finds it dead within 3 x ka_timeout_ms
# of the mute.  The client counts silence from the last bytes it received,
# so nothing may be on its way from the server when the clock starts: the
# calls in flight go to a method that holds its requests, and the mute comes
# once every slot of the server connection holds one.  From then on the
# server has nothing to send but keepalives (and, over RDMA, credit
# updates), which the mute stops (tcp.c ka_tick and ktcp_tx_work, rdma.c
# krpc_rdma_flush_locked).  Replies of a storm that is answered would still
# be in the socket buffers at the mute over TCP and reset the silence.
id=$(server_conn_id)
cid=$(client_conn_id)
rpc_check "storm of held inline calls" krpc_test storm_start 64 hold
ktap_check "every slot of server connection $id holds a call" \
	wait_window_held "$id"
replies=$(conn_field "$cid" replies)
log "muting server connection $id (client $cid has $replies replies)"
# The clock is CLOCK_BOOTTIME in ms, read before the mute (/proc/uptime,
# centiseconds rounded down: what is measured is never shorter), and the
# client notices when its disconnect callback runs (krpc_test's info
# disconnect_ms, the same clock): how late this shell gets to look, under
# emulation on a loaded host, is not the client's doing.
disc=$(rpc_info krpc_test disconnects)
read -r up _ < /proc/uptime
t0=$((10 * ${up/./}))
echo "$id" > /sys/kernel/debug/krpc/fault_mute
# Dead at once, the callback at the end of the teardown: wait for it.
wait_for $((5 * RPC_SLOW)) rpc_disc_is krpc_test $((disc + 1))
ms=$(($(rpc_info krpc_test disconnect_ms) - t0))
log "client noticed after $ms ms"
ktap_check "silent peer detected" test "$(rpc_info krpc_test state)" = 2
ktap_check "reason is -ETIMEDOUT" test "$(rpc_info krpc_test reason)" = -110
ktap_check "one disconnect callback" \
	test "$(rpc_info krpc_test disconnects)" = $((disc + 1))
ktap_check "within $((3 * ka)) ms" test $ms -ge 0 -a $ms -lt $((3 * ka))
ktap_check "no reply reached the client after the mute" \
	test "${replies:-none}" = "$(conn_field "$cid" replies)"
echo 0 > /sys/kernel/debug/krpc/fault_mute
rpc_check "every call completed once" krpc_test storm_stop
rpc_check "client destroyed" krpc_test disconnect
rpc_check "server stops" krpc_peer server_stop
ktap_check "no connection, call or request left" rpc_assert_idle

# Which completion path the connections above took (rpc_echo.sh checks
# the same per echo): the variants of this test must not fall back to
# another one unnoticed.
ev=$(rpc_ev_reaped) polled=$(krpc_stat cq_polled)
log "completions reaped per event $ev, by pollers $polled"
if [ "$KRPC_TRANSPORT" = rdma ]; then
	if [ -n "${KRPC_POLL_USECS:-}" ]; then
		ktap_check "completions reaped by pollers" test "$polled" -gt 0
		ktap_check "none reaped per event" test "$ev" = 0
	elif [ "${KRPC_CQ_SHARED:-0}" = 1 ]; then
		ktap_check "none reaped per event (cq_shared=1)" test "$ev" = 0
		ktap_check "none reaped by pollers" test "$polled" = 0
	else
		ktap_check "completions reaped per event (Soft-RoCE's own CQs)" \
			test "$ev" -gt 0
	fi
fi

ktap_check "rmmod krpc_test" rpc_rmmod krpc_test
ktap_check "rmmod krpc_peer" rpc_rmmod krpc_peer
ktap_check "rmmod krpc" krpc_unload
ktap_check "nothing left after rmmod" krpc_assert_gone
ktap_finish
