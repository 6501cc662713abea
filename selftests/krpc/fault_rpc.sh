#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# krpc's own allocations and verbs calls failing, one at a time, across
# connect, accept, listen, pool creation, calls and teardown, through the
# kernel API (krpc_test.ko) and the userspace path (fault_user); and the
# TCP transport's copy fallback for a payload that cannot go by reference.
#
# fail_function makes one call of a function marked ALLOW_ERROR_INJECTION
# (kmod/inject.h) return an error: "space" skips the calls before it (the
# client's before the server's on one connect), "task-filter" with
# make-it-fail (fault_write) confines it to the task that writes the
# command.  Each round prints and checks the exact error the caller sees,
# disarms, waits until only the connections that should be are left, and
# no call or request (and, where a pool was involved, no pool), and proves
# the path works again.  Then failslab's fail-nth fails every slab
# allocation of the connecting task in turn, and of a calling task: each
# attempt succeeds or fails with -ENOMEM (or -ENOBUFS for a route the
# network stack could not allocate).  krpc unloads at the end; run_tests
# adds the kernel-log and kmemleak checks.  Needs CONFIG_FAIL_FUNCTION
# (make check-debug).
# shellcheck source=selftests/krpc/rpc_lib.sh
. "$(dirname "$0")/rpc_lib.sh"

ff=/sys/kernel/debug/fail_function
fs=/sys/kernel/debug/failslab
[ -d $ff ] || ktap_skip_all "no fail_function in this kernel (run make check-debug)"
[ -d $fs ] || ktap_skip_all "no failslab in this kernel (run make check-debug)"
krpc_loaded && ktap_skip_all "krpc already loaded"

bin=$KRPC_TOP/build/user/selftests
for p in fault_write fault_user; do
	[ -x "$bin/$p" ] || ktap_bail "$p not built"
done
dbg=/sys/kernel/debug/krpc_test
A=$KRPC_ADDR4
P=$RPC_PORT
DEPTH=16		# kernel client: 16 + 4 receives
ENOMEM=12 EIO=5 ENOBUFS=105 ECONNRESET=104 EADDRINUSE=98
gfp_wait0=$(cat $fs/ignore-gfp-wait)

disarm() {
	echo 0 > $ff/probability
	echo > $ff/inject
	echo 0 > $ff/space
	echo N > $ff/task-filter
}

cleanup() {
	disarm
	echo "$gfp_wait0" > $fs/ignore-gfp-wait
	rpc_rmmod krpc_test
	krpc_unload
}
trap cleanup EXIT

# arm FN RETVAL [SKIP] [TASK]: the call of FN after SKIP others (only
# calls made by a make-it-fail task if TASK is 1) returns RETVAL (a
# negative errno, or NULL for functions that return NULL on failure).
arm() {
	local fn=$1 ret=$2 skip=${3:-0} task=${4:-0}

	local who=""
	[ "$task" = 1 ] && who=", this task only"
	echo "# arm $fn = $ret after $skip calls$who"
	echo "$fn" > $ff/inject || return 1
	if [ "$ret" != NULL ]; then
		printf '%#x' "$ret" > "$ff/$fn/retval" || return 1
	fi
	echo "$task" > $ff/task-filter
	echo $((skip + 1)) > $ff/space	# "space" counts down, then fails
	echo 1 > $ff/times
	echo 0 > $ff/verbose
	echo 100 > $ff/probability
}

# fired: the armed failure was injected (times went from 1 to 0)
fired() { [ "$(cat $ff/times)" = 0 ]; }

# kfails ERRNO COMMAND...: the krpc_test command fails with exactly -ERRNO
# (succeeds if ERRNO is 0)
kfails() {
	local want=$1 got=0
	shift
	rpc_do krpc_test "$@" || got=$(sed -n 's/^error //p' $dbg/log | tail -n1)
	[ "$want" = 0 ] || want=-$want
	echo "# caller saw ${got:-nothing}, want $want"
	[ "$got" = "$want" ]
}

# kwfails ERRNO COMMAND: as kfails, written by fault_write (the task is
# marked make-it-fail for "task-filter" rounds)
kwfails() {
	local want=$1 out
	shift
	echo "# krpc_test (make-it-fail): $*"
	out=$("$bin/fault_write" $dbg/cmd "$*")
	sed 's/^/#   /' $dbg/log
	echo "# caller saw: $out, want -$want"
	case "$out" in "error -$want "*) return 0 ;; esac
	return 1
}

