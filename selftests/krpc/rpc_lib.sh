# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Helpers shared by the rpc_*.sh tests: the test modules (krpc_test.ko,
# krpc_peer.ko) are driven through /sys/kernel/debug/<module>/cmd, one
# command per write; a failed write is a failed check, and the module's log
# explains it.

# shellcheck source=selftests/krpc/lib.sh
. "$(dirname "$0")/lib.sh"

RPC_PORT=${RPC_PORT:-18515}

# Transport the rpc tests run over: KRPC_TRANSPORT=rdma (default), tcp or
# auto; the *_tcp.sh tests are the same scripts with KRPC_TRANSPORT=tcp.
# RPC_XPRT is its enum krpc_xprt number, the value krpc_test.ko takes.
KRPC_TRANSPORT=${KRPC_TRANSPORT:-rdma}
case "$KRPC_TRANSPORT" in
rdma) RPC_XPRT=1 ;;
tcp)  RPC_XPRT=2 ;;
auto) RPC_XPRT=3 ;;
*)    echo "KRPC_TRANSPORT=$KRPC_TRANSPORT: want rdma, tcp or auto" >&2; exit 1 ;;
esac
echo "# transport: $KRPC_TRANSPORT"

# Debug kernels (KASAN, lockdep) under emulation are tens of times slower:
# stretch every timing the tests depend on by RPC_SLOW.
case "$(uname -r)" in
*debug*) RPC_SLOW=${RPC_SLOW:-20} ;;
*)       RPC_SLOW=${RPC_SLOW:-1} ;;
esac

# conn_field ID KEY: a field of connection ID in krpc/conns
conn_field() {
	sed -n "s/^conn=$1 .* $2=\([0-9]*\).*/\1/p" /sys/kernel/debug/krpc/conns
}

# rpc_ka_peer ROLE MS: a ROLE (client, server) connection took MS as the
# ka_timeout_ms its peer announced in the handshake (0: none)
rpc_ka_peer() {
	grep -q "^conn=[0-9]* role=$1 .* ka_peer_ms=$2 " \
		/sys/kernel/debug/krpc/conns
}

# rpc_idle_done FILE PID: the raw peer PID, writing to FILE, has measured
# an idle connection (its "idle: ..." line), or it is gone
rpc_idle_done() { grep -q "^idle: " "$1" || ! kill -0 "$2" 2>/dev/null; }

# rpc_gap_below FILE MS: the longest the raw peer waited for a message on
# the idle connection (its "idle: ... max gap G ms" line in FILE) is below MS
rpc_gap_below() {
	local g
	g=$(sed -n 's/^idle: .* max gap \([0-9]*\) ms.*/\1/p' "$1")
	log "max gap ${g:-none}, bound $2"
	[ -n "$g" ] && [ "$g" -lt "$2" ]
}

# client_conn_id: the id of the (one) client-side connection
client_conn_id() {
	sed -n 's/^conn=\([0-9]*\) role=client .*/\1/p' \
		/sys/kernel/debug/krpc/conns | head -n1
}

# rpc_peer_conn PORT: the id of the server-side connection whose peer is
# at PORT
rpc_peer_conn() {
	sed -n "s/^conn=\([0-9]*\) role=server .* peer=[^ ]*:$1 .*/\1/p" \
		/sys/kernel/debug/krpc/conns
}

# rpc_peer_reset PORT: the server's connection to the peer at PORT is dead,
# torn down by the peer's reset (reason -ECONNRESET); it stays listed
# while requests it read are still alive
rpc_peer_reset() {
	local id
	id=$(rpc_peer_conn "$1")
	[ -n "$id" ] && grep -q "^conn=$id .* state=dead reason=-104 " \
		/sys/kernel/debug/krpc/conns
}

# rpc_resets_logged: how many held connections the kernel log says a peer
# reset (tcp_rx.c tears them down at once, not by the keepalive)
rpc_resets_logged() { dmesg | grep -c "reset the connection while held back"; }

