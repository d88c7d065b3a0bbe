#!/bin/bash
# Stage 2 of the VM's start-up (see test/vm/vm_run.sh), run by the host's bash
# as PID 1 after the initramfs set the guest up and switched to the read-only
# host root. Runs the command that vm_run.sh left in the output share, writes
# its exit status there and powers off. Only shell builtins besides the
# command: under TCG every program loaded over 9p costs about a second.
# Not meant to be run by hand.
out=/run/gga-vm/out
. "$out/config"

ulimit -l unlimited 2>/dev/null
ulimit -n 65536 2>/dev/null
export HOME=/root
export GGA_VM_GUEST=1
export GGA_VM_REPO GGA_VM_KVER

if cd "$GGA_VM_CWD"; then
	# A subshell rather than a new bash: one program less to load.
	(. "$out/cmd.sh") </dev/null >>"$out/output" 2>&1
	rc=$?
else
	echo "vm guest: cannot cd to $GGA_VM_CWD" >>"$out/output"
	rc=125
fi
# The kernel log helps to debug a failure; save it then only.
if [ "$rc" -ne 0 ]; then
	dmesg >"$out/dmesg.log" 2>&1
fi
echo "$rc" >"$out/status"
# The output share has no cache: everything written is on the host already.
/bin/busybox poweroff -f 2>/dev/null || /usr/bin/busybox poweroff -f 2>/dev/null
echo o >/proc/sysrq-trigger
read -r -t 30 <>/dev/zero 2>/dev/null
