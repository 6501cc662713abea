#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A TCP server whose pool runs empty under a flood of one-way messages
# loses none of them (tcp_rx.c): a one-way message has no answer to carry a
# failure, so the server stops reading until a buffer comes back (counted
# in the connection's pool_waits) and the client is held back by TCP's
# window, as an RDMA server whose receives cannot be refilled withholds the
# credits.  krpc.ko gets 64 small buffers (8 of them the receive reserve,
# of which one-way messages may take 4), no medium one and one large one;
# the messages go to the gate (M_GATE), which holds them while closed, so
# the pool, not the request bound (2 x depth = 128), stops the server.  Then the gate opens and every
# message the client sent reaches the handler, once; nothing leaks.  No
# timer polls the pool: the waiting connection reads again only because
# the buffers the opened gate gives back wake it (the pool's wait queue).
# Then a raw peer (tcp_peer fin) closes its side (FIN) while the server
# waits for a buffer: its messages are all handled before the close; one
# that resets it (tcp_peer reset) is dropped at once, its unread messages
# with it.
# TCP only: over RDMA a one-way message lands in a posted receive.
KRPC_TRANSPORT=tcp
# shellcheck source=selftests/krpc/rpc_lib.sh
. "$(dirname "$0")/rpc_lib.sh"

krpc_loaded && ktap_skip_all "krpc already loaded"

cleanup() {
	rpc_rmmod krpc_test
	krpc_unload
}
trap cleanup EXIT

SIZE=512 DEPTH=64
rbound=$((2 * DEPTH))
wait_s=$((30 * RPC_SLOW))
t=/sys/kernel/debug/krpc_test


ktap_check "insmod krpc.ko: 64 small buffers, no medium, 1 large" \
	rpc_krpc_load pool_small=64 pool_medium=0 pool_large=1
ktap_check "insmod krpc_test.ko" rpc_insmod krpc_test
rpc_check "server listens" krpc_test server_start "$RPC_PORT"
rpc_check "client connects, depth $DEPTH" krpc_test connect "$KRPC_ADDR4" "$RPC_PORT" $DEPTH
sid=$(server_conn_id)
ktap_check "the server connection has no pool wait yet" \
	test "$(conn_field "$sid" pool_waits)" = 0
e0=$(krpc_stat pool_empty)

rpc_check "gate closed" krpc_test gate_close
rpc_check "one-way flood of $SIZE-byte messages at the closed gate" \
	krpc_test storm_start $SIZE gate
waiting() { [ "$(conn_field "$sid" pool_waits)" -gt 0 ]; }
ktap_check "the server stopped reading for a buffer (pool_waits > 0)" \
	wait_for "$wait_s" waiting
ktap_check "the pool ran empty (pool_empty counted)" \
	test "$(krpc_stat pool_empty)" -gt "$e0"
# Settled: the held count stays put, below the request bound, and the
# one wait is counted once however often a freed buffer wakes it.
sleep 1
pw=$(conn_field "$sid" pool_waits)
ktap_check "the gate holds one count in [1, $((rbound - 1))], 5 samples over 1.5 s: the pool stopped the server" \
	rpc_steady 5 1 $((rbound - 1)) rpc_gate_held
ktap_check "as many requests alive as held ($STEADY)" \
	test "$(krpc_stat reqs_live)" = "$STEADY"
ktap_check "one wait counted once: pool_waits still $pw" \
	test "$(conn_field "$sid" pool_waits)" = "$pw"
# Held back past the keepalive timeout, both ends stay: the waiting server
# reads nothing, but the client's unread bytes show it alive.
rpc_ka_set $((250 * RPC_SLOW)) $((1000 * RPC_SLOW))
sleep $((2 * RPC_SLOW))
ktap_check "held for twice ka_timeout_ms: the client connection is up" \
	test "$(rpc_info krpc_test state)" = 1
ktap_check "held for twice ka_timeout_ms: the server connection is the same" \
	test "$(server_conn_id)" = "$sid"
ktap_check "still held: the gate's count did not move" \
	test "$(rpc_gate_held)" = "$STEADY"

rpc_check "gate opens" krpc_test gate_open
rpc_check "flood stops: every one-way call completed once" krpc_test storm_stop
calls=$(sed -n 's/.*storm: \([0-9]*\) calls, \([0-9]*\) failed.*/\1/p' $t/log)
failed=$(sed -n 's/.*storm: \([0-9]*\) calls, \([0-9]*\) failed.*/\2/p' $t/log)
log "storm: $calls calls, $failed failed"
ktap_check "no one-way call failed at the client" test "$failed" = 0
all_passed() { [ "$(rpc_gate_passed)" = "$calls" ]; }
wait_for "$wait_s" all_passed
rpc_check "the handler got all $calls messages: none dropped" krpc_test gate_stat "$calls"
ktap_check "the server reads again: no hold left" \
	test "$(rpc_gate_held)" = 0
