"""ssdlab.fio_logs on small hand-written fio logs (format: fio HOWTO, "Log File Formats")."""
import gzip

import numpy as np
import pytest

import ssdlab.fio_logs as fl
from ssdlab.analysis import analyze_iops
from ssdlab.fio_logs import (
    detect_window_ms,
    find_logs,
    latency_percentiles_us,
    parse_log_name,
    read_bw_log,
    read_iops_log,
    read_iops_logs,
    read_lat_log,
    read_log,
)

from conftest import hist_row


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return path


# ----------------------------------------------------------------------------- windowed IOPS logs


def test_windowed_log_with_jitter_and_a_stall(tmp_path):
    # log_avg_msec=1000: stamp = end of the window, a few ms of jitter; fio writes no row for a
    # window without IO, so seconds 4 and 5 (windows ending at 5000, 6000) are stalls.
    p = write(tmp_path / "run_iops.1.log", [
        "1000, 80000, 1, 0, 0",
        "2001, 79000, 1, 0, 0",
        "3000, 100, 1, 0, 0",
        "4002, 35000, 1, 0, 0",
        "7001, 120, 1, 0, 0",
        "8000, 110, 1, 0, 0",
    ])
    s = read_iops_log(p)
    assert s["iops"].tolist() == [80000, 79000, 100, 35000, 0, 0, 120, 110]
    assert s["t_s"].tolist() == [0, 1, 2, 3, 4, 5, 6, 7]
    assert detect_window_ms(read_log(p)) == 1000


def test_windowed_rows_after_a_stall_keep_their_ios(tmp_path):
    # After a stall the row stamped 5500 is a window's rate (30 IOs over 4500..5500, placed by
    # its middle in second 5); fio catching up writes the next row 500 ms later: 50 IO/s over
    # 5500..6000 = 25 IOs, also second 5. Seconds 2..4 had no IO.
    p = write(tmp_path / "a_iops.log", ["1000, 10, 1, 0", "2000, 10, 1, 0", "5500, 30, 1, 0",
                                        "6000, 50, 1, 0", "7000, 10, 1, 0"])
    assert read_iops_log(p, log_avg_msec=1000)["iops"].tolist() == [10, 10, 0, 0, 0, 55, 10]


def test_windowed_500ms_rebinned_to_seconds(tmp_path):
    p = write(tmp_path / "x_iops.log", ["500, 100, 1, 0, 0, 0", "1000, 300, 1, 0, 0, 0",
                                        "1500, 50, 1, 0, 0, 0", "2000, 50, 1, 0, 0, 0"])
    assert detect_window_ms(read_log(p)) == 500
    assert read_iops_log(p)["iops"].tolist() == [200.0, 50.0]


def test_directions(tmp_path):
    p = write(tmp_path / "mix_iops.1.log", [
        "1000, 300, 0, 0, 0", "1000, 700, 1, 0, 0",
        "2000, 200, 0, 0, 0", "2000, 800, 1, 0, 0",
    ])
    assert read_iops_log(p, "write")["iops"].tolist() == [700, 800]
    assert read_iops_log(p, 0)["iops"].tolist() == [300, 200]
    assert read_iops_log(p)["iops"].tolist() == [1000, 1000]  # None: all directions summed
    with pytest.raises(ValueError, match=r"mix_iops\.1\.log: no entries for direction 'trim' \(found: read, write\)"):
        read_iops_log(p, "trim")
    with pytest.raises(ValueError, match="direction must be"):
        read_iops_log(p, 5)


def test_priority_hex_and_unix_epoch(tmp_path):
    # newer fio prints the priority as 0x%04x; log_unix_epoch=1 gives absolute ms stamps
    t0 = 1_700_000_000_000
    p = write(tmp_path / "e_iops.log", [f"{t0 + 1000 * i}, {v}, 1, 0, 0, 0x0000" for i, v in
                                        enumerate([5, 6, 7], start=1)])
    assert read_iops_log(p)["iops"].tolist() == [5, 6, 7]


# ----------------------------------------------------------------------------- per-IO logs


