from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension

setup(
    name="knn_ops",
    ext_modules=[
        CUDAExtension(  # expect: DT301
            name="knn_ops._C",
            sources=["csrc/knn.cpp", "csrc/knn_cuda.cu"],
        ),
        CppExtension(name="knn_ops._cpu", sources=["csrc/knn_cpu.cpp"]),
    ],
    cmdclass={"build_ext": BuildExtension},
)
