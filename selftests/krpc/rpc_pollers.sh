#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Poller threads and their CPUs (rdma_poll.c).  With poll_threads > 1,
# krpc_poll/N is made affine to the (N mod n)-th of the n online CPUs that
# kernel threads may use, so that pollers do not share a CPU while another
# idles; a single poller stays unbound.  Checked in debugfs krpc/pollers
# and in each thread's Cpus_allowed_list; the client's and the server's
# polled CQs go to different pollers (the least loaded), and each reaps its
# own; the affinity is not locked (taskset moves a poller, and echoes still
# complete); a poller's CPU may go offline under traffic (the scheduler
# moves it, echoes still complete, the CPU comes back).  RDMA only.
# shellcheck source=selftests/krpc/rpc_lib.sh
. "$(dirname "$0")/rpc_lib.sh"

krpc_loaded && ktap_skip_all "krpc already loaded"
[ "$KRPC_TRANSPORT" = rdma ] || ktap_skip_all "pollers are RDMA's"
online=$(cat /sys/devices/system/cpu/online)
[ "$(nproc)" -ge 2 ] || ktap_skip_all "one CPU ($online)"

cleanup() {
	rpc_rmmod krpc_test
	krpc_unload
}
trap cleanup EXIT

PF=/sys/kernel/debug/krpc/pollers
# field N KEY: KEY's value on poller N's line of krpc/pollers
field() { sed -n "s/^poller=$1 .*\<$2=\([^ ]*\).*/\1/p" "$PF"; }
# allowed N: the CPUs poller N may run on, as the scheduler has them
allowed() { awk '/^Cpus_allowed_list:/ { print $2 }' "/proc/$(field "$1" pid)/status"; }
# cpus: the online CPUs, in order, one per line
cpus() {
	local r a b
	for r in ${online//,/ }; do
		a=${r%-*} b=${r#*-}
		seq "$a" "$b"
	done
}
mapfile -t cpu < <(cpus)

# poll_threads=3 on a guest of 2 or more CPUs: the third wraps when there
# are 2.  KRPC_CQ_POLL on both ends with poll_usecs 0.
ktap_check "insmod krpc.ko poll_threads=3" rpc_krpc_load poll_threads=3 poll_usecs=0
ktap_check "insmod krpc_test.ko" rpc_insmod krpc_test
ktap_check "no poller before the first polled CQ" test ! -s "$PF"
rpc_do krpc_test cq_mode 2
ktap_check "server (KRPC_CQ_POLL) listens" \
	rpc_do krpc_test server_start "$RPC_PORT" "$KRPC_ADDR4"
ktap_check "client (KRPC_CQ_POLL) connects" \
	rpc_do krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"
log "pollers: $(tr '\n' ';' < "$PF") online CPUs $online"
ktap_check "three pollers" test "$(wc -l < "$PF")" = 3
for n in 0 1 2; do
	want=${cpu[n % ${#cpu[@]}]}
	ktap_check "krpc_poll/$n placed on CPU $want" test "$(field $n cpu)" = "$want"
	ktap_check "krpc_poll/$n may run on CPU $want only" test "$(allowed $n)" = "$want"
done
ktap_check "the two CQs on pollers 0 and 1, none on 2" \
	test "$(field 0 cqs) $(field 1 cqs) $(field 2 cqs)" = "1 1 0"

r0=$(field 0 reaped) r1=$(field 1 reaped)
ktap_check "200 echoes of 8 KiB" rpc_do krpc_test echo 8192 200
# each echo: a send and a receive completion on each end, at least
d0=$(($(field 0 reaped) - r0)) d1=$(($(field 1 reaped) - r1))
log "reaped: poller 0 +$d0, poller 1 +$d1, poller 2 $(field 2 reaped)"
ktap_check "poller 0 reaped its CQ's completions (>= 400)" test "$d0" -ge 400
ktap_check "poller 1 reaped its CQ's completions (>= 400)" test "$d1" -ge 400
ktap_check "poller 2 reaped none" test "$(field 2 reaped)" = 0

# Not locked: an administrator may move a poller.
ktap_check "taskset moves krpc_poll/0 to every online CPU" \
	taskset -pc "$online" "$(field 0 pid)"
ktap_check "krpc_poll/0 may now run on $online" test "$(allowed 0)" = "$online"
ktap_check "200 echoes after the move" rpc_do krpc_test echo 8192 200

# CPU hotplug: krpc_poll/1's CPU goes offline while echoes run.
last=${cpu[${#cpu[@]} - 1]}
hp=/sys/devices/system/cpu/cpu$last/online
if [ "$(field 1 cpu)" = "$last" ] && [ -w "$hp" ]; then
	# a few seconds of echoes; the status is what counts
	rpc_do krpc_test echo 8192 20000 > /dev/null 2>&1 &
	bg=$!
	sleep 0.3
	ktap_check "CPU $last (krpc_poll/1's) goes offline under traffic" \
		eval 'kill -0 "$bg" && echo 0 > "$hp" && kill -0 "$bg"'
	ktap_check "krpc_poll/1 runs on another CPU now" \
		test "$(awk '{ print $39 }' "/proc/$(field 1 pid)/stat")" != "$last"
	ktap_check "the echoes under way complete" wait "$bg"
	ktap_check "200 echoes with CPU $last offline" \
		rpc_do krpc_test echo 8192 200
	ktap_check "CPU $last comes back" eval 'echo 1 > "$hp"'
	ktap_check "200 echoes with CPU $last back" \
		rpc_do krpc_test echo 8192 200
else
	ktap_check "CPU $last can be taken offline (krpc_poll/1 on it)" false
fi

ktap_check "disconnect" rpc_do krpc_test disconnect
ktap_check "server stops" rpc_do krpc_test server_stop
ktap_check "no CQ left on any poller" \
	test "$(field 0 cqs) $(field 1 cqs) $(field 2 cqs)" = "0 0 0"
rpc_do krpc_test cq_mode 0
ktap_check "no connection, call or request left" rpc_assert_idle
ktap_check "rmmod krpc_test" rpc_rmmod krpc_test
ktap_check "rmmod krpc" krpc_unload
ktap_check "no poller thread left" test "$(krpc_pollers)" = 0

# One poller: unbound, the scheduler places it.
ktap_check "insmod krpc.ko poll_threads=1" rpc_krpc_load poll_threads=1 poll_usecs=0
ktap_check "insmod krpc_test.ko" rpc_insmod krpc_test
rpc_do krpc_test cq_mode 2
ktap_check "server and client (KRPC_CQ_POLL) connect" \
	eval 'rpc_do krpc_test server_start "$RPC_PORT" "$KRPC_ADDR4" &&
	      rpc_do krpc_test connect "$KRPC_ADDR4" "$RPC_PORT"'
log "pollers: $(tr '\n' ';' < "$PF")"
ktap_check "one poller, serving both CQs" \
	test "$(wc -l < "$PF") $(field 0 cqs)" = "1 2"
ktap_check "krpc_poll/0 unbound (cpu=-)" test "$(field 0 cpu)" = -
ktap_check "krpc_poll/0 may run on every online CPU ($online)" \
	test "$(allowed 0)" = "$online"
ktap_check "200 echoes of 8 KiB" rpc_do krpc_test echo 8192 200
ktap_check "disconnect" rpc_do krpc_test disconnect
ktap_check "server stops" rpc_do krpc_test server_stop
rpc_do krpc_test cq_mode 0
ktap_check "no connection, call or request left" rpc_assert_idle
ktap_check "rmmod krpc_test" rpc_rmmod krpc_test
ktap_check "rmmod krpc" krpc_unload
ktap_check "nothing left after rmmod" krpc_assert_gone
ktap_finish