def test_per_io_log_counts_ios_per_second(tmp_path):
    # fio default log_avg_msec=0: one row per IO, value 1, real block size
    p = write(tmp_path / "p_iops.1.log", [
        "3, 1, 1, 4096, 0", "250, 1, 1, 4096, 8192", "999, 1, 1, 4096, 4096",
        "2000, 1, 1, 4096, 0", "2999, 1, 1, 4096, 0",
        "3100, 1, 0, 4096, 0",  # a read, ignored for direction='write'
    ])
    assert detect_window_ms(read_log(p)) == 0
    assert read_iops_log(p, "write")["iops"].tolist() == [3, 0, 2]
    assert read_iops_log(p)["iops"].tolist() == [3, 0, 2, 1]


def test_bw_logs(tmp_path):
    win = write(tmp_path / "w_bw.1.log", ["1000, 1000, 1, 0, 0", "2000, 2000, 1, 0, 0"])
    assert read_bw_log(win)["mbps"] == pytest.approx([1.024, 2.048])  # KiB/s -> 10^6 B/s
    per_io = write(tmp_path / "p_bw.1.log", ["10, 99999, 1, 4096, 0", "20, 99999, 1, 8192, 0",
                                             "1500, 99999, 1, 4096, 0"])
    assert read_bw_log(per_io)["mbps"] == pytest.approx([0.012288, 0.004096])


def test_lat_log_percentiles(tmp_path):
    lines = [f"{i}, {1000 * (i + 1)}, 1, 4096, 0, 0" for i in range(100)]  # 1..100 us
    s = read_lat_log(write(tmp_path / "j_clat.1.log", lines))
    pct = latency_percentiles_us(s["lat_ns"])
    assert pct["p50"] == pytest.approx(50.5) and pct["max"] == 100.0
    assert set(pct) == {"p50", "p99", "p99.9", "p99.99", "max"}
    windowed = write(tmp_path / "j_lat.1.log", ["1000, 5000, 1, 0, 0", "2000, 6000, 1, 0, 0"])
    with pytest.raises(ValueError, match="windowed latency log"):
        read_lat_log(windowed)


# ----------------------------------------------------------------------------- names, several jobs


@pytest.mark.parametrize("name, expected", [
    ("run_iops.1.log", ("run", "iops", 1)),
    ("run_iops.log", ("run", "iops", None)),
    ("my_job_clat.12.log", ("my_job", "clat", 12)),
    ("x_bw.3.log.gz", ("x", "bw", 3)),
    ("notes.txt", None),
    ("run_iops.1.log.fz", None),
])
def test_parse_log_name(name, expected):
    ln = parse_log_name(name)
    assert (ln if ln is None else (ln.job, ln.kind, ln.index)) == expected


def test_find_and_sum_job_logs(tmp_path):
    write(tmp_path / "run_iops.2.log", ["1000, 20, 1, 0", "2000, 20, 1, 0", "3000, 20, 1, 0"])
    write(tmp_path / "run_iops.1.log", ["1000, 10, 1, 0", "2000, 10, 1, 0"])
    write(tmp_path / "run_bw.1.log", ["1000, 10, 1, 0"])
    write(tmp_path / "other_iops.1.log", ["1000, 5, 1, 0"])
    assert [p.name for p in find_logs(tmp_path / "run")] == ["run_iops.1.log", "run_iops.2.log"]
    assert len(find_logs(tmp_path)) == 3
    assert read_iops_logs(tmp_path / "run")["iops"].tolist() == [30, 30, 20]
    with pytest.raises(FileNotFoundError, match="no fio iops logs"):
        find_logs(tmp_path / "nothing")


def test_gzip_log(tmp_path):
    p = tmp_path / "z_iops.1.log.gz"
    with gzip.open(p, "wt") as f:
        f.write("1000, 7, 1, 0, 0\n2000, 8, 1, 0, 0\n")
    assert read_iops_log(p)["iops"].tolist() == [7, 8]


# ----------------------------------------------------------------------------- malformed input


GOOD = [f"{1000 * i}, 5000, 1, 0, 0" for i in range(1, 17)]  # lines 1..16


