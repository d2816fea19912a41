"""The storage tiers' figures (issue #23): the sizing report (`plan storage`) beside the BOM on the same
inventory, and the archive tier's S3 round trip through the lab's real S3 server (Debian's Swift with s3api on
loopback, lab/s3.py) beside the same bytes written to and read back from a file on the same disk.

The S3 client is boto3, driven from what the copytool's mover reads (endpoint, region, bucket, prefix of the
rendered lhsm-plugin-s3), as tests/lab/test_s3_archive_lab.py does; the object key is `<prefix>/<FID>`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from clusterforge.api import load_checked
from clusterforge.lab.s3 import S3Lab, missing_tools
from clusterforge.plan.bom import bill_of_materials
from clusterforge.plan.prices import EXAMPLE_PRICES
from clusterforge.plan.storage import storage_report
from timing import best_of

S3_SIZES_MIB = (4, 64)


class BenchFailed(RuntimeError):
    """An S3 round trip that did not return the bytes it sent: no figure."""


def _sizing_rows(envs: dict[str, Path]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for name, env in envs.items():
        index = load_checked(env).index
        prices = index.inv.prices or EXAMPLE_PRICES
        reports = storage_report(index, prices)
        rows.append({
            "bench": "storage sizing", "inventory": name, "nodes": len(index.inv.nodes),
            "file_systems": len(reports), "targets": sum(len(fs.targets) for fs in index.inv.lustre),
            "sizing_s": round(best_of(lambda index=index, prices=prices: storage_report(index, prices), runs=5), 4),
            "bom_s (peer)": round(best_of(lambda index=index, prices=prices: bill_of_materials(index, prices),
                                          runs=5), 4),
        })
    return rows


def _round_trip(put: Callable[[bytes], None], get: Callable[[], bytes], data: bytes) -> float:
    """Seconds to store `data` and read it back; the bytes must come back as sent."""
    t0 = time.perf_counter()
    put(data)
    back = get()
    seconds = time.perf_counter() - t0
    if hashlib.sha256(back).digest() != hashlib.sha256(data).digest():
        raise BenchFailed(f"{len(data)} bytes came back different")
    return seconds


def _s3_rows(tmp: Path) -> list[dict[str, object]]:
    if missing_tools():  # run.py's preflight refuses first
        raise BenchFailed(f"the lab's S3 server needs {', '.join(missing_tools())} (scripts/lab-deps.sh)")
    import boto3
    from botocore.config import Config

    rows: list[dict[str, object]] = []
    root = tmp / "s3-bench"
    root.mkdir()
    with S3Lab(root) as s3:
        client = boto3.session.Session(aws_access_key_id=s3.access_key, aws_secret_access_key=s3.secret_key).client(
            "s3", endpoint_url=s3.endpoint, region_name=s3.region,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}))
        bucket, key = "lfs01-archive", "lfs01/0x200000401:0x1:0x0"
        client.create_bucket(Bucket=bucket)
        local = root / "local-copy"
        for mib in S3_SIZES_MIB:
            data = os.urandom(mib << 20)

            def s3_put(b: bytes) -> None:
                client.put_object(Bucket=bucket, Key=key, Body=b)

            def s3_get() -> bytes:
                body: bytes = client.get_object(Bucket=bucket, Key=key)["Body"].read()
                return body

            def file_put(b: bytes) -> None:
                with open(local, "wb") as fh:
                    fh.write(b)
                    fh.flush()
                    os.fsync(fh.fileno())  # Swift's object server fsyncs what it stores

            s3_s = min(_round_trip(s3_put, s3_get, data) for _ in range(3))
            file_s = min(_round_trip(file_put, local.read_bytes, data) for _ in range(3))
            rows.append({
                "bench": "S3 round trip", "mib": mib, "s3_put+get_s": round(s3_s, 3),
                "s3_mb_s": round(2 * len(data) / s3_s / 1e6, 1), "file_write+read_s (peer)": round(file_s, 3),
                "file_mb_s": round(2 * len(data) / file_s / 1e6, 1), "server_rss_mb": round(s3.rss_mb()),
            })
        client.delete_object(Bucket=bucket, Key=key)
    shutil.rmtree(root, ignore_errors=True)
    return rows


def bench_storage(tmp: Path, envs: dict[str, Path]) -> list[dict[str, object]]:
    return [*_sizing_rows(envs), *_s3_rows(tmp)]
