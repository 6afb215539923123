"""Requests as data (DESIGN.md §3): the forms people fill in, the view every surface draws,
and the router that decides every answer, whichever surface it came from."""
