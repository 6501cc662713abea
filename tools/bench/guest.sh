#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The guest half of "make bench": measure every path on the test bed's rxe0
# link, one after the other in one boot, and append one JSON object per
# measurement to OUT (see report.py for the fields).
#
# Usage: guest.sh OUT [SIZE...]
# BENCH_PART=measure runs the measurements only, BENCH_PART=probe the
# probes only (kprobes and perf, which patch kernel text: tools/bench/run
# gives them a boot of their own, see testing.rst); default both.
# BENCH_KPROBES=0 leaves the kprobes out.  BENCH_PAIRS: rounds of the
# paired latency runs the targets are judged on (default 5).
set -u

out=$1
shift
sizes=${*:-64 512 4096 65536 1048576}
addr=${KRPC_ADDR4:-192.0.2.1}
dev=${KRPC_RXE:-rxe0}
kver=$(uname -r)
tmp=$(mktemp -d)
trace=/sys/kernel/debug/tracing

# In the paired rounds (pair_round set), every measurement is recorded as
# path "pair" with "what" (the path it measures) and "round".
pair_round=
pair_json() {	# pair_json PATH: the path and round fields of a record
	if [ -n "$pair_round" ]; then
		echo "\"path\":\"pair\",\"what\":\"$1\",\"round\":$pair_round"
	else
		echo "\"path\":\"$1\""
	fi
}

emit() {	# emit PATH SIZE DEPTH key=value...
	local path=$1 size=$2 depth=$3 kv json
	shift 3
	json="{\"kernel\":\"$kver\",$(pair_json "$path"),\"size\":$size,\"depth\":$depth"
	for kv in "$@"; do
		json="$json,\"${kv%%=*}\":${kv#*=}"
	done
	echo "$json}" >> "$out"
	echo "bench: $json"
}

iters() {	# fewer iterations for larger messages, at least 100
	local n=$((64 * 1024 * 1024 / ($1 + 64)))
	[ $n -gt 2000 ] && n=2000
	[ $n -lt 100 ] && n=100
	echo $n
}

# A raw-verbs tool's server in the background, its client in the
# foreground, same guest.  Bounded on both sides: rxe under a loaded
# emulator has been seen to hang an event-mode run, and a server whose
# client timed out would wait for it forever.  Returns the client's
# status; the server's is left in peers_srv.
peers_srv=0
peers() {	# peers TIMEOUT CMD ARGS...: CMD ARGS, then CMD ARGS $addr
	local t=$1
	shift
	timeout $((t + 10)) "$@" > "$tmp/server.log" 2>&1 &
	local spid=$!
	sleep 1
	timeout "$t" "$@" "$addr" > "$tmp/client.log" 2>&1
	local rc=$?
	wait $spid
	peers_srv=$?
	cat "$tmp/client.log" >> "$out.log"
	return $rc
}

# perftest (ib_send_lat, ib_send_bw): pt_timeout bounds a run (120 s).
perftest() {	# perftest TOOL ARGS...
	local tool=$1
	shift
	peers "${pt_timeout:-120}" "$tool" -d "$dev" -x 1 "$@"
}

raw_lat() {	# raw_lat SIZE PATHNAME [-e]
	local size=$1 name=$2 try line max typ avg p99 p999
	shift 2
	# perftest converts cycles to time by its own calibration of the CPU
	# clock, which under emulation has once printed "inf" for every
	# figure: such a run is not recorded but tried again, once.
	for try in 1 2; do
		perftest ib_send_lat -s "$size" -n "$(iters "$size")" "$@" || return 1
		# bytes iters t_min t_max t_typical t_avg t_stdev p99 p99.9,
		# each half a round trip: doubled to compare with RPC round
		# trips; only plain numbers pass.
		line=$(awk -v s="$size" '$1 == s && NF >= 9 {
			for (i = 3; i <= 9; i++)
				if ($i !~ /^[0-9]+(\.[0-9]+)?$/)
					exit
			print 2 * $3, 2 * $4, 2 * $5, 2 * $6, 2 * $8, 2 * $9
			exit
		}' "$tmp/client.log")
		[ -n "$line" ] && break
		echo "bench: ib_send_lat $* $size: no valid figures (try $try)"
	done
	[ -n "$line" ] || return 1
	read -r _ max typ avg p99 p999 <<< "$line"
	emit "$name" "$size" 1 "lat_avg_us=$avg" "lat_p50_us=$typ" \
		"lat_p99_us=$p99" "lat_p999_us=$p999" "lat_max_us=$max" \
		"calls_per_s=$(awk -v a="$avg" 'BEGIN { printf "%.0f", 1e6 / a }')"
}

