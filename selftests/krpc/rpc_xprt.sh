#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Transport choice: a server listening on RDMA and TCP at once on one port,
# serving a client of each at the same time; automatic fallback to TCP for
# an address without an RDMA device (127.0.0.1) and RDMA chosen where one
# exists; RDMA-only and TCP-only endpoints failing with exact errnos where
# the other transport is missing; a server on both whose TCP port is taken;
# an unknown transport refused; rmmod of a module with live TCP connections.
# shellcheck source=selftests/krpc/rpc_lib.sh
. "$(dirname "$0")/rpc_lib.sh"

krpc_loaded && ktap_skip_all "krpc already loaded"

cleanup() {
	rpc_rmmod krpc_test
	rpc_rmmod krpc_peer
	krpc_unload
}
trap cleanup EXIT

RDMA=1 TCP=2 AUTO=3
xprt_of() { rpc_info "$1" transport; }

ktap_check "insmod krpc.ko" rpc_krpc_load
ktap_check "insmod krpc_test.ko" rpc_insmod krpc_test
ktap_check "insmod krpc_peer.ko" rpc_insmod krpc_peer

rpc_check "server listens on RDMA and TCP" krpc_test transport $AUTO
rpc_check "server listens on [::]:$RPC_PORT" krpc_test server_start "$RPC_PORT" ::

# Automatic fallback where no RDMA device serves the address.
fb0=$(krpc_stat tcp_fallbacks)
rpc_check "client: auto" krpc_peer transport $AUTO
rpc_check "auto client connects to 127.0.0.1" krpc_peer connect 127.0.0.1 "$RPC_PORT"
ktap_check "127.0.0.1 has no RDMA device: TCP chosen" test "$(xprt_of krpc_peer)" = $TCP
ktap_check "fallback counted" test "$(krpc_stat tcp_fallbacks)" = $((fb0 + 1))
rpc_check "echo over the fallback" krpc_peer echo 100000 3
rpc_check "client disconnects" krpc_peer disconnect

# And the reverse: RDMA where the address has an RDMA device.
rpc_check "auto client connects to $KRPC_ADDR4" krpc_peer connect "$KRPC_ADDR4" "$RPC_PORT"
ktap_check "$KRPC_ADDR4 has rxe: RDMA chosen" test "$(xprt_of krpc_peer)" = $RDMA
ktap_check "no fallback" test "$(krpc_stat tcp_fallbacks)" = $((fb0 + 1))
rpc_check "client disconnects" krpc_peer disconnect

# One server, a client of each transport at once.
rpc_check "client: rdma" krpc_peer transport $RDMA
rpc_check "RDMA client connects" krpc_peer connect "$KRPC_ADDR4" "$RPC_PORT"
rpc_check "client: tcp" krpc_test transport $TCP
rpc_check "TCP client connects" krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
ktap_check "one client is on RDMA" test "$(xprt_of krpc_peer)" = $RDMA
ktap_check "the other on TCP" test "$(xprt_of krpc_test)" = $TCP
ktap_check "debugfs shows both transports" \
	sh -c "grep -q 'role=server xprt=rdma' /sys/kernel/debug/krpc/conns &&
	       grep -q 'role=server xprt=tcp' /sys/kernel/debug/krpc/conns"
rpc_check "RDMA storm" krpc_peer storm_start 20000
rpc_check "TCP storm" krpc_test storm_start 2000
sleep 2
rpc_check "echo over TCP while both run" krpc_test echo 70000 2
rpc_check "every RDMA storm call completed once" krpc_peer storm_stop
rpc_check "every TCP storm call completed once" krpc_test storm_stop
rpc_check "RDMA client disconnects" krpc_peer disconnect
rpc_check "TCP client disconnects" krpc_test disconnect
rpc_check "server stops" krpc_test server_stop

