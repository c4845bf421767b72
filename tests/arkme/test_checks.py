"""The deployment check that the S3 bucket exists and takes a write, a read and a delete."""
from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from arkme.checks import check_blob_store_writable
from tests.conftest import s3_blob_settings


def test_local_files_need_no_bucket(settings):
    settings.ARKME_STORAGE = "filesystem"
    assert check_blob_store_writable() == []


@pytest.mark.s3
def test_a_writable_bucket_passes_and_keeps_nothing(s3, moto_endpoint):
    import boto3

    assert check_blob_store_writable() == []
    listed = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1").list_objects_v2(Bucket=s3)
    assert listed.get("KeyCount", 0) == 0


@pytest.mark.s3
def test_a_missing_bucket_fails_the_deploy_check(s3, settings, moto_endpoint):
    blob = s3_blob_settings(moto_endpoint, "arkme-no-such-bucket")
    settings.STORAGES = {**settings.STORAGES, "default": blob, "blobs": blob}
    settings.ARKME_S3_BUCKET = "arkme-no-such-bucket"
    [error] = check_blob_store_writable()
    assert error.id == "arkme.E001" and "arkme-no-such-bucket" in error.msg
    assert "secret" not in error.msg.lower() and "key" not in error.msg.lower()
    with pytest.raises(SystemCheckError, match="arkme.E001"):
        call_command("check", "--deploy", "--tag", "storage")