# settle CONNS: wait until no call or request is left and CONNS
# connections are (the other side of a failed connect and the teardown of
# a dead connection go in workers)
settle() {
	local now
	for _ in $(seq $((100 * RPC_SLOW))); do
		now="$(krpc_stat conns_open) $(krpc_stat calls_live) $(krpc_stat reqs_live)"
		[ "$now" = "$1 0 0" ] && return 0
		sleep 0.1
	done
	log "connections, calls, requests: $now; want $1 0 0"
	return 1
}

# round NAME FN RETVAL SKIP TASK ERRNO CONNS COMMAND...: one injection
# point; CONNS connections remain afterwards
round() {
	local name=$1 fn=$2 ret=$3 skip=$4 task=$5 want=$6 conns=$7 ok
	shift 7
	if ! arm "$fn" "$ret" "$skip" "$task"; then
		ktap_fail "$name: arm $fn"
		disarm
		return
	fi
	ok=1
	if [ "$task" = 1 ]; then
		kwfails "$want" "$@" || ok=0
	else
		kfails "$want" "$@" || ok=0
	fi
	fired || { log "$fn was not reached"; ok=0; }
	disarm
	settle "$conns" || ok=0
	local what="caller gets -$want"
	[ "$want" = 0 ] && what="caller succeeds"
	if [ $ok = 1 ]; then
		ktap_ok "$name: $fn fails, $what, nothing left"
	else
		ktap_fail "$name: $fn fails, $what, nothing left"
	fi
}

connect_ok() {
	rpc_check "$1: connects again" krpc_test connect "$A" "$P" $DEPTH &&
	rpc_check "$1: echo works again" krpc_test echo 65536 2
}

reconnect() {
	rpc_check "$1: client disconnects" krpc_test disconnect
	ktap_check "$1: nothing left" settle 0
	connect_ok "$1"
}

load() {
	rpc_krpc_load pool_small=128 pool_medium=8 pool_large=2 &&
	rpc_insmod krpc_test &&
	rpc_do krpc_test server_start "$P" > /dev/null
}

unload() {
	rpc_do krpc_test disconnect > /dev/null
	rpc_rmmod krpc_test && krpc_unload && krpc_assert_gone
}

ktap_check "load krpc and krpc_test, server on $A:$P" load

# --- connect: client side, in order along the path ---
c=(connect "$A" "$P" "$DEPTH")
round "connect" krpc_conn_alloc NULL 0 0 $ENOMEM 0 "${c[@]}"
round "connect" krpc_rdma_connect -$ENOMEM 0 0 $ENOMEM 0 "${c[@]}"
round "connect: pool" krpc_pool_create -$ENOMEM 0 0 $ENOMEM 0 "${c[@]}"
ktap_check "connect: no pool left after a failed creation" \
	test "$(krpc_stat pools)" = 0
round "connect: pool half made" krpc_pool_buf_alloc NULL 100 0 $ENOMEM 0 \
	"${c[@]}"
ktap_check "connect: no pool left after a half-made one" \
	test "$(krpc_stat pools)" = 0
round "connect: CQ" krpc_rdma_create_cq -$ENOMEM 0 0 $ENOMEM 0 "${c[@]}"
round "connect: QP" krpc_rdma_create_qp -$ENOMEM 0 0 $ENOMEM 0 "${c[@]}"
round "connect: MRs" krpc_rdma_create_mrs -$ENOMEM 0 0 $ENOMEM 0 "${c[@]}"
# A failed post kills the connection with -EIO, whatever the verb said.
round "connect: receives" krpc_rdma_ib_post_recv -$ENOMEM 3 0 $EIO 0 "${c[@]}"

# --- accept: the server side of the same connect (after the client's
# calls); the server rejects with "resources" ---
round "accept" krpc_conn_alloc NULL 1 0 $ENOBUFS 0 "${c[@]}"
round "accept: CQ" krpc_rdma_create_cq -$ENOMEM 1 0 $ENOBUFS 0 "${c[@]}"
round "accept: QP" krpc_rdma_create_qp -$ENOMEM 1 0 $ENOBUFS 0 "${c[@]}"
# The client posts DEPTH + 4 receives first.
round "accept: receives" krpc_rdma_ib_post_recv -$ENOMEM $((DEPTH + 4 + 2)) 0 \
	$ENOBUFS 0 "${c[@]}"
