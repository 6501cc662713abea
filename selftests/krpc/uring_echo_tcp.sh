#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# uring_echo over the TCP transport: the same binary with KRPC_TRANSPORT=tcp
# (read by uring_lib.h for its servers and clients).
bin=$KRPC_TOP/build/user/selftests/uring_echo
[ -x "$bin" ] || { echo "not ok 1 uring_echo not built"; exit 1; }
KRPC_TRANSPORT=tcp exec "$bin" "$@"
