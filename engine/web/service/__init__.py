"""`diagrama api`: every diagram of a folder served as a robot over HTTP, with bearer keys, runs here or on Celery
workers, and each run's events as Server-Sent Events. `engine.web.api.create_app` is its ASGI app."""
