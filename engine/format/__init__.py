"""The file format as data: block specs, YAML with line numbers, data tables, JSON-ready values.

Imports nothing from diagrama but `engine.errors`; reads only the file it is given.
"""
