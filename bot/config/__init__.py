"""The files an operator writes: the agent file, and YAML read within limits with each
part's line."""
