#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# RPC semantics over krpc: thousands of concurrent calls answered out of
# order, window exhaustion (wait vs -EAGAIN), timeout, cancellation (inline
# and rendezvous; over RDMA also one whose key the reply invalidates while
# the local invalidation waits, the server's answer to a CANCEL, a reply
# posted before the CANCEL arrived, a CANCEL never answered), unknown method, handler error, one-way
# messages (and a flood of them held by their handler: at most 2 x depth
# requests alive; at depth 2 for three times what keepalives alone would
# carry over RDMA), a reply too large for the caller, a handshake rejected for
# its version (counted and logged), and over RDMA messages that arrive
# before the client has handled ESTABLISHED.
# rpc_semantics_tcp.sh runs it over TCP.
# shellcheck source=selftests/krpc/rpc_lib.sh
. "$(dirname "$0")/rpc_lib.sh"

krpc_loaded && ktap_skip_all "krpc already loaded"

cleanup() {
	[ -e /sys/kernel/debug/krpc ] && echo 0 > /sys/kernel/debug/krpc/fault_proto_version
	[ -e /sys/kernel/debug/krpc ] && echo 0 > /sys/kernel/debug/krpc/fault_mute
	[ -e /sys/kernel/debug/krpc ] && echo 0 > /sys/kernel/debug/krpc/fault_client_delay_ms
	[ -e /sys/kernel/debug/krpc ] && echo 0 > /sys/kernel/debug/krpc/fault_drop_cancel
	[ -e /sys/kernel/debug/krpc ] && echo 0 > /sys/kernel/debug/krpc/fault_oneway_delay_ms
	rpc_rmmod krpc_test
	krpc_unload
}
trap cleanup EXIT

# RNR NAKs the device counts, but for the windows in which the test resets
# or closes a connection on purpose (rnr_skip_start/_end): while a queue
# pair goes to the error state and flushes its receives, a message the
# peer had in flight may meet an empty receive queue.  Flow control must
# prevent every other one.
rnr0=$(rpc_rxe_rnr) rnr_skipped=0
rnr_skip_start() { rnr_a=$(rpc_rxe_rnr); }
rnr_skip_end() {
	local n
	n=$(($(rpc_rxe_rnr) - rnr_a))
	[ "$n" = 0 ] || log "$n RNR NAK(s) while a connection was closed on purpose"
	rnr_skipped=$((rnr_skipped + n))
}
ktap_check "insmod krpc.ko" rpc_krpc_load pool_small=8192 pool_medium=1024 depth=64
ktap_check "insmod krpc_test.ko" rpc_insmod krpc_test
rpc_check "server listens" krpc_test server_start "$RPC_PORT"
rpc_check "client connects" krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
ktap_check "depth is 64" test "$(rpc_info krpc_test depth)" = 64

rpc_check "3000 concurrent calls, replies out of order" krpc_test async 3000 16
rpc_check "300 concurrent rendezvous calls" krpc_test async 300 6000
rpc_check "window full: NOWAIT fails, waiting calls queue and time out there" krpc_test window
rpc_check "timeout, late reply dropped" krpc_test timeout
acks0=$(krpc_stat cancel_acks)
rpc_check "timeout, late 16 KiB reply into the room the call gave back: dropped" \
	krpc_test timeout 16384
