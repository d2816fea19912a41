"""The storage tiers' model: targets, striping, PCC, HSM with credentials by reference only (constructed
inventories from _storage_util)."""

from __future__ import annotations

from typing import Any

import pytest
from _storage_util import data
from pydantic import ValidationError

from clusterforge.model import Inventory
from clusterforge.model.services import failover_of, target_name
from clusterforge.model.storage import CredentialsRef, data_devices, looks_like_secret


def _hsm(**credentials: Any) -> dict[str, Any]:
    d = data()
    d["lustre"][0]["hsm"]["credentials"] = credentials
    return d


def test_the_constructed_inventory_loads_with_its_defaults() -> None:
    inv = Inventory.model_validate(data())
    fs = inv.lustre[0]
    ost = fs.targets[2]
    assert (ost.layout, ost.size_tb, ost.failover) == ("raid6", None, None)
    assert failover_of(fs, ost) == "lus02"  # the server's partner in failover_pairs
    assert target_name(fs, ost) == "lfs01-OST0000" and target_name(fs, fs.targets[1]) == "lfs01-MDT0001"
    assert (fs.striping.count, fs.striping.size_mib) == (1, 1)
    assert fs.pcc is not None and fs.pcc.device_kind == "nvme" and fs.pcc.mount == "/mnt/pcc"
    assert fs.hsm is not None and fs.hsm.credentials.file == "/etc/lustre/hsm-s3.cred"
    assert (fs.hsm.erasure.data, fs.hsm.erasure.coding) == (4, 2)
    assert inv.storage_sizing.read_gbps_per_gpu == 0.875
    assert inv.storage_sizing.device_read_gbps.of("optane-pmem") == 6.8


@pytest.mark.parametrize(("layout", "devices", "usable"), [
    ("none", 3, 3), ("raid1", 2, 1), ("raid10", 6, 3), ("raid5", 5, 4), ("raid6", 6, 4), ("raid6", 12, 10)])
def test_data_devices_per_layout(layout: str, devices: int, usable: float) -> None:
    assert data_devices(layout, devices) == usable


@pytest.mark.parametrize("text", [
    "AKIAIOSFODNN7EXAMPLE",  # an AWS-shaped access key id (the documentation example)
    "HSMS3KEY0123456789ABCDEF",  # letters and digits run together, no separator
    "/etc/lustre/wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY",  # a 40-character key as a path segment
])
def test_inline_secrets_are_recognised(text: str) -> None:
    assert looks_like_secret(text)


@pytest.mark.parametrize("text", ["HSM_S3_CREDENTIALS", "/etc/lustre/hsm-s3.cred", "CEPH_RGW_KEYS", "192.0.2.10"])
def test_references_are_not_secrets(text: str) -> None:
    assert not looks_like_secret(text)


@pytest.mark.parametrize(("credentials", "says"), [
    ({"env": "AKIAIOSFODNN7EXAMPLE"}, "looks like an inline secret"),
    ({"file": "/etc/lustre/wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"}, "looks like an inline secret"),
    ({"access_key": "x", "secret_key": "y"}, "the inventory holds no secrets"),
    ({"file": "/etc/a.cred", "env": "HSM_KEYS"}, "exactly one"),
    ({}, "exactly one"),
])
def test_the_model_refuses_inline_secrets_and_bad_references(credentials: dict[str, str], says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        Inventory.model_validate(_hsm(**credentials))


def test_a_credentials_string_is_refused_whatever_it_holds() -> None:
    with pytest.raises(ValidationError, match="looks like an inline secret"):
        CredentialsRef.model_validate("AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY")
    with pytest.raises(ValidationError, match="is not a reference"):
        CredentialsRef.model_validate("ceph")


@pytest.mark.parametrize("endpoint", [
    "https://192.0.2.10:7480/?X-Amz-Signature=abc", "https://rgw.example.net/?AWSAccessKeyId=x",
    "https://user:pw@192.0.2.10"])
def test_an_endpoint_carrying_credentials_is_refused(endpoint: str) -> None:
    d = data()
    d["lustre"][0]["hsm"]["endpoint"] = endpoint
    with pytest.raises(ValidationError):
        Inventory.model_validate(d)


@pytest.mark.parametrize(("field", "value"), [
    ("striping", {"count": 0}), ("pcc", {"size_tb": 2, "rule": "projid=1000"}),
    ("pcc", {"size_tb": 0, "rule": "projid={1000}"}), ("pcc", {"size_tb": 2, "rule": "projid={1000}; rm -rf"}),
])
def test_bad_tier_settings_are_schema_errors(field: str, value: dict[str, Any]) -> None:
    d = data()
    d["lustre"][0][field] = value
    with pytest.raises(ValidationError):
        Inventory.model_validate(d)


def test_a_pcc_rule_with_terms_joined_is_accepted() -> None:
    d = data()
    d["lustre"][0]["pcc"]["rule"] = "projid={1000 1001} & fname={*.tfrecord}"
    assert Inventory.model_validate(d).lustre[0].pcc is not None
