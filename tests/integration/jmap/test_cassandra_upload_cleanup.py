"""The expired-upload clean-up on ``uploadsV2`` and the ``jmap-uploads`` bucket (James's
``CassandraUploadRepository.deleteByUploadDateBefore``)."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest

from mailserver.jmap.uploads import UPLOAD_BUCKET, CassandraUploadRepository
from mailserver.model.address import Username

pytestmark = pytest.mark.integration


def test_uploads_before_the_horizon_lose_row_and_content_later_ones_stay(cassandra, s3_blobs, unique):
    now = datetime.now(UTC)
    uploaded_at = [now - timedelta(days=400)]   # older than anything another test leaves in the shared table
    uploads = CassandraUploadRepository(cassandra, s3_blobs, clock=lambda: uploaded_at[0])
    user = Username.of(f"cleanup-{unique}@example.test")
    old = uploads.upload(user, "text/plain", io.BytesIO(b"old"))
    uploaded_at[0] = now - timedelta(days=300)
    kept = uploads.upload(user, "text/plain", io.BytesIO(b"kept"))

    assert uploads.delete_uploaded_before(now - timedelta(days=350)) >= 1
    assert uploads.retrieve(user, old.id) is None
    assert cassandra.one("SELECT id FROM uploadsV2 WHERE user = ? AND id = ?", (user.value, old.id)) is None
    assert not s3_blobs.exists(UPLOAD_BUCKET, old.blob_id)
    assert uploads.retrieve(user, kept.id) == kept
    assert uploads.content(kept) == b"kept"
    assert uploads.delete_uploaded_before(now - timedelta(days=350)) == 0   # a re-run finds nothing more