rpc_check "cancel an inline call" krpc_test cancel 0
rpc_check "cancel a rendezvous call" krpc_test cancel 100000
kp=/sys/module/krpc/parameters
dbg=/sys/kernel/debug/krpc
# RDMA: a call with keys that times out or is cancelled keeps them until
# the server answers its CANCEL, which it does at once (the two calls
# above); a server that posted its reply before the CANCEL reached it
# (fault_drop_cancel: it never does) writes into the room the call still
# holds, and the connection stays.  Unanswered for ka_timeout_ms, the
# connection is reset and the call completes.
if [ "$KRPC_TRANSPORT" = rdma ]; then
	ktap_check "the server answered both CANCELs at once" \
		test "$(krpc_stat cancel_acks)" = $((acks0 + 2))
	# The server's READ of a timed-out call's payload waits (its
	# connection muted) until after the CANCEL: the key is still valid,
	# and the request is answered without its handler.
	acks1=$(krpc_stat cancel_acks)
	echo "$(server_conn_id)" > $dbg/fault_mute
	rpc_check "rendezvous call times out before the server read it" \
		krpc_test rcancel_start 100000
	echo 0 > $dbg/fault_mute
	rpc_check "read after the CANCEL, answered without the handler; the connection stays" \
		krpc_test rcancel_finish
	ktap_check "answered by the reply path, not a cancel answer" \
		test "$(krpc_stat cancel_acks)" = "$acks1"
	echo 1 > $dbg/fault_drop_cancel
	rpc_check "timeout, CANCEL ignored: the 16 KiB reply lands in the room the call keeps" \
		krpc_test timeout 16384 late
	ka_i=$(cat $kp/ka_interval_ms) ka_t=$(cat $kp/ka_timeout_ms)
	rpc_ka_set $((250 * RPC_SLOW)) $((1000 * RPC_SLOW))
	f0=$(krpc_stat cancel_unanswered)
	l0=$(dmesg | grep -c 'not answered in .* ms, resetting')
	rnr_skip_start
	rpc_check "CANCEL unanswered for ka_timeout_ms: connection reset, the call completes" \
		krpc_test cancel_unanswered 16384 $((1000 * RPC_SLOW))
	ktap_check "one reset counted" \
		test "$(krpc_stat cancel_unanswered)" = $((f0 + 1))
	ktap_check "one log line says why" \
		test "$(dmesg | grep -c 'not answered in .* ms, resetting')" = $((l0 + 1))
	rpc_check "client disconnects" krpc_test disconnect
	rpc_check "client connects again" krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
	rnr_skip_end
	rpc_ka_set "$ka_i" "$ka_t"
	echo 0 > $dbg/fault_drop_cancel
	ktap_check "no CANCEL answered while they were ignored" \
		test "$(krpc_stat cancel_acks)" = $((acks0 + 2))
else
	ktap_check "TCP answers no CANCEL" test "$(krpc_stat cancel_acks)" = "$acks0"
fi
# RDMA: a cancelled call's CANCEL cannot go out (the client is muted), so
# the call keeps its reply room's key; the server's reply, released
# meanwhile, answers it and invalidates that key remotely; the call must
# complete, once.
if [ "$(rpc_info krpc_test transport)" = 1 ]; then
	rpc_check "a held call with a 100000-byte reply room" \
		krpc_test inv_hold 100000
	cid=$(client_conn_id)
	stale0=$(conn_field "$cid" stale)
	echo "$cid" > /sys/kernel/debug/krpc/fault_mute
	rpc_check "cancelled while muted; the server answers" krpc_test inv_cancel
	for _ in $(seq $((100 * RPC_SLOW))); do
		[ "$(conn_field "$cid" stale)" != "$stale0" ] && break
		sleep 0.05
	done
	echo 0 > /sys/kernel/debug/krpc/fault_mute
	ktap_check "the late reply arrived" \
		test "$(conn_field "$cid" stale)" = $((stale0 + 1))
	rpc_check "the cancelled call completed once, -ECANCELED" \
		krpc_test inv_finish
