#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A raw-socket peer (tcp_peer) misbehaves against a krpc TCP server: wrong
# magic and version, a keepalive timeout beyond krpc's range or a reserved
# field set (answered with the exact reject, then closed), an oversized
# length, an unknown type, random header bytes, a busy slot (closed at
# once, counted as protocol errors), half a hello, half a header and half
# a payload followed by silence (closed by the keepalive bound).  A peer
# that announces a short keepalive timeout hears from the server within it
# while idle.
# Then backpressure: a flood of one-way messages to a method that holds
# them, and requests whose large replies are never read, each leave exactly
# 2 x depth requests alive at the server, which stops reading (rx_pauses)
# and holds the peer back by TCP's window until the requests go; a peer
# that closes its side (FIN) while held back has every message it sent
# before handled; one that resets it is dropped at once, and only what the
# server had read is handled.
# Meanwhile a kernel client keeps echoing through the same server.  Then
# tcp_peer serves the kernel client: it must announce its keepalive
# timeout, keep the peer's short one while idle, and refuse one beyond
# krpc's range; and when tcp_peer stays alive but reads nothing, a call
# that timed out, and a caller killed while it waited, each end with the
# client's reset ka_timeout_ms later.  In the end every counter is back to
# where it was and nothing leaks.
# shellcheck source=selftests/krpc/rpc_lib.sh
. "$(dirname "$0")/rpc_lib.sh"

krpc_loaded && ktap_skip_all "krpc already loaded"
peer=$KRPC_TOP/build/user/selftests/tcp_peer
[ -x "$peer" ] || ktap_bail "tcp_peer not built"

cleanup() {
	[ -n "${out:-}" ] && rm -f "$out"
	rpc_rmmod krpc_test
	krpc_unload
}
trap cleanup EXIT

# 4 s, not less: the keepalive gap checks below allow 1/4 of T (150 ms)
# beyond krpc's worst case, and a guest stalled longer than 1/4 of a
# 300 ms T failed one in CI (rpc_rdma_peer, a gap of 309 ms).
ka=$((4000 * RPC_SLOW))
bound=$((3 * ka + 2000 * RPC_SLOW))
# The keepalive timeout a peer announces: below twice the ka_interval_ms
# of ka / 5, so krpc must send every T / 2, at most 3/4 T apart (its tick
# runs every T / 4), where its own interval alone leaves gaps of ka / 5 to
# 3/10 ka, above T.  Either way the margin is 1/4 T or more.
T=$((3 * ka / 20))
ktap_check "insmod krpc.ko (peer dead after $ka ms of silence)" \
	rpc_krpc_load ka_interval_ms=$((ka / 5)) ka_timeout_ms=$ka
ktap_check "insmod krpc_test.ko" rpc_insmod krpc_test
rpc_check "TCP transport" krpc_test transport 2
rpc_check "server listens" krpc_test server_start "$RPC_PORT"
rpc_check "kernel client connects" krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
ktap_check "krpc's client took its server's ka_timeout_ms (ka_peer_ms=$ka)" \
	rpc_ka_peer client $ka
ktap_check "krpc's server took its client's ka_timeout_ms (ka_peer_ms=$ka)" \
	rpc_ka_peer server $ka

open0=$(krpc_stat conns_open)
perr0=$(krpc_stat protocol_errors)
rej0=$(krpc_stat conns_rejected)

# peer MODE [MS]: run tcp_peer, show what it said
peer() { pp "$peer" "$1" "$KRPC_ADDR4" "$RPC_PORT" ${2:+"$2"}; }
# still_serving: the kernel client is unaffected
still_serving() { rpc_do krpc_test echo 5000 2; }
# settle: the server's side of the peer's connection is gone
settle() { rpc_conns_back "$open0"; }
# logged TEXT: the kernel logged TEXT since the last klog_mark
logged() { klog_since | grep -qF -- "$1"; }
logged_re() { klog_since | grep -qE -- "$1"; }
out=$(mktemp)	# the guest's tmpfs
out_has() { grep -q "$1" "$out"; }
# fok: the background peer (fpid) succeeded; what it said shown
fok() { wait $fpid; local r=$?; sed 's/^/# /' "$out"; return $r; }

