from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="chamfer",
    ext_modules=[CUDAExtension("chamfer_cuda", ["csrc/chamfer.cpp", "csrc/chamfer_kernel.cu"])],
    cmdclass={"build_ext": BuildExtension},
)
