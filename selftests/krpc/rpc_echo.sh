#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Echo over krpc with payloads checked byte by byte: empty, tiny, around the
# inline/rendezvous threshold, 64 KiB, 1 MiB and the configured maximum
# (16 MiB), over IPv4 and IPv6; then no RNR NAK, no data-path registration
# and (RDMA) no copy may have happened.  rpc_echo_tcp.sh runs it over TCP,
# where each payload must be copied exactly once (on receive) and sent by
# reference.  rpc_echo_poll.sh runs it with poll_usecs set: every RDMA
# completion must then be reaped by a krpc_poll thread (none otherwise).
# Without it, Soft-RoCE being a software device, they are reaped per event
# from krpc's own CQs (rdma_cq.c: in softirq, one call at a time, or on its
# work queue, with many in flight: both are checked); with
# cq_shared=1 (rpc_echo_shared.sh) from ib_core's shared pool, never per
# event, as a hardware device's.
# shellcheck source=selftests/krpc/rpc_lib.sh
. "$(dirname "$0")/rpc_lib.sh"

krpc_loaded && ktap_skip_all "krpc already loaded"
MAX=$((16 << 20))

cleanup() {
	[ -e /sys/kernel/debug/krpc ] && echo 0 > /sys/kernel/debug/krpc/fault_cq_irq_work
	rpc_rmmod krpc_test
	krpc_unload
}
trap cleanup EXIT

rnr0=$(rpc_rxe_rnr)
ktap_check "insmod krpc.ko max_msg=$MAX" \
	rpc_krpc_load max_msg=$MAX pool_large=4 pool_small=1024
ktap_check "insmod krpc_test.ko" rpc_insmod krpc_test
rpc_check "server listens on [::]:$RPC_PORT" krpc_test server_start "$RPC_PORT" ::
rpc_check "client connects to $KRPC_ADDR4" \
	krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"

inl=$(rpc_info krpc_test inline_max)
max=$(rpc_info krpc_test max_msg)
log "inline_max $inl max_msg $max"
ktap_check "negotiated max_msg is $MAX" test "$max" = $MAX
for size in 0 1 63 4096 $((inl - 1)) $inl $((inl + 1)) 65536 1048576 $max; do
	rpc_check "echo $size bytes" krpc_test echo "$size" 3
done
rpc_check "echo through a NOSLEEP handler" krpc_test nosleep_echo 100 10
p0=$(krpc_stat cq_polled)
e0=$(rpc_ev_reaped)
w0=$(krpc_stat cq_reaped_work) i0=$(krpc_stat cq_irq_work)
rpc_check "echo 8 KiB x 200" krpc_test echo 8192 200
p1=$(krpc_stat cq_polled)
e1=$(rpc_ev_reaped)
w1=$(krpc_stat cq_reaped_work) i1=$(krpc_stat cq_irq_work)
log "200 echoes: cq_polled $p0 -> $p1, $(krpc_pollers) poller threads;" \
	"per event: softirq $(krpc_stat cq_reaped_softirq)," \
	"work $(krpc_stat cq_reaped_work) (in all);" \
	"process-context events sent to softirq by irq_work $((i1 - i0))"
if [ -n "${KRPC_POLL_USECS:-}" ] && [ "$KRPC_TRANSPORT" = rdma ]; then
	# each call: at least two sends and two receives, both sides here
	ktap_check "200 echoes: at least 800 completions reaped by pollers" \
		test $((p1 - p0)) -ge 800
	ktap_check "one poller thread (poll_threads=1)" test "$(krpc_pollers)" = 1
	ktap_check "200 echoes: none reaped per event" test "$e1" = "$e0"
else
	ktap_check "no completion reaped by a poller" test "$p1" = 0
	ktap_check "no poller thread" test "$(krpc_pollers)" = 0
