#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# krpc-bench cannot rot: a few hundred calls on each path, every payload
# byte checked (--verify), and its JSON must be sane: the calls it was
# asked for, no error, no wrong reply, percentiles in order, no copy (but
# over TCP, which copies and counts it) and no data-path registration.  A transport this build lacks is refused with
# exit status 3, never measured over another one.
# shellcheck source=selftests/krpc/rpc_lib.sh
. "$(dirname "$0")/rpc_lib.sh"

krpc_loaded && ktap_skip_all "krpc already loaded"
rpc_bench_setup

# sane_json N JSON: the run's result is sane for N calls or more
sane_json() {
	python3 -c '
import json, sys
n, r = int(sys.argv[1]), json.loads(sys.argv[2])
lat = [r[k] for k in ("lat_min_us", "lat_p50_us", "lat_p99_us",
                      "lat_p999_us", "lat_max_us")]
ok = (r["calls"] >= n and r["errors"] == 0 and r["bad"] == 0 and
      r.get("unmeasured_errors", 0) == 0 and
      r["verify"] == 1 and r["data_path_regs"] == 0 and
      # TCP copies each payload (and counts it); RDMA (and auto, which
      # finds rxe0 here) never does.
      (r["copies"] > 0 if r["transport"] == "tcp" else r["copies"] == 0) and
      r["calls_per_s"] > 0 and r["cpu_us_per_call"] >= 0 and
      r["pool_kb"] > 0 and all(x > 0 for x in lat) and lat == sorted(lat) and
      r["lat_min_us"] <= r["lat_avg_us"] <= r["lat_max_us"])
sys.exit(0 if ok else 1)' "$1" "$2"
}

# bench_ok DESCRIPTION N ARGS...: run krpc-bench for N calls, check it
bench_ok() {
	local what=$1 n=$2 out rc=0
	shift 2
	echo "# + krpc-bench --json --verify -n $n -w 0.2 $*"
	out=$("$bench" --json --verify -n "$n" -w 0.2 "$@" 2>&1) || rc=$?
	log "$out"
	if [ $rc = 0 ]; then
		ktap_check "$what" sane_json "$n" "$(tail -n1 <<< "$out")"
	else
		ktap_fail "$what (exit status $rc)"
	fi
}

ktap_check "insmod krpc.ko" rpc_krpc_load pool_large=16
ktap_check "--caps lists rdma" eval "\"$bench\" --caps | grep -q '\"rdma\"'"
bench_ok "user path, 4000 B, depth 4" 300 -s 4000 -d 4
bench_ok "user path, 64 KiB to 100 B, 2 threads x 2 conns, SQPOLL" 100 \
	-s 65536 -r 100 -d 2 -T 2 -c 2 --sqpoll
bench_ok "user path, 0 B, busy polling" 300 -s 0 --busy-poll
bench_ok "user path, 512 B, 2 threads, DEFER_TASKRUN" 300 -s 512 -T 2 -d 4 --defer
# Completion queues: every result (calls, fetches) arrives through the
# mapped queues, written by the completion handlers.
q0=$(krpc_stat ucq_posted)
bench_ok "user path, 4000 B, depth 8, completion queues" 300 -s 4000 -d 8 --cq
bench_ok "user path, 64 KiB, completion queues, SQPOLL" 100 -s 65536 --cq --sqpoll
bench_ok "user path, 0 B, completion queues, busy polling" 200 -s 0 --cq --busy-poll
q1=$(krpc_stat ucq_posted)
log "completion queue runs: ucq_posted $q0 -> $q1"
ktap_check "completion queue runs: at least 1200 entries (call + fetch each)" \
	test $((q1 - q0)) -ge 1200
ktap_check "--cq with --defer is refused (exit 2)" \
	eval "\"$bench\" --cq --defer -n 1 > /dev/null 2>&1; test \$? = 2"
ktap_check "--defer with --sqpoll is refused (exit 2)" \
	eval "\"$bench\" --defer --sqpoll -n 1 > /dev/null 2>&1; test \$? = 2"
bench_ok "kernel path, 64 B, depth 8" 300 -p kernel -s 64 -d 8
bench_ok "kernel path, 1 MiB, depth 2" 20 -p kernel -s 1048576 -d 2
ktap_check "krpc_bench.ko was unloaded after the run" \
	test ! -d /sys/module/krpc_bench
