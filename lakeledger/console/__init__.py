"""The web console (``/ui``): static files only, a page and a script that call the catalog's own APIs from the
browser with the user's credentials, so every action is an ordinary API call and the log names whoever made it.
No template engine, no front-end build, no Node at build or run time: there is nothing here for the server to
render and nothing the API does not already check."""

from pathlib import Path

STATIC = Path(__file__).parent / "static"
