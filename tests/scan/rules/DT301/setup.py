from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension  # expect: DT301

# The CUDA sources, listed before the build that takes them: each one is part of it.
KERNELS = [
    "csrc/knn_cuda.cu",  # expect: DT301
    "csrc/knn_cuda.cuh",  # expect: DT301
]

setup(
    name="knn_ops",
    ext_modules=[
        CUDAExtension(  # expect: DT301
            name="knn_ops._C",
            sources=["csrc/knn.cpp"] + KERNELS,
        ),
        CppExtension(name="knn_ops._cpu", sources=["csrc/knn_cpu.cpp"]),
    ],
    cmdclass={"build_ext": BuildExtension},
    # Prose that names a kernel file is not a source.
    description="kNN (see csrc/knn_cuda.cu)",
)
