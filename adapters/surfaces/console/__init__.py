"""The console surface: the embedded default, needing no chat workspace."""