ktap_check "byte-at-a-time hello and echo call answered exactly" peer good
ktap_check "connection gone" settle

# Hello: MODE LOGGED (the server's "rejecting ADDR over TCP: REASON
# (ERRNO), value VALUE"; the peer checks reason and value on the wire)
n=0
while read -r m why; do
	n=$((n + 1))
	klog_mark
	ktap_check "$m: exact reject, then closed" peer "$m"
	ktap_check "$m: connection gone" settle
	ktap_check "$m: rejection counted" test "$(krpc_stat conns_rejected)" = $((rej0 + n))
	ktap_check "$m: logged \"$why\"" logged "$why"
	ktap_check "$m: kernel client still served" still_serving
done <<'EOF'
magic		over TCP: not krpc (-71), value 0
version		over TCP: protocol version (-93), value 1
kalow		over TCP: parameters (-22), value 200
kahigh		over TCP: parameters (-22), value 600000
kareserved	over TCP: parameters (-22), value 0
EOF

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


# The peer announces a keepalive timeout of T and stays idle.
echo "# + $peer ka $KRPC_ADDR4 $RPC_PORT $T $ka &"
"$peer" ka "$KRPC_ADDR4" "$RPC_PORT" "$T" "$ka" > "$out" 2>&1 &
fpid=$!
ktap_check "ka: the server took the peer's ka_timeout_ms (ka_peer_ms=$T)" \
	wait_for $((5 * RPC_SLOW)) rpc_ka_peer server "$T"
ktap_check "ka: the answer announced ka_timeout_ms $ka, kept alive" fok
ktap_check "ka: the server sent something at least every $T ms while idle" \
	rpc_gap_below "$out" "$T"
ktap_check "ka: connection gone" settle
# Backpressure.  The peer asks depth 16 and is granted it (the server's
# depth is the module default, larger): its connection holds at most
# 2 x 16 requests alive.  Nothing else has requests alive while we sample.
rbound=32
wait_s=$((15 * RPC_SLOW))
# pconn PORT KEY: a field of the server's connection to the peer at PORT
pconn() { conn_field "$(rpc_peer_conn "$1")" "$2"; }
peer_port() { sed -n 's/^port //p' "$out"; }
paused() { [ "$(pconn "$(peer_port)" rx_pauses)" -gt 0 ] 2>/dev/null; }
# held_at_bound PID EXACT: 5 samples, 0.3 s apart, while the peer is held:
# requests alive never above the bound (EXACT: always at it), no credit
# left on the connection, the peer still running; the largest seen last.
max_live=0
held_at_bound() {
	local i live cr
	max_live=0
	for i in 1 2 3 4 5; do
		live=$(krpc_stat reqs_live)
		cr=$(pconn "$(peer_port)" credits)
		echo "# sample $i: reqs_live $live credits $cr"
		[ "$live" -le $rbound ] || return 1
		[ "$1" != exact ] || [ "$live" = $rbound ] || return 1
		[ "$live" -gt $max_live ] && max_live=$live
		kill -0 "$2" 2>/dev/null || { log "the peer is not held back"; return 1; }
		sleep 0.3
	done
	[ "$cr" = 0 ]
}
reqs_gone() { [ "$(krpc_stat reqs_live)" = 0 ]; }

# gate_peer MODE COUNT: with the gate closed, tcp_peer MODE sends COUNT
# one-way messages at it, in the background (fpid, its output in $out);
# it connects and the server stops reading.  The kernel client's last echo
# is gone first: a reply sent by reference keeps its request alive until
# the client's (maybe delayed) ACK, and the samples count every request.
gate_peer() {
	ktap_check "$1: no request alive before" wait_for "$wait_s" reqs_gone
	rpc_check "gate closed" krpc_test gate_close
	echo "# + $peer $1 $KRPC_ADDR4 $RPC_PORT $2 &"
	"$peer" "$1" "$KRPC_ADDR4" "$RPC_PORT" "$2" > "$out" 2>&1 &
	fpid=$!
	ktap_check "$1: peer connected" wait_for "$wait_s" out_has "^port "
	ktap_check "$1: server stops reading (rx_pauses > 0)" wait_for "$wait_s" paused
}

