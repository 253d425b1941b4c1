"""Pure functions from tool output to findings and test results (one module per format).

Each is tested on output recorded from the real tool (tests/fixtures/verify/recorded/).
"""
