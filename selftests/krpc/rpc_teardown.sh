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
ktap_check "client saw the disconnect" test "$(rpc_info krpc_test disconnects)" = 1
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

# 3. The peer goes silent: keepalive finds it dead within ~1 s.
id=$(server_conn_id)
log "muting server connection $id"
rpc_check "storm of inline calls" krpc_test storm_start 64
sleep 1
echo "$id" > /sys/kernel/debug/krpc/fault_mute
t0=$(date +%s%N)
for _ in $(seq $((50 * RPC_SLOW))); do
	[ "$(rpc_info krpc_test state)" = 2 ] && break
	sleep 0.1
done
ms=$((($(date +%s%N) - t0) / 1000000))
log "client noticed after $ms ms"
ktap_check "silent peer detected" test "$(rpc_info krpc_test state)" = 2
ktap_check "reason is -ETIMEDOUT" test "$(rpc_info krpc_test reason)" = -110
ktap_check "within $((3 * ka)) ms" test $ms -lt $((3 * ka))
echo 0 > /sys/kernel/debug/krpc/fault_mute
rpc_check "every call completed once" krpc_test storm_stop
rpc_check "client destroyed" krpc_test disconnect
rpc_check "server stops" krpc_peer server_stop
ktap_check "no connection, call or request left" rpc_assert_idle

ktap_check "rmmod krpc_test" rpc_rmmod krpc_test
ktap_check "rmmod krpc_peer" rpc_rmmod krpc_peer
ktap_check "rmmod krpc" krpc_unload
ktap_check "nothing left after rmmod" krpc_assert_gone
ktap_finish