# One-way flood: every message is held at the gate until it opens.
count=8000
gate_peer flood $count
ktap_check "flood: exactly $rbound requests alive, no credit, peer held back" \
	held_at_bound exact $fpid
ktap_check "flood: the gate holds exactly $rbound" \
	sh -c "echo gate_stat > /sys/kernel/debug/krpc_test/cmd &&
	       grep -q 'held $rbound\$' /sys/kernel/debug/krpc_test/log"
ktap_check "flood: kernel client still served" still_serving
rpc_check "gate opens" krpc_test gate_open
ktap_check "flood: all $count messages and the final call went through" fok
ktap_check "flood: connection gone" settle
ktap_check "flood: no request left" wait_for "$wait_s" reqs_gone
rpc_check "flood: the handler got exactly $count" krpc_test gate_stat $count

# A graceful close while held back: the peer sends one-way messages past
# the bound, then its FIN, with most of them unread behind the pause.  The
# server keeps the connection, reads to the end once the gate opens, hands
# every message to the handler, and only then closes its side.
fcount=100
gate_peer fin $fcount
ktap_check "fin: the peer closed its side" wait_for "$wait_s" out_has "^fin after"
# the server's socket has the FIN before the gate opens
ktap_check "fin: the server's socket got the FIN (CLOSE-WAIT)" \
	wait_for "$wait_s" rpc_close_wait "$RPC_PORT" "$(peer_port)"
ktap_check "fin: after the FIN, still exactly $rbound requests alive, connection up" \
	held_at_bound exact $fpid
rpc_check "gate opens" krpc_test gate_open
ktap_check "fin: the server closed its side after the gate opened" fok
ktap_check "fin: connection gone" settle
ktap_check "fin: no request left" wait_for "$wait_s" reqs_gone
rpc_check "fin: the handler got all $fcount messages sent before the FIN" \
	krpc_test gate_stat $((count + fcount))

# A reset while held back ends the connection at once (protocol.rst): the
# requests the server had read stay with the handler until it lets them
# go (and keep the dead connection listed); the messages it had not read
# go with the connection.
reset0=$(rpc_resets_logged)
gate_peer reset $fcount
ktap_check "reset: the peer wrote its messages" wait_for "$wait_s" out_has "^flooded"
ktap_check "reset: exactly $rbound requests alive, connection up, peer held" \
	held_at_bound exact $fpid
kill -USR1 $fpid
ktap_check "reset: the peer reset its connection" fok
ktap_check "reset: torn down at once (dead, ECONNRESET, logged), the gate still closed" \
	rpc_reset_torn_down "$(peer_port)" "$reset0"
ktap_check "reset: the $rbound requests it had read still held" \
	test "$(krpc_stat reqs_live)" = $rbound
rpc_check "gate opens" krpc_test gate_open
ktap_check "reset: no request left" wait_for "$wait_s" reqs_gone
ktap_check "reset: connection gone with its last request" settle
rpc_check "reset: the handler got exactly the $rbound read before the reset" \
	krpc_test gate_stat $((count + fcount + rbound))

# No reader: 64 KiB replies pile up unread until the server stops reading.
echo "# + $peer noreader $KRPC_ADDR4 $RPC_PORT $((wait_s * 1000)) &"
"$peer" noreader "$KRPC_ADDR4" "$RPC_PORT" $((wait_s * 1000)) > "$out" 2>&1 &
npid=$!
ktap_check "noreader: peer held back" wait_for "$wait_s" out_has "held back"
ktap_check "noreader: at most $rbound requests alive, no credit" \
	held_at_bound max $npid
