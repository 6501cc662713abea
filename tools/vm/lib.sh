# SPDX-License-Identifier: GPL-2.0
# Shell helpers shared by tools/vm/run, tools/check and tools/vm-demo.

vm_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
vm_cache=$vm_top/tools/vm/cache

# Kernel-log lines that fail a run.  The taint from an unsigned out-of-tree
# module ("module verification failed", "loading out-of-tree module") is
# expected and not matched.
VM_SPLAT_RE='Oops|BUG:|WARNING:|Call Trace:|general protection fault|'\
'kernel BUG|KASAN|UBSAN|kmemleak:.*new suspected|unreferenced object|'\
'possible circular locking|possible recursive locking|inconsistent lock state|'\
'INFO: trying to register|suspicious RCU usage|bad unlock balance|'\
'rcu_sched self-detected|rcu: INFO|RCU stall|detected stall|'\
'blocked for more than|soft lockup|hard LOCKUP|list_add corruption|'\
'list_del corruption|Kernel panic|refcount_t:|DEBUG_LOCKS_WARN_ON|ODEBUG:'

# Print the splat lines of a kernel log (with a little context); status 0
# when there is at least one.  With a second argument "allow-alloc-fail",
# the reports of failed allocations (warn_alloc: "page allocation
# failure", "vmalloc error"; kmem_cache_create() "failed with error",
# each with its stack) are not splats: fault injection tests cause them on
# purpose.  (SLUB turns a failed allocation inside kmem_cache_create()
# into -EINVAL, hence -22 beside -12.)
vm_splats() {
	if [ "${2:-}" = allow-alloc-fail ]; then
		awk '/(page allocation failure|vmalloc error): / { skip = 1 }
		     /kmem_cache_create[a-z_]*\(.*\) failed with error -(12|22)$/ { skip = 1 }
		     !skip { print }
		     skip && /<\/TASK>/ { skip = 0 }' "$1"
	else
		cat "$1"
	fi | grep -E -A12 "$VM_SPLAT_RE"
}

# Set rel, kdir, bzimage and modroot for a kernel name: 6.1, 6.12, a full
# release unpacked in the cache, or "debug".
vm_resolve_kernel() {
	local k=$1 dir line
	if [ "$k" = debug ]; then
		local out
		out=$("$vm_top/tools/vm/debug-kernel/build" --print) || {
			echo "vm: the debug kernel is not built (tools/vm/debug-kernel/build)" >&2
			return 1
		}
		while read -r line; do
			case "$line" in
			KDIR=*)    kdir=${line#KDIR=} ;;
			BZIMAGE=*) bzimage=${line#BZIMAGE=} ;;
			MODROOT=*) modroot=${line#MODROOT=} ;;
			RELEASE=*) rel=${line#RELEASE=} ;;
			esac
		done <<< "$out"
		return 0
	fi
	if [ -d "$vm_cache/$k" ]; then
		dir=$vm_cache/$k
	else
		dir=$(ls -d "$vm_cache/$k".* 2>/dev/null | sort -V | tail -n1)
	fi
	if [ -z "$dir" ] || [ ! -f "$dir/.done" ]; then
		echo "vm: kernel '$k' is not unpacked (run tools/setup)" >&2
		return 1
	fi
	rel=$(basename "$dir")
	kdir=$dir/kdir
	bzimage=$dir/root/boot/vmlinuz-$rel
	modroot=$dir/root
}

# (Re)build the initramfs for the resolved kernel when missing or older
# than the scripts that make it.
vm_initramfs() {
	local out=$1 f
	mkdir -p "$(dirname "$out")"
	if [ -f "$out" ]; then
		for f in mkinitramfs initramfs-init; do
			[ "$vm_top/tools/vm/$f" -nt "$out" ] && { rm -f "$out"; break; }
		done
	fi
	[ -f "$out" ] && return 0
	"$vm_top/tools/vm/mkinitramfs" "$modroot" "$rel" "$out"
}

# Print the accelerator for the resolved kernel: "kvm" when /dev/kvm boots
# it, else "tcg" (software emulation).  A /dev/kvm can be there and still
# not run an ordinary kernel: a nested PVM hypervisor (kvm_pvm) takes only
# guests built for it, and QEMU then runs without the guest ever printing
# a line.  So the kernel is booted once with KVM, without an initramfs, to
# the panic that ends it (a second or two); no "Linux version" line on the
# console within 30 s means no KVM.  The answer is kept per host boot in
# build/vm.  KRPC_VM_ACCEL=kvm or tcg decides without a probe.
vm_accel() {
	local cache=$vm_top/build/vm/accel-$rel boot out
	if [ -n "${KRPC_VM_ACCEL:-}" ]; then
		echo "$KRPC_VM_ACCEL"
		return
	fi
	if [ ! -w /dev/kvm ]; then
		echo tcg
		return
	fi
	boot=$(cat /proc/sys/kernel/random/boot_id)
	if [ -f "$cache" ] && [ "$(head -n1 "$cache")" = "$boot" ]; then
		sed -n 2p "$cache"
		return
	fi
	mkdir -p "$(dirname "$cache")"
	out=$(mktemp)
	timeout --kill-after=5 30 qemu-system-x86_64 -machine q35,accel=kvm \
		-cpu max,la57=off -smp 1 -m 512 -display none -monitor none \
		-no-reboot -nic none -serial "file:$out" -kernel "$bzimage" \
		-append "console=ttyS0 panic=-1 loglevel=5" >/dev/null 2>&1 || true
	if grep -q "Linux version" "$out"; then
		printf '%s\nkvm\n' "$boot" > "$cache"
	else
		echo "vm: /dev/kvm does not boot $rel; software emulation" >&2
		printf '%s\ntcg\n' "$boot" > "$cache"
	fi
	rm -f "$out"
	sed -n 2p "$cache"
}
