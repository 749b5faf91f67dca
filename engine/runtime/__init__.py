"""Running a compiled Diagram: the run context and services, the step loop, error and message levels, the trace.

Names no block type and no vendor.
"""
