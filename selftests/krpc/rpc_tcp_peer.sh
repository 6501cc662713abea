#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A raw-socket peer (tcp_peer) misbehaves against a krpc TCP server: wrong
# magic and version (answered with the exact reject, then closed), an
# oversized length, an unknown type, random header bytes, a busy slot
# (closed at once, counted as protocol errors), half a hello, half a header
# and half a payload followed by silence (closed by the keepalive bound).
# Meanwhile a kernel client keeps echoing through the same server; in the
# end every counter is back to where it was and nothing leaks.
# shellcheck source=selftests/krpc/rpc_lib.sh
. "$(dirname "$0")/rpc_lib.sh"

krpc_loaded && ktap_skip_all "krpc already loaded"
peer=$KRPC_TOP/build/user/selftests/tcp_peer
[ -x "$peer" ] || ktap_skip_all "tcp_peer not built"

cleanup() {
	rpc_rmmod krpc_test
	krpc_unload
}
trap cleanup EXIT

ka=$((2000 * RPC_SLOW))
bound=$((3 * ka + 2000 * RPC_SLOW))
ktap_check "insmod krpc.ko (peer dead after $ka ms of silence)" \
	rpc_krpc_load ka_interval_ms=$((ka / 5)) ka_timeout_ms=$ka
ktap_check "insmod krpc_test.ko" rpc_insmod krpc_test
rpc_check "TCP transport" krpc_test transport 2
rpc_check "server listens" krpc_test server_start "$RPC_PORT"
rpc_check "kernel client connects" krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"

open0=$(krpc_stat conns_open)
perr0=$(krpc_stat protocol_errors)
rej0=$(krpc_stat conns_rejected)

# peer MODE [MS]: run tcp_peer, show what it said
peer() { pp "$peer" "$1" "$KRPC_ADDR4" "$RPC_PORT" ${2:+"$2"}; }
# still_serving: the kernel client is unaffected
still_serving() { rpc_do krpc_test echo 5000 2; }
settle() {	# the server's side of the peer's connection is gone
	local i
	for i in $(seq 50); do
		[ "$(krpc_stat conns_open)" = "$open0" ] && return 0
		sleep 0.1
	done
	log "conns_open $(krpc_stat conns_open), want $open0"
	return 1
}

ktap_check "byte-at-a-time hello and echo call answered exactly" peer good
ktap_check "connection gone" settle

n=0
for m in magic version; do
	n=$((n + 1))
	ktap_check "$m: exact reject, then closed" peer $m
	ktap_check "$m: connection gone" settle
	ktap_check "$m: rejection counted" test "$(krpc_stat conns_rejected)" = $((rej0 + n))
	ktap_check "$m: kernel client still served" still_serving
done

n=0
for m in oversize badtype garbage busyslot; do
	n=$((n + 1))
	ktap_check "$m: closed at once" peer $m
	ktap_check "$m: connection gone" settle
	ktap_check "$m: protocol error counted" \
		test "$(krpc_stat protocol_errors)" = $((perr0 + n))
	ktap_check "$m: kernel client still served" still_serving
done

for m in stall_hello stall_hdr stall_payload; do
	ktap_check "$m: closed within $bound ms" peer $m $bound
	ktap_check "$m: connection gone" settle
	ktap_check "$m: kernel client still served" still_serving
done
ktap_check "no other protocol error" test "$(krpc_stat protocol_errors)" = $((perr0 + 4))
ktap_check "server log names the reasons" \
	sh -c 'dmesg | grep -q "protocol error from .*payload longer than the negotiated maximum" &&
	       dmesg | grep -q "in the middle of a message"'

rpc_check "client disconnects" krpc_test disconnect
rpc_check "server stops" krpc_test server_stop
ktap_check "no connection, call or request left" rpc_assert_idle
ktap_check "rmmod krpc_test" rpc_rmmod krpc_test
ktap_check "rmmod krpc" krpc_unload
ktap_check "nothing left after rmmod" krpc_assert_gone
ktap_finish
