#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# krpc.ko loads with an rxe device present, sees it through its ib_client,
# creates /dev/krpc and its debugfs files, and leaves nothing behind.
. "$(dirname "$0")/lib.sh"

krpc_loaded && ktap_skip_all "krpc already loaded"
ktap_check "insmod krpc.ko" krpc_load
ktap_check "/dev/krpc is a character device" test -c /dev/krpc
ktap_check "module refcount is 0" test "$(cat /sys/module/krpc/refcnt)" = 0
ktap_check "module is tainted only as out-of-tree/unsigned" \
	grep -qvE '[^OE]' /sys/module/krpc/taint
ktap_check "ib_client saw $KRPC_RXE" test "$(krpc_devices)" = "$KRPC_RXE"
ktap_check "devices_added counter is 1" test "$(krpc_stat devices_added)" = 1
out=$("$KRPC_TOP/build/user/tools/krpcctl" info)
log "$out"
ktap_check "krpcctl info sees one device" grep -qx 'devices 1' <<< "$out"
ktap_check "krpcctl info reports ABI 1" grep -qx 'abi 1' <<< "$out"
ktap_check "no file left open" test "$(krpc_stat files_open)" = 0
ktap_check "files_opened counted krpcctl" test "$(krpc_stat files_opened)" = 1
ktap_check "rmmod krpc" krpc_unload
ktap_check "nothing left after rmmod" krpc_assert_gone
ktap_check "device removal logged" grep -q "krpc: device $KRPC_RXE removed" <(dmesg)
ktap_finish