@pytest.mark.parametrize("bad, why", [
    ("17000 5000 1 0", "need at least 4"),
    ("17000, 5000, 1", "3 fields, need at least 4"),
    ("17000, fast, 1, 0", "the first four fields must be numbers"),
    ("17000, 5000, 7, 0", "direction must be 0 \\(read\\), 1 \\(write\\) or 2 \\(trim\\), got 7"),
    ("-5, 5000, 1, 0", "time must be >= 0"),
    ("17000, nan, 1, 0", "finite"),
    ("17000, 5000, 1, 4096.5", "block size"),
])
def test_malformed_line_names_file_and_line(tmp_path, bad, why):
    p = write(tmp_path / "run.log", GOOD + [bad, "18000, 5000, 1, 0, 0"])
    with pytest.raises(ValueError, match=r"run\.log:17: expected 'time_ms, value, direction, bs") as e:
        read_iops_log(p)
    assert repr(bad) in str(e.value)
    assert e.match(why)


def test_blank_and_comment_lines_count_for_line_numbers(tmp_path):
    p = write(tmp_path / "c_iops.log", ["# made by hand", "", "1000, 5, 1, 0", "2000, oops, 1, 0"])
    with pytest.raises(ValueError, match=r"c_iops\.log:4: "):
        read_log(p)


def test_error_line_number_in_a_later_chunk(tmp_path, monkeypatch):
    monkeypatch.setattr(fl, "_CHUNK_LINES", 4)
    p = write(tmp_path / "big.log", GOOD[:9] + ["10000, 5000, x, 0"])
    with pytest.raises(ValueError, match=r"big\.log:10: "):
        read_log(p)
    ok = write(tmp_path / "ok.log", GOOD)
    assert read_iops_log(ok)["iops"].size == 16


def test_empty_and_compressed_logs(tmp_path):
    with pytest.raises(ValueError, match="empty_iops.log: no log entries"):
        read_iops_log(write(tmp_path / "empty_iops.log", ["", "# nothing"]))
    fz = tmp_path / "r_iops.1.log.fz"
    fz.write_bytes(b"\x00\x01")
    with pytest.raises(ValueError, match="inflate-log"):
        read_iops_log(fz)
    with pytest.raises(FileNotFoundError):
        read_iops_log(tmp_path / "missing_iops.log")


# ----------------------------------------------------------------------------- end to end


def test_fio_log_to_analysis(tmp_path):
    iops = np.full(600, 100)
    iops[3::7] = 35000
    lines = [f"{1000 * (i + 1) + (i % 3)}, {v}, 1, 0, 0, 0" for i, v in enumerate(iops)]
    series = read_iops_log(write(tmp_path / "m5pro_iops.1.log", lines))
    assert series["iops"].tolist() == iops.tolist()
    res = analyze_iops(series["iops"])
    assert res["bimodal"] is True and res["burst_period_s"] == 7.0


# ----------------------------------------------------------------------------- histogram logs


def _fio_hist_rows(done_ms: np.ndarray, window_ms: int) -> list[str]:
    """The rows fio writes at ``log_hist_msec=window_ms`` for IOs completing at ``done_ms``
    (sorted, ms): windows follow each other every ``window_ms`` from the first completion; a
    completion at or past its window's end closes a row holding every IO since the previous row
    (one row per completion: after a stall the grid catches up a row at a time). Checked
    against fio 3.33's own log of 74K IOs on an emulated drive: the same rows, times and counts."""
    rows, start, edge = [], 0, int(done_ms[0]) + window_ms
    for i, t in enumerate(done_ms):
        if t >= edge:
            rows.append(hist_row(int(t), i + 1 - start, 500_000))
            start, edge = i + 1, edge + window_ms
    return rows


