"""JSON as clients send it and events record it, where no model of its own checks its shape."""

from typing import Any

JsonObject = dict[str, Any]
