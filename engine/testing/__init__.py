"""Robot scenario files and the pytest plugin that collects them; never reaches a real vendor."""