#: 1000 IOs a second to 20 s, a burst of 0.3 s at 31.6 s between two stalls, 1000 a second from 43 s.
STALLS_MS = np.concatenate([np.arange(1, 20_000), np.arange(31_600, 31_900), np.arange(43_000, 50_000)])
STALLS_EXACT = np.bincount(STALLS_MS // 1000, minlength=50).astype(float)


def _stalls_grid(tmp_path, rows: list[str], window_ms: int) -> np.ndarray:
    log = write(tmp_path / "run_clat_hist.1.log", rows)
    grid = fl.grid_from_hist(fl.read_hist_log(log), log, interval_s=1.0, window_ms=window_ms, end_s=50.0)
    grid.add_tail("write", STALLS_MS.size, 50.0)
    return grid.ios["write"]


@pytest.mark.parametrize("window_ms", [1000, 100])
def test_a_burst_between_stalls_stays_in_its_second(tmp_path, window_ms):
    """The row closed by the first IO after the second stall holds the burst before it. Its
    window ended on fio's grid (43 s is 11 windows late), so the burst is placed in second 31,
    where it completed, and the stalls' seconds stay at 0 IOPS."""
    ios = _stalls_grid(tmp_path, _fio_hist_rows(STALLS_MS, window_ms), window_ms)
    assert ios.sum() == STALLS_MS.size
    assert np.array_equal(ios == 0, STALLS_EXACT == 0), np.flatnonzero((ios == 0) != (STALLS_EXACT == 0))
    assert np.abs(ios - STALLS_EXACT).max() <= 2, np.abs(ios - STALLS_EXACT).max()  # the grid starts at 1 ms


def test_a_window_taken_to_start_at_the_previous_row_misplaces_the_burst(tmp_path, monkeypatch):
    """What the grid is for: the burst's row follows rows the grid caught up with at 31.6 s; a
    window taken to start there would end at 32.6 s and put the burst in second 32, a stalled one."""
    monkeypatch.setattr(fl, "_window_ends", lambda t, prev, w: np.minimum(t, prev + w))
    ios = _stalls_grid(tmp_path, _fio_hist_rows(STALLS_MS, 1000), 1000)
    assert ios[32] > 250 and ios[31] < 50 and (ios == 0).sum() == (STALLS_EXACT == 0).sum() - 1, ios[30:34]


def test_rows_of_jobs_sharing_one_log_are_read_without_a_grid(tmp_path):
    """Two jobs' rows in one log (more rows than windows since time 0): no grid; each window
    ends at most W after the previous row, as in a log of an older fio. Every IO counts and
    the stalls stay at 0 IOPS."""
    t = np.array([1000.0, 1001.0, 2000.0, 2001.0])
    prev = fl._prev_times(t, 1000.0)
    assert np.array_equal(fl._window_ends(t, prev, 1000.0), np.minimum(t, prev + 1000.0))
    rows = sorted(_fio_hist_rows(STALLS_MS, 1000) + _fio_hist_rows(STALLS_MS + 1, 1000),
                  key=lambda r: int(r.split(",")[0]))
    log = write(tmp_path / "run_clat_hist.1.log", rows)
    grid = fl.grid_from_hist(fl.read_hist_log(log), log, interval_s=1.0, window_ms=1000, end_s=50.0)
    grid.add_tail("write", 2 * STALLS_MS.size, 50.0)
    ios = grid.ios["write"]
    assert ios.sum() == 2 * STALLS_MS.size and (ios[20:31] == 0).all() and (ios[33:43] == 0).all()


def test_a_histogram_log_spanning_more_cells_than_the_cap_is_refused_naming_it(tmp_path):
    """Per-interval histograms take intervals x bins cells: 928 bins over 200,000 s would be
    186 M cells (1.4 GiB), above MAX_HIST_CELLS; the same rows 100 s apart are read."""
    assert 200_000 * 928 > fl.MAX_HIST_CELLS > 100 * 928
    far, near = tmp_path / "far_clat_hist.1.log", tmp_path / "near_clat_hist.1.log"
    far.write_text(hist_row(1000, 5) + "\n" + hist_row(200_000_000, 5) + "\n")
    near.write_text(hist_row(1000, 5) + "\n" + hist_row(100_000, 5) + "\n")
    most = fl.MAX_HIST_CELLS // 928
    with pytest.raises(ValueError, match=rf"{far}: .* intervals of 928 latency bins .*at most {most:,}"):
        fl.grid_from_hist(fl.read_hist_log(far, []), far, window_ms=1000)
    grid = fl.grid_from_hist(fl.read_hist_log(near, []), near, window_ms=1000)
    assert grid.n == 100 and grid.ios["write"].sum() == 10
