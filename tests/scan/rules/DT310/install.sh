#!/bin/bash
set -e
pip install -r requirements.txt
python setup.py build_ext --inplace  # expect: DT310
cd lib/pointnet2 && python setup.py install  # expect: DT310
python setup.py --help
echo "python setup.py develop if you change the kernels"
