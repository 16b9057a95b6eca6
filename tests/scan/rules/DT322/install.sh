#!/bin/bash
pip install -e ./pointops  # expect: DT322
pip install ./helpers
echo "pip install -e ./pointops"