# rpc_reset_torn_down PORT RESETS0: the held connection of the peer at PORT
# that just reset it is dead with -ECONNRESET, torn down by the reset
# itself (logged: one more than RESETS0), not later by the keepalive
rpc_reset_torn_down() {
	wait_for $((5 * RPC_SLOW)) rpc_peer_reset "$1" || return 1
	[ "$(rpc_resets_logged)" = $(($2 + 1)) ] && return 0
	log "resets logged $(rpc_resets_logged), want $(($2 + 1))"
	return 1
}

# rpc_close_wait SPORT DPORT: our TCP socket from SPORT to DPORT is in
# CLOSE-WAIT: it got the peer's FIN and has not closed yet
rpc_close_wait() {
	ss -Htn state close-wait "( sport = :$1 and dport = :$2 )" | grep -q .
}

# server_conn_id: the id of the (first) server-side connection
server_conn_id() {
	sed -n 's/^conn=\([0-9]*\) role=server .*/\1/p' \
		/sys/kernel/debug/krpc/conns | head -n1
}

# rpc_krpc_load [PARAM=VALUE...]: insmod krpc.ko with timings scaled by
# RPC_SLOW, poll_usecs=$KRPC_POLL_USECS when that is set (the *_poll
# variants: RDMA completions reaped by poller threads) and
# cq_shared=$KRPC_CQ_SHARED when that is (rpc_echo_shared.sh: Soft-RoCE's
# CQs from ib_core's shared pool, as a hardware device's); later
# parameters override earlier ones.
rpc_krpc_load() {
	krpc_load ka_interval_ms=$((1000 * RPC_SLOW)) \
		ka_timeout_ms=$((5000 * RPC_SLOW)) \
		call_timeout_ms=$((30000 * RPC_SLOW)) \
		${KRPC_POLL_USECS:+poll_usecs=$KRPC_POLL_USECS} \
		${KRPC_CQ_SHARED:+cq_shared=$KRPC_CQ_SHARED} "$@"
}

# rpc_sleep_ms MS: sleep MS milliseconds.
rpc_sleep_ms() { sleep "$(($1 / 1000)).$(printf %03d $(($1 % 1000)))"; }

# rpc_ka_set INTERVAL_MS TIMEOUT_MS: change the keepalive parameters of a
# loaded krpc.  A new timeout applies at once, a new interval at each
# connection's next keepalive tick, at most half the old interval away:
# lower the interval first and wait until every tick runs on it and a
# keepalive under it has gone out (half the old interval, then one and a
# half new ones; half a new one more for the guest's scheduling), then
# lower the timeout.  Raising both, the timeout goes first.  Either order
# keeps timeout >= 2 x interval, which krpc enforces, at each step.
rpc_ka_set() {
	local kp=/sys/module/krpc/parameters old ms
	old=$(cat $kp/ka_interval_ms)
	if [ "$1" -lt "$old" ]; then
		echo "$1" > $kp/ka_interval_ms || return 1
		ms=$((old / 2 + 2 * $1))
		rpc_sleep_ms "$ms"
		echo "$2" > $kp/ka_timeout_ms
	else
		echo "$2" > $kp/ka_timeout_ms || return 1
		echo "$1" > $kp/ka_interval_ms
	fi
}

rpc_mod_dir() { echo "$KRPC_BUILD/selftests/krpc/module"; }

# rpc_ev_reaped: completions of software devices' own CQs (rdma_cq.c)
# reaped per event so far, in softirq and on krpc's work queue
rpc_ev_reaped() {
	echo $(($(krpc_stat cq_reaped_softirq) + $(krpc_stat cq_reaped_work)))
}

# rpc_insmod NAME: load krpc_test or krpc_peer (clients and servers over
# $KRPC_TRANSPORT until a "transport" command says otherwise)
rpc_insmod() {
	insmod "$(rpc_mod_dir)/$1.ko" slow="$RPC_SLOW" transport="$RPC_XPRT"
}

rpc_rmmod() { [ -d "/sys/module/$1" ] && rmmod "$1"; return 0; }

