"""distscan's tests: a package whose folders mirror distscan/ (tests/dist, tests/ops, tests/backends,
tests/io, tests/pipeline, tests/cli, tests/algorithms), every GPU test in tests/gpu, the API's tests at
the top, and what tests share in tests/support (imported as ``tests.support.<module>``).  Fixtures and
pytest hooks live in the conftest.py files; tests/run.sh runs it all."""