else
	# TCP: a muted connection's queue (fault_mute stops tx_work) moves
	# again once the mute is lifted, without a new message to start it:
	# the keepalive tick does, within ka_interval_ms / 2.  Otherwise the
	# server would find the client silent after ka_timeout_ms.
	cid=$(client_conn_id)
	r0=$(conn_field "$cid" replies) t0=$(conn_field "$cid" timeouts)
	echo "$cid" > /sys/kernel/debug/krpc/fault_mute
	rpc_check "calls queued while the client is muted" krpc_test storm_start 100
	sleep 1
	ktap_check "no reply while muted" test "$(conn_field "$cid" replies)" = "$r0"
	echo 0 > /sys/kernel/debug/krpc/fault_mute
	for _ in $(seq $((30 * RPC_SLOW))); do
		[ "$(conn_field "$cid" replies)" != "$r0" ] && break
		sleep 0.1
	done
	ktap_check "replies within $((3 * RPC_SLOW)) s of lifting the mute" \
		test "$(conn_field "$cid" replies)" != "$r0"
	rpc_check "every call completed once" krpc_test storm_stop
	ktap_check "connection still up" test "$(rpc_info krpc_test state)" = 1
	ktap_check "no call timed out" test "$(conn_field "$cid" timeouts)" = "$t0"
fi
rpc_check "unknown method: -EBADRQC from the peer" krpc_test nomethod
rpc_check "handler error reaches the caller" krpc_test handler_error
rpc_check "1000 one-way messages" krpc_test oneway 1000

# gate_drain P0: open the gate and stop the flood at it; every one-way
# message was sent once, none failed, and the handler got them all (it had
# let P0 through before).  Over TCP most of them still wait in the socket
# buffers when the flood stops.
gate_drain() {
	local n nfail
	rpc_check "gate opens" krpc_test gate_open
	rpc_check "flood stops: every message sent once" krpc_test storm_stop
	read -r n nfail < <(sed -n 's/.*storm: \([0-9]*\) calls, \([0-9]*\) failed.*/\1 \2/p' \
		/sys/kernel/debug/krpc_test/log | tail -n1)
	ktap_check "none of the $n failed" test "$nfail" = 0
	for _ in $(seq $((300 * RPC_SLOW))); do
		[ "$(rpc_gate_passed)" = $(($1 + n)) ] && break
		sleep 0.1
	done
	rpc_check "the handler got all $n" krpc_test gate_stat $(($1 + n))
}

# One-way messages held by their handler (M_GATE, closed): the server keeps
# a bounded number of requests alive and holds the client back, for longer
# than ka_timeout_ms, which the silence it imposes must not trip.  TCP: the
# reader pauses at 2 x depth requests, exactly.  RDMA: at 2 x depth the
# receives, and the credits, are withheld; what the receives already
# posted (depth + 4) bring in is still taken, so the count settles at most
# that much higher and stays there.  Then the gate opens and every message
# goes through, once, with the same keepalive: over TCP a client held back
# this long may be waiting out a backed-off retransmission timer (tcp_rx.c),
# a silence the server must excuse.
ka_i=$(cat $kp/ka_interval_ms) ka_t=$(cat $kp/ka_timeout_ms)
rpc_ka_set $((250 * RPC_SLOW)) $((1000 * RPC_SLOW))
rbound=128 rmax=128
[ "$KRPC_TRANSPORT" = rdma ] && rmax=$((128 + 64 + 4))
cid=$(client_conn_id)
st0=$(conn_field "$cid" credit_stalls) p0=$(rpc_gate_passed)
rpc_check "gate closed" krpc_test gate_close
rpc_check "one-way flood at the closed gate" krpc_test storm_start 0 gate
for _ in $(seq $((150 * RPC_SLOW))); do
	[ "$(krpc_stat reqs_live)" -ge $rbound ] && break
	sleep 0.1
done
sleep 0.5
ktap_check "requests alive held at one value in [$rbound, $rmax], 8 samples over 2.4 s" \
	rpc_steady 8 $rbound $rmax krpc_stat reqs_live
ktap_check "the gate holds them all" \
	sh -c "echo gate_stat > /sys/kernel/debug/krpc_test/cmd &&
	       grep -q 'held $STEADY\$' /sys/kernel/debug/krpc_test/log"
