"""torch.linalg side by side: a batched solve, svd, eigh and eig of one matrix, and a Cholesky factorization
followed by a triangular solve with the backward pass through both (float32, as PyTorch's default).

Report the ratios at one thread (`python benchmarks/run.py linalg --threads 1`): ember calls
NumPy's/SciPy's LAPACK (OpenBLAS), PyTorch its own build's LAPACK, so the ratio is mostly one
LAPACK against the other plus ember's per-op overhead.
"""
from _harness import Workload


def _rand(lib, *shape):
    g = lib.Generator().manual_seed(0) if hasattr(lib, "Generator") else None
    return lib.randn(*shape, generator=g)


def _spd(lib, n):
    a = _rand(lib, n, n)
    return a @ a.mT + n * lib.eye(n)


def _solve(lib):
    a = _rand(lib, 64, 32, 32) + 4 * lib.eye(32)
    b = _rand(lib, 64, 32, 8)
    return lambda: lib.linalg.solve(a, b)


def _svd(lib):
    a = _rand(lib, 256, 256)
    return lambda: lib.linalg.svd(a, full_matrices=False)


def _eigh(lib):
    a = _rand(lib, 256, 256)
    a = a + a.mT
    return lambda: lib.linalg.eigh(a)


def _eig(lib):
    a = _rand(lib, 128, 128)
    return lambda: lib.linalg.eig(a)


def _chol_solve_backward(lib):
    a = _spd(lib, 512).requires_grad_(True)
    b = _rand(lib, 512, 16).requires_grad_(True)

    def step():
        l = lib.linalg.cholesky(a)
        x = lib.linalg.solve_triangular(l, b, upper=False)
        x.square().sum().backward()
        a.grad = None
        b.grad = None
    return step


WORKLOADS = [
    Workload("solve_64x32x32", ember=_solve, notes="linalg.solve of 64 32x32 systems, 8 right-hand sides"),
    Workload("svd_256", ember=_svd, notes="linalg.svd(full_matrices=False) of a 256x256 matrix"),
    Workload("eigh_256", ember=_eigh, notes="linalg.eigh of a symmetric 256x256 matrix"),
    Workload("eig_128", ember=_eig, notes="linalg.eig of a general 128x128 matrix (complex eigenpairs)"),
    Workload("cholesky_solve_triangular_512_backward", ember=_chol_solve_backward,
             notes="cholesky of a 512x512 SPD matrix, solve_triangular with 16 columns, backward to both"),
]