fi
if [ -z "${KRPC_POLL_USECS:-}" ] && [ "$KRPC_TRANSPORT" = rdma ]; then
	if [ "${KRPC_CQ_SHARED:-0}" = 1 ]; then
		# ib_core's shared pool, as a hardware device's CQs
		ktap_check "200 echoes: none reaped per event (cq_shared=1)" \
			test "$e1" = 0
	else
		# Soft-RoCE is a software device: its CQs are krpc's own
		ktap_check "200 echoes: at least 800 completions reaped per event" \
			test $((e1 - e0)) -ge 800
		# One call at a time: each completion is reaped on the CPU
		# that made it, in softirq (rdma_cq.c), never queued.
		ktap_check "200 echoes, one at a time: none reaped on the work queue" \
			test "$w1" = "$w0"
		# Many calls in flight: where Soft-RoCE completes from
		# process context (6.12: irq_work used above), the events
		# go to the work queue, reaped beside Soft-RoCE's work.
		rpc_check "storm of inline calls (1 s)" krpc_test storm_start 100
		sleep 1
		rpc_check "storm: every call completed once" krpc_test storm_stop
		w2=$(krpc_stat cq_reaped_work)
		log "storm: reaped on the work queue $((w2 - w1))"
		if [ "$i1" -gt "$i0" ]; then
			ktap_check "storm: completions reaped on the work queue" \
				test "$w2" -gt "$w1"
		else
			ktap_check "storm: this device completes in interrupt context: none reaped on the work queue" \
				test "$w2" = "$w1"
		fi
		# The irq_work path on every kernel (fault_cq_irq_work sends
		# events in softirq through it too: 6.1's Soft-RoCE, the
		# debug kernel), echoes and a teardown with it in use.
		echo 1 > /sys/kernel/debug/krpc/fault_cq_irq_work
		i2=$(krpc_stat cq_irq_work)
		rpc_check "echo 8 KiB x 50, events through the irq_work" \
			krpc_test echo 8192 50
		i3=$(krpc_stat cq_irq_work)
		log "50 echoes: events sent to softirq by irq_work $((i3 - i2))"
		ktap_check "50 echoes: at least 100 events through the irq_work" \
			test $((i3 - i2)) -ge 100
		rpc_check "client disconnects (irq_work in use)" krpc_test disconnect
		rpc_check "client connects again" \
			krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
		rpc_check "echo 8 KiB x 10, events through the irq_work" \
			krpc_test echo 8192 10
		echo 0 > /sys/kernel/debug/krpc/fault_cq_irq_work
	fi
fi
if [ "$KRPC_TRANSPORT" = tcp ]; then
	ktap_check "TCP: no completion reaped per event" test "$e1" = 0
fi
if [ "$KRPC_TRANSPORT" = tcp ]; then
	# Each payload is copied once, by the receiving side (socket to pool
	# buffer), and sent by reference: 2 copies per echo, not 4.  Client
	# and server are in this guest: the counters sum both.
	c0=$(krpc_stat conn_copies)
	z0=$(krpc_stat tcp_zc_sends)
	rpc_check "echo 4 KiB x 50" krpc_test echo 4096 50
	rpc_check "echo 64 KiB + 1 x 4 (two segments)" krpc_test echo 65537 4
	rpc_check "echo $max bytes x 2" krpc_test echo "$max" 2
	c1=$(krpc_stat conn_copies)
	z1=$(krpc_stat tcp_zc_sends)
	log "56 echoes: conn_copies $c0 -> $c1, tcp_zc_sends $z0 -> $z1"
	ktap_check "56 echoes: one copy per payload received, 112" \
		test $((c1 - c0)) = 112
	ktap_check "56 echoes: every payload sent by reference, 112" \
		test $((z1 - z0)) = 112
fi
rpc_check "no RNR NAK or data-path registration; copies as the transport makes them" \
	krpc_test counters
ktap_check "connection is over $KRPC_TRANSPORT" \
	test "$(rpc_info krpc_test transport)" = "$RPC_XPRT"
# Each side announced its ka_timeout_ms in the handshake; the other keeps it.
kato=$(cat /sys/module/krpc/parameters/ka_timeout_ms)
ktap_check "the client holds the server's keepalive timeout ($kato ms)" \
	rpc_ka_peer client "$kato"
ktap_check "the server holds the client's keepalive timeout ($kato ms)" \
	rpc_ka_peer server "$kato"
if [ "$KRPC_TRANSPORT" = rdma ]; then
	ktap_check "rdv calls granted keys" \
		test "$(rpc_info krpc_test mr_grants)" -gt 0
