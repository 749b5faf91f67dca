"""`diagrama serve`: the studio's HTTP API over compiled diagrams and runs, and its front-end source (ui/)."""
