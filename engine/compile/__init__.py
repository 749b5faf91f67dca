"""File → checked, compiled Diagram: the block contract and registry, loading, validation, templates, the graph.

Reports every problem at once; runs nothing.
"""
