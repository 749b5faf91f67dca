"""Evaluations: eval files, their cases run through a diagram and scored, the results and their reports."""
