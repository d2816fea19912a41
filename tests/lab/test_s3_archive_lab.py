"""The archive tier's S3 side against a real S3 server (issue #23; docs/storage.md).

The lab's S3 server (lab/s3.py): OpenStack Swift from Debian's packages with its s3api middleware, one node
on loopback. A copy of prod whose HSM archive points at it (`endpoint`, `credentials: {file: ...}`) is
rendered; what the copytool's S3 mover would read, the rendered `etc/lhsmd/lhsm-plugin-s3` (endpoint, region,
bucket, prefix) and the service drop-in (`AWS_SHARED_CREDENTIALS_FILE`), drives a real S3 client (boto3, as
Lemur's mover uses the AWS SDK): the bucket is created, a 4 MiB file archived under the prefix, read back
byte for byte, listed, removed; a wrong key is refused. Lemur itself is not packaged in Debian or PyPI: the
mover's own code does not run here (docs/storage.md says so).

Run: `.venv/bin/pytest -q tests/lab/test_s3_archive_lab.py` (needs scripts/lab-deps.sh's swift packages).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from cf_lab_net import cf
from clusterforge.lab.s3 import S3Lab, missing_tools

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Lab]:
    if missing_tools():
        pytest.fail(f"the lab's S3 server needs {', '.join(missing_tools())}: run scripts/lab-deps.sh (CI does)")
    with S3Lab(tmp_path_factory.mktemp("s3")) as server:
        yield server


def _rendered(tmp: Path, s3: S3Lab) -> tuple[dict[str, str], str]:
    """prod's copy pointed at the lab's S3 server, rendered: the S3 mover's settings and its keys' file."""
    env = tmp / "prod"
    shutil.copytree(ROOT / "inventories" / "prod", env)
    services = env / "services.yaml"
    data = yaml.safe_load(services.read_text())
    hsm = data["lustre"][0]["hsm"]
    hsm["endpoint"] = s3.endpoint
    hsm["credentials"] = {"file": str(tmp / "hsm-s3.cred")}
    services.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp / "out"
    code, text = cf("render", str(env), "--output", str(out), "--no-svg")
    assert code == 0, text
    agent = hsm["agents"][0]
    etc = out / "hosts" / agent / "etc"
    conf = (etc / "lhsmd" / "lhsm-plugin-s3").read_text()
    settings = dict(re.findall(r'^\s*(\w+) = "?([^"\n]*)"?$', conf, re.M))
    dropin = (etc / "systemd" / "system" / "lhsmd.service.d" / "clusterforge.conf").read_text()
    (cred,) = re.findall(r"^Environment=AWS_SHARED_CREDENTIALS_FILE=(\S+)$", dropin, re.M)
    return settings, cred


def test_the_rendered_archive_settings_archive_and_restore_through_a_real_s3_server(
        s3: S3Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import ClientError

    settings, cred = _rendered(tmp_path, s3)
    assert settings["endpoint"] == s3.endpoint and settings["bucket"] == "lfs01-archive"
    assert "secret" not in Path(cred).name and not Path(cred).exists()  # a reference: the site writes the keys
    # the site's keys, where the drop-in says the mover reads them (AWS shared-credentials format)
    Path(cred).write_text(f"[default]\naws_access_key_id = {s3.access_key}\naws_secret_access_key = {s3.secret_key}\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", cred)
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    client = boto3.session.Session().client(
        "s3", endpoint_url=settings["endpoint"], region_name=settings["region"],
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}))
    bucket, key = settings["bucket"], f"{settings['prefix']}/0x200000401:0x1:0x0"  # prefix/<Lustre FID>
    client.create_bucket(Bucket=bucket)
    data = os.urandom(4 << 20)
    t0 = time.perf_counter()
    client.put_object(Bucket=bucket, Key=key, Body=data)  # archive
    back = client.get_object(Bucket=bucket, Key=key)["Body"].read()  # restore
    round_trip = time.perf_counter() - t0
    assert hashlib.sha256(back).digest() == hashlib.sha256(data).digest()
    listed = client.list_objects_v2(Bucket=bucket, Prefix=f"{settings['prefix']}/")
    assert [(o["Key"], o["Size"]) for o in listed["Contents"]] == [(key, len(data))]
    client.delete_object(Bucket=bucket, Key=key)  # remove
    assert client.list_objects_v2(Bucket=bucket, Prefix=f"{settings['prefix']}/")["KeyCount"] == 0
    assert round_trip < 30, round_trip
    print(f"S3 round trip (4 MiB archived and restored): {round_trip:.3f} s; server RSS {s3.rss_mb():.0f} MB")

    wrong = boto3.session.Session(aws_access_key_id=s3.access_key, aws_secret_access_key="0" * 32).client(
        "s3", endpoint_url=settings["endpoint"], region_name=settings["region"],
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    with pytest.raises(ClientError) as refused:
        wrong.get_object(Bucket=bucket, Key=key)
    assert refused.value.response["Error"]["Code"] in ("SignatureDoesNotMatch", "AccessDenied"), refused.value.response


def test_the_servers_stop_with_nothing_left(tmp_path: Path) -> None:
    server = S3Lab(tmp_path).start()
    pids = [p.pid for p in server.procs]
    assert len(pids) == 5 and server.rss_mb() > 0
    server.stop()
    assert all(not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
               for pid in pids)