round "accept" krpc_rdma_accept -$ENOMEM 0 0 $ENOBUFS 0 "${c[@]}"
connect_ok "connect"

# --- calls ---
round "call" krpc_call_alloc NULL 0 1 $ENOMEM 2 echo 1000 1
rpc_check "call: the connection survived, echo works" krpc_test echo 1000 2
round "call: send" krpc_rdma_ib_post_send -$ENOMEM 0 1 $EIO 1 echo 1000 1
reconnect "call: send"
round "call: rendezvous send" krpc_rdma_ib_post_send -$ENOMEM 0 1 $EIO 1 \
	echo 65536 1
reconnect "call: rendezvous send"
round "call: request MR" krpc_mr_map -$ENOMEM 0 1 $EIO 1 echo 65536 1
reconnect "call: request MR"
round "call: reply MR" krpc_mr_map -$ENOMEM 1 1 $EIO 1 echo 65536 1
reconnect "call: reply MR"
# The server cannot take the request: it drops the connection.
round "call: server request" krpc_req_alloc_locked -$ENOMEM 0 0 $ECONNRESET 1 \
	echo 1000 1
reconnect "call: server request"

# --- teardown: the DREQ is not sent; destroying the cm_id tells the
# server, whose side goes too ---
round "teardown" krpc_rdma_disconnect -$ENOMEM 0 0 0 0 disconnect
connect_ok "teardown"

# --- listen ---
rpc_check "listen: server stops" krpc_test server_stop
round "listen" krpc_rdma_listen -$EADDRINUSE 0 0 $EADDRINUSE 1 server_start "$P"
rpc_check "listen: server starts again" krpc_test server_start "$P"
reconnect "listen"

# --- TCP: a payload whose pages cannot go by reference is copied on
# send.  No pool page ever fails sendpage_ok(), so the check is a fault
# point whose injected "true" takes the fallback.  Four echoes of 4 KiB,
# checked byte for byte, send eight payloads by reference and copy eight
# on receive; with the first send's check failed, exactly one of them is
# copied instead. ---
# tcp_echo: the echoes; prints "ZC COPIES", the counters' increments
tcp_echo() {
	local zc0 cp0
	zc0=$(krpc_stat tcp_zc_sends)
	cp0=$(krpc_stat conn_copies)
	rpc_do krpc_test echo 4096 4 >&2 || return 1
	echo "$(($(krpc_stat tcp_zc_sends) - zc0)) $(($(krpc_stat conn_copies) - cp0))"
}
tcp_copy() {
	local base inj bad=0
	base=$(tcp_echo) || return 1
	arm krpc_tcp_payload_must_copy 1 0 0 || return 1
	inj=$(tcp_echo) || bad=1
	fired || { log "krpc_tcp_payload_must_copy was not reached"; bad=1; }
	disarm
	set -- $base
	log "by reference, copied: $base as is, $inj with one check failed"
	[ $bad = 0 ] && [ "$inj" = "$(($1 - 1)) $(($2 + 1))" ]
}
rpc_do krpc_test disconnect > /dev/null
rpc_check "tcp: server on $A:$P" krpc_test server_stop
rpc_check "tcp: TCP server" krpc_test transport 2
rpc_check "tcp: TCP server starts" krpc_test server_start "$P"
rpc_check "tcp: client connects over TCP" krpc_test connect "$A" "$P" $DEPTH
ktap_check "tcp: a payload that cannot go by reference is copied, echoes intact" \
	tcp_copy
rpc_check "tcp: echo works again" krpc_test echo 65536 2
rpc_check "tcp: client disconnects" krpc_test disconnect
rpc_check "tcp: server stops" krpc_test server_stop
rpc_check "tcp: default transport again" krpc_test transport 0
rpc_check "tcp: server starts again" krpc_test server_start "$P"
ktap_check "tcp: nothing left" settle 0

