"""One memory budget for sweeps, search and uncertainty: the tightest of the cgroup limit, RLIMIT_AS and the memory
available, or max_memory=; a request over it is refused before any work, in one line naming its bytes, the budget
and the limit it comes from (issue 23, item 4)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mlsysim_sym import _chunks, search, sweep, uncertainty
from mlsysim_sym._chunks import Sources, SweepTooLarge, memory_budget

M, F = "Llama3_70B", "Research_256"
GB = 10 ** 9


def _fake(tmp_path: Path, *, cgroup: str, files: dict, meminfo_kb: int = 64 * 10 ** 6) -> Sources:
    """A /proc/self/cgroup, the cgroup files under fake mounts, a meminfo and a status of the test's own."""
    (tmp_path / "cgroup").write_text(cgroup)
    (tmp_path / "meminfo").write_text(f"MemTotal: 99999999 kB\nMemAvailable: {meminfo_kb} kB\n")
    (tmp_path / "status").write_text("Name: python\nVmSize:\t  200000 kB\n")
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return Sources(cgroup=str(tmp_path / "cgroup"), cgroup2=str(tmp_path / "v2"), cgroup1=str(tmp_path / "v1"),
                   status=str(tmp_path / "status"), meminfo=str(tmp_path / "meminfo"))


def test_the_cgroup_v2_limit_of_the_process_and_its_ancestors(tmp_path):
    # the pod's cgroup: 2 GB, 1.5 GB in use -> 0.5 GB left; its parent: 8 GB, 7.9 GB in use -> 0.1 GB left
    src = _fake(tmp_path, cgroup="0::/kubepods/pod1\n", files={
        "v2/kubepods/pod1/memory.max": "2000000000\n", "v2/kubepods/pod1/memory.current": "1500000000\n",
        "v2/kubepods/memory.max": "8000000000\n", "v2/kubepods/memory.current": "7900000000\n"})
    b = memory_budget(sources=src)
    assert b.limit == int(0.8 * 100_000_000)                          # the parent's headroom is the tighter
    assert f"{tmp_path}/v2/kubepods/memory.max" in b.source and "memory.current" in b.source
    # 'max' is no limit: the pod's own headroom decides
    (tmp_path / "v2/kubepods/memory.max").write_text("max\n")
    assert memory_budget(sources=src).limit == int(0.8 * 500_000_000)


def test_the_cgroup_v1_limit_and_an_unlimited_one(tmp_path):
    src = _fake(tmp_path, cgroup="4:memory:/docker/abc\n0::/\n", files={
        "v1/docker/abc/memory.limit_in_bytes": "3000000000\n", "v1/docker/abc/memory.usage_in_bytes": "1000000000\n",
        "v1/memory.limit_in_bytes": "9223372036854771712\n", "v1/memory.usage_in_bytes": "5\n"})
    b = memory_budget(sources=src)
    assert b.limit == int(0.8 * 2 * GB) and "memory.limit_in_bytes" in b.source
    # a v1 cgroup without a limit (2**63 rounded to pages): MemAvailable decides (1,000,000 kB here)
    (tmp_path / "v1/docker/abc/memory.limit_in_bytes").write_text("9223372036854771712\n")
    (tmp_path / "meminfo").write_text("MemAvailable: 1000000 kB\n")
    b = memory_budget(sources=src)
    assert b.limit == int(0.8 * 1024 * 10 ** 6) and "MemAvailable" in b.source


def test_a_cgroup_namespace_reads_the_mounts_own_files(tmp_path):
    # inside a container the process's path ("/" or one the mount does not show) is the mount's own files
    src = _fake(tmp_path, cgroup="0::/not/here\n", files={"v2/memory.max": "1000000000\n",
                                                          "v2/memory.current": "600000000\n"})
    assert memory_budget(sources=src).limit == int(0.8 * 400_000_000)


