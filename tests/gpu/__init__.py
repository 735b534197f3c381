"""Every GPU test (marked ``gpu``, skipped without a CUDA GPU and CuPy): kernels, the CUDA backend,
its promises, the API on CuPy arrays, MPI on GPUs."""
