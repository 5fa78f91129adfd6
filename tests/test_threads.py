"""Results do not depend on threads (issue 23, item 8): the same sweeps and solves, each process starting on cold
caches, run one after another and from four threads at once, give the same bits.

Cold caches are where threads met: two threads building the same model or compiled code at once shared sympy's
process-wide rebuilding switches (a ``PolynomialError`` or a ``RecursionError`` escaped; `mlsysim_sym._cache`
now builds one at a time).
"""
import pickle
import subprocess
import sys
import textwrap

import numpy as np

SCRIPT = textwrap.dedent('''
    import itertools, pickle, sys
    import numpy as np
    from concurrent.futures import ThreadPoolExecutor
    from mlsysim_sym import DistributedModel, sweep
    jobs = list(itertools.product(("Llama3_70B", "Mixtral_8x7B", "ResNet50"), ("Research_256", "Lab_64_H100"),
                                  ("mlsysim", "extended"), ([1, 2, 4, 8], [1, 2])))
    def run(job):
        m, f, fid, tp = job
        r = sweep(m, f, fidelity=fid, batch_size=[64, 256, 1024], tp_size=tp, efficiency=np.linspace(0.3, 0.7, 7))
        s = DistributedModel(fid).solve(m, f, batch_size=256, tp_size=tp[-1])
        return [np.asarray(r[k]) for k in ("step_latency_total", "mfu", "node_profile.memory_footprint")] + [
            s.step_latency_total, s.mfu]
    if sys.argv[1] == "serial":
        out = [run(j) for j in jobs]
    else:
        with ThreadPoolExecutor(4) as ex:
            out = list(ex.map(run, jobs))
    sys.stdout.buffer.write(pickle.dumps(out))
''')


def _run(mode):
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, timeout=900)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return pickle.loads(done.stdout)    # our own child's output, written a line above


def test_four_threads_on_cold_caches_give_the_serial_bits():
    serial, threaded = _run("serial"), _run("threads")
    assert len(serial) == len(threaded) == 24
    for i, (a, b) in enumerate(zip(serial, threaded)):
        for x, y in zip(a, b):
            assert np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True), i
