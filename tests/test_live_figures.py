"""The progress line's live figures: last interval's IOPS, minimum, time at 0, time to go."""
import numpy as np
import pytest

from conftest import require_loops
from ssdlab.targets.base import JobSpec, LiveFigures


def test_intervals_close_as_time_passes():
    live = LiveFigures(1.0, duration_s=10.0, bs_bytes=4096)
    assert live.text() == "0/10 s, 10 s to go"
    live.update(0.5, 400)          # inside the first interval: nothing closed yet
    assert live.last_iops is None
    live.update(1.2, 1000)         # interval 0 closed with 1000 IOs
    assert live.last_iops == 1000 and live.min_iops == 1000
    live.update(4.1, 1000)         # intervals 1..3: nothing completed (a stall)
    assert live.last_iops == 0 and live.min_iops == 0 and live.zero_intervals == 3
    live.update(5.0, 3000)         # interval 4: 2000 IOs
    assert live.last_iops == 2000 and live.zero_intervals == 3
    assert live.text() == "2,000 IOPS (8.2 MB/s), min 0, 3 s at 0 · 5/10 s, 5 s to go"
    untimed = LiveFigures(0.5, clock="simulated")
    untimed.update(1.0, 100)
    assert untimed.last_iops == 100 and untimed.text().endswith("1 s simulated")


@pytest.mark.realtime
def test_fio_phase_reports_live_figures(tmp_path):
    require_loops()
    from ssdlab.targets.fio import LoopTarget

    texts = []
    with LoopTarget("128MB", tmp_path) as t:
        t.purge()
        t.run_phase(JobSpec("w", "randwrite", bs_bytes=4096, qd=16, duration_s=3.0),
                    lambda frac, text: texts.append((frac, text)))
    live = [x for _, x in texts if "IOPS" in x]
    assert live, texts  # after the first interval the line shows the device's IOPS
    iops = [float(x.split(" IOPS")[0].split(": ")[-1].replace(",", "")) for x in live]
    assert max(iops) > 100
    assert "s to go" in live[-1] and "s at 0" in live[-1]
    assert np.all(np.diff([f for f, _ in texts]) >= 0)
