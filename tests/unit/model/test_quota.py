"""Quota values with James's conventions."""

from __future__ import annotations

from mailserver.model.address import Username
from mailserver.model.quota import QuotaLimits, QuotaRoot, QuotaType, QuotaUsage


def test_negative_quota_limit_means_unlimited_as_in_james():
    assert QuotaLimits(count=-1, size=-1).exceeded_by(QuotaUsage(10**6, 10**12)) == []
    assert QuotaLimits(count=-1, size=-1).unlimited
    assert QuotaLimits(count=5, size=-1).exceeded_by(QuotaUsage(6, 1)) == [QuotaType.COUNT]


def test_quota_root_strings_follow_james():
    root = QuotaRoot.for_user(Username.of("Bob@Example.com"))
    assert root.value == "#private&bob@example.com"
    assert root.as_string() == "#private&bob@example.com@example.com"
    assert QuotaRoot.for_user(Username.of("bob")).as_string() == "#private&bob"