# Single-transport endpoints fail where the other transport is missing.
rpc_check "server: tcp only" krpc_test transport $TCP
rpc_check "TCP-only server listens" krpc_test server_start "$RPC_PORT"
rpc_check "RDMA-only client: nobody listens on RDMA: -ECONNREFUSED" \
	krpc_peer connect_fail "$KRPC_ADDR4" "$RPC_PORT" 111
rpc_check "client: auto" krpc_peer transport $AUTO
rpc_check "auto client falls back to the TCP-only server" \
	krpc_peer connect "$KRPC_ADDR4" "$RPC_PORT"
ktap_check "TCP chosen" test "$(xprt_of krpc_peer)" = $TCP
rpc_check "echo" krpc_peer echo 4096 3
rpc_check "client disconnects" krpc_peer disconnect
rpc_check "server stops" krpc_test server_stop
rpc_check "server: rdma only" krpc_test transport $RDMA
rpc_check "RDMA-only server listens" krpc_test server_start "$RPC_PORT"
rpc_check "client: tcp" krpc_peer transport $TCP
rpc_check "TCP-only client: nobody listens on TCP: -ECONNREFUSED" \
	krpc_peer connect_fail "$KRPC_ADDR4" "$RPC_PORT" 111
rpc_check "server stops" krpc_test server_stop

# An RDMA-and-TCP server whose TCP port is taken fails with -EADDRINUSE
# and leaves no RDMA listener behind.
port2=$((RPC_PORT + 2))
rpc_check "server: tcp only" krpc_peer transport $TCP
rpc_check "TCP-only server listens on $port2" krpc_peer server_start "$port2"
rpc_check "server: auto" krpc_test transport $AUTO
err=$(echo "server_start $port2" 2>&1 > /sys/kernel/debug/krpc_test/cmd)
log "$err"
ktap_check "RDMA-and-TCP server on the taken port: -EADDRINUSE" \
	grep -q 'Address already in use' <<< "$err"
rpc_check "client: rdma" krpc_test transport $RDMA
rpc_check "its RDMA listener is gone: -ECONNREFUSED" \
	krpc_test connect_fail "$KRPC_ADDR4" "$port2" 111
rpc_check "TCP-only server stops" krpc_peer server_stop

rpc_check "client: transport 4" krpc_peer transport 4
rpc_check "unknown transport: -EINVAL" krpc_peer connect_fail "$KRPC_ADDR4" "$RPC_PORT" 22
rpc_check "server: transport 4" krpc_test transport 4
ktap_check "unknown transport: server refused" \
	sh -c '! echo "server_start '"$RPC_PORT"'" > /sys/kernel/debug/krpc_test/cmd'

# The module default decides for endpoints that do not choose.
echo $TCP > /sys/module/krpc/parameters/transport
rpc_check "server: default" krpc_test transport 0
rpc_check "default server listens" krpc_test server_start "$RPC_PORT"
rpc_check "client: default" krpc_peer transport 0
rpc_check "default client connects" krpc_peer connect "$KRPC_ADDR4" "$RPC_PORT"
ktap_check "transport=2: TCP" test "$(xprt_of krpc_peer)" = $TCP
echo $RDMA > /sys/module/krpc/parameters/transport

# A module goes with live TCP connections, calls in flight.
rpc_check "storm" krpc_peer storm_start 1000
sleep 1
ktap_check "rmmod krpc_test (the server) mid-call" rpc_rmmod krpc_test
rpc_check "every call completed once" krpc_peer storm_stop
ktap_check "client saw the disconnect" \
	wait_for $((5 * RPC_SLOW)) rpc_disc_is krpc_peer 1
ktap_check "rmmod krpc_peer with its dead client" rpc_rmmod krpc_peer
ktap_check "no connection, call or request left" rpc_assert_idle
ktap_check "no protocol error" test "$(krpc_stat protocol_errors)" = 0
ktap_check "rmmod krpc" krpc_unload
ktap_check "nothing left after rmmod" krpc_assert_gone
ktap_finish