ktap_check "noreader: the bound was reached ($max_live)" test $max_live = $rbound
ktap_check "noreader: kernel client still served" still_serving
kill -USR1 $npid
nok() { wait $npid; local r=$?; sed 's/^/# /' "$out"; return $r; }
ktap_check "noreader: peer closes with its replies unread" nok
ktap_check "noreader: connection gone" settle
ktap_check "noreader: every request freed" wait_for "$wait_s" reqs_gone
rm -f "$out"

ktap_check "no other protocol error" test "$(krpc_stat protocol_errors)" = $((perr0 + 4))
ktap_check "server log names the reasons" \
	sh -c 'dmesg | grep -q "protocol error from .*payload longer than the negotiated maximum" &&
	       dmesg | grep -q "in the middle of a message"'

rpc_check "client disconnects" krpc_test disconnect

# A server that replies before it has read the request: the request's
# pages, still queued in the client's socket, may not go back to the pool
# (and be refilled for the next call) until TCP let go of them.
eport=$((RPC_PORT + 7))
echo "# + $peer early_reply 0.0.0.0 $eport 1048576 &"
"$peer" early_reply 0.0.0.0 "$eport" 1048576 > "$out" 2>&1 &
epid=$!
ktap_check "early_reply: peer listens" wait_for "$wait_s" out_has listening
rpc_check "kernel client connects to the peer" \
	krpc_test connect "$KRPC_ADDR4" "$eport"
ktap_check "early_reply: the peer announced no timeout (ka_peer_ms=0)" \
	rpc_ka_peer client 0
rpc_check "early_reply: both calls complete" krpc_test early_reply 1048576
eok() { wait $epid; local r=$?; sed 's/^/# /' "$out"; return $r; }
ktap_check "early_reply: the first request reached the peer unchanged" eok
rpc_check "client disconnects from the peer" krpc_test disconnect

# serve MODE ARGS...: start tcp_peer MODE on eport (fpid), wait until it
# listens; it checks that the client announces a ka_timeout_ms of $ka
serve() {
	local m=$1
	shift
	echo "# + $peer $m 0.0.0.0 $eport $* &"
	"$peer" "$m" 0.0.0.0 "$eport" "$@" > "$out" 2>&1 &
	fpid=$!
	wait_for "$wait_s" out_has listening
}

# The peer answers with a keepalive timeout of T: the kernel client keeps
# the idle connection alive within it.
ktap_check "serve_ka: peer listens" serve serve_ka "$T" "$ka"
rpc_check "serve_ka: kernel client connects" \
	krpc_test connect "$KRPC_ADDR4" "$eport"
ktap_check "serve_ka: the client took the peer's ka_timeout_ms (ka_peer_ms=$T)" \
	rpc_ka_peer client "$T"
ktap_check "serve_ka: the peer watched the idle connection" \
	wait_for "$wait_s" rpc_idle_done "$out" "$fpid"
ktap_check "serve_ka: the client sent something at least every $T ms while idle" \
	rpc_gap_below "$out" "$T"
rpc_check "serve_ka: kernel client disconnects" krpc_test disconnect
ktap_check "serve_ka: the peer saw the client close" fok

# One of 100 ms, below krpc's range: the client refuses the answer.
klog_mark
ktap_check "serve_kabad: peer listens" serve serve_kabad "$ka"
rpc_check "serve_kabad: connect fails with -EPROTO" \
	krpc_test connect_fail "$KRPC_ADDR4" "$eport" 71
ktap_check "serve_kabad: the client closed" fok
ktap_check "serve_kabad: logged (-22)" \
	logged_re "bad handshake answer from $KRPC_ADDR4:[0-9]+ \\(-22\\)"

