"""`staff gpu-report [SUBMISSION]`: what the device present does, by the harness and by a student's timer.

For the device (its name and its row of the tests' peak table) and for each dtype and matrix size:
the harness's time, TFLOP/s and MFU (tests/gpu_timing.py: CUDA events, warm-up, rotated inputs,
median) beside the student's `time_matmul` figures and the harness's verdict on them; then
`get_batch`'s throughput for the lecture's 64 x 1024 tokens from a large memmap onto the device.
Writes the table as CSV and a PNG of TFLOP/s against matrix size per dtype.

The measuring runs in a child process whose `cs336_basics` is the submission's (this is a report,
not a grade: the student's code is not confined, so run it on submissions you trust or in a
throw-away machine). Times are in seconds (milliseconds in the table), rates in FLOP/s (TFLOP/s).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

from staff.errors import StaffError
from staff.sandbox.removal import scratch_folder

DTYPES = ("bfloat16", "float32")
SIZES = (1024, 2048, 4096, 8192)
BATCH, CONTEXT = 64, 1024  # the lecture's get_batch
TOKEN_FILE_TOKENS = 128 * 2**20  # 256 MiB of uint16 tokens
COLUMNS = ("dtype", "size", "harness_ms", "harness_tflops", "harness_mfu", "student_ms", "student_tflops",
           "student_mfu", "verdict")


# A size is judged only where the kernel takes at least this many times the host's own overhead
# around one call (a launch and two synchronizes, measured in the same process): there an honest
# host-clock timer reads at most 5% above the harness's CUDA events. Below it (1024 and 2048 on an
# H100: 10-25 us kernels against tens of us of host overhead) no timer of one call can agree.
KERNEL_OVER_OVERHEAD = 20


class ReportError(StaffError):
    """The report cannot be made; the message says why."""


def verdict(student_seconds: float, harness_seconds: float, overhead_seconds: float, flops: float,
            peak: float | None) -> str:
    """The report's word on a student's median time of one matmul: the harness's verdict where the
    kernel dominates the host's overhead around a call, and "not judged" where it is launch-bound."""
    from tests import gpu_timing as H

    if harness_seconds < KERNEL_OVER_OVERHEAD * overhead_seconds:
        return (f"not judged: launch-bound ({harness_seconds * 1e6:.0f} us kernel, {overhead_seconds * 1e6:.0f} us "
                f"host overhead per call; judged from {KERNEL_OVER_OVERHEAD}x)")
    return H.judge_timer(student_seconds, harness_seconds, flops, peak) or "plausible"


def host_overhead_seconds(device: str, warmup: int, repeats: int) -> float:
    """Median seconds a host clock reads around one near-empty kernel on `device`, synchronizing on
    both sides: what an honest host-clock timer adds to every timed call."""
    import torch

    from tests import gpu_timing as H

    one = torch.zeros(1, device=device)
    return H.median(H.time_calls(one.add_, [(1.0,)], H.PerfCounterClock(device), warmup, repeats))