# Polled CQs switched on at run time: connections made from then on are
# served by a krpc_poll thread; switched off, the next ones are not.
echo 50 > /sys/module/krpc/parameters/poll_usecs
p0=$(krpc_stat cq_polled)
bench_ok "kernel path, 4 KiB, depth 8, polled CQs" 300 -p kernel -s 4096 -d 8
bench_ok "user path, 64 B, busy polling, polled CQs" 300 -s 64 --busy-poll
p1=$(krpc_stat cq_polled)
log "polled runs: cq_polled $p0 -> $p1"
ktap_check "polled runs: 600 calls, at least 2400 completions reaped by the poller" \
	test $((p1 - p0)) -ge 2400
echo 0 > /sys/module/krpc/parameters/poll_usecs
bench_ok "kernel path, 64 B, CQs shared again" 100 -p kernel -s 64
ktap_check "poll_usecs=0: no completion reaped by the poller" \
	test "$(krpc_stat cq_polled)" = "$p1"
# The connections choose (--cq-mode): polled with poll_usecs 0, and not
# polled with it set.
b1=$(krpc_stat busy_polled)
bench_ok "kernel path, 64 B, --cq-mode poll" 100 -p kernel -s 64 --cq-mode poll
bench_ok "user path, 64 B, --cq-mode poll, kernel busy polling" 100 -s 64 \
	--cq-mode poll --cq --kernel-poll
p2=$(krpc_stat cq_polled)
b2=$(krpc_stat busy_polled)
log "--cq-mode poll runs: cq_polled $p1 -> $p2, busy_polled $b1 -> $b2"
# 200 calls, four completions each, every one on a polled CQ: reaped by a
# poller or by the busy-polling process
ktap_check "--cq-mode poll, poll_usecs 0: 800 completions reaped by pollers or the busy poller" \
	test $((p2 - p1 + b2 - b1)) -ge 800 -a "$p2" -gt "$p1"
echo 50 > /sys/module/krpc/parameters/poll_usecs
bench_ok "kernel path, 64 B, --cq-mode irq, poll_usecs 50" 100 -p kernel \
	-s 64 --cq-mode irq
echo 0 > /sys/module/krpc/parameters/poll_usecs
ktap_check "--cq-mode irq: no completion reaped by the poller" \
	test "$(krpc_stat cq_polled)" = "$p2"
ktap_check "--cq-mode with an unknown mode is refused (exit 2)" \
	eval "\"$bench\" --cq-mode sometimes -n 1 > /dev/null 2>&1; test \$? = 2"
if "$bench" --caps | grep -q '"tcp"'; then
	bench_ok "user path over TCP, 64 B" 100 -t tcp -s 64
	bench_ok "user path over TCP, 64 KiB, depth 4" 50 -t tcp -s 65536 -d 4
	bench_ok "user path over TCP, 1 MiB, depth 2" 10 -t tcp -s 1048576 -d 2
	bench_ok "kernel path over TCP, 64 B, depth 8" 100 -p kernel -t tcp -s 64 -d 8
	bench_ok "kernel path over TCP, 1 MiB" 10 -p kernel -t tcp -s 1048576
	bench_ok "kernel path, auto" 100 -p kernel -t auto -s 4096
else
	"$bench" -t tcp -n 10 > /dev/null 2>&1
	rc=$?
	ktap_check "--transport tcp is refused (exit 3) without a TCP transport" \
		test $rc = 3
	"$bench" -t auto -p kernel -n 10 > /dev/null 2>&1
	rc=$?
	ktap_check "--transport auto is refused (exit 3) without a TCP transport" \
		test $rc = 3
fi
# Above one 64 KiB buffer: the pools' large buffers.
bench_ok "user path, 1 MiB, depth 2" 10 -s 1048576 -d 2
bench_ok "user path, completion queue, 100000 B request, 64 B reply" 20 \
	--cq -s 100000 -r 64
bench_ok "user path, 64 B request, 300000 B reply" 20 -s 64 -r 300000
ktap_check "user path: 64 MiB + 1 is refused (exit 3): one large buffer at most" \
	eval "\"$bench\" -s 67108865 -n 1 > /dev/null 2>&1; test \$? = 3"
# The last reference of a ring's file goes in a kernel worker.
idle() {
	local i
	for i in $(seq 50); do
		rpc_assert_idle > /dev/null && [ "$(krpc_stat files_open)" = 0 ] &&
			[ "$(krpc_stat ucq_live)" = 0 ] && return 0
		sleep 0.1
	done
	rpc_assert_idle
}
ktap_check "no connection, call, request, file or completion queue left" idle
ktap_check "rmmod krpc" krpc_unload
ktap_check "nothing left after rmmod" krpc_assert_gone
ktap_finish
