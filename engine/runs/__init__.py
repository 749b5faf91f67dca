"""Runs kept and run many at a time: trace files, the run store, batches (local and Celery), vendor limits, OTel export."""