if [ "$KRPC_TRANSPORT" = rdma ]; then
	ktap_check "the client waited for credits" \
		test "$(conn_field "$cid" credit_stalls)" -gt "$st0"
fi
ktap_check "the connection outlived ka_timeout_ms held back" \
	test "$(rpc_info krpc_test state)" = 1
gate_drain "$p0"
rpc_ka_set "$ka_i" "$ka_t"

# The same hold on a depth-2 connection (a bound of 4 requests), for three
# times longer than keepalives alone could carry it over RDMA.  There the
# client's data stops with the 2 credits it keeps for control messages,
# and the server reposts the receives of those at the bound, so keepalives
# and credit updates go on both ways.  Were they withheld too, the server's
# keepalives would spend its depth + 4 credits that the client can no
# longer return, and the client would reset the connection ka_timeout_ms
# after the last, about (depth + 3) intervals + ka_timeout_ms into the hold.
rnr_skip_start
rpc_check "client disconnects" krpc_test disconnect
rpc_check "client connects with depth 2" \
	krpc_test connect "$KRPC_ADDR4" "$RPC_PORT" 2
rnr_skip_end
ktap_check "depth is 2" test "$(rpc_info krpc_test depth)" = 2
rpc_ka_set $((250 * RPC_SLOW)) $((1000 * RPC_SLOW))
p0=$(rpc_gate_passed)
rpc_check "gate closed" krpc_test gate_close
rpc_check "one-way flood at the closed gate" krpc_test storm_start 0 gate
for _ in $(seq $((100 * RPC_SLOW))); do
	[ "$(krpc_stat reqs_live)" -ge 4 ] && break
	sleep 0.1
done
hold=$((3 * (6 * 250 + 1000) * RPC_SLOW))
rpc_sleep_ms "$hold"
rmax=4
[ "$KRPC_TRANSPORT" = rdma ] && rmax=$((4 + 2 + 4))
ktap_check "requests alive held at one value in [4, $rmax]" \
	rpc_steady 3 4 $rmax krpc_stat reqs_live
ktap_check "the connection outlived $hold ms at the bound" \
	test "$(rpc_info krpc_test state)" = 1
gate_drain "$p0"
rpc_ka_set "$ka_i" "$ka_t"
rnr_skip_start
rpc_check "client disconnects" krpc_test disconnect
rpc_check "client connects again" krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
rnr_skip_end
rpc_check "reply larger than allowed: -EMSGSIZE" krpc_test toobig
for n in 1000 100000; do
	rpc_check "one buffer as request and reply refused; replies with the request's own payload ($n B)" \
		krpc_test samebuf $n
done
rpc_check "no RNR NAK or data-path registration; copies as the transport makes them" \
	krpc_test counters
ktap_check "connection is over $KRPC_TRANSPORT" \
	test "$(rpc_info krpc_test transport)" = "$RPC_XPRT"
ktap_check "device saw no RNR NAK but while connections closed on purpose" \
	test "$(rpc_rxe_rnr)" = $((rnr0 + rnr_skipped))
rpc_check "unanswered timeouts on half the slots reset the connection, one fewer do not" \
	krpc_test zombies
rpc_check "client disconnects" krpc_test disconnect
rpc_check "client connects again" krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
# A one-way message received whole is handled even if its connection closes
# before the handler starts: here its handler (the open gate) is held back
# by fault_oneway_delay_ms while a NOSLEEP echo sent after it is answered,
# and the client disconnects.
p1=$(rpc_gate_passed)
echo $((500 * RPC_SLOW)) > $dbg/fault_oneway_delay_ms
rpc_check "one-way message, then an echo answered before its handler started, then disconnect" \
	krpc_test oneway_close
for _ in $(seq $((100 * RPC_SLOW))); do
	[ "$(rpc_gate_passed)" = $((p1 + 1)) ] && break
	sleep 0.1
