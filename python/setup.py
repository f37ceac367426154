# The wheel carries a native library but no Python extension module: it is tied to the
# platform (linux_x86_64) and not to a Python version (py3-none), as sqlite-vec's wheels are.
# has_ext_modules makes setuptools treat it as a platform package (files at the wheel's root,
# installed into platlib).
from setuptools import setup
from setuptools.dist import Distribution
from wheel.bdist_wheel import bdist_wheel


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(distclass=BinaryDistribution, cmdclass={"bdist_wheel": PlatformWheel})
