"""What the tests share, one concern per module (import the module you need: this file imports
nothing, so that the scripts tests start under mpiexec stay light):

``reference``     the reference scans (NumPy's ``accumulate`` on the whole array) and the comparisons;
``data``          random data and the parts of a global array that each rank holds;
``seeds``         seeded generators (a fresh seed per test, ``DISTSCAN_TEST_SEED`` repeats one);
``ranks``         running under a launcher, and checks that fail on every rank when one fails;
``devices``       whether a CUDA GPU is here (``require_gpu``);
``launch``        programs under ``mpiexec`` (and ``python tests/support/launch.py cli-batch``);
``kernel_cases``  the kernel tests' operator x dtype table, data and bitwise comparisons.
"""
