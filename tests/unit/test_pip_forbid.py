"""The release's pip_forbid list against real distribution names and versions (PyPI metadata, checked 2026-12-02).

Forbidden: what a CUDA torch stack brings (CUDA 12 and 13 runtime wheels, cuda-toolkit, a torch or
triton without a ROCm label) and what an unpinned quack pulls (nvidia-cutlass-dsl 4.6: nvdisasm,
libs-cu12). Allowed: what the seed's own set installs.
"""
import os

import pytest
import yaml

from ansible_collections.primus.trainenv.plugins.module_utils._pip.decide import matching_patterns

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROCM = "2.12.0+rocm7.15.0a20260720"


def forbid():
    with open(os.path.join(REPO, "roles", "primus", "vars", "releases", "v26.5.yml")) as handle:
        return yaml.safe_load(handle)["primus_pins"]["pip_forbid"]


FORBIDDEN = [
    # PyPI torch 2.x for CUDA 12 (Requires-Dist) ...
    ("nvidia-cuda-nvrtc-cu12", "12.8.93"), ("nvidia-cuda-runtime-cu12", "12.8.90"),
    ("nvidia-cuda-cupti-cu12", "12.8.90"), ("nvidia-cudnn-cu12", "9.10.2.21"), ("nvidia-cublas-cu12", "12.8.4.1"),
    ("nvidia-cufft-cu12", "11.3.3.83"), ("nvidia-curand-cu12", "10.3.9.90"), ("nvidia-cusolver-cu12", "11.7.3.90"),
    ("nvidia-cusparse-cu12", "12.5.8.93"), ("nvidia-cusparselt-cu12", "0.7.1"), ("nvidia-nccl-cu12", "2.27.3"),
    ("nvidia-nvshmem-cu12", "3.3.20"), ("nvidia-nvtx-cu12", "12.8.90"), ("nvidia-nvjitlink-cu12", "12.8.93"),
    ("nvidia-cufile-cu12", "1.13.1.3"),
    # ... and for CUDA 13 (torch 2.15.0: cuda-toolkit[...]==13.2.2 and the -cu13 wheels; cuda-toolkit's extras)
    ("cuda-toolkit", "13.2.2"), ("nvidia-cudnn-cu13", "9.26.0.51"), ("nvidia-cusparselt-cu13", "0.8.1"),
    ("nvidia-nccl-cu13", "2.30.7"), ("nvidia-nvshmem-cu13", "3.7.2"), ("nvidia-cublas", "13.8.0.4"),
    ("nvidia-cuda-runtime", "13.4.92"), ("nvidia-cuda-nvrtc", "13.4.92"), ("nvidia-cuda-cupti", "13.4.92"),
    ("nvidia-cufft", "12.4.0.43"), ("nvidia-curand", "10.4.4.72"), ("nvidia-cusolver", "12.3.5.3"),
    ("nvidia-cusparse", "12.8.6.72"), ("nvidia-nvjitlink", "13.4.92"), ("nvidia-nvtx", "13.4.92"),
    ("nvidia-cufile", "1.19.1.55"),
    # what quack-kernels 0.3.1 pulls when nvidia-cutlass-dsl is not pinned to 4.5.3 (4.6.x)
    ("nvidia-cuda-nvdisasm", "13.3.73"), ("nvidia-cutlass-dsl-libs-cu12", "4.6.0"),
    ("nvidia-cutlass-dsl-libs-cu13", "4.6.0"),
    # a torch without the pinned +rocm label; upstream triton; the CUDA nightlies' triton
    ("torch", "2.15.0"), ("torch", "2.13.0"), ("torch", "2.12.0+cpu"), ("torch", "2.12.0+cu126"),
    ("triton", "3.7.0"), ("triton", "3.9.0"), ("pytorch-triton", "3.1.0+cf34004b8a"),
]
ALLOWED = [
    # the seed's mamba chain with nvidia-cutlass-dsl==4.5.3 and Turbo/TE/pydeps names
    ("cuda-python", "13.4.4"), ("cuda-bindings", "13.4.4"), ("cuda-core", "1.2.0"), ("cuda-pathfinder", "1.4.2"),
    ("nvidia-cutlass-dsl", "4.5.3"), ("nvidia-cutlass-dsl-libs-base", "4.5.3"), ("quack-kernels", "0.3.1"),
    ("apache-tvm-ffi", "0.1.11"), ("torch-c-dlpack-ext", "0.1.5"), ("nvidia-ml-py", "13.580.82"),
    ("pynvml", "13.0.1"), ("nvdlfw-inspect", "0.2.2"),
    # the ROCm stack itself
    ("torch", ROCM), ("triton", "3.7.1+git7f0e19aa.rocm7.15.0a20260720"),
    ("triton", "3.5.0+rocm7.1.0.gita272dfa8"), ("pytorch-triton-rocm", "3.3.1+gitc8757738"),
    ("torchvision", "0.27.0+rocm7.15.0a20260720"), ("amd-torch-device-gfx942", ROCM),
    ("rocm-sdk-devel", "7.15.0a20260720"), ("apex", "1.12.0+rocm7.15.0a20260720"),
    ("transformer-engine-rocm7", "2.15.0.dev0+rocm7.15.0a20260716.a07e607"),
]


@pytest.mark.parametrize("name, version", FORBIDDEN)
def test_cuda_stack_is_forbidden(name, version):
    assert matching_patterns(name, version, forbid()), "%s %s is not forbidden" % (name, version)


@pytest.mark.parametrize("name, version", ALLOWED)
def test_what_the_seed_installs_is_allowed(name, version):
    assert matching_patterns(name, version, forbid()) == [], "%s %s is forbidden" % (name, version)


def test_every_pattern_is_needed():
    """Each entry forbids at least one real name that no other entry covers."""
    patterns = forbid()
    for pattern in patterns:
        others = [p for p in patterns if p != pattern]
        assert any(matching_patterns(n, v, [pattern]) and not matching_patterns(n, v, others) for n, v in FORBIDDEN), \
            pattern