# --- userspace: pool creation, connect and call through /dev/krpc ---
rpc_do krpc_test disconnect > /dev/null
uround() {
	local name=$1 fn=$2 ret=$3 skip=$4 step=$5 want=$6 ok=1
	arm "$fn" "$ret" "$skip" 0 || { ktap_fail "$name: arm $fn"; disarm; return; }
	"$bin/fault_user" "$A" "$P" "$step" "$want" | sed 's/^/# /'
	[ "${PIPESTATUS[0]}" = 0 ] || ok=0
	fired || { log "$fn was not reached"; ok=0; }
	disarm
	for _ in $(seq $((100 * RPC_SLOW))); do
		[ "$(krpc_stat files_open)" = 0 ] && break
		sleep 0.1
	done
	settle 0 || ok=0
	[ "$(krpc_stat files_open)" = 0 ] || { log "files_open $(krpc_stat files_open)"; ok=0; }
	if [ $ok = 1 ]; then
		ktap_ok "$name: $fn fails, $step gets -$want, nothing left"
	else
		ktap_fail "$name: $fn fails, $step gets -$want, nothing left"
	fi
}
pools0=$(krpc_stat pools)
uround "user pool" krpc_pool_create -$ENOMEM 0 pool $ENOMEM
uround "user pool half made" krpc_pool_buf_alloc NULL 10 pool $ENOMEM
ktap_check "user: no pool left" test "$(krpc_stat pools)" = "$pools0"
uround "user connect" krpc_conn_alloc NULL 0 connect $ENOMEM
uround "user connect: QP" krpc_rdma_create_qp -$ENOMEM 0 connect $ENOMEM
uround "user call" krpc_call_alloc NULL 0 call $ENOMEM
ktap_check "user: pool, connect and echo work again" \
	pp "$bin/fault_user" "$A" "$P" none 0

# --- failslab: every slab allocation of the task, in turn ---
echo N > $fs/ignore-gfp-wait	# GFP_KERNEL allocations too
echo 0 > $fs/verbose		# an injected failure is not a splat
# sweep NAME CONNS COMMAND [UNDO]: fail allocation 1, 2, ... of COMMAND
# until it makes no more; each attempt must succeed (then UNDO runs) or
# fail with -ENOMEM (-ENOBUFS: a route the network stack could not
# allocate while rdma_cm resolved the address), and leave CONNS
# connections
sweep() {
	local name=$1 conns=$2 cmd=$3 undo=${4:-} n=0 out bad=0 failed=0
	while [ $n -lt 400 ]; do
		n=$((n + 1))
		out=$("$bin/fault_write" $dbg/cmd "$cmd" $n | tr '\n' ' ')
		case "$out" in
		"ok not reached "*)
			[ -n "$undo" ] && rpc_do krpc_test "$undo" > /dev/null
			break ;;
		"ok injected "*) [ -n "$undo" ] && rpc_do krpc_test "$undo" > /dev/null ;;
		"error -$ENOMEM "*" injected "*|"error -$ENOBUFS "*" injected "*)
			failed=$((failed + 1)) ;;
		*) log "$name, allocation $n: $out"; bad=$((bad + 1)) ;;
		esac
		settle "$conns" || { log "$name, allocation $n: left something"; bad=$((bad + 1)); }
	done
	log "$name: $((n - 1)) allocations, $failed failures reached the caller"
	ktap_check "$name: every failed allocation unwound (an error or success)" \
		test $bad = 0
	ktap_check "$name: some failures reached the caller" test $failed -gt 0
	ktap_check "$name: the sweep ended" test $n -lt 400
}
sweep "failslab connect" 0 "connect $A $P $DEPTH" disconnect
connect_ok "failslab connect"
sweep "failslab call" 2 "echo 1000 1"
rpc_check "failslab call: echo works" krpc_test echo 65536 2
echo "$gfp_wait0" > $fs/ignore-gfp-wait

# --- module: unload, reload with the pool made at the first connect ---
ktap_check "unload everything" unload
ktap_check "reload" load
round "reload: pool" krpc_pool_create -$ENOMEM 0 0 $ENOMEM 0 "${c[@]}"
connect_ok "reload"
rpc_check "client disconnects" krpc_test disconnect
ktap_check "no connection, call or request left" settle 0
ktap_check "rmmod krpc_test, krpc; nothing left" unload
ktap_finish
