"""What the tests share, one concern per module (import the module you need: this file imports
nothing, so that the scripts tests start under mpiexec stay light):

``reference``     the reference scans (NumPy's ``accumulate`` on the whole array; segmented scans and
                  linear recurrences by sequential loops) and the comparisons;
``data``          random data and the parts of a global array that each rank holds;
``seeds``         seeded generators (a fresh seed per test, ``DISTSCAN_TEST_SEED`` repeats one);
``ranks``         running under a launcher, and checks that fail on every rank when one fails;
``two_modes``     one test in two modes, serial and split over the ranks (the NumPy and peer cases);
``files``         ``.npy`` inputs, and the temporary files a run must not leave;
``devices``       whether a CUDA GPU is here (``require_gpu``);
``launch``        programs under ``mpiexec`` (and ``python tests/support/launch.py cli-batch``);
``command``       helpers of the command-line tests and the registry of their batched command lines;
``kernel_cases``  the kernel tests' operator x dtype table, data and bitwise comparisons.
"""
