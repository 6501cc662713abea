#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# An open /dev/krpc holds a module reference: rmmod is refused (never a
# crash), and succeeds once the file is closed.
. "$(dirname "$0")/lib.sh"

krpc_loaded && ktap_skip_all "krpc already loaded"

ktap_check "insmod krpc.ko" krpc_load
exec 3<> /dev/krpc
ktap_check "open file counted" test "$(krpc_stat files_open)" = 1
ktap_check "refcount is 1 with the file open" test "$(cat /sys/module/krpc/refcnt)" = 1
ktap_check "rmmod refused while open" bash -c '! rmmod krpc 2>/dev/null'
ktap_check "module still there" krpc_loaded
exec 3>&-
ktap_check "refcount back to 0" test "$(cat /sys/module/krpc/refcnt)" = 0
ktap_check "rmmod after close" krpc_unload
ktap_check "nothing left after rmmod" krpc_assert_gone
ktap_finish
