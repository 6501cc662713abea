#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# uring_cq over the TCP transport: the same binary with KRPC_TRANSPORT=tcp.
# Completions then come from the TCP receive path, not the RDMA CQ handler.
bin=$KRPC_TOP/build/user/selftests/uring_cq
[ -x "$bin" ] || { echo "not ok 1 uring_cq not built"; exit 1; }
KRPC_TRANSPORT=tcp exec "$bin" "$@"