# rpc_do MODULE COMMAND...: run a command, show its log, return its status
rpc_do() {
	local mod=$1 ret=0
	shift
	echo "# $mod: $*"
	echo "$*" > "/sys/kernel/debug/$mod/cmd" 2>/dev/null || ret=1
	sed 's/^/#   /' "/sys/kernel/debug/$mod/log"
	return $ret
}

# rpc_check DESCRIPTION MODULE COMMAND...: one TAP line for a command
rpc_check() {
	local what=$1
	shift
	if rpc_do "$@"; then ktap_ok "$what"; else ktap_fail "$what"; fi
}

# rpc_info MODULE KEY: a value of the module's client connection
rpc_info() {
	awk -v k="$2" '$1 == k { print $2 }' "/sys/kernel/debug/$1/info"
}

# wait_for SECONDS COMMAND...: poll every 0.1 s until COMMAND succeeds
wait_for() {
	local n=$(($1 * 10))
	shift
	while ! "$@"; do
		n=$((n - 1))
		[ $n -gt 0 ] || return 1
		sleep 0.1
	done
}

# rpc_disc_is MODULE N: the module's client has had N disconnect
# callbacks.  The callback runs at the end of the teardown, after the
# connection is dead and its calls have failed: wait for it, with wait_for.
rpc_disc_is() { [ "$(rpc_info "$1" disconnects)" = "$2" ]; }

# rpc_conns_back N: conns_open is back to N within 5 s (a raw peer's
# connection, closed by the server or by the peer, is gone)
rpc_conns_is() { [ "$(krpc_stat conns_open)" = "$1" ]; }
rpc_conns_back() {
	wait_for $((5 * RPC_SLOW)) rpc_conns_is "$1" && return 0
	log "conns_open $(krpc_stat conns_open), want $1"
	return 1
}

# rpc_gate_passed, rpc_gate_held: krpc_test's gate (M_GATE), requests
# answered and held so far (gate_stat)
rpc_gate_stat() {
	echo gate_stat > /sys/kernel/debug/krpc_test/cmd &&
		cat /sys/kernel/debug/krpc_test/log
}
rpc_gate_passed() { rpc_gate_stat | sed -n 's/.*passed \([0-9]*\) held.*/\1/p'; }
rpc_gate_held() { rpc_gate_stat | sed -n 's/.*passed [0-9]* held \([0-9]*\).*/\1/p'; }

# rpc_steady N LO HI CMD...: N samples of CMD's output, 0.3 s apart (each
# logged), all one value in [LO, HI]; STEADY is the last sample.
rpc_steady() {
	local n=$1 lo=$2 hi=$3 i v prev= ok=0
	shift 3
	for i in $(seq "$n"); do
		v=$("$@")
		log "sample $i: $v"
		[ -n "$v" ] && [ "$v" -ge "$lo" ] && [ "$v" -le "$hi" ] || ok=1
		[ -z "$prev" ] || [ "$v" = "$prev" ] || ok=1
		prev=$v
		sleep 0.3
	done
	STEADY=$prev
	return $ok
}

# RNR NAKs the soft-RoCE device saw, sent and received (0 if no counters)
rpc_rxe_rnr() {
	local d=/sys/class/infiniband/$KRPC_RXE/ports/1/hw_counters n=0 f
	for f in rcvd_rnr_err send_rnr_err; do
		[ -r "$d/$f" ] && n=$((n + $(cat "$d/$f")))
	done
	echo $n
}

# Leak audit once every client and server is gone.
rpc_assert_idle() {
	local bad=0 s
	for s in conns_open calls_live reqs_live unsig_held; do
		if [ "$(krpc_stat $s)" != 0 ]; then
			log "$s is $(krpc_stat $s)"
			bad=1
		fi
	done
	return $bad
}

# rpc_bench_setup: $bench is krpc-bench (skip all if it is not built); on
# exit, krpc_bench.ko and krpc.ko are unloaded.
rpc_bench_setup() {
	bench=$KRPC_TOP/build/user/tools/krpc-bench
	[ -x "$bench" ] || ktap_bail "krpc-bench is not built"
	trap 'rpc_rmmod krpc_bench; krpc_unload' EXIT
}