# Event mode: ib_send_lat -e until it fails once.  On 6.12 it hangs in
# most tries, both sides asleep in ibv_get_cq_event() (read() of the
# completion channel) with nothing in flight, so its try is bounded to
# 30 s; from then
# on, in this boot, ibv_rc_pingpong -e (rdma-core's ibverbs-utils) measures
# the event-mode floor.  It reports only a mean ("usec/iter", an iteration
# being one round trip: each side sends once it has its peer's message),
# recorded as raw_verbs_lat_event_mean; on 6.1, where both run, the two
# means agree (173-179 against 170-178 us at 64 B).
raw_ev_tool=ib_send_lat
raw_ev() {	# raw_ev SIZE: 0 measured, 1 failed
	if [ $raw_ev_tool = ib_send_lat ]; then
		pt_timeout=30 raw_lat "$1" raw_verbs_lat_event -e && return 0
		raw_ev_tool=rc_pingpong
		echo "bench: ib_send_lat -e $1 failed; event mode by ibv_rc_pingpong -e (a mean only) from now on in this boot"
	fi
	raw_ev_pp "$1"
}

rc_pp() {	# rc_pp SIZE ITERS [-e]: ibv_rc_pingpong, both sides must pass
	local size=$1 n=$2
	shift 2
	peers 30 ibv_rc_pingpong -d "$dev" -g 1 "$@" -s "$size" -n "$n" &&
		[ $peers_srv = 0 ]
}

raw_ev_pp() {	# raw_ev_pp SIZE: ibv_rc_pingpong -e, the mean round trip
	local size=$1 us
	rc_pp "$size" "$(iters "$size")" -e || return 1
	# "2000 iters in 0.48 seconds = 241.44 usec/iter"
	us=$(awk '$2 == "iters" && $NF == "usec/iter" { print $(NF - 1) }' "$tmp/client.log")
	[ -n "$us" ] || return 1
	emit raw_verbs_lat_event_mean "$size" 1 "lat_avg_us=$us" \
		"calls_per_s=$(awk -v a="$us" 'BEGIN { printf "%.0f", 1e6 / a }')"
}

