"""Who is calling: OpenID Connect bearer tokens verified against the provider's keys, and the principal they name.
The API depends on this room; the domain never does (it only sees the actor string a principal yields)."""
