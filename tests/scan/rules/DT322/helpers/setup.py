from setuptools import setup

setup(name="helpers", packages=["helpers"])
