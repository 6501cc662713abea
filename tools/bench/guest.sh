#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The guest half of "make bench": measure every path on the test bed's rxe0
# link, one after the other in one boot, and append one JSON object per
# measurement to OUT (see report.py for the fields).
#
# Usage: guest.sh OUT [SIZE...]
set -u

out=$1
shift
sizes=${*:-64 512 4096 65536 1048576}
addr=${KRPC_ADDR4:-192.0.2.1}
dev=${KRPC_RXE:-rxe0}
kver=$(uname -r)
tmp=$(mktemp -d)

emit() {	# emit PATH SIZE DEPTH key=value...
	local path=$1 size=$2 depth=$3 kv json
	shift 3
	json="{\"kernel\":\"$kver\",\"path\":\"$path\",\"size\":$size,\"depth\":$depth"
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

# perftest: server in the background, client in the foreground, same guest.
perftest() {	# perftest TOOL ARGS...
	local tool=$1
	shift
	"$tool" -d "$dev" -x 1 "$@" > "$tmp/server.log" 2>&1 &
	local spid=$!
	sleep 1
	timeout 120 "$tool" -d "$dev" -x 1 "$@" "$addr" > "$tmp/client.log" 2>&1
	local rc=$?
	wait $spid
	cat "$tmp/client.log" >> "$out.log"
	return $rc
}

raw_lat() {	# raw_lat SIZE PATHNAME [-e]
	local size=$1 name=$2
	shift 2
	perftest ib_send_lat -s "$size" -n "$(iters "$size")" "$@" || return 1
	# bytes iters t_min t_max t_typical t_avg t_stdev p99 p99.9, each
	# half a round trip: doubled here to compare with RPC round trips.
	awk -v s="$size" '$1 == s && NF >= 9 {
		print 2 * $3, 2 * $4, 2 * $5, 2 * $6, 2 * $8, 2 * $9 }' "$tmp/client.log" |
	{
		read -r min max typ avg p99 p999 || return 1
		emit "$name" "$size" 1 "lat_avg_us=$avg" "lat_p50_us=$typ" \
			"lat_p99_us=$p99" "lat_p999_us=$p999" "lat_max_us=$max" \
			"calls_per_s=$(awk -v a="$avg" 'BEGIN { printf "%.0f", 1e6 / a }')"
	}
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

# Extra paths (krpc kernel and user paths) plug in as executables in
# tools/bench/paths.d/: each is run as "PATHFILE OUT SIZE" and appends its
# own JSON lines with the same fields.
for size in $sizes; do
	raw_lat "$size" raw_verbs_lat || echo "bench: ib_send_lat $size failed"
	raw_lat "$size" raw_verbs_lat_event -e || echo "bench: ib_send_lat -e $size failed"
	raw_bw "$size" || echo "bench: ib_send_bw $size failed"
	tcp_lat "$size"; [ $? = 1 ] && echo "bench: sockperf ping-pong $size failed"
	tcp_bw "$size"; [ $? = 1 ] && echo "bench: sockperf throughput $size failed"
	for p in "$(dirname "$0")"/paths.d/*; do
		[ -x "$p" ] || continue
		"$p" "$out" "$size" || echo "bench: $(basename "$p") $size failed"
	done
done
rm -rf "$tmp"
