"""Hardware facts from /proc and the Slurm environment."""

from __future__ import annotations

from pathlib import Path

from advisor.profiling.hardware import collect_hardware, node_name, parse_cpuinfo, parse_meminfo

# Excerpt of /proc/cpuinfo of the development VM (2 vCPUs, KVM).
X86 = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC
cpu MHz\t\t: 2596.136
flags\t\t: fpu vme de pse

processor\t: 1
model name\t: AMD EPYC
cpu MHz\t\t: 2601.500
"""
# /proc/cpuinfo on an ARM server (Linux 6.x) has no model name and no clock.
ARM = """processor\t: 0
BogoMIPS\t: 50.00
CPU implementer\t: 0x41
CPU part\t: 0xd0c
"""


def test_cpuinfo_gives_model_and_highest_clock() -> None:
    assert parse_cpuinfo(X86) == ("AMD EPYC", 2601.5)


def test_cpuinfo_without_model_or_clock() -> None:
    assert parse_cpuinfo(ARM) == (None, None)
    assert parse_cpuinfo("") == (None, None)


def test_meminfo_total_in_mib() -> None:
    assert parse_meminfo("MemTotal:       24684000 kB\nMemFree: 1 kB\n") == 24105
    assert parse_meminfo("MemFree: 1 kB\n") is None


def test_collect_reads_proc_and_slurm_environment(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "cpuinfo").write_text(X86)
    (tmp_path / "proc" / "meminfo").write_text("MemTotal: 4096000 kB\n")
    freq = tmp_path / "sys/devices/system/cpu/cpu0/cpufreq"
    freq.mkdir(parents=True)
    (freq / "cpuinfo_max_freq").write_text("3700000\n")
    hw = collect_hardware({"SLURMD_NODENAME": "c7", "SLURM_JOB_ID": "42"}, root=tmp_path)
    assert hw["cpu_model"] == "AMD EPYC"
    assert hw["memory_mib"] == 4000
    assert hw["cpu_max_mhz"] == 3700.0
    assert hw["slurm_node"] == "c7" and hw["slurm_job_id"] == "42"
    assert 1 <= hw["allowed_cpus"] <= hw["logical_cpus"]
    assert node_name(hw) == "c7"


def test_outside_a_job_the_node_is_the_host(tmp_path: Path) -> None:
    hw = collect_hardware({}, root=tmp_path)  # no /proc there: facts are None, not errors
    assert hw["cpu_model"] is None and hw["memory_mib"] is None
    assert hw["slurm_node"] is None
    assert node_name(hw) == hw["hostname"] != ""