done
echo 0 > $dbg/fault_oneway_delay_ms
rpc_check "its handler ran after the connection closed" krpc_test gate_stat $((p1 + 1))
rpc_check "client connects again" krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
rpc_check "destroy waits for the completion the call timer is running" \
	krpc_test destroy_in_done

# RDMA: the server is live from its accept, before the client has handled
# ESTABLISHED, and its keepalives may arrive first (here the client waits
# 1 s in its ESTABLISHED handler, fault_client_delay_ms, while the server
# sends a keepalive every 100 ms).  They must be processed once the client
# is live, not dropped with the receives and credits they stand for.  What
# is compared: the server's send credits once the client has given back
# all it owes (the server muted, so that it spends none, for a second: the
# client's keepalive tick returns what it owes every 50 ms), on a
# connection made without the wait and on one made with it.
server_credits_idle() {
	local delay=$1 sid
	echo 100 > /sys/module/krpc/parameters/ka_interval_ms
	echo "$delay" > /sys/kernel/debug/krpc/fault_client_delay_ms
	rpc_check "client connects (ESTABLISHED handled after $delay ms)" \
		krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
	echo 0 > /sys/kernel/debug/krpc/fault_client_delay_ms
	rpc_check "echo" krpc_test echo 100 5
	sid=$(sed -n 's/^conn=\([0-9]*\) role=server .*state=up.*/\1/p' \
		/sys/kernel/debug/krpc/conns | head -n1)
	echo "$sid" > /sys/kernel/debug/krpc/fault_mute
	sleep "$RPC_SLOW"
	credits=$(conn_field "$sid" credits)
	echo 0 > /sys/kernel/debug/krpc/fault_mute
	echo "$ival" > /sys/module/krpc/parameters/ka_interval_ms
	rpc_check "client disconnects" krpc_test disconnect
}
if [ "$KRPC_TRANSPORT" = rdma ]; then
	ival=$(cat /sys/module/krpc/parameters/ka_interval_ms)
	server_credits_idle 0
	c0=$credits early0=$(krpc_stat early_rx)
	server_credits_idle 1000
	log "server credits, the client's all returned: $c0 (no wait), $credits (early keepalives)"
	ktap_check "keepalives arrived before ESTABLISHED was handled" \
		test "$(krpc_stat early_rx)" -gt "$early0"
	ktap_check "every credit back: depth 64 + 4 receives" test "$c0" = 68
	ktap_check "they were processed: no credit lost" \
		test "$credits" = "$c0"
fi

# Handshake with a protocol version the server does not speak.
echo 99 > /sys/kernel/debug/krpc/fault_proto_version
rej0=$(krpc_stat conns_rejected)
rejlog='rejecting .*: protocol version \(-93\), value 1$'
log0=$(dmesg | grep -cE "$rejlog")
rpc_check "version mismatch refused with -EPROTONOSUPPORT" \
	krpc_test connect_fail "$KRPC_ADDR4" "$RPC_PORT" 93
echo 0 > /sys/kernel/debug/krpc/fault_proto_version
ktap_check "rejection counted" test "$(krpc_stat conns_rejected)" = $((rej0 + 1))
ktap_check "server logged the rejection and its reason" \
	test "$(dmesg | grep -cE "$rejlog")" = $((log0 + 1))
rpc_check "nobody listening: -ECONNREFUSED" \
	krpc_test connect_fail "$KRPC_ADDR4" $((RPC_PORT + 1)) 111
rpc_check "client connects after the rejections" \
	krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
rpc_check "echo works" krpc_test echo 100 5
rpc_check "client disconnects" krpc_test disconnect
rpc_check "server stops" krpc_test server_stop
ktap_check "no connection, call or request left" rpc_assert_idle
ktap_check "no protocol error" test "$(krpc_stat protocol_errors)" = 0
ktap_check "rmmod krpc_test" rpc_rmmod krpc_test
ktap_check "rmmod krpc" krpc_unload
ktap_check "nothing left after rmmod" krpc_assert_gone
ktap_finish
