#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Every pairing of userspace and kernel ends, echo verified byte for byte
# by whichever side sent it:
#   user client   -> kernel server (krpc_test.ko's M_ECHO handler)
#   kernel client -> user server   (krpc_test.ko's echo command)
#   user client   -> user server
# over KRPC_TRANSPORT (rdma by default; uring_interop_tcp.sh: tcp), which
# uring_peer reads and krpc_test.ko gets as its transport parameter.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=selftests/krpc/lib.sh
. "$here/lib.sh"

peer=$KRPC_TOP/build/user/selftests/uring_peer
mod=$KRPC_BUILD/selftests/krpc/module/krpc_test.ko
dbg=/sys/kernel/debug/krpc_test
tmp=$(mktemp -d)
pid=

[ -x "$peer" ] || ktap_bail "uring_peer not built"
[ -f "$mod" ] || ktap_bail "krpc_test.ko not built"

cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	[ -d /sys/module/krpc_test ] && rmmod krpc_test
	krpc_unload
	rm -rf "$tmp"
}
trap cleanup EXIT

kcmd() { echo "$*" > $dbg/cmd; }

# Rings (and the /dev/krpc files they hold) are freed by a kernel worker.
wait_zero() {
	for _ in $(seq 100); do
		[ "$(krpc_stat calls_live) $(krpc_stat reqs_live) $(krpc_stat files_open)" = "0 0 0" ] && return 0
		sleep 0.1
	done
	return 1
}

# start_peer PORT: a user server in the background, once it listens.
start_peer() {
	"$peer" server "$1" > "$tmp/peer.out" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		grep -q ready "$tmp/peer.out" && return 0
		sleep 0.1
	done
	return 1
}

stop_peer() {
	kill -TERM "$pid" && wait "$pid"
	local rc=$?
	pid=
	log "$(cat "$tmp/peer.out")"
	return $rc
}

pp krpc_load || ktap_bail "load krpc"
case "${KRPC_TRANSPORT:-}" in
tcp)  xprt=2 ;;
auto) xprt=3 ;;
rdma) xprt=1 ;;
*)    xprt=0 ;;
esac
pp insmod "$mod" transport=$xprt || ktap_bail "load krpc_test"

pp kcmd server_start 7201
ktap_check "user client -> kernel server, 0..65536 bytes" \
	pp "$peer" client 192.0.2.1 7201
ktap_check "kernel server stops" pp kcmd server_stop

ktap_check "user server listens" start_peer 7202
ktap_check "kernel client connects to user server" pp kcmd connect 192.0.2.1 7202
for size in 0 1 100 4032 4033 4096 65536; do
	ktap_check "kernel client -> user server, $size bytes x 3" \
		pp kcmd echo "$size" 3
done
ktap_check "kernel client disconnects" pp kcmd disconnect
ktap_check "user client -> user server, 0..65536 bytes" \
	pp "$peer" client 192.0.2.1 7202
ktap_check "user server exits cleanly" stop_peer
log "$(cat $dbg/log 2>/dev/null | tail -20)"

# The example of Documentation/userspace-api.rst, both ends.
example=$KRPC_TOP/build/user/tools/krpc-echo
"$example" server 7203 > "$tmp/ex.out" 2>&1 &
expid=$!
# The server says nothing once it listens: until it does, the client's
# connect is refused (and only that is tried again, for up to 10 s).
ex_client() {
	local i out
	for i in $(seq 100); do
		out=$("$example" client 192.0.2.1 7203 "hello, krpc" 2>&1) &&
			break
		case $out in
		*"connect: Connection refused"*) sleep 0.1 ;;
		*) break ;;
		esac
	done
	echo "# krpc-echo client: $out (try $i)"
	[ "$out" = "hello, krpc" ]
}
ktap_check "tools/krpc-echo client gets its text back" ex_client
kill -KILL "$expid"; wait "$expid" 2>/dev/null

ktap_check "krpc_test unloads" pp rmmod krpc_test
ktap_check "counters back to zero" wait_zero
ktap_check "krpc unloads" pp krpc_unload
ktap_check "nothing left" krpc_assert_gone
ktap_finish
