"""What a GPU grade's worker may touch beyond a CPU grade's, for CUDA's driver to start: one list, each
path with its reason and the access it gets. Everything else of Landlock's allow-list is a CPU grade's
(layout.SYSTEM_READ_ONLY, the Python environment, the worker's folders).

Sources: the driver's files as the NVIDIA Container Toolkit mounts them into a container (device
nodes, /proc/driver/nvidia, the persistenced socket, the driver's libraries), and what sandboxes that
run CUDA under Landlock found cuInit needs (NVIDIA/OpenShell issues 1486 and 1696, pull request 710;
nolabs-ai/nono issue 924). `staff gpu-check` tries each protection alone with CUDA on the device.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

DEVICE, READ, OWN_PROC = "read, write and ioctl", "read", "write, its own entry only"


@dataclass(frozen=True)
class CudaPath:
    """A path (a glob where it names many) the worker gets `access` to, and why the driver needs it."""

    pattern: str
    access: str
    why: str


CUDA_PATHS = (
    CudaPath("/dev/nvidiactl", DEVICE, "the driver's control device: cuInit opens it O_RDWR and speaks ioctl to it"),
    CudaPath("/dev/nvidia[0-9]*", DEVICE, "one node per GPU, opened O_RDWR; its memory is mapped through it"),
    CudaPath("/dev/nvidia-uvm", DEVICE, "unified memory: every CUDA context opens it, pinned host memory too"),
    CudaPath("/dev/nvidia-uvm-tools", DEVICE, "opened by the driver beside nvidia-uvm (events for tools)"),
    CudaPath("/dev/nvidia-modeset", DEVICE, "present on display drivers; opened by NVML on some"),
    CudaPath("/dev/nvidia-caps", DEVICE, "capability nodes (MIG, fabric); the driver checks them where they exist"),
    CudaPath("/proc/driver/nvidia", READ, "the driver's parameters and GPU list, read by cuInit and NVML "
             "(below /proc, which a CPU grade reads already)"),
    CudaPath("/sys/bus/pci/devices", READ, "the GPU's PCI entry: NUMA node, BARs (below /sys, read already)"),
    CudaPath("/run/nvidia-persistenced", READ, "NVML connects to persistenced's socket there; a refused path "
             "makes it fail where a missing daemon would not"),
    CudaPath("/usr/local/nvidia", READ, "where containers mount the driver's libraries (below /usr, read already); "
             "libcuda elsewhere comes with LD_LIBRARY_PATH's folders (layout.library_folders)"),
    CudaPath("/proc/self", OWN_PROC, "cuInit names its threads by writing /proc/self/task/<tid>/comm and fails with "
             "error 304 if it cannot; each child may write its own entry, no other (landlock_rules.landlock)"),
)


def existing(access: str) -> list[str]:
    """The paths of CUDA_PATHS with `access` that exist on this machine, globs expanded."""
    found: list[str] = []
    for entry in CUDA_PATHS:
        if entry.access == access:
            found += [path for path in sorted(glob.glob(entry.pattern)) if os.path.exists(path)]
    return found
