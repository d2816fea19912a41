#!/bin/sh
# Install (idempotently) the Debian 12 packages the clusterforge local lab needs
# (and the few others the project uses: graphviz, dpkg-dev, apt-utils).
#
#   podman mode : podman runc netavark iptables
#                 (rootful podman, runc because crun fails on cgroup v1 hosts,
#                  netavark as network backend; it drives iptables and fails
#                  without it.  No aardvark-dns: lab networks run --disable-dns.
#                  No slirp4netns/uidmap: the lab is rootful.)
#   image build : debootstrap (bootstraps from the apt mirror already configured)
#   fabric      : ibsim-utils libumad2sim0 opensm infiniband-diags
#   access      : openssh-client (ssh, ssh-keygen) iproute2 (ip netns)
#   monitoring  : prometheus (promtool) prometheus-alertmanager (amtool)
#                 victoria-metrics (vmagent, vmalert) prometheus-node-exporter
#   archive (S3): swift swift-proxy swift-account swift-container swift-object
#                 memcached (the lab's real S3 server: Swift's s3api on loopback,
#                 lab/s3.py; about 250 MB resident while it runs)
#
#   --netns     : also openssh-server, for the fallback mode (one network
#                 namespace + sshd per host) used when podman cannot run.
#                 Daemons are not started here (policy-rc.d); on systemd hosts
#                 the package still enables ssh.service for the next boot.
#
# Run as root.  Safe to re-run: apt-get runs only when something is missing.
set -eu

PKGS="podman runc netavark iptables debootstrap ibsim-utils libumad2sim0 opensm infiniband-diags openssh-client iproute2"
# the rest of the project: fabric diagrams (render), the deploy's stand-in apt repository
PKGS="$PKGS graphviz dpkg-dev apt-utils"
# monitoring (docs/monitoring.md): promtool (rule tests), amtool, the store with vmagent/vmalert, node_exporter
PKGS="$PKGS prometheus prometheus-alertmanager victoria-metrics prometheus-node-exporter"
# the Lustre format step's tests (docs/storage.md): blkid reads a real ext4 made by mkfs.ext4
PKGS="$PKGS util-linux e2fsprogs"
# mount unit names are tested against the real systemd-escape (tests/unit/storage/test_mount_units.py)
PKGS="$PKGS systemd"
# EL-shaped lab nodes (docs/os.md): the stand-in RPMs built by rpmbuild, served as a dnf repository made by
# createrepo_c (module metadata by modifyrepo_c); dnf and its versionlock plugin run the deploy's commands
PKGS="$PKGS rpm dnf dnf-plugins-core createrepo-c"
# the floor page's browser tests: Debian's Chromium and its driver (selenium drives them; nothing downloaded)
PKGS="$PKGS chromium chromium-driver"
PKGS="$PKGS swift swift-proxy swift-account swift-container swift-object memcached"

for arg in "$@"; do
    case "$arg" in
    --netns) PKGS="$PKGS openssh-server" ;;
    -h | --help)
        sed -n '2,24p' "$0"
        exit 0
        ;;
    *)
        echo "lab-deps.sh: unknown argument: $arg" >&2
        exit 2
        ;;
    esac
done

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
# Never start daemons from maintainer scripts (opensm and openssh-server ship
# services): a temporary policy-rc.d, removed again on exit.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod 0755 "$policy"
    created_policy=1
fi
cleanup() {
    if [ "$created_policy" -eq 1 ]; then
        rm -f "$policy"
    fi
}
trap cleanup EXIT INT TERM

# shellcheck disable=SC2086  # word splitting of the package list is intended
if ! apt-get install -y --no-install-recommends $missing; then
    apt-get update
    # shellcheck disable=SC2086
    apt-get install -y --no-install-recommends $missing
fi
echo "lab-deps.sh: done"