def measure(device: str, sizes: list[int], dtypes: list[str], warmup: int, repeats: int, token_file: Path) -> dict:
    """In the child: every figure of the report, as plain data."""
    import numpy as np
    import torch

    from adapters import data as data_adapter
    from adapters import flops as flops_adapter
    from tests import gpu_timing as H

    on_cuda = torch.device(device).type == "cuda"
    name = torch.cuda.get_device_name(device) if on_cuda else f"cpu ({os.cpu_count()} cores)"
    row = H.peak_row(name) if on_cuda else None
    overhead = host_overhead_seconds(device, warmup, repeats) if on_cuda else None
    rows = []
    for dtype_name in dtypes:
        dtype = getattr(torch, dtype_name)
        peak = row[1].get(dtype) if row else None
        for size in sizes:
            flops = 2 * size**3
            harness = H.matmul_seconds(size, size, size, dtype, device, warmup, repeats)
            figures = {"dtype": dtype_name, "size": size, "harness_ms": harness * 1e3,
                       "harness_tflops": flops / harness / 1e12,
                       "harness_mfu": flops / harness / peak if peak else None}
            try:
                # The tests' peak as `promised`, so that a device outside the student's table is timed
                # too (1 FLOP/s where the tests do not know it either, and no MFU shown).
                got = flops_adapter.run_time_matmul(size, size, size, dtype_name, device, warmup, repeats,
                                                    (peak or 1.0) if on_cuda else None)
                figures.update(student_ms=got["seconds"] * 1e3, student_tflops=got["flop_per_sec"] / 1e12,
                               student_mfu=got["mfu"] if peak else None,
                               verdict=verdict(got["seconds"], harness, overhead, flops, peak)
                               if on_cuda else "not judged on the CPU")
            except Exception as error:  # noqa: BLE001 - a broken timer is a line of the report, not its end
                figures.update(student_ms=None, student_tflops=None, student_mfu=None,
                               verdict=f"time_matmul raised {type(error).__name__}: {error}"[:200])
            rows.append(figures)
    period = np.arange(2**16, dtype=np.uint16)  # tokens count up, mod 2**16: never a file of zeros
    with open(token_file, "wb") as handle:
        for _ in range(TOKEN_FILE_TOKENS // period.size):
            period.tofile(handle)

    def draw_batch(seed: int) -> None:
        data_adapter.run_get_batch_from_file(str(token_file), "uint16", BATCH, CONTEXT, seed, device)

    try:  # a host clock that waits for the device: reading the file and pinning are host work
        seconds = H.median(H.time_calls(draw_batch, [(seed,) for seed in range(warmup + repeats)],
                                        H.PerfCounterClock(device), warmup, repeats))
        batch = {"seconds": seconds, "tokens_per_second": BATCH * CONTEXT / seconds}
    except Exception as error:  # noqa: BLE001 - as for time_matmul
        batch = {"error": f"get_batch raised {type(error).__name__}: {error}"[:200]}
    peaks = {str(k).removeprefix("torch."): v for k, v in row[1].items()} if row else None
    return {"device": name, "peak_row": row[0] if row else None, "peaks": peaks, "rows": rows, "get_batch": batch,
            "host_overhead_s": overhead}


def _cell(value) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def format_report(report: dict) -> list[str]:
    """The report as lines of text: device, peak row, one line per dtype and size, get_batch."""
    lines = [f"device: {report['device']}"]
    if report["peak_row"]:
        peaks = ", ".join(f"{dtype} {flops / 1e12:g}" for dtype, flops in report["peaks"].items())
        lines.append(f"peak row: {report['peak_row']} (dense TFLOP/s: {peaks})")
    else:
        lines.append("peak row: unknown device (not in tests/gpu_timing.py's peak table): no MFU from the harness")
    if report.get("host_overhead_s") is not None:
        lines.append(f"host overhead around one call (launch and two synchronizes): "
                     f"{report['host_overhead_s'] * 1e6:.1f} us; sizes whose kernel takes under "
                     f"{KERNEL_OVER_OVERHEAD}x that are not judged")
    header = ("dtype", "size", "harness ms", "TFLOP/s", "MFU", "student ms", "TFLOP/s", "MFU", "verdict")
    lines.append(" | ".join(header))
    for row in report["rows"]:
        lines.append(" | ".join(_cell(row[c]) for c in COLUMNS))
    batch = report["get_batch"]
    if "error" in batch:
        lines.append(batch["error"])
    else:
        lines.append(f"get_batch {BATCH} x {CONTEXT} tokens from a {TOKEN_FILE_TOKENS * 2 >> 20} MiB memmap: "
                     f"{batch['seconds'] * 1e3:.3f} ms median, {batch['tokens_per_second'] / 1e6:.1f} M tokens/s")
    return lines


def write_csv(report: dict, path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["device", *COLUMNS])
        for row in report["rows"]:
            writer.writerow([report["device"], *("" if row[c] is None else row[c] for c in COLUMNS)])


def draw(report: dict, path: Path) -> None:
    """TFLOP/s against matrix size, one colour per dtype: the harness solid, the student dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    dtypes = dict.fromkeys(r["dtype"] for r in report["rows"])
    for colour, dtype in zip(("#4477aa", "#cc6677", "#228833", "#ccbb44"), dtypes):
        rows = [r for r in report["rows"] if r["dtype"] == dtype]
        axes.plot([r["size"] for r in rows], [r["harness_tflops"] for r in rows], "o-", color=colour,
                  label=f"{dtype}, harness")
        student = [r for r in rows if r["student_tflops"] is not None]
        axes.plot([r["size"] for r in student], [r["student_tflops"] for r in student], "s--", color=colour,
                  label=f"{dtype}, time_matmul")
        peak = (report["peaks"] or {}).get(dtype)
        if peak:
            axes.axhline(peak / 1e12, color=colour, linestyle=":", linewidth=1, label=f"{dtype} peak")
    sizes = sorted({r["size"] for r in report["rows"]})
    axes.set_xscale("log", base=2)
    axes.set_xticks(sizes, [str(size) for size in sizes])
    axes.set(yscale="log", xlabel="matrix size n (n x n @ n x n)", ylabel="TFLOP/s",
             title=f"Matmul throughput on {report['device']}")
    axes.legend(fontsize=8)
    figure.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(figure)


def run_report(submission: Path | None, device: str, sizes: list[int], dtypes: list[str], warmup: int,
               repeats: int, out: Path, repo: Path) -> tuple[dict, list[Path]]:
    """Measure in a child process with `submission`'s package (None: this tree's reference), then
    write OUT/gpu-report.csv and OUT/gpu-report.png; the report and the files written.

    Raises:
        ReportError: the submission cannot be laid out, or the child failed.
    """
    from staff.intake.submission import SubmissionError, lay_package

    with scratch_folder("staff-gpu-report-") as scratch:  # whatever the submission left there goes too
        if submission is not None:
            try:
                lay_package(submission, scratch / "cs336_basics")
            except SubmissionError as error:
                raise ReportError(f"{submission}: {error}") from error
        path = os.pathsep.join([str(scratch)] * (submission is not None) + [str(repo)])
        request = {"device": device, "sizes": sizes, "dtypes": dtypes, "warmup": warmup, "repeats": repeats,
                   "token_file": str(scratch / "tokens.bin"), "answer": str(scratch / "report.json")}
        env = {**os.environ, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"}
        done = subprocess.run([sys.executable, "-m", "staff.gpu.report", json.dumps(request)], cwd=scratch, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace")
        if done.returncode != 0 or not (scratch / "report.json").exists():
            raise ReportError(f"measuring failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        report = json.loads((scratch / "report.json").read_text())
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "gpu-report.csv", out / "gpu-report.png"]
    write_csv(report, files[0])
    draw(report, files[1])
    return report, files


def _child(request_text: str) -> int:
    request = json.loads(request_text)
    report = measure(request["device"], request["sizes"], request["dtypes"], request["warmup"], request["repeats"],
                     Path(request["token_file"]))
    Path(request["answer"]).write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1]))
