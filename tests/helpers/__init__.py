"""What the tests share: builders, recorded-output readers, cluster commands (no tests here).

Test modules import from here and never from one another (tests/unit/core/test_test_layout.py
checks it); fixtures shared by many files live in the conftest.py files instead.
"""