# A server that stays alive (a keepalive every 100 ms) but takes nothing
# after the hello: its window shuts on a 1 MiB request, whose pages stay
# in the client's socket.  The call times out, its buffers still there;
# ka_timeout_ms later the client resets the connection (-ETIMEDOUT,
# counted, logged) and the call completes.  The same for a call the
# server answers without taking the request, and for a caller killed
# while it waits in krpc_call_sync(): it goes, instead of waiting for the
# buffers for ever.
# stuck_logged N HOW: N "call ... HOW, but its request ... ; resetting"
# lines since klog_mark
stuck_logged() {
	test "$(klog_since | grep -cE "conn [0-9]+: call 0x[0-9a-f]+ $2, but its request (not taken|unacknowledged) for [0-9]+ ms; resetting")" = "$1"
}
stuck=$((10000 * RPC_SLOW))
st0=$(krpc_stat tcp_stuck_resets)
n=0
for how in abandoned answered; do
	n=$((n + 1))
	case $how in
	abandoned) parg="" karg="" ;;
	answered)  parg=answer karg=answered ;;
	esac
	klog_mark
	ktap_check "serve_stuck ($how): peer listens" \
		serve serve_stuck $stuck $parg
	rpc_check "serve_stuck ($how): kernel client connects" \
		krpc_test connect "$KRPC_ADDR4" "$eport"
	rpc_check "serve_stuck ($how): a 1 MiB call completes when the client resets ka_timeout_ms later" \
		krpc_test abandon 1048576 $ka $karg
	ktap_check "serve_stuck ($how): one reset counted (tcp_stuck_resets)" \
		test "$(krpc_stat tcp_stuck_resets)" = $((st0 + n))
	ktap_check "serve_stuck ($how): one log line says why" stuck_logged 1 $how
	ktap_check "serve_stuck ($how): the peer saw the client close, with bytes unread" fok
	rpc_check "serve_stuck ($how): kernel client disconnects" krpc_test disconnect
done

klog_mark
ktap_check "serve_stuck (kill): peer listens" serve serve_stuck $stuck
rpc_check "serve_stuck (kill): kernel client connects" \
	krpc_test connect "$KRPC_ADDR4" "$eport"
# A 1 MiB echo, its call timeout (30 s) beyond this part: the kill ends it.
echo "# + echo 'echo 1048576 1' > /sys/kernel/debug/krpc_test/cmd &"
sh -c 'echo "echo 1048576 1" > /sys/kernel/debug/krpc_test/cmd' &
kpid=$!
# writing: the request is in the client's socket (more than a window)
writing() {
	[ "$(ss -Htn state established "( dport = :$eport )" |
	     awk '{ print $2 }')" -gt 8192 ] 2>/dev/null
}
ktap_check "serve_stuck (kill): the request is being written" \
	wait_for "$wait_s" writing
t0=$(date +%s%N)
kill -9 $kpid
gone() { ! kill -0 $kpid 2>/dev/null; }
ktap_check "serve_stuck (kill): the killed caller returns within 3 x ka_timeout_ms" \
	wait_for $((3 * ka / 1000 + 1)) gone
ms=$((($(date +%s%N) - t0) / 1000000))
wait $kpid 2>/dev/null
log "the killed caller returned after $ms ms (ka_timeout_ms $ka)"
ktap_check "serve_stuck (kill): not before ka_timeout_ms" test $ms -ge $ka
ktap_check "serve_stuck (kill): the connection was reset (dead, -ETIMEDOUT)" \
	sh -c 'test "$(sed -n "s/^reason //p" /sys/kernel/debug/krpc_test/info)" = -110'
ktap_check "serve_stuck (kill): one more reset counted" \
	test "$(krpc_stat tcp_stuck_resets)" = $((st0 + 3))
ktap_check "serve_stuck (kill): one log line says why" stuck_logged 1 abandoned
ktap_check "serve_stuck (kill): the peer saw the client close, with bytes unread" fok
rpc_check "serve_stuck (kill): kernel client disconnects" krpc_test disconnect
rm -f "$out"

rpc_check "server stops" krpc_test server_stop
ktap_check "no connection, call or request left" rpc_assert_idle
ktap_check "rmmod krpc_test" rpc_rmmod krpc_test
ktap_check "rmmod krpc" krpc_unload
ktap_check "nothing left after rmmod" krpc_assert_gone
ktap_finish
