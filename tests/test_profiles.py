"""Profiles: built-ins load, overrides apply, and every bad input is one clear error naming
the file or option and the key."""
from __future__ import annotations

import pytest

from ssdlab import profiles
from ssdlab.errors import ProfileError

from conftest import SMALL_DRIVE, run_cli, set_args


def test_default_profile_is_a_256gb_class_drive_with_seven_percent_spare():
    p = profiles.load_profile("default")
    assert p.user_bytes == 256_000_000_000
    assert p.geometry["physical_bytes"] == 256 * 2**30
    assert p.geometry["spare_fraction"] == pytest.approx(0.0687, abs=1e-3)
    assert "default" in dict(profiles.list_profiles())


def test_overrides_apply_with_size_suffixes():
    p = profiles.load_profile("default", ["blocks_per_plane=64", "user_capacity_bytes=7GiB", "gc_policy=fifo"])
    assert p.values["blocks_per_plane"] == 64
    assert p.values["user_capacity_bytes"] == 7 * 2**30
    assert p.values["gc_policy"] == "fifo"


@pytest.mark.parametrize("override, words", [
    ("chanels=2", ["--set chanels=2", "`chanels`", "did you mean `channels`"]),
    ("channels=four", ["`channels`", "whole number"]),
    ("gc_policy=lru", ["`gc_policy`", "greedy"]),
    ("user_capacity_bytes=300GiB", ["`user_capacity_bytes`", "spare"]),
    ("planes_per_die=0", ["`planes_per_die`"]),
    ("t_prog_us=-1", ["`t_prog_us`", "negative"]),
    ("no-equals-sign", ["KEY=VALUE"]),
])
def test_bad_override_names_option_and_key(override, words):
    with pytest.raises(ProfileError) as e:
        profiles.load_profile("default", [override])
    for w in words:
        assert w in str(e.value), f"{w!r} not in {e.value}"


def test_bad_profile_file_errors_name_the_file_line_and_key(tmp_path):
    bad_toml = tmp_path / "broken.toml"
    bad_toml.write_text('name = "x"\nchannels = \n')
    with pytest.raises(ProfileError, match=r"broken\.toml.*line 2"):
        profiles.load_profile(str(bad_toml))
    typo = tmp_path / "typo.toml"
    typo.write_text('pages_per_blok = 64\n')
    with pytest.raises(ProfileError, match=r"typo\.toml:1: .*`pages_per_blok`.*did you mean `pages_per_block`"):
        profiles.load_profile(str(typo))
    nested = tmp_path / "nested.toml"
    nested.write_text('name = "x"\n[gc]\npolicy = "greedy"\n')
    with pytest.raises(ProfileError, match=r"nested\.toml:2: key `gc`.*flat"):
        profiles.load_profile(str(nested))
    for line, match in (("t_prog_us = nan", "expected a finite number"), ("channels = -1", "non-negative"),
                        ("gc_idle_free_blocks = 99999", "impossible")):  # checked alone, and against the others
        bad = tmp_path / "values.toml"
        bad.write_text(f'name = "x"\n\n{line}\n')
        with pytest.raises(ProfileError, match=rf"values\.toml:3: .*`{line.split()[0]}`.*{match}"):
            profiles.load_profile(str(bad))
    with pytest.raises(ProfileError, match=r"unknown profile 'nosuch'.*default"):
        profiles.load_profile("nosuch")


