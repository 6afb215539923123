"""Requests as data (docs/architecture.md): the forms people fill in, the view every surface draws,
and the router that decides every answer, whichever surface it came from."""
