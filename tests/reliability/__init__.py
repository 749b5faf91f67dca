"""Reliability suite: request blocks against a fake vendor server that injects faults."""