def test_max_memory_overrides_and_is_checked():
    assert memory_budget(12345).limit == 12345 and memory_budget(12345).source == "max_memory="
    with pytest.raises(ValueError, match=r"^max_memory must be a finite number of bytes > 0, got -1$"):
        sweep(M, F, batch_size=256, max_memory=-1)
    with pytest.raises(TypeError, match=r"^max_memory must be a number of bytes, got str$"):
        search(M, F, 256, max_memory="1GB")
    with pytest.raises(ValueError, match=r"^max_memory must be a finite number of bytes > 0, got nan$"):
        uncertainty(M, F, {"efficiency": 0.1}, samples=100, batch_size=256, max_memory=float("nan"))


def test_a_sweep_over_a_fake_cgroup_limit_is_refused_before_any_work(tmp_path, monkeypatch):
    # 1 GB left in the pod: an MFU grid of 10**8 configurations (800 MB of output, the rule codes, a chunk) is
    # over 80 % of it; the same grid passes with max_memory= (it is not run here: refused by a smaller one)
    src = _fake(tmp_path, cgroup="0::/\n", files={"v2/memory.max": "2000000000\n", "v2/memory.current": "1000000000\n"})
    monkeypatch.setattr(_chunks, "SOURCES", src)
    grid = dict(batch_size=np.arange(1, 10 ** 5 + 1), efficiency=np.linspace(0.01, 1, 10 ** 3))
    with pytest.raises(SweepTooLarge) as info:
        sweep(M, F, outputs="mfu", **grid)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith("a sweep of 100,000,000 configurations with 1 output(s) needs about ")
    assert f"over the memory budget of 800 MB (80% of what is left under the cgroup memory limit: " \
           f"{tmp_path}/v2/memory.max 2 GB minus memory.current 1 GB)" in text
    # a small sweep is not measured against the limits at all (it is far below any of them)
    assert sweep(M, F, batch_size=256, tp_size=[1, 8]).valid.all()


def test_max_memory_refuses_sweeps_searches_and_monte_carlos_with_their_sizes():
    # 10**6 configurations x 1 output: 8 MB of MFU, 4 MB of rule codes and flags (a rule may break somewhere:
    # batch_size 1 is below dp), one pass of 8 B x (1 output + 16 temporaries) x 10**6 = 136 MB: 148 MB in all
    grid = dict(batch_size=np.arange(1, 1001), efficiency=np.linspace(0.01, 1, 1000))
    with pytest.raises(SweepTooLarge, match=r"^a sweep of 1,000,000 configurations with 1 output\(s\) needs about "
                                            r"148 MB, over the memory budget of 100 MB \(max_memory=\); ask for "
                                            r"fewer outputs"):
        sweep(M, F, outputs="mfu", max_memory=100e6, **grid)
    assert sweep(M, F, outputs="mfu", max_memory=200e6, **grid).shape == (1000, 1000)
    with pytest.raises(SweepTooLarge, match=r"^a sweep of [\d,]+ configurations with 4 output\(s\) needs about .*"
                                            r"over the memory budget of 1 MB \(max_memory=\)"):
        search(M, F, 256, max_memory=1e6)
    # 10**9 draws keep 8 GB of outputs for the percentiles (and a block of 2**20 draws in flight)
    need = 8 * 10 ** 9 + (8 * 1 + 48) * 2 ** 20
    with pytest.raises(SweepTooLarge, match=rf"^uncertainty\(samples=1,000,000,000\) needs about "
                                            rf"{need / 1e9:.4g} GB, over the memory budget of 2 GB \(max_memory=\); "
                                            r"lower samples= or pass max_memory=$"):
        uncertainty(M, F, {"efficiency": 0.1}, samples=10 ** 9, batch_size=256, max_memory=2e9)


def test_a_range_is_counted_before_it_is_built():
    # 10**12 values of batch_size alone take 8 TB: refused before numpy is asked for them
    with pytest.raises(SweepTooLarge, match=r"^batch_size of 1,000,000,000,000 values needs about 8 TB, over the "
                                            r"memory budget of 1 GB \(max_memory=\); give fewer values$"):
        sweep(M, F, batch_size=range(1, 10 ** 12 + 1), max_memory=1e9)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ulimit -v and /proc are Linux's")