def test_user_profile_file_inherits_defaults_for_missing_keys(tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text('name = "mine"\nblocks_per_plane = 64\nuser_capacity_bytes = "6GiB"\n')
    p = profiles.load_profile(str(f))
    assert p.name == "mine" and p.values["channels"] == 4 and p.user_bytes == 6 * 2**30
    assert p.source == str(f)


def test_profiles_command_lists_keys_with_units():
    out = run_cli("profiles", "--keys").stdout
    assert "t_prog_us" in out and "[µs]" in out
    assert "user_capacity_bytes" in out and "[bytes]" in out
    # Each key's line ends with the values it accepts, with their unit.
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert lines["t_prog_us"].endswith("Valid: 0.01 to 1000000 µs.")
    assert lines["host_link_mbps"].endswith("Valid: 1 to 1000000 MB/s.")
    assert "Valid: 1 to 1048576 blocks; at most blocks_per_plane with the d-choices policy." in lines["gc_d_choices"]
    assert all("Valid: " in line for line in lines.values()), out
    shown = run_cli("profiles", "default", "--set", "channels=8").stdout
    assert "channels = 8" in shown


def test_cli_reports_bad_key_without_traceback(tmp_path):
    proc = run_cli("consistency", "--set", "chanels=2", "--out", str(tmp_path / "r"), check=False)
    assert proc.returncode == 2
    assert "chanels" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("value", ["[" * 5000 + "]" * 5000, "{x=" * 5000 + "1" + "}" * 5000])
def test_a_profile_nested_too_deep_names_file_line_and_key(tmp_path, value):
    """Python's TOML reader recurses once per level of nesting: 5000 levels would overflow its
    stack (RecursionError); the error names the file, the line and the key instead."""
    deep = tmp_path / "deep.toml"
    deep.write_text(f'name = "deep"\n\ndeep_key = {value}\n')
    with pytest.raises(ProfileError, match=r"deep\.toml:3: key `deep_key`: values nested 5000 deep"):
        profiles.load_profile(str(deep))
    proc = run_cli("consistency", "--target", f"sim:{deep}", "--dry-run", "--out", str(tmp_path / "r"), check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "deep.toml:3: key `deep_key`" in proc.stderr
    grid = tmp_path / "grid.toml"
    grid.write_text(f'[grid]\ntest = "consistency"\nset = {value}\n')
    proc = run_cli("grid", str(grid), "--dry-run", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "grid.toml:3: key `set`: values nested 5000 deep" in proc.stderr


ZERO_TIMES = [f"{k}=0" for k in ("t_read_us", "t_prog_us", "t_erase_us", "controller_cmd_us", "slc_t_prog_us", "slc_t_read_us")]
FAST_LINKS = ["channel_mbps=1e308", "host_link_mbps=1e308"]


@pytest.mark.parametrize("sets, key, words", [
    (["controller_cmd_us=1e308"], "controller_cmd_us", ["1e308", "0.01 to 1000000 µs"]),
    (["t_prog_us=1e15"], "t_prog_us", ["1e15", "0.01 to 1000000 µs"]),
    (["host_link_mbps=1e-12"], "host_link_mbps", ["1e-12", "1 to 1000000 MB/s"]),
    (["t_read_us=1e12"], "t_read_us", ["1e12", "0.01 to 1000000 µs"]),
    (ZERO_TIMES, "t_read_us", ["0 is out of range", "0.01 to 1000000 µs"]),
    (FAST_LINKS, "channel_mbps", ["1e308", "1 to 1000000 MB/s"]),
    (ZERO_TIMES + FAST_LINKS, "t_read_us", ["0.01 to 1000000 µs"]),
    (["gc_policy=d-choices", "gc_d_choices=1000000000"], "gc_d_choices", ["1000000000", "1 to 1048576 blocks", "blocks_per_plane"]),
])
def test_profiles_that_crashed_or_hung_are_one_clear_error(tmp_path, sets, key, words):
    """Each once aborted the simulator (a terabyte allocation), or never advanced its clock
    (a 3 s run hung): now refused before the run, naming the key and its range."""
    out = tmp_path / "r"
    proc = run_cli("consistency", *set_args(SMALL_DRIVE + sets), "--duration", "3", "--out", str(out), check=False,
                   timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "panicked" not in proc.stderr
    error = [line for line in proc.stderr.splitlines() if line.startswith("ssdlab: error:")]
    assert len(error) == 1, proc.stderr
    for w in [f"profile key `{key}`", *words]:
        assert w in error[0], f"{w!r} not in {error[0]}"
    assert not out.exists()
