#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rpc_teardown.sh with cq_shared=1: connections die mid-call, the device
# goes away mid-call, while their CQs come from ib_core's shared pool
# (IB_POLL_SOFTIRQ), the path of hardware devices, instead of Soft-RoCE's
# CQs of their own (rdma_cq.c).  No completion is reaped per event.
KRPC_CQ_SHARED=1 exec bash "$(dirname "$0")/rpc_teardown.sh" "$@"
