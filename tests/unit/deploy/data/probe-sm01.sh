echo '@@cf kernel'; uname -r
echo '@@cf systemd'; if [ -d /run/systemd/system ]; then echo yes; else echo no; fi
echo '@@cf module'; cat /sys/module/nvidia/version 2>/dev/null || true
echo '@@cf ofed'; ofed_info -s 2>/dev/null || true
echo '@@cf dpkg'; dpkg-query -W -f='${Package}	${Version}	${db:Status-Abbrev}
' doca-ofed opensm 2>/dev/null || true
echo '@@cf file /etc/apt/preferences.d/clusterforge.pref'; if [ -f /etc/apt/preferences.d/clusterforge.pref ]; then stat -c %a /etc/apt/preferences.d/clusterforge.pref; sha256sum < /etc/apt/preferences.d/clusterforge.pref | cut -d' ' -f1; base64 -w0 < /etc/apt/preferences.d/clusterforge.pref; echo; else echo absent; fi
echo '@@cf file /etc/apt/sources.list.d/clusterforge.list'; if [ -f /etc/apt/sources.list.d/clusterforge.list ]; then stat -c %a /etc/apt/sources.list.d/clusterforge.list; sha256sum < /etc/apt/sources.list.d/clusterforge.list | cut -d' ' -f1; base64 -w0 < /etc/apt/sources.list.d/clusterforge.list; echo; else echo absent; fi
echo '@@cf file /etc/security/limits.d/90-clusterforge-rdma.conf'; if [ -f /etc/security/limits.d/90-clusterforge-rdma.conf ]; then stat -c %a /etc/security/limits.d/90-clusterforge-rdma.conf; sha256sum < /etc/security/limits.d/90-clusterforge-rdma.conf | cut -d' ' -f1; base64 -w0 < /etc/security/limits.d/90-clusterforge-rdma.conf; echo; else echo absent; fi
echo '@@cf file /etc/systemd/timesyncd.conf.d/60-clusterforge.conf'; if [ -f /etc/systemd/timesyncd.conf.d/60-clusterforge.conf ]; then stat -c %a /etc/systemd/timesyncd.conf.d/60-clusterforge.conf; sha256sum < /etc/systemd/timesyncd.conf.d/60-clusterforge.conf | cut -d' ' -f1; base64 -w0 < /etc/systemd/timesyncd.conf.d/60-clusterforge.conf; echo; else echo absent; fi
echo '@@cf file /etc/hosts'; if [ -f /etc/hosts ]; then stat -c %a /etc/hosts; sha256sum < /etc/hosts | cut -d' ' -f1; base64 -w0 < /etc/hosts; echo; else echo absent; fi
echo '@@cf file /etc/netplan/60-clusterforge-ipoib.yaml'; if [ -f /etc/netplan/60-clusterforge-ipoib.yaml ]; then stat -c %a /etc/netplan/60-clusterforge-ipoib.yaml; sha256sum < /etc/netplan/60-clusterforge-ipoib.yaml | cut -d' ' -f1; base64 -w0 < /etc/netplan/60-clusterforge-ipoib.yaml; echo; else echo absent; fi
echo '@@cf file /etc/opensm/opensm.conf'; if [ -f /etc/opensm/opensm.conf ]; then stat -c %a /etc/opensm/opensm.conf; sha256sum < /etc/opensm/opensm.conf | cut -d' ' -f1; base64 -w0 < /etc/opensm/opensm.conf; echo; else echo absent; fi
echo '@@cf file /etc/opensm/root-guids.conf'; if [ -f /etc/opensm/root-guids.conf ]; then stat -c %a /etc/opensm/root-guids.conf; sha256sum < /etc/opensm/root-guids.conf | cut -d' ' -f1; base64 -w0 < /etc/opensm/root-guids.conf; echo; else echo absent; fi
echo '@@cf file /etc/opensm/cn-guids.conf'; if [ -f /etc/opensm/cn-guids.conf ]; then stat -c %a /etc/opensm/cn-guids.conf; sha256sum < /etc/opensm/cn-guids.conf | cut -d' ' -f1; base64 -w0 < /etc/opensm/cn-guids.conf; echo; else echo absent; fi
echo '@@cf file /etc/opensm/io-guids.conf'; if [ -f /etc/opensm/io-guids.conf ]; then stat -c %a /etc/opensm/io-guids.conf; sha256sum < /etc/opensm/io-guids.conf | cut -d' ' -f1; base64 -w0 < /etc/opensm/io-guids.conf; echo; else echo absent; fi
echo '@@cf file /etc/opensm/partitions.conf'; if [ -f /etc/opensm/partitions.conf ]; then stat -c %a /etc/opensm/partitions.conf; sha256sum < /etc/opensm/partitions.conf | cut -d' ' -f1; base64 -w0 < /etc/opensm/partitions.conf; echo; else echo absent; fi
echo '@@cf file /etc/opensm/node-name-map'; if [ -f /etc/opensm/node-name-map ]; then stat -c %a /etc/opensm/node-name-map; sha256sum < /etc/opensm/node-name-map | cut -d' ' -f1; base64 -w0 < /etc/opensm/node-name-map; echo; else echo absent; fi
echo '@@cf proc opensm'; pgrep -x opensm || true
echo '@@cf bin netplan'; command -v netplan || true
echo '@@cf services'; if [ -d /run/systemd/system ]; then echo "openibd $(systemctl is-enabled openibd 2>/dev/null || true) $(systemctl is-active openibd 2>/dev/null || true)"; echo "opensm $(systemctl is-enabled opensm 2>/dev/null || true) $(systemctl is-active opensm 2>/dev/null || true)"; fi