def test_under_a_real_address_space_limit_an_8_gb_grid_is_refused_not_failed_midway():
    # ulimit -v 4000000 (kB): about 4.1 GB of address space. An MFU grid of 10**9 configurations needs 8 GB
    # of output, 4 GB of rule codes and flags and a 256 MB chunk (12.27 GB): refused up front as SweepTooLarge
    # naming RLIMIT_AS, not numpy's MemoryError part-way through (as before issue 23);
    # the Monte Carlo of 10**9 draws likewise; a 200 MB grid still runs under the same limit
    program = textwrap.dedent("""
        import numpy as np
        from mlsysim_sym import sweep, uncertainty
        from mlsysim_sym._chunks import SweepTooLarge
        try:
            sweep("Llama3_70B", "Research_256", outputs="mfu", batch_size=np.arange(1, 10**6 + 1),
                  efficiency=np.linspace(0.01, 1, 1000))
            print("NOT REFUSED")
        except SweepTooLarge as e:
            print("REFUSED", e)
        try:
            uncertainty("Llama3_70B", "Research_256", {"efficiency": 0.1}, samples=10**9, batch_size=256)
            print("NOT REFUSED")
        except SweepTooLarge as e:
            print("REFUSED", e)
        r = sweep("Llama3_70B", "Research_256", outputs="mfu", batch_size=np.arange(1, 25001),
                  efficiency=np.linspace(0.01, 1, 1000))
        print("RAN", r.shape, int(r.valid.sum()))
    """)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    out = subprocess.run(["bash", "-c", f'ulimit -v 4000000 && exec "{sys.executable}" -c "$0"', program],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert len(lines) == 3, out.stdout
    assert lines[0].startswith("REFUSED a sweep of 1,000,000,000 configurations with 1 output(s) needs about "
                               "12.27 GB, over the memory budget of ")
    assert "the address-space limit: RLIMIT_AS (ulimit -v) 4.096 GB minus the" in lines[0]
    assert lines[1].startswith("REFUSED uncertainty(samples=1,000,000,000) needs about 8.")
    assert "RLIMIT_AS (ulimit -v) 4.096 GB" in lines[1]
    assert lines[2] == "RAN (25000, 1000) 25000000"


def test_the_command_line_is_refused_in_its_own_words():
    # the same refusal through the command line names its options, not Python's arguments (outputs=, samples=,
    # max_memory= are not options of mlsysim-sym): a budget of 10 MB, put in place for the run
    program = textwrap.dedent("""
        import sys
        from mlsysim_sym import _chunks
        from mlsysim_sym.cli import main
        _chunks.SMALL = 0
        _chunks.memory_budget = lambda max_memory=None, sources=None: _chunks.Budget(10_000_000, "a test's budget")
        sys.exit(main(sys.argv[1:]))
    """)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]), PYTHONWARNINGS="ignore")
    runs = {"sweep": ["sweep", "--batch-size", "1:1000", "--efficiency", "0.01:1:0.01"],
            "uncertainty": ["uncertainty", "--sigma", "efficiency=0.1", "--samples", "10000000"]}
    lines = {}
    for name, args in runs.items():
        out = subprocess.run([sys.executable, "-c", program, *args], capture_output=True, text=True, env=env,
                             timeout=300)
        assert out.returncode == 2 and out.stdout == "" and "Traceback" not in out.stderr, out.stderr
        assert out.stderr.count("\n") == 1, out.stderr
        lines[name] = out.stderr
    # 1,000 batch sizes x 100 efficiencies = 100,000 configurations
    assert "a sweep of 100,000 configurations needs about " in lines["sweep"]
    assert "over the memory budget of 10 MB (a test's budget); give fewer values" in lines["sweep"]
    # 10^7 draws of one parameter: 80 MB of draws alone
    assert "--samples 10,000,000 needs about " in lines["uncertainty"]
    assert lines["uncertainty"].rstrip().endswith("over the memory budget of 10 MB (a test's budget); give fewer samples")
    assert not any("max_memory" in x or "outputs=" in x or "samples=" in x for x in lines.values()), lines
