"""What the commands that need a CUDA GPU (`grade --gpu`, `validate --gpu`, `gpu-report`, `gpu-check`) check first."""

from __future__ import annotations

import argparse
import sys


def no_gpu(command: str, hint: str = "") -> bool:
    """Whether this machine lacks the CUDA GPU `staff COMMAND` needs; if so, says so on stderr."""
    import torch

    if torch.cuda.is_available():
        return False
    print(f"staff {command}: this machine has no CUDA GPU (torch.cuda.is_available() is False){hint}",
          file=sys.stderr)
    return True


def gpu_refused(command: str, args: argparse.Namespace, hint: str = "") -> bool:
    """Whether `staff COMMAND --gpu` cannot run here, having said why: more than one job at once (GPU
    timings must not share the device), or no GPU."""
    if (args.jobs or 1) > 1:
        print(f"staff {command}: runs one at a time, so that no timing shares the GPU; drop -j", file=sys.stderr)
        return True
    return no_gpu(command, hint)
