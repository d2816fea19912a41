"""`lfs df` over the real captures in tests/fixtures/lfs-df (each with its .source): targets, their space,
the inactive ones kept with their reason, both summary labels; garbage is a ParseError naming the line."""

from __future__ import annotations

from _parse_helpers import fixture, raises_at

from clusterforge.parse import lfs_df

G = 1024**3


def test_inactive_osts_are_kept_with_their_reason() -> None:
    (fs,) = lfs_df.parse(fixture("lfs-df/iml-vagrant-4ost-inactive-devices-filesystem-summary-space"))
    assert (fs.fsname, fs.mount) == ("fs", "/mnt/fs")
    down = [(t.kind, t.index, t.status) for t in fs.targets if not t.active]
    assert down == [("OST", i, "inactive device") for i in (1, 3, 5, 7)]
    assert [t.index for t in fs.targets if t.kind == "OST" and t.active] == [0, 2, 4, 6]
    assert fs.total_bytes == round(11.6 * G)  # the older "filesystem summary:" label


def test_dne_mdts_and_osts_numbered_from_3() -> None:
    (fs,) = lfs_df.parse(fixture("lfs-df/rk94-tfs1-3mdt-4ost-dne-filesystem_summary"))
    assert fs.mount == "/mnt/lustre/tfs1" and fs.fsname == "tfs1"
    assert [(t.kind, t.index) for t in fs.targets] == [("MDT", 0), ("MDT", 1), ("MDT", 2),
                                                      ("OST", 3), ("OST", 4), ("OST", 5), ("OST", 6)]
    assert all(t.active and t.total_bytes == round(9.2 * G) for t in fs.targets if t.kind == "OST")


def test_blank_line_before_the_summary_and_terabytes() -> None:
    (fs,) = lfs_df.parse(fixture("lfs-df/fsx-workshop-1mdt-3ost-1.1T-blank-before-summary"))
    assert fs.total_bytes == round(3.3 * 1024**4)
    assert fs.targets[3].used_bytes == round(187.0 * 1024**2)


def test_plain_1k_blocks_and_two_filesystems() -> None:
    # constructed (the captures are all -h): plain lfs df prints 1K blocks, one header per mounted file system
    text = ("UUID                   1K-blocks        Used   Available Use% Mounted on\n"
            "a-MDT0000_UUID            1000          10         990   1% /mnt/a[MDT:0]\n"
            "a-OST0000_UUID            2000          20        1980   1% /mnt/a[OST:0]\n"
            "filesystem_summary:       2000          20        1980   1% /mnt/a\n\n"
            "UUID                   1K-blocks        Used   Available Use% Mounted on\n"
            "b-OST0001_UUID            : Resource temporarily unavailable\n"
            "b-OST0002_UUID            4000          40        3960   1% /mnt/b[OST:2]\n")
    a, b = lfs_df.parse(text)
    assert (a.fsname, a.total_bytes, a.targets[1].available_bytes) == ("a", 2000 * 1024, 1980 * 1024)
    assert (b.fsname, b.mount, b.total_bytes) == ("b", "/mnt/b", None)
    assert (b.targets[0].active, b.targets[0].status) == (False, "Resource temporarily unavailable")


def test_garbage_names_the_line() -> None:
    head = "UUID                       bytes        Used   Available Use% Mounted on\n"
    assert lfs_df.parse("") == ()  # no Lustre mounted: nothing on stdout
    raises_at(lfs_df.parse, "fs-OST0000_UUID 1G 1M 1G 1% /mnt/fs[OST:0]\n", 1)  # no header
    raises_at(lfs_df.parse, head + "fs-OST0000_UUID 1G 1M 1G 1% /mnt/fs[OST:1]\n", 2)  # index mismatch
    raises_at(lfs_df.parse, head + "fs-OST0000_UUID 1G 1M\n", 2)  # cut short
    raises_at(lfs_df.parse, head + "fs-OST0000_UUID 1G 1M 1G 1% /mnt/fs[OST:0]\n"
                            "gs-OST0001_UUID 1G 1M 1G 1% /mnt/fs[OST:1]\n", 3)  # two file systems, one block
    raises_at(lfs_df.parse, head + "filesystem_summary: 1G 1M 1G 1% /mnt/fs\nfs-OST0000_UUID 1G 1M 1G 1% "
                            "/mnt/fs[OST:0]\n", 3)  # after the summary
