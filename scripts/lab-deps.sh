#!/bin/sh
# Install (idempotently) the Debian 12 packages the clusterforge local lab needs.
#   podman mode : podman + runc + netavark (+ iptables, which netavark drives)
#   image build : debootstrap (reads the apt mirror already configured here)
#   fabric      : ibsim-utils, libumad2sim0, opensm, infiniband-diags
#   access      : openssh-client (ssh, ssh-keygen), iproute2
# Run as root. Safe to re-run: already-installed packages are skipped and
# apt-get is only called when something is missing.
set -eu

PKGS="podman runc netavark iptables debootstrap ibsim-utils libumad2sim0 opensm infiniband-diags openssh-client iproute2"

if [ "$(id -u)" -ne 0 ]; then
    echo "lab-deps.sh: must run as root" >&2
    exit 1
fi

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    echo "lab-deps.sh: all lab packages already installed"
    exit 0
fi

echo "lab-deps.sh: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
# policy-rc.d: never start daemons (opensm ships an init script) on this host.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod 0755 "$policy"
    created_policy=1
fi
cleanup() { if [ "$created_policy" -eq 1 ]; then rm -f "$policy"; fi; }
trap cleanup EXIT INT TERM

if ! apt-get install -y --no-install-recommends $missing; then
    apt-get update
    apt-get install -y --no-install-recommends $missing
fi
echo "lab-deps.sh: done"
