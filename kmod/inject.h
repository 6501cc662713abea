/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fault-injection points: the functions that fail_function
 * (CONFIG_FAIL_FUNCTION, make check-debug) may make fail, each marked with
 * ALLOW_ERROR_INJECTION() next to its definition and tested by
 * selftests/krpc/fault_rpc.sh.  A point is where one of krpc's own
 * allocations or verbs calls can fail; an injected failure skips the whole
 * function and returns the injected value, so a point is either a function
 * whose callers handle every failure it reports, a tiny wrapper around
 * one verb whose failure the caller handles, or a check whose answer
 * ("true", ALLOW_ERROR_INJECTION(..., TRUE)) takes a fallback that is
 * otherwise never reached.
 *
 * fail_function finds a point by name (kallsyms) and probes one copy of
 * it: points are never inlined or cloned, and their names are unique in
 * the kernel, krpc_ prefixed even when static.
 */
#ifndef KRPC_INJECT_H
#define KRPC_INJECT_H

#include <linux/compiler.h>
#include <linux/error-injection.h>

#define KRPC_FAULT_POINT	noinline __noclone

#endif /* KRPC_INJECT_H */
