#!/bin/sh
# A shell "on" a VM of the real-control-plane tests (test/real/vm/host.ts), for
# `meshvm doctor --vm-exec` and `war rollout --restart-command` there:
#   --vm-exec 'sh test/real/vm/exec.sh "$MESHVM_VM_ADDRESS"'
# As test/vm/exec.sh does for the simulated VM: it runs the script it gets on stdin with /bin/sh, as
# `ssh VM` would, with the VM's loopback ports 15000 (Envoy admin) and 15021 (pilot-agent) mapped to
# the ports its host serves them on, the bundle's hosts file as the VM's /etc/hosts, and ss showing
# the sidecar's connection to istiod as its host reports it. Each running
# host has a line "ADMIN_PORT STATUS_PORT CONTROL_PORT HOSTS_FILE" in $MESHVM_REAL_VMS/ADDRESS.
# With a command after the address, it runs that instead; `… systemctl restart istio` (or `stop`)
# restarts (stops) the VM's sidecar through its host, as systemd would. Commands on its standard
# input (doctor's fixes) get the same through bin/sudo, which also writes the Istio install's files
# (`sudo tee /etc/certs/root-cert.pem` …) into the bundle directory the host reads.
set -eu
entry=$(cat "${MESHVM_REAL_VMS:?set MESHVM_REAL_VMS}/${1:-}" 2>/dev/null) || { echo "no VM at ${1:-(no address)}" >&2; exit 255; }
shift
VM_ADMIN_PORT=${entry%% *}
rest=${entry#* }
VM_STATUS_PORT=${rest%% *}
rest=${rest#* }
control=${rest%% *}
VM_HOSTS=${rest#* }
VM_CONTROL_PORT=$control
VM_BUNDLE=$(dirname "$VM_HOSTS")
export VM_ADMIN_PORT VM_STATUS_PORT VM_HOSTS VM_CONTROL_PORT VM_BUNDLE
bin="$(cd "$(dirname "$0")" && pwd)/bin"
if [ $# -gt 0 ]; then
  case "$*" in
    *"systemctl restart istio"*) exec curl -sS --fail-with-body -X POST "http://127.0.0.1:$control/restart" ;;
    *"systemctl stop istio"*) exec curl -sS --fail-with-body -X POST "http://127.0.0.1:$control/stop" ;;
    *) PATH="$bin:$PATH" exec /bin/sh -c "$*" ;;
  esac
fi
PATH="$bin:$PATH" exec /bin/sh -s
