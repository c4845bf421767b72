"""The S3 adapter writes and reads objects under the keys django-storages gives them."""
from __future__ import annotations

import pytest
from django.core.exceptions import SuspiciousOperation
from storages.backends.s3 import S3Storage
from storages.utils import clean_name

from arkme.kernel.storage import s3_object_key

NAMES = ["blobs/ab/cd/abcd", "attachments/x/../y", "a//b", "dir\\file", "./z"]


@pytest.mark.parametrize("location", ["", "media", "media/", "a/b"])
def test_a_key_is_the_one_django_storages_uses_for_the_name(location):
    storage = S3Storage(location=location, bucket_name="bucket")
    for name in NAMES:
        # The storage's own (private) naming, to which its public save, open and url all go.
        assert s3_object_key(storage, name) == storage._normalize_name(clean_name(name))


def test_a_name_that_leaves_the_location_is_refused():
    with pytest.raises(SuspiciousOperation):
        s3_object_key(S3Storage(location="media", bucket_name="bucket"), "../elsewhere")
