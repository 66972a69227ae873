#!/bin/sh
# A shell "on" a simulated VM (test/vm/vm.ts), for `meshvm doctor --vm-exec` and
# `proxy-status -o wide --vm-exec` in tests and on the demo:
#   --vm-exec 'sh test/vm/exec.sh "$MESHVM_VM_ADDRESS"'
# It runs the script it gets on stdin with /bin/sh, as `ssh VM` would, with the VM's loopback ports
# 15000 (Envoy admin) and 15021 (pilot-agent) mapped to the simulated VM's admin port, its
# application's ports to the simulated application, its hosts file as the resolver, and sudo for the
# files of the Istio install (test/vm/bin). $MESHVM_SIM_VMS/ADDRESS holds "ADMIN_PORT BUNDLE_DIR PID"
# for each running VM. With a command after the address, it runs that instead; `… systemctl restart
# istio` restarts the simulated sidecar (SIGHUP), as on a VM (war rollout --restart-command).
set -eu
entry=$(cat "${MESHVM_SIM_VMS:?set MESHVM_SIM_VMS}/$1" 2>/dev/null) || { echo "no simulated VM at $1" >&2; exit 255; }
shift
set -- "$@"
SIM_ADMIN_PORT=${entry%% *}
rest=${entry#* }
SIM_BUNDLE=${rest% *}
SIM_HOSTS=$SIM_BUNDLE/hosts
SIM_PID=${rest##* }
export SIM_ADMIN_PORT SIM_HOSTS SIM_BUNDLE SIM_PID
if [ $# -gt 0 ]; then
  case "$*" in
    # Only the command itself, as ssh would run it (not a shell given more words, `sh sudo systemctl …`).
    "systemctl restart istio" | "sudo systemctl restart istio") exec kill -HUP "$SIM_PID" ;;
    *) PATH="$(cd "$(dirname "$0")" && pwd)/bin:$PATH" exec /bin/sh -c "$*" ;;
  esac
fi
PATH="$(cd "$(dirname "$0")" && pwd)/bin:$PATH" exec /bin/sh -s
