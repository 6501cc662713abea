#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A server keeps at most max_conns connections at a time (writable), over
# RDMA and over TCP alike: one more is refused with reason "resources"
# and value max_conns, so the client's connect fails with -ENOBUFS; the
# server logs the refusal (-EUSERS) and counts it in conns_rejected, the
# client logs the reason and value; the connection the server has keeps
# being served.  Once that one goes, a new one is taken; a raised limit
# takes the next one too.  A server's own limit (krpc_server_opts.max_conns)
# holds on either side of the module's, and one above 65536 is -EINVAL.
# Two kernel clients: krpc_test and krpc_peer.
# shellcheck source=selftests/krpc/rpc_lib.sh
. "$(dirname "$0")/rpc_lib.sh"

krpc_loaded && ktap_skip_all "krpc already loaded"

cleanup() {
	rpc_rmmod krpc_peer
	rpc_rmmod krpc_test
	krpc_unload
}
trap cleanup EXIT

kp=/sys/module/krpc/parameters
ENOBUFS=105 EUSERS=87

ktap_check "insmod krpc.ko max_conns=1" rpc_krpc_load max_conns=1
ktap_check "max_conns reads back 1" test "$(cat $kp/max_conns)" = 1
ktap_check "insmod krpc_test.ko" rpc_insmod krpc_test
ktap_check "insmod krpc_peer.ko" rpc_insmod krpc_peer
open0=$(krpc_stat conns_open)

# logged TEXT: the kernel logged TEXT (an extended regex) since klog_mark
logged() { klog_since | grep -qE -- "$1"; }

for x in rdma tcp; do
	case $x in
	rdma) n=1 over="" ;;
	tcp)  n=2 over=" over TCP" ;;
	esac
	echo 1 > $kp/max_conns
	rpc_check "$x: server transport" krpc_test transport $n
	rpc_check "$x: client transport" krpc_peer transport $n
	rpc_check "$x: server listens" krpc_test server_start "$RPC_PORT"
	rpc_check "$x: first client connects" \
		krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
	rej0=$(krpc_stat conns_rejected)
	klog_mark
	rpc_check "$x: a second connection is refused: -ENOBUFS" \
		krpc_peer connect_fail "$KRPC_ADDR4" "$RPC_PORT" $ENOBUFS
	ktap_check "$x: one refusal counted" \
		test "$(krpc_stat conns_rejected)" = $((rej0 + 1))
	ktap_check "$x: the server logged it (-EUSERS, value 1)" \
		logged "rejecting $KRPC_ADDR4:[0-9]+$over: resources \\(-$EUSERS\\), value 1\$"
	ktap_check "$x: the client logged the reason and value" \
		logged "$KRPC_ADDR4:$RPC_PORT rejected the handshake: resources \\(value 1"
	rpc_check "$x: the first client is still served" krpc_test echo 5000 3
	rpc_check "$x: first client disconnects" krpc_test disconnect
	ktap_check "$x: both ends of it gone" \
		rpc_conns_back "$open0"
	rpc_check "$x: the other client connects now" \
		krpc_peer connect "$KRPC_ADDR4" "$RPC_PORT"
	rpc_check "$x: and is served" krpc_peer echo 5000 3
	echo 2 > $kp/max_conns
	rpc_check "$x: max_conns 2: a second connection is taken" \
		krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
	rpc_check "$x: both served: first" krpc_test echo 100000 2
	rpc_check "$x: both served: second" krpc_peer echo 100000 2
	ktap_check "$x: no other refusal" \
		test "$(krpc_stat conns_rejected)" = $((rej0 + 1))
	rpc_check "$x: clients disconnect: first" krpc_test disconnect
	rpc_check "$x: clients disconnect: second" krpc_peer disconnect
	rpc_check "$x: server stops" krpc_test server_stop
	ktap_check "$x: no connection left" \
		rpc_conns_back "$open0"

	# The server's own limit, below the module's (2 now), then above.
	rpc_do krpc_test max_conns 1
	rpc_check "$x: a server of max_conns 1 listens (module: 2)" \
		krpc_test server_start "$RPC_PORT"
	rpc_check "$x: its first client connects" \
		krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
	rej0=$(krpc_stat conns_rejected)
	klog_mark
	rpc_check "$x: its second is refused: -ENOBUFS" \
		krpc_peer connect_fail "$KRPC_ADDR4" "$RPC_PORT" $ENOBUFS
	ktap_check "$x: refused for the server's limit (value 1), counted" \
		eval 'logged "rejecting $KRPC_ADDR4:[0-9]+$over: resources \\(-$EUSERS\\), value 1\$" &&
		      test "$(krpc_stat conns_rejected)" = $((rej0 + 1))'
	rpc_check "$x: its client disconnects" krpc_test disconnect
	rpc_check "$x: it stops" krpc_test server_stop
	echo 1 > $kp/max_conns
	rpc_do krpc_test max_conns 2
	rpc_check "$x: a server of max_conns 2 listens (module: 1)" \
		krpc_test server_start "$RPC_PORT"
	rpc_check "$x: its first client connects" \
		krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
	rpc_check "$x: its second too" \
		krpc_peer connect "$KRPC_ADDR4" "$RPC_PORT"
	rpc_check "$x: both served: first" krpc_test echo 5000 2
	rpc_check "$x: both served: second" krpc_peer echo 5000 2
	ktap_check "$x: no refusal" \
		test "$(krpc_stat conns_rejected)" = $((rej0 + 1))
	rpc_check "$x: clients disconnect: first" krpc_test disconnect
	rpc_check "$x: clients disconnect: second" krpc_peer disconnect
	rpc_check "$x: it stops" krpc_test server_stop
	rpc_do krpc_test max_conns 0
	ktap_check "$x: no connection left after it" \
		rpc_conns_back "$open0"
done

rpc_do krpc_test max_conns 65537
err=$( (echo "server_start $RPC_PORT" > /sys/kernel/debug/krpc_test/cmd) 2>&1)
log "server_start with max_conns 65537: $err"
ktap_check "a server of max_conns 65537: -EINVAL" \
	eval '[[ "$err" == *"Invalid argument"* ]]'
rpc_do krpc_test max_conns 0

ktap_check "no connection, call or request left" rpc_assert_idle
ktap_check "rmmod krpc_peer" rpc_rmmod krpc_peer
ktap_check "rmmod krpc_test" rpc_rmmod krpc_test
ktap_check "rmmod krpc" krpc_unload
ktap_check "nothing left after rmmod" krpc_assert_gone
ktap_finish
