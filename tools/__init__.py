"""The project's own tools: the generated parts of the docs (`make docs`, `make figures`)."""
