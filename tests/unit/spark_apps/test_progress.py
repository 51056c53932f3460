"""Progress lines and the summary block a person reads at the end of a job's log."""

from __future__ import annotations

from spark_apps.common.progress import Progress, format_seconds, summary_block
from tests.support.clock import ManualClock


def test_progress_tells_slices_items_rate_and_eta():
    clock = ManualClock(0.0)
    progress = Progress(slices=4, items=400, clock=clock)
    clock.now = 10.0
    assert progress.slice_done(100) == "progress: 1/4 slices, 100/400 items, 10.0 items/s, ETA 30s"
    clock.now = 20.0
    progress.slice_done(100)
    clock.now = 30.0
    progress.slice_done(100)
    clock.now = 40.0
    assert progress.slice_done(100).endswith("400/400 items, 10.0 items/s, ETA done")


def test_format_seconds():
    assert (format_seconds(7), format_seconds(125), format_seconds(3725)) == ("7s", "2m05s", "1h02m05s")


def test_summary_block_of_a_repair_and_of_a_dry_run():
    repair = {"type": "solve-message-inconsistencies", "outcome": "PARTIAL", "dryRun": False,
              "detected": {"orphanImapUid": 3, "orphanMessageId": 2}, "fixedInconsistencies": [{}, {}, {}, {}],
              "errors": [{"error": "x"}], "unresolved": 1, "newSinceDetection": 0, "durationSeconds": 65.2}
    block = summary_block(repair, "s3://maintenance-reports/reports/r/solve-message-inconsistencies.json").splitlines()
    assert block[1] == "SUMMARY solve-message-inconsistencies: PARTIAL"
    assert "  detected:   5 {'orphanImapUid': 3, 'orphanMessageId': 2}" in block
    assert "  failed:     1" in block and "  unresolved: 1" in block and "  duration:   1m05s" in block
    assert block[-2] == "  full report: s3://maintenance-reports/reports/r/solve-message-inconsistencies.json"
    assert len(block) <= 12

    dry = summary_block({"type": "t", "outcome": "DRY_RUN", "dryRun": True, "detected": {}}, "s3://b/k")
    assert "dry run: nothing was written" in dry and "fixed" not in dry and "  detected:   0" in dry
