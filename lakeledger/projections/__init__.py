"""Read models built from the event log. The API reads only these."""
