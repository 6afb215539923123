"""What admins and people read about requests: the request log, the decision figures and times, a
person's home page."""
