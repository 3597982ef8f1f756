"""Live latency against the OpenXR runtime (Monado, headless, 90 Hz): `python build.py bench` runs this under "openxr".

60 s of core's default solver (HybridSolver: the shipped predictor and orientation model) stepped from
every frame the source locates, on one core (the solver's thread pinned to one CPU once the runtime's threads have
started; numpy's threads to one), with the latency from the locate call to the posed skeleton's joint positions;
`python tests/bench_openxr.py SECONDS mm` times motion matching alone. Run with xr_runtime.environment()'s
variables set.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from openxr_live import live  # noqa: E402

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
METHOD = sys.argv[2] if len(sys.argv) > 2 else "hybrid"

if __name__ == "__main__":
    result = live("headless", SECONDS, pin_core=True, method=METHOD)
    result.pop("hand_errors")
    print(json.dumps({"seconds": SECONDS, "method": METHOD, "cores_used": 1, **result,
                      "latency_target_ms_p99": 3.0, "met": result["latency_ms_p99"] <= 3.0}))
