find_package(CUDA 11.0 REQUIRED)  # expect: DT306
find_package(Python3 COMPONENTS Interpreter Development)
