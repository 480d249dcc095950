"""Profiles: built-ins load, overrides apply, and every bad input is one clear error naming
the file or option and the key."""
from __future__ import annotations

import pytest

from ssdlab import profiles
from ssdlab.errors import ProfileError

from conftest import run_cli


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


def test_an_operation_time_is_at_most_a_tenth_of_a_second(tmp_path):
    """A controller time of 1e30 µs per command made the simulator allocate ~900 GB for the
    series of the fill (the process aborted); every key in µs is at most MAX_OPERATION_US."""
    assert profiles.MAX_OPERATION_US == 100_000
    for key in ("controller_cmd_us", "t_prog_us", "t_erase_us", "map_miss_us"):
        with pytest.raises(ProfileError, match=rf"^--set {key}=1e30: profile key `{key}`: 1e30 µs is longer than"):
            profiles.load_profile("default", [f"{key}=1e30"])
        bad = tmp_path / "slow.toml"
        bad.write_text(f'name = "slow"\n{key} = 100001.0\n')
        with pytest.raises(ProfileError, match=rf"slow\.toml:2: profile key `{key}`"):
            profiles.load_profile(str(bad))
        profiles.load_profile("default", [f"{key}=100000"])
    for name in profiles.builtin_names():  # the built-in profiles are well within it
        profiles.load_profile(name)