rpc_check "echo after the flood" krpc_test echo $SIZE 10

# A graceful close while waiting for a buffer: a raw peer (tcp_peer fin,
# depth 64, so its request bound of 128 is beyond what the pool holds)
# sends 100 one-way messages at the closed gate, then its FIN, with the
# server waiting for a buffer and the rest unread.  The connection stays;
# once the gate opens the freed buffers wake it, it reads to the end, all
# 100 reach the handler, and only then does it close.
peer=$KRPC_TOP/build/user/selftests/tcp_peer
out=$(mktemp)	# the guest's tmpfs
rpc_check "gate closed again" krpc_test gate_close
echo "# + TCP_PEER_DEPTH=$DEPTH $peer fin $KRPC_ADDR4 $RPC_PORT 100 &"
TCP_PEER_DEPTH=$DEPTH "$peer" fin "$KRPC_ADDR4" "$RPC_PORT" 100 > "$out" 2>&1 &
fpid=$!
ktap_check "fin: peer connected" wait_for "$wait_s" grep -q "^port " "$out"
pport=$(sed -n 's/^port //p' "$out")
pwaiting() { [ "$(conn_field "$(rpc_peer_conn "$pport")" pool_waits)" -gt 0 ] 2>/dev/null; }
ktap_check "fin: the server waits for a buffer (pool_waits > 0)" wait_for "$wait_s" pwaiting
ktap_check "fin: the peer closed its side" wait_for "$wait_s" grep -q "^fin after" "$out"
ktap_check "fin: the server's socket got the FIN (CLOSE-WAIT)" \
	wait_for "$wait_s" rpc_close_wait "$RPC_PORT" "$pport"
sleep 1
ktap_check "fin: a second later the connection is still there, still waiting" pwaiting
ktap_check "fin: the peer is still held" kill -0 $fpid
rpc_check "gate opens" krpc_test gate_open
fok() { wait $fpid; local r=$?; sed 's/^/# /' "$out"; return $r; }
ktap_check "fin: the server closed its side after the gate opened" fok
all_in() { [ "$(rpc_gate_passed)" = $((calls + 100)) ]; }
wait_for "$wait_s" all_in
rpc_check "fin: the handler got all 100 messages sent before the FIN" \
	krpc_test gate_stat $((calls + 100))
peer_gone() { [ -z "$(rpc_peer_conn "$pport")" ]; }
ktap_check "fin: the peer's connection is gone" wait_for "$wait_s" peer_gone

# A reset while waiting for a buffer ends the connection at once: the
# messages the server had read stay at the gate, the rest go with it.
rpc_check "gate closed again" krpc_test gate_close
reset0=$(rpc_resets_logged)
echo "# + TCP_PEER_DEPTH=$DEPTH $peer reset $KRPC_ADDR4 $RPC_PORT 100 &"
TCP_PEER_DEPTH=$DEPTH "$peer" reset "$KRPC_ADDR4" "$RPC_PORT" 100 > "$out" 2>&1 &
rpid=$!
ktap_check "reset: peer connected" wait_for "$wait_s" grep -q "^port " "$out"
pport=$(sed -n 's/^port //p' "$out")
ktap_check "reset: the server waits for a buffer (pool_waits > 0)" wait_for "$wait_s" pwaiting
ktap_check "reset: the peer wrote its messages" wait_for "$wait_s" grep -q "^flooded" "$out"
ktap_check "reset: the gate holds one count in [1, 99], 3 samples over 0.6 s" \
	rpc_steady 3 1 99 rpc_gate_held
held=$STEADY
kill -USR1 $rpid
rok() { wait $rpid; local r=$?; sed 's/^/# /' "$out"; return $r; }
ktap_check "reset: the peer reset its connection" rok
ktap_check "reset: torn down at once (dead, ECONNRESET, logged), the gate still closed" \
	rpc_reset_torn_down "$pport" "$reset0"
ktap_check "reset: the gate still holds the $held it had read" \
	test "$(rpc_gate_held)" = "$held"
rpc_check "gate opens" krpc_test gate_open
rpc_check "reset: the handler got exactly those $held" \
	krpc_test gate_stat $((calls + 100 + held))
ktap_check "reset: the connection gone with its last request" \
	wait_for "$wait_s" peer_gone

rm -f "$out"
rpc_check "client disconnects" krpc_test disconnect
rpc_check "server stops" krpc_test server_stop
ktap_check "no connection, call or request left" rpc_assert_idle
rpc_rmmod krpc_test
ktap_check "rmmod krpc" krpc_unload
ktap_check "nothing left after rmmod" krpc_assert_gone
ktap_finish
