"""The deployment check that the S3 bucket exists and takes a write, a read and a delete; the
check that no task may outlive the Redis visibility timeout."""
from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from config.checks import check_blob_store_writable, check_tasks_end_before_redelivery
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


def test_a_task_limit_past_the_redis_visibility_timeout_is_an_error(settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/0"
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 60}
    settings.CELERY_TASK_TIME_LIMIT = 59
    assert check_tasks_end_before_redelivery() == []
    settings.CELERY_TASK_TIME_LIMIT = 60
    [error] = check_tasks_end_before_redelivery()
    assert error.id == "arkme.E003" and "60s" in error.msg
    settings.CELERY_BROKER_URL = "amqp://127.0.0.1:5672//"  # no visibility timeout on RabbitMQ
    assert check_tasks_end_before_redelivery() == []


def test_a_task_stopped_at_its_time_limit_is_a_503_for_the_caller():
    from celery.exceptions import TimeLimitExceeded

    from arkme.kernel.errors import QueueUnavailable
    from arkme.kernel.tasking import wait

    class Stopped:
        id = "t"

        def get(self, **kwargs):
            raise TimeLimitExceeded(300)

    with pytest.raises(QueueUnavailable):
        wait(Stopped(), timeout=5)  # type: ignore[arg-type]