fi
ktap_check "device saw no RNR NAK" test "$(rpc_rxe_rnr)" = "$rnr0"
# Completions krpc reaped itself (pollers or per event; not ib_core's pool)
rpc_reaped() { echo $(($(krpc_stat cq_polled) + $(rpc_ev_reaped))); }
if [ "$KRPC_TRANSPORT" = rdma ]; then
	# A client's eager requests go in unsignaled SENDs (parameter
	# unsignaled=1): per echo, both sides here, the two receives and the
	# reply's SEND complete, the request's SEND does not.  With 0, four.
	# The reply comes before any completion says such a SEND is done, so
	# each answered call leaves its request buffer with the transport
	# (unsig_holds) until one does: the next signaled request's, or the
	# idle client's keepalive's (a keepalive between a request and its
	# reply would free that one sooner: hence "2 fewer" at most).
	u0=$(krpc_stat conn_unsignaled)
	r0=$(rpc_reaped)
	h0=$(krpc_stat unsig_holds)
	rpc_check "echo 64 B x 200" krpc_test echo 64 200
	u1=$(krpc_stat conn_unsignaled)
	r1=$(rpc_reaped)
	h1=$(krpc_stat unsig_holds)
	log "200 echoes of 64 B: conn_unsignaled +$((u1 - u0)), reaped +$((r1 - r0)), unsig_holds +$((h1 - h0))"
	ktap_check "200 echoes of 64 B: at least 190 requests unsignaled" \
		test $((u1 - u0)) -ge 190
	ktap_check "200 echoes of 64 B: the answered unsignaled requests' buffers kept past the reply" \
		test $((h1 - h0)) -ge $((u1 - u0 - 2)) -a $((h1 - h0)) -le $((u1 - u0))
	unsig_none() { [ "$(krpc_stat unsig_held)" = 0 ]; }
	ktap_check "idle client: its keepalive's completion gives every kept buffer back" \
		wait_for $((3 * RPC_SLOW)) unsig_none
	rpc_check "client disconnects (for unsignaled=0)" krpc_test disconnect
	echo 0 > /sys/module/krpc/parameters/unsignaled
	rpc_check "client connects, unsignaled=0" \
		krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
	u2=$(krpc_stat conn_unsignaled)
	r2=$(rpc_reaped)
	rpc_check "echo 64 B x 200, every SEND signaled" krpc_test echo 64 200
	u3=$(krpc_stat conn_unsignaled)
	r3=$(rpc_reaped)
	echo 1 > /sys/module/krpc/parameters/unsignaled
	log "200 echoes of 64 B, unsignaled=0: conn_unsignaled +$((u3 - u2)), reaped +$((r3 - r2))"
	ktap_check "unsignaled=0: no request unsignaled" test "$u3" = "$u2"
	ktap_check "unsignaled=0: no buffer kept past its reply" \
		test "$(krpc_stat unsig_holds)" = "$h1"
	if [ "${KRPC_CQ_SHARED:-0}" != 1 ]; then
		ktap_check "200 echoes of 64 B: at most 650 completions (3 per echo, and control messages)" \
			test $((r1 - r0)) -le 650
		ktap_check "unsignaled=0: at least 800 completions (4 per echo)" \
			test $((r3 - r2)) -ge 800
	fi
fi
rpc_check "client disconnects" krpc_test disconnect

rpc_check "client connects to [$KRPC_ADDR6]" \
	krpc_test connect "$KRPC_ADDR6" "$RPC_PORT"
rpc_check "echo 1 MiB over IPv6" krpc_test echo 1048576 2
rpc_check "client disconnects" krpc_test disconnect

# The send queue holds the longest chain whatever the depth: a 16 MiB
# request is 16 READs at 16 SGEs, its reply 16 WRITEs and a SEND.
rpc_check "client connects with depth 1" \
	krpc_test connect "$KRPC_ADDR4" "$RPC_PORT" 1
rpc_check "echo $max bytes at depth 1" krpc_test echo "$max" 2
rpc_check "client disconnects" krpc_test disconnect
rpc_check "server stops" krpc_test server_stop
rpc_check "server listens on $KRPC_ADDR4:$RPC_PORT" \
	krpc_test server_start "$RPC_PORT" "$KRPC_ADDR4"
rpc_check "client connects to $KRPC_ADDR4" \
	krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
rpc_check "echo 64 KiB" krpc_test echo 65536 2
rpc_check "client disconnects" krpc_test disconnect
rpc_check "server stops" krpc_test server_stop
ktap_check "no connection, call or request left" rpc_assert_idle
ktap_check "rmmod krpc_test" rpc_rmmod krpc_test
ktap_check "rmmod krpc" krpc_unload
ktap_check "nothing left after rmmod" krpc_assert_gone
ktap_finish
