#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rpc_echo.sh with cq_shared=1: Soft-RoCE's connections take their CQs from
# ib_core's shared pool (IB_POLL_SOFTIRQ), the path of hardware devices,
# instead of CQs of their own reaped per event (rdma_cq.c).  The same
# checks, and no completion reaped per event.
KRPC_CQ_SHARED=1 exec bash "$(dirname "$0")/rpc_echo.sh" "$@"