# Context switches per round trip, whole guest (/proc/stat's ctxt), and
# how many of them were ksoftirqd's (the switch counts of its threads): a
# softirq raised outside interrupt context (IB_POLL_SOFTIRQ's irq_poll,
# raised from a completion handler that Soft-RoCE calls from a kworker)
# wakes ksoftirqd to run it.  Setup (connection, server start) included.
# With them, krpc's completions of software devices' CQs (rdma_cq.c), by
# where they were reaped: in softirq, or on krpc's work queue; and the
# process-context events that an irq_work sent to softirq.
ctxsw() {	# ctxsw: "ALL KSOFTIRQD CQ_SOFTIRQ CQ_WORK CQ_IRQ_WORK" so far
	local k=0 p
	for p in $(pgrep '^ksoftirqd/'); do
		k=$((k + $(awk '/^(non)?voluntary_ctxt_switches:/ { s += $2 }
			END { print s + 0 }' "/proc/$p/status")))
	done
	echo "$(awk '$1 == "ctxt" { print $2 }' /proc/stat) $k" \
		"$(awk '$1 == "cq_reaped_softirq" { s = $2 } $1 == "cq_reaped_work" { w = $2 }
			$1 == "cq_irq_work" { i = $2 }
			END { print s + 0, w + 0, i + 0 }' /sys/kernel/debug/krpc/stats 2> /dev/null)"
}

switches() {	# switches WHAT CALLS CMD...: per call of CMD, 64 B
	local what=$1 calls=$2 a0 a1 a2 a3 a4 b0 b1 b2 b3 b4
	shift 2
	read -r a0 a1 a2 a3 a4 <<< "$(ctxsw)"
	"$@" > /dev/null 2>> "$out.log" || { echo "bench: switches $what failed"; return 1; }
	read -r b0 b1 b2 b3 b4 <<< "$(ctxsw)"
	per() { awk -v d="$1" -v n="$calls" 'BEGIN { printf "%.2f", d / n }'; }
	emit switches 64 1 "what=\"$what\"" "calls=$calls" \
		"ctxt_per_call=$(per $((b0 - a0)))" \
		"ksoftirqd_per_call=$(per $((b1 - a1)))" \
		"cq_softirq_per_call=$(per $((b2 - a2)))" \
		"cq_work_per_call=$(per $((b3 - a3)))" \
		"cq_irq_work_per_call=$(per $((b4 - a4)))"
}

raw_bw() {	# raw_bw SIZE
	local size=$1
	perftest ib_send_bw -s "$size" -n "$(( $(iters "$size") * 10 ))" || return 1
	# bytes iters bw_peak bw_avg msgrate(Mpps)
	awk -v s="$size" '$1 == s && NF >= 5 { print $4, $5 }' "$tmp/client.log" |
	{
		read -r mbps mpps || return 1
		emit raw_verbs_bw "$size" 128 "mb_per_s=$mbps" \
			"calls_per_s=$(awk -v m="$mpps" 'BEGIN { printf "%.0f", m * 1e6 }')"
	}
}

# sockperf: TCP on the same netdev; its largest message is 65000 bytes.
tcp_run() {	# tcp_run MODE SIZE
	local mode=$1 size=$2
	[ "$size" -gt 65000 ] && return 2
	sockperf server --tcp -i "$addr" -p 11111 > "$tmp/sp-server.log" 2>&1 &
	local spid=$!
	sleep 1
	timeout 60 sockperf "$mode" --tcp -i "$addr" -p 11111 -m "$size" -t 3 \
		> "$tmp/sp.log" 2>&1
	local rc=$?
	kill $spid 2>/dev/null
	wait $spid 2>/dev/null
	sed -i 's/\x1b\[[0-9;]*m//g' "$tmp/sp.log"
	return $rc
}

tcp_lat() {
	local size=$1 avg p50 p99 p999 max
	tcp_run ping-pong "$size" || return $?
	avg=$(sed -n 's/.*avg-latency=\([0-9.]*\).*/\1/p' "$tmp/sp.log")
	pct() { awk -v p="$1" '$0 ~ "percentile " p " =" { print $NF }' "$tmp/sp.log"; }
	p50=$(pct 50.000) p99=$(pct 99.000) p999=$(pct 99.900)
	max=$(awk '/<MAX> observation/ { print $NF }' "$tmp/sp.log")
	[ -n "$avg" ] || return 1
	emit tcp_pingpong "$size" 1 "lat_avg_us=$avg" "lat_p50_us=$p50" \
		"lat_p99_us=$p99" "lat_p999_us=$p999" "lat_max_us=$max" \
		"calls_per_s=$(awk -v a="$avg" 'BEGIN { printf "%.0f", 1e6 / a }')"
}

tcp_bw() {
	local size=$1 rate mbps
	tcp_run throughput "$size" || return $?
	rate=$(sed -n 's/.*Message Rate is \([0-9.]*\).*/\1/p' "$tmp/sp.log")
	mbps=$(sed -n 's/.*BandWidth is \([0-9.]*\) MBps.*/\1/p' "$tmp/sp.log")
	[ -n "$rate" ] || return 1
	emit tcp_stream "$size" 0 "mb_per_s=${mbps:-0}" "calls_per_s=$rate"
}

# krpc: krpc-bench, kernel path (the krpc_bench module) and user path
# (libkrpc over io_uring), echo of SIZE bytes each way.  krpc.ko is loaded
# once, with room for depth-8 calls of 1 MiB in the device pool.
bench=${KRPC_USER:-$KRPC_TOP/build/user}/tools/krpc-bench
kbench() {	# kbench NAME SIZE DEPTH ARGS...: one krpc-bench run
	local name=$1 size=$2 depth=$3 json rc
	shift 3
	json=$(timeout 120 "$bench" "${cqm[@]}" --json -s "$size" -d "$depth" -w 0.5 -D 2 \
		"$@" 2>> "$out.log")
	rc=$?
	echo "krpc-bench $name $size $depth $*: exit $rc" >> "$out.log"
	[ -n "$json" ] || return $((rc ? rc : 1))
	echo "{\"kernel\":\"$kver\",$(pair_json "$name"),\"size\":$size,\"depth\":$depth,${json#\{}" >> "$out"
	echo "bench: $name $size B depth $depth: $(sed -n 's/.*"calls_per_s":\([0-9.]*\).*"lat_p50_us":\([0-9.]*\).*/\1 calls\/s, p50 \2 us/p' <<< "$json")"
	return $rc
}

satdepth() {	# outstanding calls that saturate the link at SIZE
	if [ "$1" -ge 1048576 ]; then echo 8
	elif [ "$1" -ge 65536 ]; then echo 16
	else echo 64; fi
}

# poll_set on|off: polled CQs for the krpc runs from now on.  The
# connections ask for them themselves (--cq-mode poll, KRPC_CQ_POLL) and
# poll_usecs stays 0, so the pollers' spin adapts to the round trip
# (rdma_poll.c: twice the longest recent gap between completions, 50 to
# 1000 us), as it does for a user who tunes nothing.  A fixed spin must
# outlast a round trip (kernel-api.rst): here one takes 30 to 130 us, and
# a 50 us spin that ended before the reply slept and was woken per
# message, which held two pollers at about 260 us per round trip against
# 40 to 65 us with a 1000 us spin.
cqm=()
poll_set() {
	if [ "$1" = on ]; then cqm=(--cq-mode poll); else cqm=(); fi
}
# krpc_load PARAMS...: (re)load krpc.ko; poll_threads is read at load.
krpc_load() {
	rmmod krpc_bench 2> /dev/null
	if lsmod | grep -q '^krpc '; then
		rmmod krpc || return 1
	fi
	insmod "$KRPC_BUILD/kmod/krpc.ko" pool_large=64 "$@"
}
# Polled CQs are measured with one poller thread (the default) and, at
# the smallest size, with one per vCPU, as brpc and nvme-rdma poll per
# core: each side's CQ then has a poller (the least loaded one) and both
# spin at once, as ib_send_lat's two processes do.
pollers=$(nproc)

krpc_tcp=0
krpc_load || echo "bench: krpc.ko did not load"
"$bench" --caps | grep -q '"tcp"' && krpc_tcp=1
[ $krpc_tcp = 1 ] || echo "bench: krpc over TCP: not measured (no TCP transport in this build)"
part=${BENCH_PART:-all}
first=${sizes%% *}
set -- $sizes
if [ "$part" != probe ]; then
emit meta 0 0 "krpc_tcp=$krpc_tcp" "guest_cpus=$(nproc)" \
	"guest_mem_mb=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)"

# Paired rounds for the latency and message-rate targets: the floor and
# the krpc rows they are judged on, back to back, at the smallest size.  The host's speed
# drifts over minutes (raw verbs has measured 21 and 35 us in two boots,
# and a row can sit in a slow mode for minutes: the 6.1 user path's
# kernel busy polling at about 50 or about 100 us); a ratio of two runs
# seconds apart is what that drift leaves alone, and the report judges the
# targets on the median of the rounds' ratios.  The rounds are spread over
# the run, one after each size and the rest at the end, so that one slow
# stretch of the host weighs on one round, not on all of them.
pairs_done=0
pair_round_run() {	# one paired round at SIZE
	local size=$1 round=$((pairs_done + 1))
	pairs_done=$round
	pair_round=$round
	raw_lat "$size" raw_verbs_lat || echo "bench: pair $round: ib_send_lat failed"
	# judged against event mode: not run without it
	raw_ev "$size" && { kbench krpc_user_cq_lat "$size" 1 --cq ||
		echo "bench: pair $round: krpc user cq failed"; }
	poll_set on
	kbench krpc_kernel_poll_lat "$size" 1 -p kernel || echo "bench: pair $round: krpc kernel polled failed"
	kbench krpc_user_cq_kpoll_lat "$size" 1 --cq --kernel-poll ||
		echo "bench: pair $round: krpc user cq kernel busy-poll failed"
	poll_set off
	# the other busy-polling user path: both processes spin on their
	# mapped queues, the CQs interrupt-driven
	kbench krpc_user_cq_busy_lat "$size" 1 --cq --busy-poll ||
		echo "bench: pair $round: krpc user cq busy-poll failed"
	# The message-rate targets: the ib_send_bw stream and krpc at a
	# saturating depth (interrupt-driven CQs), seconds apart.
	raw_bw "$size" || echo "bench: pair $round: ib_send_bw failed"
	kbench krpc_kernel_bw "$size" "$(satdepth "$size")" -p kernel ||
		echo "bench: pair $round: krpc kernel depth $(satdepth "$size") failed"
	kbench krpc_user_bw "$size" "$(satdepth "$size")" ||
		echo "bench: pair $round: krpc user depth $(satdepth "$size") failed"
	kbench krpc_user_cq_bw "$size" "$(satdepth "$size")" --cq ||
		echo "bench: pair $round: krpc user cq depth $(satdepth "$size") failed"
	if [ "$pollers" -gt 1 ] && krpc_load poll_threads="$pollers"; then
		poll_set on
		kbench krpc_kernel_pollcpu_lat "$size" 1 -p kernel ||
			echo "bench: pair $round: krpc kernel, a poller per vCPU, failed"
		poll_set off
		krpc_load || echo "bench: krpc.ko did not load again"
	fi
	pair_round=
}
pair_spread() {	# a round, while rounds are left (BENCH_PAIRS, default 5)
	[ "$pairs_done" -lt "${BENCH_PAIRS:-5}" ] && pair_round_run "$first"
	return 0
}

for size in $sizes; do
	raw_lat "$size" raw_verbs_lat || echo "bench: ib_send_lat $size failed"
	raw_ev "$size"
	raw_bw "$size" || echo "bench: ib_send_bw $size failed"
	tcp_lat "$size"; [ $? = 1 ] && echo "bench: sockperf ping-pong $size failed"
	tcp_bw "$size"; [ $? = 1 ] && echo "bench: sockperf throughput $size failed"
	sat=$(satdepth "$size")
	kbench krpc_kernel_lat "$size" 1 -p kernel || echo "bench: krpc kernel $size failed"
	kbench krpc_kernel_bw "$size" "$sat" -p kernel || echo "bench: krpc kernel depth $sat $size failed"
	# Polled CQs (KRPC_CQ_POLL): the connections' completions are
	# reaped by the krpc_poll threads, as raw verbs busy-poll their CQ.
	poll_set on
	kbench krpc_kernel_poll_lat "$size" 1 -p kernel || echo "bench: krpc kernel polled $size failed"
	kbench krpc_kernel_poll_bw "$size" "$sat" -p kernel || echo "bench: krpc kernel polled depth $sat $size failed"
	if [ "$size" = "$first" ]; then
		kbench krpc_user_busy_poll_lat "$size" 1 --busy-poll ||
			echo "bench: krpc user busy-poll, polled CQs $size failed"
		# The waiting process reaps the polled CQs itself, in the
		# kernel (KRPC_IOC_CQ_POLL), as socket busy polling runs NAPI.
		kbench krpc_user_cq_kpoll_lat "$size" 1 --cq --kernel-poll ||
			echo "bench: krpc user cq kernel busy-poll $size failed"
		kbench krpc_user_cq_kpoll_bw "$size" "$sat" --cq --kernel-poll ||
			echo "bench: krpc user cq kernel busy-poll depth $sat $size failed"
	fi
	poll_set off
	# User-path payloads above 64 KiB: krpc-bench gives its pools large
	# buffers (krpc_pool_create_large()).
	kbench krpc_user_lat "$size" 1 || echo "bench: krpc user $size failed"
	kbench krpc_user_defer_lat "$size" 1 --defer || echo "bench: krpc user defer $size failed"
	kbench krpc_user_sqpoll_lat "$size" 1 --sqpoll || echo "bench: krpc user sqpoll $size failed"
	# busy polling (for the target) at the smallest size only
	[ "$size" = "$first" ] && { kbench krpc_user_busy_lat "$size" 1 --busy-poll ||
		echo "bench: krpc user busy-poll $size failed"; }
	kbench krpc_user_bw "$size" "$sat" || echo "bench: krpc user depth $sat $size failed"
	# Completion queues: results written by the completion
	# handlers into a mapped ring, no task-work hop (poll() waits).
	kbench krpc_user_cq_lat "$size" 1 --cq || echo "bench: krpc user cq $size failed"
	[ "$size" = "$first" ] && { kbench krpc_user_cq_busy_lat "$size" 1 --cq --busy-poll ||
		echo "bench: krpc user cq busy-poll $size failed"; }
	kbench krpc_user_cq_bw "$size" "$sat" --cq || echo "bench: krpc user cq depth $sat $size failed"
	if [ $krpc_tcp = 1 ]; then
		# the kernel path, beside the RDMA kernel path: the transports
		# compared without io_uring in the way, at every size
		kbench krpc_tcp_lat "$size" 1 -p kernel -t tcp || echo "bench: krpc tcp $size failed"
		kbench krpc_tcp_bw "$size" "$sat" -p kernel -t tcp || echo "bench: krpc tcp depth $sat $size failed"
	fi
	pair_spread
done

# Polled CQs with a poller per vCPU, at the smallest size; then krpc as
# before (one poller) for the sweep and the probes.
if [ "$pollers" -gt 1 ]; then
	if krpc_load poll_threads="$pollers"; then
		sat=$(satdepth "$1")
		poll_set on
		kbench krpc_kernel_pollcpu_lat "$1" 1 -p kernel ||
			echo "bench: krpc kernel, a poller per vCPU, $1 failed"
		kbench krpc_kernel_pollcpu_bw "$1" "$sat" -p kernel ||
			echo "bench: krpc kernel, a poller per vCPU, depth $sat $1 failed"
		poll_set off
	else
		echo "bench: krpc.ko with poll_threads=$pollers did not load"
	fi
	krpc_load || echo "bench: krpc.ko did not load again"
fi

while [ "$pairs_done" -lt "${BENCH_PAIRS:-5}" ]; do
	pair_round_run "$first"
done

# Context switches per round trip at 64 B (the smallest size): the raw
# ping-pong (ibv_rc_pingpong, which runs on every kernel) beside krpc.
sw_n=2000
switches raw_verbs_lat "$sw_n" rc_pp "$1" "$sw_n"
switches raw_verbs_lat_event "$sw_n" rc_pp "$1" "$sw_n" -e
switches krpc_kernel_lat "$sw_n" "$bench" "${cqm[@]}" -p kernel -s "$1" -w 0 -n "$sw_n"
switches krpc_user_lat "$sw_n" "$bench" "${cqm[@]}" -s "$1" -w 0 -n "$sw_n"
switches krpc_user_cq_lat "$sw_n" "$bench" "${cqm[@]}" --cq -s "$1" -w 0 -n "$sw_n"
poll_set on
switches krpc_kernel_poll_lat "$sw_n" "$bench" "${cqm[@]}" -p kernel -s "$1" -w 0 -n "$sw_n"
switches krpc_user_cq_kpoll_lat "$sw_n" "$bench" "${cqm[@]}" --cq --kernel-poll -s "$1" -w 0 -n "$sw_n"
poll_set off

# Throughput against depth at the smallest size.
for depth in ${DEPTHS:-1 4 16 64}; do
	kbench krpc_kernel_sweep "$1" "$depth" -p kernel || echo "bench: krpc kernel sweep $depth failed"
	kbench krpc_user_sweep "$1" "$depth" || echo "bench: krpc user sweep $depth failed"
done
fi

# The io_uring task-work hop of the user path: krpc completes a command
# from softirq with io_uring_cmd_complete_in_task(); the CQE is posted
# when the submitting task runs that task work (io_uring_cmd_done()).
# kprobes on both, paired by command, over a one-call-in-flight run.
twhop() {	# twhop SIZE
	local t=$trace add=io_uring_cmd_complete_in_task
	[ -w $t/kprobe_events ] || return 1
	grep -qw $add /proc/kallsyms || add=__io_uring_cmd_do_in_task
	echo "p:kb_twadd $add cmd=%di" > $t/kprobe_events &&
	echo "p:kb_twrun io_uring_cmd_done cmd=%di" >> $t/kprobe_events || return 1
	echo > $t/trace
	echo 8192 > $t/buffer_size_kb
	"$bench" "${cqm[@]}" -s "$1" -d 1 -w 0.5 -D 3 > "$tmp/tw.out" 2>&1 &
	sleep 1.5
	echo 1 > $t/events/kprobes/enable
	sleep 1
	echo 0 > $t/events/kprobes/enable
	wait
	cat $t/trace > "$tmp/tw.trace"
	echo > $t/kprobe_events
	awk '/kb_twadd:/ { for (i = 1; i <= NF; i++) if ($i ~ /^cmd=/) add[$i] = $4 + 0 }
	     /kb_twrun:/ { for (i = 1; i <= NF; i++) if ($i ~ /^cmd=/ && ($i in add)) {
			print int(($4 - add[$i]) * 1e6 + 0.5); delete add[$i] } }' \
		"$tmp/tw.trace" | sort -n > "$tmp/tw.us"
	local n p50 p99 mean run
	n=$(wc -l < "$tmp/tw.us")
	[ "$n" -gt 0 ] || return 1
	p50=$(sed -n "$(( (n + 1) / 2 ))p" "$tmp/tw.us")
	p99=$(sed -n "$(( (n * 99 + 99) / 100 ))p" "$tmp/tw.us")
	mean=$(awk '{ s += $1 } END { printf "%.1f", s / NR }' "$tmp/tw.us")
	run=$(sed -n 's/.*latency us: mean [0-9.]* p50 \([0-9.]*\).*/\1/p' "$tmp/tw.out")
	emit twhop "$1" 1 "hops=$n" "hop_p50_us=$p50" "hop_p99_us=$p99" \
		"hop_avg_us=$mean" "run_p50_us=${run:-null}"
}
# Work items per round trip, by the module whose function they run:
# Soft-RoCE's (its tasks, on kernels that run them from a workqueue) and
# krpc's (reaping a software device's CQ in process context, rdma_cq.c).
# Counted by the workqueue_execute_start tracepoint, enabled on the
# kernel command line (tools/bench/run): switching it on here would patch
# kernel text, which under emulation has crashed 6.12 guests (testing.rst).
workitems() {	# workitems WHAT CALLS CMD...: per call of CMD, 64 B
	local what=$1 calls=$2 t=$trace
	shift 2
	echo 0 > $t/tracing_on && echo > $t/trace && echo 1 > $t/tracing_on || return 1
	"$@" > /dev/null 2>> "$out.log" || { echo "bench: work items of $what failed"; return 1; }
	echo 0 > $t/tracing_on
	# "workqueue_execute_start: work struct 0x...: function do_work"
	grep -o 'function [A-Za-z0-9_.]*' $t/trace |
		awk -v n="$calls" -v what="$what" '
		FILENAME == "/proc/kallsyms" {
			if ($4 == "[rdma_rxe]") mod[$3] = "rxe"
			else if ($4 == "[krpc]") mod[$3] = "krpc"
			next }
		{ c[($2 in mod) ? mod[$2] : "other"]++ }
		END { printf "what=\"%s\" calls=%d rxe_per_call=%.2f krpc_per_call=%.2f other_per_call=%.2f\n",
			what, n, c["rxe"] / n, c["krpc"] / n, c["other"] / n }' /proc/kallsyms - |
	{
		read -r -a kv || return 1
		emit workitems 64 1 "${kv[@]}"
	}
	echo 1 > $t/tracing_on
}
if [ "$part" != measure ] &&
	[ "$(cat $trace/events/workqueue/workqueue_execute_start/enable 2> /dev/null)" = 1 ]; then
	wi_n=2000
	workitems raw_verbs_lat "$wi_n" rc_pp "$1" "$wi_n"
	workitems raw_verbs_lat_event "$wi_n" rc_pp "$1" "$wi_n" -e
	workitems krpc_kernel_lat "$wi_n" "$bench" "${cqm[@]}" -p kernel -s "$1" -w 0 -n "$wi_n"
	workitems krpc_user_cq_lat "$wi_n" "$bench" "${cqm[@]}" --cq -s "$1" -w 0 -n "$wi_n"
	poll_set on
	workitems krpc_kernel_poll_lat "$wi_n" "$bench" "${cqm[@]}" -p kernel -s "$1" -w 0 -n "$wi_n"
	workitems krpc_user_cq_kpoll_lat "$wi_n" "$bench" "${cqm[@]}" --cq --kernel-poll -s "$1" -w 0 -n "$wi_n"
	poll_set off
fi

# Wake-ups of the benchmark's own processes per round trip, and how long
# each waited from its wake-up (sched_wakeup) to running (the sched_switch
# to it): without polling, each side sleeps for every message and is woken
# by a completion handler, on a vCPU that may still be busy with
# Soft-RoCE's work.  The same for the kworkers woken meanwhile (Soft-RoCE's
# tasks on kernels that run them from a workqueue).  The sched tracepoints
# are switched on at boot (tools/bench/run), like the workqueue one;
# afterwards a filter that matches nothing keeps them out of the buffer
# without patching text.
wakedelay() {	# wakedelay WHAT CALLS COMM CMD...: per call of CMD, 64 B
	local what=$1 calls=$2 comm=$3 t=$trace kv
	shift 3
	echo 0 > $t/tracing_on && echo > $t/trace && echo 1 > $t/tracing_on || return 1
	"$@" > /dev/null 2>> "$out.log" || { echo "bench: wake-ups of $what failed"; return 1; }
	echo 0 > $t/tracing_on
	# "... 44.496313: sched_wakeup: comm=krpc-bench pid=214 prio=120 ..."
	# "... 44.496359: sched_switch: prev_comm=... ==> next_comm=... next_pid=214 ..."
	kv=$(awk -v c="$comm" -v n="$calls" '
		function ts(i,  v) { v = $(i - 1); sub(":$", "", v); return v + 0 }
		{
			for (i = 2; i <= NF; i++)
				if ($i == "sched_wakeup:" || $i == "sched_switch:")
					break
			if (i > NF)
				next
			if ($i == "sched_wakeup:") {
				wc = ""; wp = ""
				for (j = i + 1; j <= NF; j++) {
					if ($j ~ /^comm=/) wc = substr($j, 6)
					if ($j ~ /^pid=/) wp = substr($j, 5)
				}
				if (wc == c && !(wp in w))
					w[wp] = ts(i)
				else if (wc ~ /^kworker\// && !(wp in kw))
					kw[wp] = ts(i)
				next
			}
			for (j = i + 1; j <= NF; j++)
				if ($j ~ /^next_pid=/) {
					p = substr($j, 10)
					if (p in w) {
						d = ts(i) - w[p]; sum += d; k++
						if (d > mx) mx = d
						delete w[p]
					} else if (p in kw) {
						ksum += ts(i) - kw[p]; kk++
						delete kw[p]
					}
				}
		}
		END { if (!k) exit 1
			printf "calls=%d wakes_per_call=%.2f wake_delay_us=%.1f wake_delay_max_us=%.1f",
				n, k / n, sum / k * 1e6, mx * 1e6
			printf " kworker_wakes_per_call=%.2f kworker_wake_delay_us=%.1f",
				kk / n, kk ? ksum / kk * 1e6 : 0 }' $t/trace) ||
		{ echo "bench: no wake-up of $comm traced for $what"; return 1; }
	emit wakedelay 64 1 "what=\"$what\"" $kv
	echo 1 > $t/tracing_on
}
if [ "$part" != measure ] &&
	[ "$(cat $trace/events/sched/sched_wakeup/enable 2> /dev/null)" = 1 ] &&
	[ "$(cat $trace/events/sched/sched_switch/enable 2> /dev/null)" = 1 ]; then
	wd_n=2000
	wakedelay raw_verbs_lat_event "$wd_n" ibv_rc_pingpong rc_pp "$1" "$wd_n" -e
	wakedelay krpc_user_lat "$wd_n" krpc-bench "$bench" "${cqm[@]}" -s "$1" -w 0 -n "$wd_n"
	wakedelay krpc_user_cq_lat "$wd_n" krpc-bench "$bench" "${cqm[@]}" --cq -s "$1" -w 0 -n "$wd_n"
	echo 'common_pid < 0' > $trace/events/sched/sched_wakeup/filter
	echo 'common_pid < 0' > $trace/events/sched/sched_switch/filter
fi

if [ "$part" != measure ] && [ "${BENCH_KPROBES:-1}" = 1 ]; then
	twhop "$1" || echo "bench: task-work hop not measured (no kprobes?)"
fi

# Where the time goes at one outstanding 64-byte call: a system-wide
# profile of each path (software clock: no PMU under emulation).
if [ "$part" != measure ] && command -v perf > /dev/null; then
	for p in kernel kernel-polled user; do
		prof=$(dirname "$out")/profile-$kver-$p.txt
		[ $p = kernel-polled ] && poll_set on
		perf record -q -e cpu-clock -a -g -o "$tmp/perf.data" -- \
			"$bench" "${cqm[@]}" -p ${p%-polled} -s "$1" -d 1 -w 0.5 -D 2 > "$tmp/perf.out" 2>&1 &&
		perf report -q -i "$tmp/perf.data" --no-children --sort sym \
			--stdio -g none --percent-limit 1.5 2> /dev/null |
			sed 's/[[:space:]]*$//' | grep -v '^$' | head -n 30 > "$prof" ||
			echo "bench: perf profile of the $p path failed"
		sed -n 's/^ *latency us: /  /p' "$tmp/perf.out" >> "$prof"
		[ $p = kernel-polled ] || continue
		poll_set off
		# Inclusive shares of the poller's work: Soft-RoCE's tasklets
		# (run when the poller re-enables bottom halves) against krpc's
		# completion handlers (with the benchmark's callbacks).
		perf report -q -i "$tmp/perf.data" --children --sort sym --stdio \
			-g none 2> /dev/null > "$tmp/children.txt"
		pct() { awk -v s="$1" '$NF == s && !v { v = $1; sub("%", "", v) }
			END { print v == "" ? "null" : v }' "$tmp/children.txt"; }
		cpu=$(sed -n 's/^ *cpu us\/call: machine \([0-9.]*\).*/\1/p' "$tmp/perf.out")
		emit breakdown "$1" 1 "idle_pct=$(pct do_idle)" "poller_pct=$(pct poller_fn)" \
			"rxe_pct=$(pct rxe_do_task)" "krpc_rx_pct=$(pct krpc_rdma_recv_done)" \
			"krpc_tx_pct=$(pct krpc_rdma_send_done)" "clock_pct=$(pct ktime_get)" \
			"cpu_us_per_call=${cpu:-null}" \
			"lat_p50_us=$(sed -n 's/.*latency us: mean [0-9.]* p50 \([0-9.]*\).*/\1/p' "$tmp/perf.out" | grep . || echo null)"
	done
fi
rmmod krpc_bench 2>/dev/null
rmmod krpc || echo "bench: krpc.ko did not unload"
rm -rf "$tmp"
