"""The words every part shares, imported by all and importing nothing of the project: the
phrases people read (a template each surface formats its own way), the tools' names, text
made fit for a person to read."""
