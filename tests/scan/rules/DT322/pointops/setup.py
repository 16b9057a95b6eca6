from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(name="pointops", ext_modules=[CUDAExtension("pointops_cuda", ["src/pointops_api.cpp", "src/knn_cuda.cu"])],
      cmdclass={"build_ext": BuildExtension})
